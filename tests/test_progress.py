"""The sweep progress bar: cells done, the current cell, an ETA from measured cells."""

import io

from loadbench.core.progress import ProgressBar, format_seconds


def test_progress_lines_count_cells_and_estimate_eta(monkeypatch):
    clock = iter([100.0, 104.0, 104.0, 110.0])
    monkeypatch.setattr("loadbench.core.progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = ProgressBar(total=4, done=1, estimate_s=3.0, stream=out, width=8)
    bar.start_cell("beast http plaintext c=1 #1")  # nothing measured yet: 3 cells x 3 s
    bar.end_cell()  # took 4 s
    bar.start_cell("beast http plaintext c=10 #1")  # 2 left x 4 s
    bar.end_cell()  # took 6 s -> mean 5 s
    bar.note("skipping node https: node serves http only")
    bar.finish("done")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[##......] 1/4  25% | beast http plaintext c=1 #1 | ETA 9s"
    assert lines[1] == "[####....] 2/4  50% | beast http plaintext c=10 #1 | ETA 8s"
    assert lines[2] == "loadbench: skipping node https: node serves http only"
    assert lines[3] == "[######..] 3/4  75% | done | ETA 5s"


def test_format_seconds():
    assert format_seconds(59.4) == "59s"
    assert format_seconds(200) == "3m20s"
    assert format_seconds(3 * 3600 + 120) == "3h02m"


def test_eta_weights_cells_by_their_planned_seconds(monkeypatch):
    """A sweep mixing 1 s windows with a hold cell planned at 4 s: the ETA is the planned time
    left scaled by how the measured cells kept to their plan, not a count x a mean cell."""
    clock = iter([0.0, 2.0, 2.0, 10.0])
    monkeypatch.setattr("loadbench.core.progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = ProgressBar(total=3, estimate_s=1.0, stream=out, width=3, to_measure_s=1.0 + 1.0 + 4.0)
    bar.start_cell("beast http plaintext c=1 #1", 1.0)  # nothing measured: the plan, 6 s
    bar.end_cell()  # took 2 s of a planned 1 s: pace 2
    bar.start_cell("beast http plaintext c=1 #2", 1.0)  # (1 + 4) s planned x 2
    bar.end_cell()  # took 8 s: pace (2 + 8) / 2 = 5
    bar.finish("beast http plaintext 200 idle connections held #1")  # 4 s planned x 5
    lines = out.getvalue().splitlines()
    assert (
        lines[0].endswith("ETA 6s")
        and lines[1].endswith("ETA 10s")
        and lines[2].endswith("ETA 20s")
    )
