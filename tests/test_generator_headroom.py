"""Generator headroom in a sweep: a cell whose generator saturated its own cores is measured
again with a generator thread on every CPU neither side is pinned to, before it is marked §;
and `loadbench run` says in one line when its own core was the limit."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from cli_runner import loadbench_cli
from sweep_data import result_dict
from test_honest import shed_target

from loadbench import Sweep, model
from loadbench.core.gate import LoadGate
from loadbench.core.summary import saturation_warning
from loadbench.report import document as report


class SaturatingRunner:
    """Stands in for loadbench.run: saturated while it has one CPU, not with more."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, url: str, **kwargs):
        self.calls.append(kwargs)
        widened = len(kwargs.get("cpus") or []) > 1
        res = result_dict(3000 if widened else 1000, 900, 800, 2000, 0.2, duration=1.0)
        res["generator"]["saturated"] = not widened
        res["server"]["window_s"] = 1.0
        res["server"]["others_cpu_s"] = 0.0

        class R:
            def to_dict(self) -> dict:
                return res

        return R()


def _sweep(**kw) -> Sweep:
    # settle=False: the scripted runner's answers are the cells' own
    return Sweep(
        targets=[shed_target("a", 0)],
        concurrencies=[4],
        duration=0.2,
        warmup=0.0,
        settle=False,
        **kw,
    )


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a spare CPU")
def test_a_generator_bound_cell_is_measured_again_on_spare_cpus(tmp_path):
    first = min(os.sched_getaffinity(0))
    spare = sorted(os.sched_getaffinity(0) - {first})
    runner = SaturatingRunner()
    gate = LoadGate(quiet_load=1e9, read_load=lambda: 0.0)
    # both sides pinned to one CPU: every other CPU is spare
    sweep = _sweep(server_cpus=[first], generator_cpus=[first])
    sweep.run(tmp_path, progress=False, notes=False, runner=runner, environment=False, gate=gate)
    assert len(runner.calls) == 2
    assert runner.calls[0]["cpus"] == [first] and runner.calls[0]["threads"] == 1
    assert runner.calls[1]["cpus"] == [first, *spare]
    assert runner.calls[1]["threads"] == 1 + len(spare)
    m = model.load(tmp_path)
    (cell,) = m.cells("a")
    assert cell.rps.median == 3000 and not cell.bounded_by_generator  # the widened window is kept
    (row,) = m.rows
    assert row["generator_widened_cpus"] == [first, *spare]
    assert "Generator headroom." in report.render(tmp_path)


def test_no_spare_cpu_or_fixed_threads_means_no_second_attempt(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    gate = LoadGate(quiet_load=1e9, read_load=lambda: 0.0)
    # the default split hands every CPU to one side: nothing is spare, the cell is marked §
    runner = SaturatingRunner()
    _sweep().run(
        tmp_path / "a", progress=False, notes=False, runner=runner, environment=False, gate=gate
    )
    assert len(runner.calls) == 1
    (cell,) = model.load(tmp_path / "a").cells("a")
    assert cell.bounded_by_generator
    # generator_threads set by the user: respected, no widening even with a spare CPU
    runner = SaturatingRunner()
    _sweep(server_cpus=cpus[:1], generator_cpus=cpus[:1], generator_threads=1).run(
        tmp_path / "b", progress=False, notes=False, runner=runner, environment=False, gate=gate
    )
    assert len(runner.calls) == 1


def test_the_saturation_warning_is_one_line_and_only_when_saturated():
    # the three Result properties the warning reads (loadbench.core.result.Result)
    busy = SimpleNamespace(saturated=True, cpu_utilisation=0.97, threads=1, busy_polled=False)
    line = saturation_warning(busy)
    assert line is not None and "\n" not in line and "97 % of 1 thread)" in line
    assert (
        saturation_warning(
            SimpleNamespace(saturated=False, cpu_utilisation=0.5, threads=1, busy_polled=False)
        )
        is None
    )


def test_run_prints_the_warning_exactly_when_its_json_says_saturated(tmp_path, beast_server):
    # Whether one generator thread saturates against the embedded server depends on the machine,
    # so the CLI's stderr is checked against the JSON's own verdict: one line, or none.
    out = tmp_path / "r.json"
    proc = loadbench_cli(
        "run", beast_server.url("/plaintext"), "-c", "32", "-z", "1", "--no-progress",
        "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    saturated = json.loads(out.read_text())["generator"]["saturated"]
    warnings = [x for x in proc.stderr.splitlines() if "warning: the generator was saturated" in x]
    assert len(warnings) == (1 if saturated else 0), proc.stderr
