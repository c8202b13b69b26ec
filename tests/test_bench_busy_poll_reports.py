"""The busy-poll benchmarks' reports (bench/open_loop_side_by_side.py, bench/capacity_busy_poll.py)
read from raw records: which rates count as on time, and the ceiling each tool held."""

from __future__ import annotations

import capacity_busy_poll
import open_loop_side_by_side as sbs
from sweep_data import table_rows


def _run(tool, rate, repeat=1, **over):
    row = {
        "record": "run", "server": "beast", "repeat": repeat, "tool": tool, "rate": rate,
        "responses": int(rate * 5), "errors": 0, "non_2xx": 0, "duration_s": 5.0,
        "rps": rate, "latency_p50_us": 40.0, "latency_p99_us": 90.0, "latency_p999_us": None,
        "cpu_s": 1.0, "wall_s": 5.0, "cpu_us_per_resp": 10.0, "work_us_per_resp": None,
        "busy": 0.5, "due": None, "sends": None, "late_sends": None, "unfinished": None,
        "lateness_p50_us": None, "lateness_p99_us": None, "lateness_p999_us": None,
        "loop_lateness_p99_us": None, "work_share": None, "loop": None,
    }  # fmt: skip
    if tool.startswith("loadbench"):
        due = int(rate * 5)
        row.update(
            due=due,
            sends=due,
            lateness_p99_us=20.0,
            loop_lateness_p99_us=10.0,
            work_share=0.4,
            work_us_per_resp=8.0,
        )
    row.update(over)
    return row


def test_the_ceiling_is_the_last_rate_of_an_unbroken_run_of_on_time_repeats():
    records = [
        _run("loadbench busy-poll", 10_000),
        _run("loadbench busy-poll", 50_000),
        _run("loadbench busy-poll", 100_000, lateness_p99_us=80.0),  # late: over 50 us
        _run("loadbench busy-poll", 150_000),  # on time again, but above a late rate
        _run("loadbench tick", 10_000),
        _run("loadbench tick", 50_000, repeat=1),
        _run("loadbench tick", 50_000, repeat=2, sends=249_999),  # one due request unsent
        _run("wrk2", 10_000),
        _run("wrk2", 50_000, rps=47_000),  # short of 95 % of the rate
        _run("oha", 10_000, errors=3),
    ]
    text = sbs.render(
        records, {"CPU": "test"}, "python3 bench/open_loop_side_by_side.py", "x.jsonl"
    )
    ceilings = {row[1]: row[2:] for row in table_rows(text, "## The highest rate")[1:]}
    assert ceilings == {
        # by the sends: 100 000 was late; by the loop (its own part, 10 us here): all on time
        "loadbench busy-poll": ["50 000", "150 000"],
        "loadbench tick": ["10 000", "10 000"],  # the unsent request breaks both
        "wrk2": ["10 000", "n/a"],
        "oha": ["none", "n/a"],
    }
    rows = {(r[1], r[2]): r for r in table_rows(text, "## Every rate")[1:]}
    assert rows[("50 000", "loadbench tick")][-1] == "yes / no"
    assert rows[("50 000", "wrk2")][-1] == "short"
    assert rows[("10 000", "loadbench busy-poll")][11] == "40 %"  # its work share, not its core


def test_a_capacity_search_row_says_its_outcome_and_its_share_of_the_closed_loop():
    records = [
        {"record": "search", "server": "beast", "loop": "busy-poll", "repeat": 1,
         "outcome": "capacity", "capacity": 90_000.0, "lower_bound": None, "ceiling": 110_000.0,
         "closed_rps": 120_000.0, "steps": 9, "message": "capacity under p99<10ms: 90 000 req/s"},
        {"record": "search", "server": "beast", "loop": "tick", "repeat": 1,
         "outcome": "generator-bound", "capacity": None, "lower_bound": 60_000.0,
         "ceiling": 110_000.0, "closed_rps": 120_000.0, "steps": 12, "message": "generator-bound"},
    ]  # fmt: skip
    text = capacity_busy_poll.render(records, {"CPU": "test"}, "cmd", "x.jsonl")
    rows = table_rows(text, "## Every search")
    assert rows[1][:5] == ["beast", "busy-poll", "1", "capacity", "90 000"]
    assert rows[1][8] == "75 %"
    assert rows[2][3:6] == ["generator-bound", "n/a", "60 000"] and rows[2][8] == "50 %"
    assert "- beast, tick, repeat 1: generator-bound" in text
