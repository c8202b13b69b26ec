"""Hold cells (memory per idle connection) in a sweep: a real small sweep over two Beast
servers with hold_connections = 200, its records, the model's figures, the report section, and
proof that the hold cells leave every req/s, latency and CPU figure as it was."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from sweep_data import table_rows

from loadbench import Sweep, Target, model
from loadbench.core.connections import hold_shortfall
from loadbench.report import comparison, dashboard, markdown
from loadbench.report import document as report
from loadbench.report import html as html_report
from loadbench.sweep import results_folder as results

N = 200


@pytest.fixture(scope="module")
def hold_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("hold")
    # two Beast configurations, so the report's lowest-in-bold has someone to beat
    sweep = Sweep(
        targets=[Target("beast"), Target("beast-2w", workers=2)],
        concurrencies=[2],
        repeats=2,
        duration=0.3,
        warmup=0.1,
        hold_connections=N,
        contended_reruns=0,
    )
    sweep.run(out, progress=False)
    report.write_report(out, charts=False)
    return sweep, out


def _hold_records(out: Path) -> list[dict]:
    return [r for r in results.read_records(out / "results.jsonl") if r["mode"] == "hold"]


def test_hold_cells_are_recorded_like_the_other_cells(hold_sweep):
    sweep, out = hold_sweep
    records = results.read_records(out / "results.jsonl")
    assert [r["id"] for r in records] == [c.id for c in sweep.run_order()]
    hold = _hold_records(out)
    assert sorted(r["id"] for r in hold) == sorted(
        f"{t}|http|plaintext|hold{N}|r{i}" for t in ("beast", "beast-2w") for i in range(2)
    )
    load_pids = {r["server"]["pid"] for r in records if r["mode"] == "closed"}
    for r in hold:
        assert (r["protocol"], r["workload"], r["connections"], r["status"], r["error"]) == (
            "http",
            "plaintext",
            N,
            "ok",
            None,
        ), r
        res = r["result"]
        assert (
            res["connections_held"] == N and res["requests_ok"] == N and res["connect_failed"] == 0
        )
        assert res["url"].endswith("/plaintext")
        # the server loadbench started was sampled: its pid, and a descriptor for each held connection
        assert res["server"]["pid"] == r["server"]["pid"] and res["server"]["accepted"] >= N
        assert res["server"]["rss_bytes_per_connection"] > 0
    # every hold repeat on a server of its own (fresh: no allocator state from the load cells)
    hold_pids = [r["server"]["pid"] for r in hold]
    assert len(set(hold_pids)) == len(hold) and not set(hold_pids) & load_pids


def test_the_model_figures_are_the_medians_of_the_raw_records(hold_sweep):
    _, out = hold_sweep
    m = model.load(out)
    cells = m.memory_per_connection()
    assert list(cells) == ["beast", "beast-2w"]
    for target, cell in cells.items():
        raw = [r["result"] for r in _hold_records(out) if r["target"] == target]
        assert (cell.status, cell.repeats, cell.failed, cell.connections) == ("ok", 2, 0, N)
        assert cell.held == statistics.median(x["connections_held"] for x in raw) == N
        assert cell.answered == statistics.median(x["requests_ok"] for x in raw) == N
        assert cell.rss_bytes_per_connection == statistics.median(
            x["server"]["rss_bytes_per_connection"] for x in raw
        )
        assert cell.pss_bytes_per_connection == statistics.median(
            x["server"]["pss_bytes_per_connection"] for x in raw
        )
        assert cell.generator_bytes_per_connection == statistics.median(
            x["generator"]["bytes_per_connection"] for x in raw
        )


def test_the_report_section_shows_the_model_figures_with_the_lowest_in_bold(hold_sweep):
    _, out = hold_sweep
    text = (out / "report.md").read_text()
    cells = model.load(out).memory_per_connection()
    rows = table_rows(text, f"## Memory per idle connection ({N} held)")
    assert rows[0] == [
        "Server",
        "Held",
        "Answered 2xx",
        "RSS B/conn",
        "PSS B/conn",
        "Generator B/conn",
    ]
    assert [r[0] for r in rows[1:]] == ["beast", "beast-2w"]
    for column, attr in ((3, "rss_bytes_per_connection"), (4, "pss_bytes_per_connection")):
        values = {t: getattr(c, attr) for t, c in cells.items()}
        lowest = min(values, key=lambda t: values[t])  # ties: the first, as every bold mark
        for row in rows[1:]:
            expected = markdown.fmt_int(values[row[0]])
            assert row[column] == (f"**{expected}**" if row[0] == lowest else expected), (row, attr)
    for row in rows[1:]:
        assert row[1:3] == [str(N), str(N)]
        assert "**" not in row[5]  # the generator is the same loadbench in every row: no winner
    assert "plain http only" in text and "Memory per idle connection" in text.split("## Summary")[0]


def test_hold_cells_leave_every_load_figure_unchanged(hold_sweep):
    _, out = hold_sweep
    settings, environment, records = results.load_dir(out)
    with_hold = model.load(out)
    load_only = model.build(settings, environment, [r for r in records if r["mode"] != "hold"], out)
    assert with_hold.hold_records and not load_only.hold_records
    assert all(r["mode"] != "hold" for r in with_hold.records + with_hold.rows)
    assert with_hold.aggs.keys() == load_only.aggs.keys()
    assert all(k[3] == "closed" for k in with_hold.aggs)
    for t in with_hold.targets:
        assert with_hold.peak(t) == load_only.peak(t) and with_hold.average(t) == load_only.average(
            t
        )
        assert with_hold.best_cpu(t) == load_only.best_cpu(t) and with_hold.rss(t) == load_only.rss(
            t
        )
        assert with_hold.excluded(t) == load_only.excluded(t)
        # the closed-loop cells' medians are the raw repeats' medians, hold cells or not
        for a in with_hold.cells(t):
            raw = [
                r["result"]["rps"]
                for r in records
                if (r["target"], r["mode"], r["connections"]) == (t, "closed", a.load)
                and r["status"] == "ok"
            ]
            assert a.rps.median == statistics.median(raw)
    assert with_hold.cells_frame().equals(load_only.cells_frame())
    # the report's load sections (summary to the end of the tables) are word for word the same
    text, plain = report.render(with_hold), report.render(load_only)
    start = "## Summary"
    assert (
        text[text.index(start) : text.index("## Memory per idle connection")]
        == plain[plain.index(start) : plain.index("## Known limits")]
    )
    assert text[text.index("## Known limits") :] == plain[plain.index("## Known limits") :]
    assert "Memory per idle connection" not in plain


def test_html_report_and_comparison_take_a_sweep_with_hold_cells(hold_sweep):
    _, out = hold_sweep
    frame = comparison.compare(out, out)
    assert len(frame) and "hold" not in set(frame["mode"])
    assert dashboard.dashboard_data(model.load(out))["cells"]  # load cells only, no hold cell
    page = html_report.render_html(out)
    assert f"Memory per idle connection ({N} held)</h2>" in page
    assert "<th>RSS B/conn</th>" in page


def _hold_record(
    target: str, repeat: int, status: str, held: int, ok: int, rss: float, error=None
) -> dict:
    return {
        "id": f"{target}|http|plaintext|hold{N}|r{repeat}",
        "target": target,
        "protocol": "http",
        "workload": "plaintext",
        "mode": "hold",
        "connections": N,
        "repeat": repeat,
        "status": status,
        "error": error,
        "wall_s": 1.0,
        "started": f"2026-11-30T10:0{5 + repeat}:00+00:00",
        "result": {
            "connections": N,
            "connections_held": held,
            "requests_ok": ok,
            "generator": {"bytes_per_connection": 1.0},
            "server": {"rss_bytes_per_connection": rss, "pss_bytes_per_connection": rss / 2},
        },
    }


def _closed_record(target: str) -> dict:
    return {
        "id": f"{target}|http|plaintext|c2|r0",
        "target": target,
        "protocol": "http",
        "workload": "plaintext",
        "mode": "closed",
        "connections": 2,
        "repeat": 0,
        "status": "ok",
        "error": None,
        "started": "2026-11-30T10:00:00+00:00",
        "result": {
            "rps": 1000.0,
            "responses": 1000,
            "duration_s": 1.0,
            "status_codes": {"200": 1000},
            "errors": {},
            "latency_us": {"p50": 900, "p99": 1500, "mean": 1000},
        },
    }


def test_failed_hold_repeats_are_kept_out_of_the_medians_and_named_in_the_report():
    records = [
        _closed_record("a"),
        _closed_record("b"),
        _hold_record("a", 0, "ok", N, N, 9000.0),
        _hold_record("a", 1, "fail", 150, 150, 100.0, "50 connection(s) closed by the server"),
        _hold_record(
            "b", 0, "fail", 120, 100, 50.0, "fd limit: holding 120 connections instead of 200"
        ),
    ]
    m = model.build({"repeats": 2, "duration": 1.0, "warmup": 0.1}, {}, records)
    cells = m.memory_per_connection()
    # a: the failed repeat's 100 B/conn (fewer connections) does not pull the median down
    assert (cells["a"].status, cells["a"].failed, cells["a"].rss_bytes_per_connection) == (
        "ok",
        1,
        9000.0,
    )
    # b: nothing ok, so no figure per connection; held/answered say how far it got
    assert (cells["b"].status, cells["b"].held, cells["b"].answered) == ("fail", 120, 100)
    assert cells["b"].rss_bytes_per_connection is None and "fd limit" in cells["b"].note
    text = report.render(m)
    rows = table_rows(text, f"## Memory per idle connection ({N} held)")
    assert rows[1] == [
        "a",
        "200",
        "200",
        "9 000 †",
        "4 500 †",
        "1 †",
    ]  # one ok server: nobody's winner
    assert rows[2] == ["b", "120", "100", "FAIL", "FAIL", "FAIL"]
    assert "b: fd limit: holding 120 connections instead of 200" in text
    assert "a: 1 of 2 repeats fell short (50 connection(s) closed by the server)" in text
    # the settings count the hold cells, and the run's span runs to the last one's start
    assert "| Cells | 2 (2 measured, 0 FAIL, 0 not run) + 3 hold cell(s) (1 ok) |" in text
    assert "to 2026-11-30T10:06:00+00:00" in text.split("## Settings")[0]


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({}, None),
        (
            {
                "connections_held": 180,
                "requests_ok": 180,
                "fd_limit": {
                    "soft": 436,
                    "note": "the open-file limit is 436 (hard) and cannot be raised to 456 here; "
                    "holding 180 connections instead of 200",
                },
            },
            "fd limit: the open-file limit is 436 (hard)",
        ),
        (
            {
                "connections_held": 190,
                "requests_ok": 190,
                "connect_failed": 10,
                "first_error": "Connection refused",
            },
            "10 of 200 connects failed (first error: Connection refused)",
        ),
        (
            {"connections_held": 195, "requests_ok": 195},
            "5 connection(s) closed by the server before the measurement",
        ),
        (
            {"requests_ok": 150, "requests_non_2xx": 50},
            "150 of 200 answered 2xx (50 non-2xx, 0 failed)",
        ),
    ],
)
def test_hold_shortfall_names_why_a_hold_fell_short(changes, reason):
    record = {
        "connections": N,
        "connections_held": N,
        "connect_failed": 0,
        "requests_ok": N,
        "requests_non_2xx": 0,
        "requests_failed": 0,
        "first_error": "",
        "fd_limit": {"soft": 1024, "note": ""},
    }
    record.update(changes)
    found = hold_shortfall(record)
    assert found == reason if reason is None else reason in found
