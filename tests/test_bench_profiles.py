"""bench_drivers.perf_profiles reads `perf report` right, and bench/generator_vs_peers.py --report-only
renders the system calls per connection and the profiles - and records from before they existed."""

from __future__ import annotations

import json

from bench_drivers import generator_comparison as generator_vs_peers
from bench_drivers import perf_profiles as profiles
from bench_drivers import tcp_counters

SELF = """\
# Samples: 4K of event 'cpu-clock:ppp'
#
# Overhead       Samples  Shared Object                                      Symbol
# ........  ............  .................................................  ......
#
    17.20%           714  [kernel.kallsyms]                                  [k] _raw_spin_unlock_irqrestore
     3.34%           139  libc.so.6                                          [.] malloc
     1.09%            45  libcrypto.so.3                                     [.] 0x000000000023f64f
     1.00%            41  libcrypto.so.3                                     [.] 0x000000000022f925
     0.84%            35  libcrypto.so.3                                     [.] OPENSSL_cleanse
     0.35%            14  _core.cpython-311-x86_64-linux-gnu.so  [.] loadbench::generator::Connection::handshake
"""
CHILDREN = """\
    56.72%     0.00%             0  libc.so.6                                          [.] start_thread
    13.74%     0.00%             0  libcrypto.so.3                                     [.] ASN1_item_d2i_ex
    13.66%     0.00%             0  libcrypto.so.3                                     [.] 0x00007f6a948fb1d7
     5.61%     0.00%             0  [kernel.kallsyms]                                  [k] __x64_sys_connect
     1.70%     0.00%             0  [kernel.kallsyms]                                  [k] do_syscall_64
"""


def test_perf_report_self_and_children_entries_are_read_and_unexported_addresses_summed():
    entries = profiles.parse_report(SELF)
    assert [e["samples"] for e in entries] == [714, 139, 45, 41, 35, 14]
    assert entries[-1]["symbol"] == "[.] loadbench::generator::Connection::handshake"
    top = profiles.top_entries(entries, 3)
    assert (top[0]["dso"], top[0]["percent"]) == ("[kernel.kallsyms]", 17.2)
    folded = next(e for e in profiles.top_entries(entries) if e["symbol"] == profiles.UNEXPORTED)
    assert (round(folded["percent"], 2), folded["addresses"]) == (2.09, 2)
    points = profiles.entry_points(profiles.parse_report(CHILDREN))
    assert [(e["symbol"], e["percent"]) for e in points] == [
        ("[.] ASN1_item_d2i_ex", 13.74),
        ("[k] __x64_sys_connect", 5.61),
    ]
    assert points[0]["self"] == 0.0
    assert {
        profiles.dso_group(d)
        for d in (
            "[kernel.kallsyms]",
            "libcrypto.so.3",
            "libwolfssl.so.35.3.0",
            "_core.cpython-311-x86_64-linux-gnu.so",
            "libpython3.11.so.1.0",
            "wrk",
            "libluajit-5.1.so.2",
        )
    } == {"kernel", "libcrypto", "libwolfssl", "loadbench _core", "python", "wrk", "other"}


def _setup_record(**extra) -> dict:
    return {
        "part": "setup",
        "generator": "loadbench",
        "server": "loadbench-server",
        "scheme": "https",
        "connections": 20,
        "repeat": 1,
        "status": "ok",
        "responses": 100,
        "non_2xx": 0,
        "errors": 0,
        "duration_s": 1.0,
        "rps": 100.0,
        "new_connections": 100,
        "gen_cpu_s": 0.04,
        "gen_busy": 1.0,
        "gen_cpu_us_per_resp": 400.0,
        "gen_cpu_us_per_conn": 400.0,
        "server_cpu_us_per_conn": 200.0,
        "server_cpu_us_per_resp": 200.0,
        "server_busy": 0.5,
        "conn_per_s": 100.0,
        "foreign_cores": 0.0,
        "extra": {},
        **extra,
    }


def test_report_only_renders_old_and_new_records(tmp_path, capsys):
    old_syscalls = {
        "part": "syscalls",
        "generator": "loadbench",
        "server": "loadbench-server",
        "scheme": "http",
        "connections": 50,
        "repeat": 1,
        "status": "ok",
        "responses": 1000,
        "calls_per_resp": 0.5,
        "per_resp_by_call": {"sendto": 0.25, "recvfrom": 0.25},
    }
    new_syscalls = {
        **old_syscalls,
        "mode": "setup",
        "scheme": "https",
        "connections": 20,
        "new_connections": 300,
        "calls_per_conn": 14.27,
        "per_conn_by_call": {"getpid": 3.0, "connect": 1.0},
    }
    profile = {
        "part": "profile",
        "mode": "setup",
        "generator": "loadbench",
        "server": "loadbench-server",
        "scheme": "https",
        "connections": 20,
        "repeat": 1,
        "status": "ok",
        "samples": 4000,
        "event": "cpu-clock:ppp",
        "by_group": {"libcrypto": 56.0, "kernel": 19.0},
        "top": profiles.top_entries(profiles.parse_report(SELF)),
        "entry_points": profiles.entry_points(profiles.parse_report(CHILDREN)),
    }
    stem = tmp_path / "gvp"
    lines = [
        _setup_record(),
        old_syscalls,
        new_syscalls,
        profile,
        {"record": "environment", "environment": {"Date (UTC)": "today"}, "command": "test"},
    ]
    stem.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert (
        generator_vs_peers.main(
            ["--report-only", "--out", str(stem), "--generators", "loadbench", "--no-h2-part"]
        )
        == 0
    )
    text = stem.with_suffix(".md").read_text()
    assert "## System calls per response (keep-alive, c=50" in text
    assert "| loadbench (https) | 14.27 | 300 | getpid 3.00, connect 1.00 |" in text
    assert "| loadbench, https (full handshake) | 4,000 | 400.0 |" in text
    assert "`(not exported)` (2 addresses)" in text and "`[.] ASN1_item_d2i_ex`" in text
    capsys.readouterr()


SNMP = """\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 100
Tcp: RtoAlgorithm RtoMin ActiveOpens PassiveOpens OutSegs OutRsts
Tcp: 1 200 1000 1000 20000 5
"""
NETSTAT = """\
TcpExt: SyncookiesSent TW TWRecycled
TcpExt: 0 3000 0
"""


def test_kernel_tcp_counters_are_read_and_divided_per_connection(tmp_path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "snmp").write_text(SNMP)
    (tmp_path / "net" / "netstat").write_text(NETSTAT)
    before = tcp_counters.tcp_counters(tmp_path)
    assert before == {"opens": 1000, "segments": 20000, "resets": 5, "time_waits": 3000}
    after = {"opens": 1100, "segments": 20700, "resets": 105, "time_waits": 3000}
    assert tcp_counters.tcp_per_connection(before, after, 100) == {
        "opens": 1.0,
        "segments": 7.0,
        "resets": 1.0,
        "time_waits": 0.0,
    }
    assert tcp_counters.tcp_per_connection(before, after, 0) == {}
    live = tcp_counters.tcp_counters()
    assert set(live) == {"opens", "segments", "resets", "time_waits"}


def test_lean_tcp_generator_is_setup_only_and_its_rows_are_reported(tmp_path, capsys):
    from bench_drivers import generators

    lean = generators.LoadbenchLeanTcp()
    argv = lean.argv("http://127.0.0.1:1/", 20, 5, False, tmp_path / "o.json")
    assert argv[-2:] == ["--ack-with-request", "--rst-close"] and "--disable-keepalive" in argv
    try:
        lean.argv("http://127.0.0.1:1/", 20, 5, True, tmp_path / "o.json")
        raise AssertionError("keep-alive must be refused")
    except generators.UnsupportedMode as exc:
        assert "connection setup only" in str(exc)
    http = dict(scheme="http", gen_cpu_us_per_conn=44.0, server_cpu_us_per_conn=22.0)
    records = [
        _setup_record(**http, tcp_segments_per_conn=10.0, tcp_resets_per_conn=0.0),
        _setup_record(
            **{**http, "generator": "wrk", "gen_cpu_us_per_conn": 45.0},
            tcp_segments_per_conn=10.0,
            tcp_resets_per_conn=0.0,
        ),
        _setup_record(
            **{
                **http,
                "generator": "loadbench-lean-tcp",
                "gen_cpu_us_per_conn": 33.75,
                "server_cpu_us_per_conn": 18.0,
            },
            tcp_segments_per_conn=7.0,
            tcp_resets_per_conn=1.0,
        ),
        {"record": "environment", "environment": {"Date (UTC)": "today"}, "command": "test"},
    ]
    stem = tmp_path / "gvp"
    stem.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert (
        generator_vs_peers.main(
            [
                "--report-only",
                "--out",
                str(stem),
                "--generators",
                "loadbench,wrk,loadbench-lean-tcp",
                "--servers",
                "loadbench-server",
                "--no-h2-part",
            ]
        )
        == 0
    )
    text = stem.with_suffix(".md").read_text()
    assert "loadbench-server: loadbench-lean-tcp 33.8 vs wrk 45.0 us (0.75x;" in text
    assert "| loadbench-lean-tcp | 7.00 / 1.00 |" in text and "| wrk | 10.00 / 0.00 |" in text
    capsys.readouterr()


def test_open_loop_part_holds_each_tool_against_its_own_closed_loop(tmp_path, capsys):
    from bench_drivers import generators

    batch = generators.send_batch("1ms")
    try:
        batch.argv("http://127.0.0.1:1/", 50, 5, True, tmp_path / "o.json")
        raise AssertionError("a closed loop must be refused")
    except generators.UnsupportedMode as exc:
        assert "open loop only" in str(exc)
    batch.rate = 10000
    argv = batch.argv("http://127.0.0.1:1/", 50, 5, True, tmp_path / "o.json")
    assert argv[-6:] == ["-q", "10000", "--max-connections", "50", "--send-batch", "1ms"]
    oha = generators.Oha()
    oha.binary, oha.rate = "oha", 2000
    assert "--latency-correction" in oha.argv("http://127.0.0.1:1/", 50, 5, True, tmp_path / "o")

    def run(part: str, gen: str, cpu: float, engine=None, **fields) -> dict:
        extra = {"self_cpu_us_per_req": engine, "self_cpu_s": engine and engine * 0.05}
        if part == "open" and gen != "oha":  # oha reports no lateness, nothing unfinished
            rate = {"late_sends": 3, "lateness_us": {"p99": 80.0}, "wakeups": 25000}
            extra.update(unfinished=0, rate=rate)
        return {
            "part": part, "generator": gen, "server": "nginx", "scheme": "http",
            "connections": 50, "repeat": 1, "status": "ok", "rps": 10000.0, "duration_s": 5.0,
            "gen_cpu_us_per_resp": cpu, "outside_share": 0.01, "extra": extra, "responses": 50000,
            "latency_us": {"p99": 900.0}, **fields,
        }  # fmt: skip

    records = [
        run("keepalive", "loadbench", 6.0, 5.0),
        run("keepalive", "oha", 10.0),
        run("open", "loadbench", 7.0, 6.0, rate=10000, rate_basis="10000/s"),
        run("open", "loadbench-send-batch-1ms", 6.5, 5.5, rate=10000, rate_basis="10000/s"),
        run("open", "oha", 12.0, rate=10000, rate_basis="10000/s"),
        {"record": "environment", "environment": {"Date (UTC)": "today"}, "command": "test"},
    ]
    stem = tmp_path / "ol"
    stem.with_suffix(".jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert generator_vs_peers.main(["--report-only", "--only-open-loop", "--out", str(stem)]) == 0
    text = stem.with_suffix(".md").read_text()
    # engine against engine for loadbench (its variant against loadbench's closed loop), whole
    # process against whole process for oha
    assert (
        "| nginx | 10 000 (10000/s) | 50 | loadbench | 10 000 | 0 | 3 | 80 | 900 | 0.50 | 7.00 | 6.00 | 5.00 "
        "| 1.20 |" in text
    )
    assert (
        "| loadbench-send-batch-1ms | 10 000 | 0 | 3 | 80 | 900 | 0.50 | 6.50 | 5.50 | 5.00 | 1.10 |"
        in text
    )
    assert "| oha | 10 000 | n/a | n/a | n/a | 900 | n/a | 12.00 | n/a | 10.00 | 1.20 |" in text
    assert "## The closed loop" in text and "Headline" not in text
    capsys.readouterr()
