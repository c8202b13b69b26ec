"""Ranking is per metric: a generator-bound (§) cell measured the generator's limit, so its req/s
is a lower bound on the server's (ranked as one: "≥"), its latency percentiles prove nothing
(never ranked), and its CPU us/req and memory are still the server's own (ranked as measured).

The hand-made sweep (two servers, C = 10, three identical repeats per cell):

    cell                 a                                   b
    http plaintext       100 000 req/s, 2 us/req, §          50 000 req/s, 5 us/req
    http json             60 000 req/s, 3 us/req             40 000 req/s, 6 us/req
    https plaintext       30 000 req/s, 1 us/req, 30 % 503   20 000 req/s, 4 us/req

Under the old rules (a § cell is unranked for every metric, then for req/s and latency) a's
CPU average would be over http json only (3.00, b 6.00) and b's CPU would be bold in http
plaintext; then a's peak would be 60 000 - its one slow cell - and its summary ranked by it.
"""

import copy
import json

import pytest
from sweep_data import SETTINGS, record, result_dict

from loadbench import model
from loadbench.report import comparison
from loadbench.report import document as report
from loadbench.sweep import results_folder as results


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (split into cells) of the first markdown table after ``heading``."""
    rows = []
    for line in text[text.index(heading) :].splitlines()[1:]:
        if line.startswith("|"):
            if not set(line.replace("|", "").strip()) <= {"-"}:  # skip the |---| line
                rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows


def by_metric(rows: list[list[str]]) -> dict:
    """{(metric, server): values} of a load table (the metric is named on its first row only)."""
    out, metric = {}, None
    for r in rows[1:]:
        metric = r[0] or metric
        out[(metric, r[1])] = r[2:]
    return out


# (target, protocol, workload) -> (rps, cpu us/req, generator saturated, share shed as 503s)
CELLS = {
    ("a", "http", "plaintext"): (100_000, 2.0, True, 0.0),
    ("a", "http", "json"): (60_000, 3.0, False, 0.0),
    ("a", "https", "plaintext"): (30_000, 1.0, False, 0.3),
    ("b", "http", "plaintext"): (50_000, 5.0, False, 0.0),
    ("b", "http", "json"): (40_000, 6.0, False, 0.0),
    ("b", "https", "plaintext"): (20_000, 4.0, False, 0.0),
}


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    d = tmp_path_factory.mktemp("per-metric")
    settings = copy.deepcopy(SETTINGS)
    settings["targets"] = [
        {"name": "a", "kind": "beast", "description": "A"},
        {"name": "b", "kind": "beast", "description": "B"},
    ]
    settings.update(concurrencies=[10], connection_setup=False)
    (d / results.SETTINGS_FILE).write_text(json.dumps(settings))
    (d / results.ENVIRONMENT_FILE).write_text(
        json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}})
    )
    for (t, p, w), (rps, us, saturated, shed) in CELLS.items():
        # the faster server answers sooner: a's latencies are half of b's in every cell
        p50 = 100 if t == "a" else 200
        cpu_s = us * rps * 2.0 / 1e6  # us/req x responses (rps x the 2 s window)
        for r in range(3):
            results.append_record(
                d / results.RESULTS_FILE,
                record(
                    t,
                    p,
                    w,
                    "closed",
                    10,
                    r,
                    result=result_dict(
                        rps,
                        p50 * 1.1,
                        p50,
                        p50 * 2,
                        cpu_s,
                        saturated=saturated,
                        shed=shed,
                        rss_kib=8192 if t == "a" else 4096,
                    ),
                ),
            )
    return d


def test_a_generator_bound_cell_is_ranked_as_a_bound_and_never_for_percentiles(directory):
    m = model.load(directory)
    bound = m.aggs[("a", "http", "plaintext", "closed", 10)]
    assert bound.generator_bound
    # req/s: a lower bound; mean latency: an upper bound (Little's law); percentiles: nothing
    assert bound.ranked and bound.ranked_for("rps") and bound.bound_for("rps") == "lower"
    assert bound.ranked_for("mean_ms") and bound.bound_for("mean_ms") == "upper"
    assert not bound.ranked_for("p50_ms") and not bound.ranked_for("p99_ms")
    assert (
        bound.ranked_for("cpu_us")
        and bound.ranked_for("rss_peak_mib")
        and bound.bound_for("cpu_us") is None
    )
    assert bound.exclusions("rps") == [] and bound.exclusions("p50_ms") == ["generator-bound"]
    assert bound.figure("rps") == pytest.approx(100_000) and bound.figure("rps").bound == "lower"
    # non-2xx/errors (and contention) still exclude a cell from every metric
    dirty = m.aggs[("a", "https", "plaintext", "closed", 10)]
    assert not dirty.ranked_for("rps") and not dirty.ranked_for("cpu_us")
    assert len(m.excluded("a")) == 1 and len(m.excluded("a", "cpu_us")) == 1
    assert [a.key for a in m.bounded("a")] == [bound.key]


def test_averages_run_over_the_cells_ranked_for_each_metric(directory):
    m = model.load(directory)
    # req/s: a's § cell enters as a lower bound, so both servers average http plaintext and json
    assert m.common() == {("http", "plaintext", 10), ("http", "json", 10)}
    avg = m.average("a")
    assert (
        avg == pytest.approx(80_000) and avg.bound == "lower" and (avg.bounded, avg.cells) == (1, 2)
    )
    # each server's average covers its own ranked cells (never n/a for want of a cell every
    # server shares): b's https plaintext too, which a lost to 503s ...
    assert m.average("b") == pytest.approx((50_000 + 40_000 + 20_000) / 3)
    assert m.average("b").bound is None and m.average("b").cells == 3
    # ... and a comparison of the two runs over the cells both have, so b gains nothing from it
    assert m.average("b", shared_with="a") == pytest.approx(45_000)
    assert m.average("a", shared_with="b") == pytest.approx(80_000)
    assert m.average_ranks()["a"].text() == "1"  # ≥ 80 000 is certainly above 45 000
    # the generator-bound 100 000, as the lower bound it is - not the 60 000 of a's one slow cell
    assert m.peak("a") == pytest.approx(100_000) and m.peak("a").bound == "lower"
    assert m.peak("b") == pytest.approx(50_000) and m.peak("b").bound is None
    ranks = m.peak_ranks()
    assert (ranks["a"].text(), ranks["b"].text()) == (
        "1",
        "2",
    )  # ≥ 100 000 is certainly above 50 000
    # CPU us/req: the § cell counts, the 503-shedding one does not (b's https is a's gap)
    assert m.average("a", metric="cpu_us") == pytest.approx(2.5)  # (2 + 3) / 2; the old rule: 3
    assert m.average("b", metric="cpu_us") == pytest.approx(5.0)  # (5 + 6 + 4) / 3, its own
    assert m.average("b", metric="cpu_us", shared_with="a") == pytest.approx(5.5)
    assert m.common(metric="cpu_us") == {("http", "plaintext", 10), ("http", "json", 10)}


def test_bold_per_metric_in_the_tables(directory):
    text = report.render(directory)
    rows = table_after(text, "## HTTP/1.1 (http), plaintext, keep-alive")
    by = by_metric(rows)
    # even a's lower bound beats b's measured 50 000: a is certainly the faster, bold
    # (the CPU ceiling: its one core / 2 us per response)
    assert by[("req/s", "a")] == ["**≥ 100 000 (≤ 500 000 by CPU)** §"]
    assert by[("req/s", "b")] == ["50 000"]
    assert by[("p50 (ms)", "a")] == ["0.10 §"] and by[("p50 (ms)", "b")] == ["**0.20**"]
    assert by[("CPU us/req", "a")] == ["**2.00** §"] and by[("CPU us/req", "b")] == ["5.00"]
    rows = table_after(text, "## HTTP/1.1 over TLS (https), plaintext, keep-alive")
    by = by_metric(rows)
    assert by[("CPU us/req", "a")] == ["1.00 ✗"] and by[("CPU us/req", "b")] == ["**4.00**"]
    assert "its CPU us/req and peak memory are the server's own at the load it got" in text


def test_summary_ranks_and_averages_per_metric(directory):
    text = report.render(directory)
    summary = table_after(text, "## Summary")
    assert summary[0] == [
        "Server",
        "Peak req/s",
        "Peak, % of the leader's",
        "Peak: a ÷ this",
        "Average req/s",
        "Best CPU us/req",
        "Average CPU us/req",
        "Peak RSS (MiB)",
        "Peak RSS: this ÷ a",
        "Cells left out (req/s / CPU) / lower bounds §",
        "Rank by peak req/s",
        "Rank by best CPU us/req",
    ]
    rows = {r[0]: r for r in summary[1:]}
    # a's best CPU is its § cell (2.00), not its dirty https cell (1.00); b's peak over a's lower
    # bound is an upper bound: b is at most half as fast
    assert rows["a"][1:] == [
        "≥ 100 000 (≤ 500 000 by CPU)",
        "100.0 %",
        "1.00x",
        "≥ 80 000 (≤ 280 000 by CPU; 1 of 2 §; 2 of 3 cells)",
        "2.00",
        "2.50",
        "8.0",
        "1.00x",
        "1 / 1 / 1",
        "1",
        "1",
    ]
    assert rows["b"][1:] == [
        "50 000",
        "≤ 50.0 %",  # of a's lower bound: at most half
        "≥ 2.00x",  # a's lower bound over b's measured peak: a is at least twice as fast
        "36 667",
        "4.00",
        "5.00",
        "4.0",
        "0.50x",
        "0 / 0 / 0",
        "2",
        "2",
    ]
    # averages over each server's own cells; the scope's 3 cells say a's covers 2 of them
    assert "fewer than the 3 cells some server ranked for req/s" in text


def test_comparison_bounds_a_generator_bound_cell_for_req_s_and_judges_its_cpu(directory):
    df = comparison.compare(directory, directory, metrics=["rps", "cpu", "p99"])
    cell = df[
        (df.target == "a") & (df.protocol == "http") & (df.workload == "plaintext")
    ].set_index("metric")
    assert cell.loc["rps", "flags"] == "" and cell.loc["rps", "bounds"].startswith(
        "both lower bounds"
    )
    assert cell.loc["p99", "flags"] == "base: generator-bound; new: generator-bound"
    assert cell.loc["cpu", "flags"] == "" and cell.loc["cpu", "bounds"] == ""
