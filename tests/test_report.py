"""report.md from a hand-made results folder: every table cell checked against the raw numbers."""

import json
import re

import pytest
from sweep_data import write_results_dir

from loadbench.report import document as report
from loadbench.report import model
from loadbench.sweep import results_folder as results


@pytest.fixture(scope="module")
def report_text(tmp_path_factory):
    directory = write_results_dir(tmp_path_factory.mktemp("hand"))
    return report.render(directory)


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (split into cells) of the first markdown table after ``heading``."""
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            if set(line.replace("|", "").strip()) <= {"-"}:
                continue
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows


def test_http_plaintext_table_medians_bold_and_marks(report_text):
    rows = table_after(report_text, "## HTTP/1.1 (http), plaintext, keep-alive")
    assert rows[0] == ["Metric", "Server", "C = 1", "C = 10"]
    by = {(r[0] or prev, r[1]): r[2:] for r, prev in _with_metric(rows[1:])}
    # medians of the three repeats; the best server per column is bold
    assert by[("req/s", "beast")] == ["**11 000**", "**51 000**"]
    assert by[("req/s", "py")] == ["5 100", "20 000"]  # starved req/s is still a throughput
    assert ("req/s", "node") not in by  # never measured (not installed): no row of n/a
    assert by[("p50 (ms)", "beast")] == ["**0.085**", "**0.18**"]
    # py c=10 is starved (in-flight 2.0 < 0.5 x 10): lowest p50, but marked and not bold
    assert by[("p50 (ms)", "py")] == ["0.19", "0.050 ‡"]
    assert by[("p99 (ms)", "beast")] == ["**0.17**", "**0.40**"]
    # CPU us/req = cpu_s / responses: 0.44 s / 22 000 = 20.00; 0.51 / 10 200 = 50.00
    assert by[("CPU us/req", "beast")] == ["**20.00**", "**10.00**"]
    assert by[("CPU us/req", "py")] == ["50.00", "20.00"]
    # under-driven: 2 of 10 in flight, with the connect errors that lost the other slots
    assert by[("in-flight", "py")] == ["1.0", "2.0 ‡"]
    assert by[("non-2xx + errors", "py")] == ["0 %", "0.25 %"]  # 300 / (120 000 + 300), not marked
    assert "py http plaintext C = 10: connect x 300" in report_text


def test_https_table_fail_and_generator_bound(report_text):
    rows = table_after(report_text, "## HTTP/1.1 over TLS (https), plaintext, keep-alive")
    by = {(r[0] or prev, r[1]): r[2:] for r, prev in _with_metric(rows[1:])}
    # the generator-bound cell's req/s is a lower bound, shown as one (not bold: py FAILed, so
    # no other server was measured there)
    # closed from above by beast's CPU ceiling: 1 core / 12.5 us per response
    assert by[("req/s", "beast")] == ["**8 000**", "≥ 40 000 (≤ 80 000 by CPU) §"]
    assert by[("req/s", "py")] == ["4 000", "FAIL"]


def test_workload_breakdown_with_partial_repeats(report_text):
    section = report_text[report_text.index("## Workload breakdown") :]
    rows = table_after(section, "### https")
    assert rows[0][:3] == ["Server", "plaintext req/s", "json req/s"]
    py = next(r for r in rows if r[0] == "py")
    assert py[1] == "FAIL"
    # median of 13 000 and 14 000 (one repeat failed); not bold: beast's generator-bound json cell
    # proves beast did at least 35 000, certainly more than py's 13 500
    assert py[2] == "13 500 †"
    beast = next(r for r in rows if r[0] == "beast")
    # both closed by the folder's https ceiling: the least CPU per response beast had over https
    # (12.5 us, the plaintext cell: 80 000), not the json cell's own 14.3 us (report/ceilings.py)
    assert beast[1:3] == ["≥ 40 000 (≤ 80 000 by CPU) §", "**≥ 35 000 (≤ 80 000 by CPU)** §"]


def test_connection_setup_table(report_text):
    rows = table_after(report_text, "## Connection setup")
    assert rows[0] == [
        "Server",
        "http conn/s",
        "https handshakes/s",
        "http CPU us/conn (generator / server)",
        "https CPU us/handshake (generator / server)",
        "http non-2xx + errors",
        "https non-2xx + errors",
    ]
    # 31 000 / 2 s, 8 100 / 2 s; CPU per connection: median of 0.1 s (generator) and 0.3 s (server)
    # over each repeat's new connections - the generator is the cheaper side, nothing is flagged
    assert rows[1] == ["beast", "**15 500**", "**4 050**", "3 / 10", "12 / 37", "0 %", "0 %"]
    assert rows[2] == ["py", "4 600", "525", "11 / 33", "95 / 286", "0 %", "0 %"]
    assert len(rows) == 3  # node was never measured: named once under Servers, not a row here
    assert "in a connection-setup cell" not in report_text


def test_connection_setup_cell_where_the_generator_costs_more_is_generator_bound(tmp_path):
    """The § rule for connection setup: the generator's CPU per new connection / handshake above
    the server's flags the cell (both figures shown), below it does not."""
    from sweep_data import SETTINGS, record, result_dict

    from loadbench import model

    directory = tmp_path / "setup"
    directory.mkdir()
    (directory / results.SETTINGS_FILE).write_text(json.dumps(SETTINGS))
    (directory / results.ENVIRONMENT_FILE).write_text(
        json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}})
    )
    path = directory / results.RESULTS_FILE
    for r in range(3):
        # beast https: 2 000 handshakes, generator 1.0 s (500 us each) > server 0.5 s (250 us): flagged
        slow_gen = result_dict(1000, 500, 450, 900, 0.5, opened=2000)
        slow_gen["generator"]["cpu_s"] = 1.0
        results.append_record(
            path, record("beast", "https", "plaintext", "connect", 20, r, result=slow_gen)
        )
        # py https: generator 0.2 s (100 us) < server 0.5 s (250 us): the server's limit, not flagged
        cheap_gen = result_dict(1000, 500, 450, 900, 0.5, opened=2000)
        cheap_gen["generator"]["cpu_s"] = 0.2
        results.append_record(
            path, record("py", "https", "plaintext", "connect", 20, r, result=cheap_gen)
        )
    aggs = model.load(directory).aggs
    flagged, clean = (
        aggs[("beast", "https", "plaintext", "connect", 20)],
        aggs[("py", "https", "plaintext", "connect", 20)],
    )
    # ranked as the lower bound it is: the server set up at least that many connections
    assert flagged.setup_generator_bound and flagged.generator_bound and flagged.ranked
    assert (
        flagged.bound_for("conn_per_s") == "lower" and flagged.figure("conn_per_s").prefix == "≥ "
    )
    assert flagged.generator_cpu_us_per_conn.median == pytest.approx(500)
    assert flagged.server_cpu_us_per_conn.median == pytest.approx(250)
    # its latency measured the generator
    assert "generator 500 us > server 250 us CPU per connection" in flagged.exclusions("p99_ms")[0]
    assert not clean.setup_generator_bound and not clean.generator_bound and clean.ranked
    text = report.render(directory)
    rows = table_after(text, "## Connection setup")
    beast, py = next(r for r in rows if r[0] == "beast"), next(r for r in rows if r[0] == "py")
    # only https has connection-setup cells: Server | https handshakes/s | https CPU | https non-2xx
    assert (
        beast[1] == "≥ 1 000 §" and beast[2] == "500 / 250 §"
    )  # a lower bound, both figures shown
    # the same rate, but the server's limit: not bold either - beast's equal rate is a lower
    # bound, so which server is faster is open
    assert py[1] == "1 000" and py[2] == "100 / 250"
    assert "in a connection-setup cell" in text


def test_summary_settings_environment_and_limits(report_text):
    summary = table_after(report_text, "## Summary")
    beast = next(r for r in summary if r[0] == "beast")
    # peak of the per-cell medians, a lower bound because two of beast's cells are generator-bound
    # (either could hide more than 51 000) - up to their CPU ceilings, the higher 80 000; the
    # mean over beast's own 6 ranked cells, two of them bounds: (11 000 + 51 000 + 8 000 +
    # 40 000 + 45 000 + 35 000) / 6, closed by the folder's https ceiling (80 000 for both:
    # report/ceilings.py) at 45 833
    assert [beast[1], beast[4]] == [
        "≥ 51 000 (≤ 80 000 by CPU)",
        "≥ 31 667 (≤ 45 833 by CPU; 2 of 6 §)",
    ]
    # py's over the 4 of those 6 cells it has (its http json shed 503s, its https plaintext
    # C = 10 FAILed): (5 100 + 20 000 + 4 000 + 13 500) / 4
    assert next(r for r in summary if r[0] == "py")[4] == "10 650 (4 of 6 cells)"
    # the leader's own share is 100 %; py's peak over beast's lower bound: at most 39.2 %
    assert beast[2] == "100.0 %" and next(r for r in summary if r[0] == "py")[2] == "≤ 39.2 %"
    # left out for req/s / for CPU / lower bounds: beast's two generator-bound cells enter as
    # bounds, py's 503-shedding cell counts for neither
    assert beast[9] == "0 / 0 / 2" and next(r for r in summary if r[0] == "py")[9] == "1 / 1 / 0"
    # by peak req/s: beast's lower bound is above py's measured peak, so the order is certain
    assert [r[10] for r in summary[1:]] == ["1", "2"]
    # CPU us/req over beast's 6 cells ranked for it (its § cells among them): (20 + 10 + 25 +
    # 12.5 + 11.11 + 14.29) / 6; its best: 10.00 (http plaintext C = 10)
    assert beast[5:7] == ["10.00", "15.48"] and [r[11] for r in summary[1:]] == ["1", "2"]
    assert "py http json C = 10 (30.0 % non-2xx/errors)" in report_text
    assert "Lower bounds (§, 2 cell(s) - beast: 2)" in report_text
    settings = dict(table_after(report_text, "## Settings")[1:])
    assert settings["Concurrencies"] == "1, 10"
    assert "servers on CPU 0, generator on CPU 1" in settings["Core isolation"]
    assert "py PYTHON_WORKERS=1" in settings["Worker threads"]
    env = dict(table_after(report_text, "## Environment")[1:])
    assert env["host"] == "testhost" and env["cpu model"] == "Test CPU"
    assert env["Machine steal during windows"].startswith("median 1.0 %")
    limits = report_text[report_text.index("## Known limits") :]
    assert "No open-loop latency" in limits
    assert (
        "**node, plaintext, over http and https: not measured** (node is not installed)" in limits
    )
    assert (
        "Generator-bound cells (2, marked §):** beast https json c=10, beast https plaintext c=10"
        in limits
    )
    assert "‡ = under-driven" in report_text
    assert (
        "**Under-driven cells (1, marked ‡):** py http plaintext c=10 (in flight 2.0 of 10 (300 errors))"
        in limits
    )


def test_a_server_that_sheds_load_as_503s_is_marked_and_never_bold(report_text):
    rows = table_after(report_text, "## HTTP/1.1 (http), json, keep-alive")
    by = {(r[0] or prev, r[1]): r[2:] for r, prev in _with_metric(rows[1:])}
    # py answered 60 000 req/s, 30 % of them 503: more req/s and lower latency than beast, and loses
    assert by[("req/s", "py")] == ["60 000 ✗"] and by[("req/s", "beast")] == ["**45 000**"]
    assert by[("p50 (ms)", "py")] == ["0.15 ✗"] and by[("p50 (ms)", "beast")] == ["**0.20**"]
    assert by[("non-2xx + errors", "py")] == ["30.0 % ✗"]
    assert "py http json C = 10: 503 x 108 000" in report_text


def test_contended_cells_are_marked_and_leave_the_peak(tmp_path):
    import json

    from sweep_data import SETTINGS, record, result_dict

    directory = tmp_path / "contended"
    directory.mkdir()
    (directory / results.SETTINGS_FILE).write_text(json.dumps(dict(SETTINGS, contended_reruns=2)))
    path = directory / results.RESULTS_FILE
    quiet = result_dict(10000, 100, 90, 200, 0.5)
    busy = result_dict(30000, 100, 90, 200, 0.5)
    quiet["server"]["machine"]["busy_share"] = (
        0.17  # server 0.5 s + generator 0.1 s of 2 cores x 2 s = 0.15
    )
    busy["server"]["machine"]["busy_share"] = 0.80
    results.append_record(
        path, dict(record("a", "http", "plaintext", "closed", 1, 0, result=quiet), machine_cores=2)
    )
    results.append_record(
        path,
        dict(
            record("a", "http", "plaintext", "closed", 10, 0, result=busy),
            machine_cores=2,
            reruns=2,
        ),
    )
    from loadbench import model

    m = model.load(directory)
    cells = {a.load: a for a in m.cells("a")}
    assert not cells[1].contended and cells[10].contended
    assert cells[10].outside_share == pytest.approx(0.80 - (0.5 + 0.1) / 4)
    assert m.peak("a") == 10000  # the contended 30 000 is not a peak
    text = report.render(directory)
    assert "| req/s | a | 10 000 | 30 000 ⚑ |" in text
    assert "1 cell(s) re-run (2 re-runs" in text and "1 repeat(s) contended, marked" in text


def test_open_loop_percent_is_read_from_old_and_new_records():
    from loadbench import model

    old = {"mode": "open", "connections": 80, "status": "ok"}
    new = {"mode": "open", "connections": 50, "load_pct": 80, "status": "ok"}
    assert model.load_of(old) == (None, 80)
    assert model.load_of(new) == (50, 80)
    assert model.load_of({"mode": "closed", "connections": 10}) == (10, None)
    assert model.flatten(old)["load"] == model.flatten(new)["load"] == 80


def _with_metric(rows):
    prev = None
    for r in rows:
        prev = r[0] or prev
        yield r, prev


def test_aggregate_spread_and_littles_law():
    from sweep_data import CLOSED, record, result_dict

    rows = [
        model.flatten(record("beast", "http", "plaintext", "closed", 1, i, result=result_dict(*v)))
        for i, v in enumerate(CLOSED[("beast", "http", "plaintext", 1)])
    ]
    agg = model.aggregate(rows)[("beast", "http", "plaintext", "closed", 1)]
    assert agg.bad_share == 0 and agg.ranked
    assert (agg.rps.median, agg.rps.min, agg.rps.max) == (11000, 10000, 12000)
    assert agg.inflight.median == pytest.approx(1.0, abs=0.01)
    assert not agg.starved
    assert re.match(r"^\d", f"{agg.cpu_us.median:.2f}")


def test_write_report_writes_charts_and_links_them(tmp_path):
    directory = write_results_dir(tmp_path / "r")
    out = report.write_report(directory)
    text = out.read_text()
    expected = [
        "throughput_peak.png",
        "throughput_average.png",
        "protocol_http_vs_https.png",
        "workloads.png",
        "latency.png",
        "memory_peak_rss.png",
        "connection_setup.png",
        "throughput_vs_concurrency.png",
    ]
    for name in expected:
        data = (directory / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        assert f"]({name})" in text


def test_report_cli_on_a_folder_without_results(tmp_path, capsys):
    from loadbench.cli import main

    assert main(["report", str(tmp_path)]) == 2
    assert "holds no results.jsonl" in capsys.readouterr().err


def test_baseline_changes_the_ratio_column(tmp_path, capsys):
    from loadbench.cli import main

    directory = write_results_dir(tmp_path / "b")
    rows = table_after(report.render(directory, baseline="py"), "## Summary")
    assert rows[0][3] == "Peak: py ÷ this" and rows[0][8] == "Peak RSS: this ÷ py"
    # 20 000 / ≥ 51 000: a measured peak over a lower bound is an upper bound
    assert {r[0]: r[3] for r in rows[1:]} == {"beast": "≤ 0.39x", "py": "1.00x"}
    assert main(["report", str(directory), "--no-charts", "--baseline", "nope"]) == 2
    assert (
        "baseline 'nope' is not a measured server of this sweep (beast, py)"
        in capsys.readouterr().err
    )


def test_a_sweep_where_nothing_ran_still_reports_why(tmp_path):
    import json

    from sweep_data import SETTINGS, record

    directory = tmp_path / "empty"
    directory.mkdir()
    (directory / results.SETTINGS_FILE).write_text(json.dumps(SETTINGS))
    for c in (1, 10):
        results.append_record(
            directory / results.RESULTS_FILE,
            record(
                "node",
                "http",
                "plaintext",
                "closed",
                c,
                0,
                status="skipped",
                error="node is not installed",
            ),
        )
    text = report.write_report(directory).read_text()
    assert not list(directory.glob("*.png")) and "## Charts" not in text
    assert "| req/s | node | n/a | n/a |" in text
    assert "**node, all workloads, over http: not measured** (node is not installed)" in text
