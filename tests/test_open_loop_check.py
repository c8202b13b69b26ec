"""bench/open_loop_vs_wrk2's report (bench_drivers.open_loop_check.render) from hand-made raw
records: its table has a heading for every column its rows carry (the `before` build's two
included), its machine line reads the runs' own windows when no load gate ran, and it names
the raw data it was rendered from."""

from __future__ import annotations

from bench_drivers.open_loop_check import render


def _run(tool: str, p99_us: float, others_cpu_s: float = 0.01, by: str = "server") -> dict:
    rec = {
        "peer": "beast", "rate": 60_000.0, "connections": 50, "what": "fixed rate", "repeat": 0,
        "tool": tool, "p50_us": 150.0, "p99_us": p99_us, "max_us": 2 * p99_us,
    }  # fmt: skip
    if tool != "wrk2":
        rec["service_p99_us"] = p99_us / 2
        rec["limit"] = {"by": by}
        rec["server"] = {"cores": 1, "others_cpu_s": others_cpu_s, "window_s": 5.0}
    return rec


def _rows(text: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ") and "Rate /s" not in line and "Setting" not in line
    ]


def test_every_column_has_a_heading_and_the_runs_windows_say_the_machine_was_quiet():
    env = {"Date (UTC)": "2026-12-03 14:00:00", "Load average at start": "1.24 / 1.3 / 1.5"}
    records = [_run("loadbench", 2_400.0), _run("wrk2", 8_200.0), _run("before", 2_200.0, by="-")]
    text = render(records, env, "bench/open_loop_vs_wrk2.py --before B")
    heading = next(line for line in text.splitlines() if "Rate /s" in line)
    cells = [c.strip() for c in heading.strip("|").split("|")]
    (row,) = [r for r in _rows(text) if r[0] == "beast"]
    assert len(cells) == len(row) and cells[-2:] == ["before p99", "before: limited by"]
    assert row[cells.index("agree")] == "NO (0.29x)" and row[cells.index("limited by")] == "server"
    # 0.01 s of others' CPU in a 5 s window of 2 cores: 0.1 %, below the contended share
    machine = next(line for line in text.splitlines() if line.startswith("Machine:"))
    assert "no load gate ran" in machine and "SHARED" not in machine, machine
    assert "0.1 % of the machine at the median" in machine and "0 above the 5 %" in machine


def test_a_run_that_others_disturbed_leaves_the_load_average_its_word():
    env = {"Date (UTC)": "2026-12-03 14:00:00", "Load average at start": "1.24 / 1.3 / 1.5"}
    records = [_run("loadbench", 2_400.0, others_cpu_s=2.0), _run("wrk2", 2_500.0)]
    text = render(records, env, "bench/open_loop_vs_wrk2.py")
    machine = next(line for line in text.splitlines() if line.startswith("Machine:"))
    assert "SHARED" in machine and "1 above the 5 %" in machine, machine
    heading = next(line for line in text.splitlines() if "Rate /s" in line)
    assert heading.rstrip().endswith("| agree |")


def test_the_report_names_its_own_raw_data():
    # --out reports/capacity-vs-wrk2.md writes capacity-vs-wrk2.jsonl; its report pointed readers
    # at open-loop-vs-wrk2.jsonl, another report's raw data
    env = {"Date (UTC)": "2026-12-03 14:00:00", "Load average at start": "0.2 / 0.3 / 0.5"}
    records = [_run("loadbench", 2_400.0), _run("wrk2", 2_500.0)]
    text = render(records, env, "bench/open_loop_vs_wrk2.py --out x.md", "capacity-vs-wrk2.jsonl")
    head = next(line for line in text.splitlines() if line.startswith("Generated"))
    assert "raw data (capacity-vs-wrk2.jsonl)" in head and "open-loop-vs-wrk2" not in head, head


def test_the_verdict_counts_agreement_confirmed_claims_and_cells_no_tool_reproduces():
    env = {"Date (UTC)": "2026-12-03 14:00:00", "Load average at start": "0.2 / 0.3 / 0.5"}

    def at(rate: float, run: dict) -> dict:
        return {**run, "rate": rate}

    records = [
        # loadbench's own claim, confirmed by wrk2
        at(1_000, _run("loadbench", 2_400.0)), at(1_000, _run("wrk2", 2_500.0)),
        # its claim, refuted: 3.0 s against 100 ms
        at(2_000, _run("loadbench", 3_000_000.0)), at(2_000, _run("wrk2", 100_000.0)),
        # not claimed (the pool was the limit), and wrk2's repeats 40 ms and 400 ms apart
        at(3_000, _run("loadbench", 50_000.0, by="pool")),
        at(3_000, _run("wrk2", 40_000.0)), at(3_000, _run("wrk2", 400_000.0)),
    ]  # fmt: skip
    text = render(records, env, "bench/open_loop_vs_wrk2.py")
    verdict = text.split("## Verdict", 1)[1].strip().splitlines()[0]
    assert verdict.startswith("1 of 3 cells agree."), verdict
    assert "In 2 loadbench called every run the server's own" in verdict
    assert "wrk2 confirms 1 of them" in verdict
    assert "In 1 cells one tool's own repeats spread over more than 2x in p99 (0 of them" in verdict


def test_the_verdict_says_when_loadbench_reads_below_wrk2_and_wrk2s_own_timer_offset():
    # a fresh, primed asyncio server at 24 000 req/s (2026-12-06): loadbench 395 us, wrk2 2.7 ms;
    # wrk2's p50 1.15 ms against loadbench's 121 us - its sends leave on a ~1 ms timer
    env = {"Date (UTC)": "2026-12-06 05:21:00", "Load average at start": "0.2 / 0.3 / 0.5"}
    ours, theirs = _run("loadbench", 395.0), _run("wrk2", 2_700.0)
    ours["p50_us"], theirs["p50_us"] = 121.0, 1_150.0
    text = render([ours, theirs], env, "bench/open_loop_vs_wrk2.py --fresh")
    verdict = text.split("## Verdict", 1)[1].strip().splitlines()[0]
    assert verdict.startswith("0 of 1 cells agree."), verdict
    assert "In 1 of the 1 that disagree loadbench reads lower than wrk2" in verdict
    assert "wrk2's own p50 sits 1.03 ms above loadbench's" in verdict


def test_a_capacity_is_checked_against_its_objective_and_wrk2_behind_its_rate_is_no_evidence():
    """The --capacities cells: wrk2 should meet the sweep's objective at a capacity and break it
    at the rate the server failed; a wrk2 that answered less than 95 % of the asked rate did not
    send it, and its p99 there proves nothing about the server."""
    env = {"Date (UTC)": "2026-12-06 12:00:00", "Load average at start": "0.2 / 0.3 / 0.5"}

    def cell(peer: str, rate: float, what: str, ours_ms: float, theirs_ms: float, sent: float):
        ours, theirs = _run("loadbench", ours_ms * 1e3), _run("wrk2", theirs_ms * 1e3)
        theirs.update(requests=int(sent * 5), span_s=5.0)
        return [{**r, "peer": peer, "rate": rate, "what": what, "objective": "p99<10ms"}
                for r in (ours, theirs)]  # fmt: skip

    records = [
        *cell("go", 40_000, "capacity (median)", 4.0, 6.0, 40_000),  # both meet it
        *cell("go", 42_000, "first failing", 30.0, 45.0, 42_000),  # both break it
        *cell("nim", 40_000, "capacity (median)", 4.0, 14.0, 39_900),  # wrk2 breaks it
        *cell("beast", 110_000, "capacity (median)", 3.0, 900.0, 70_000),  # wrk2 cannot send it
    ]
    text = render(records, env, "bench/open_loop_vs_wrk2.py --capacities reports/X")
    heading = next(line for line in text.splitlines() if "Rate /s" in line)
    cols = [c.strip() for c in heading.strip("|").split("|")]
    rows = {(r[0], r[3]): r for r in _rows(text) if len(r) == len(cols)}
    meets = cols.index("wrk2 meets it")
    assert rows[("go", "capacity (median)")][meets - 2 : meets + 1] == ["p99<10ms", "yes", "yes"]
    assert rows[("go", "first failing")][meets - 1 : meets + 1] == ["no", "no"]
    assert rows[("nim", "capacity (median)")][meets] == "no"
    assert rows[("beast", "capacity (median)")][meets] == "behind (70 000 /s)"
    line = next(x for x in text.splitlines() if x.startswith("Capacities against their objective"))
    assert "(median) wrk2 meets the objective in 1 of the 2 cells it sent on time" in line, line
    assert "(1 more it could not send: its own limit); loadbench in 3 of 3" in line, line
    assert "first failing rates wrk2 breaks the objective in 1 of the 1 cells" in line, line
    assert line.endswith("The two tools give the same verdict in 2 of the 3 cells both ran."), line
