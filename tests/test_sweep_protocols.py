"""The protocol axis of a sweep (http, https, h2c, h2), streams per HTTP/2 connection,
request-count cells, targets that declare their protocols (n/a with the reason otherwise),
variants, the default sweep's time budget, and small real sweeps against the Beast server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_data import result_dict

from loadbench import Sweep, Target, model
from loadbench.core import protocols
from loadbench.core.errors import ConfigError
from loadbench.report import document as report
from loadbench.sweep import results_folder as results
from loadbench.sweep.file import (
    DEFAULT_CAPACITY_BUDGET_S,
    DEFAULT_CELL_BUDGET_S,
    default_sweep,
    sweep_from_dict,
)
from loadbench.sweep.registry import default_peer_targets, peer_registry
from loadbench.sweep.targets import beast_serves_h3

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "bench" / "peers"

HTTP2 = protocols.names(family="HTTP/2")


def test_protocols_streams_and_requests_are_checked():
    sweep = Sweep(protocols=["http", "https", "h2c", "h2"], streams={"h2c": 4})
    assert [sweep.streams_for(p) for p in ("http", "https", "h2c", "h2")] == [1, 1, 4, 10]
    assert Sweep(protocols=["h2"], streams=7).streams_for("h2") == 7
    for bad, named in [
        ({"protocols": ["h4"]}, "'h4' is not one of http, https, h2c, h2, h3"),
        ({"protocols": ["http", "http"]}, "protocols must be unique"),
        ({"streams": {"https": 2}}, "streams.https: HTTP/1.1 has no streams"),
        ({"pipeline": 0}, "pipeline: 0 is not a positive integer"),
        ({"pipeline": True}, "pipeline: True is not a positive integer"),
        ({"streams": 0}, "streams.h2c: 0 is not a positive integer"),
        ({"requests": 0}, "requests: 0 is not a positive integer"),
        ({"detail_protocols": ["spdy"]}, "detail_protocols: 'spdy'"),
        ({"targets": [Target("a"), Target("b", variant_of="c")]}, "variant_of 'c' is not another"),
    ]:
        with pytest.raises(ConfigError, match=named):
            Sweep(**bad)


def test_detail_protocols_limit_connection_setup_and_open_loop_cells():
    sweep = Sweep(
        protocols=["http", "h2c"],
        concurrencies=[4],
        connection_setup=True,
        open_fractions=[0.5],
        detail_protocols=["http"],
    )
    modes = {(c.protocol, c.mode) for c in sweep.cells()}
    assert modes == {("http", "closed"), ("http", "connect"), ("http", "open"), ("h2c", "closed")}
    assert [c.id for c in sweep.cells() if c.protocol == "h2c"] == ["beast|h2c|plaintext|c4|r0"]


def test_toml_keys_of_the_protocol_axis(tmp_path):
    sweep = sweep_from_dict(
        {
            "protocols": ["http", "h2c", "h2"],
            "streams": {"h2c": 10, "h2": 20},
            "requests": 100000,
            "detail_protocols": ["http"],
            "targets": [
                {"name": "beast"},
                {"name": "beast-2w", "workers": 2, "variant_of": "beast"},
                {
                    "name": "peer",
                    "kind": "command",
                    "argv": ["x", "{port}"],
                    "h2c_argv": ["x", "{port}", "--h2c"],
                    "protocol_notes": {"h2": "no TLS in this peer"},
                },
            ],
        },
        base_dir=tmp_path,
    )
    assert sweep.requests == 100000 and sweep.streams_for("h2") == 20
    peer = sweep.targets[2]
    assert peer.protocols == ["http", "h2c"]
    assert peer.unavailable_reason("h2") == "no TLS in this peer"
    assert peer.unavailable_reason("https") == "peer does not serve https (serves http, h2c)"
    assert sweep.targets[1].workers == 2 and sweep.targets[1].variant_of == "beast"
    with pytest.raises(ConfigError, match="protocol_notes.h4"):
        sweep_from_dict(
            {
                "targets": [
                    {"name": "p", "kind": "command", "argv": ["x"], "protocol_notes": {"h4": "x"}}
                ]
            }
        )


def test_an_http2_only_command_target_is_valid():
    t = Target("h2only", kind="command", h2c_argv=["node", "x.js", "{port}"])
    assert t.protocols == ["h2c"] and "does not serve http (serves h2c)" in t.unavailable_reason(
        "http"
    )


def test_every_default_peer_declares_its_protocols():
    peers = {t.name: t for t in default_peer_targets(PEERS)}
    # the registry's every peer (test_peer_registry pins the list), with the protocols it serves
    assert set(peers) == {t.name for t in peer_registry(PEERS)} - {"beast"}
    http1_only = {"python-asyncio", "python-asyncio-3.13", "ruby-puma"}
    for name, peer in peers.items():
        if name in http1_only:
            assert peer.protocols == ["http", "https"], name
            assert "HTTP/1.1 only" in peer.unavailable_reason("h2c")
        elif name in ("quic-go", "caddy"):  # the HTTP/3 peers: TLS only
            assert peer.protocols == ["https", "h2", "h3"], name
            assert "TLS only" in peer.unavailable_reason(
                "http"
            ) or "HTTPS" in peer.unavailable_reason("http")
        elif name != "nim":
            assert peer.protocols == ["http", "https", "h2c", "h2"], name
    assert "falcon" in peers["ruby-puma"].unavailable_reason("h2")  # and why not falcon
    assert peers["nim"].protocols == ["http"]
    assert "no TLS" in peers["nim"].unavailable_reason("https")
    assert Target("beast").protocols == ["http", "https", "h2c", "h2"] + (
        ["h3"] if beast_serves_h3() else []
    )


def test_default_sweep_covers_http2_and_fits_its_budget_on_two_cores():
    sweep = default_sweep(peers_dir=PEERS)
    assert sweep.protocols == ["http", "https", "h2c", "h2"]
    cells = sweep.cells()  # every peer counted as installed: the budget of a fully equipped machine
    declared = {t.name: t.protocols for t in sweep.targets}
    run = [
        c
        for c in cells
        if c.protocol in declared[c.target]
        and c.workload
        not in next(t for t in sweep.targets if t.name == c.target).unsupported_workloads
    ]
    groups = {(c.target, c.protocol) for c in run}
    # warm-up + window per repeat, a server start per process - each repeat's block starts every
    # (target, protocol) afresh - and one gate probe: the costs the timestamps of the 2026-11-30
    # sweep show (a probe per cell cost it 320 s of 795; the next server's first cell takes the
    # quiet figure of the window before it)
    processes = {(c.repeat, c.target, c.protocol) for c in run}
    assert len(processes) == 3 * len(groups)
    planned = sweep.planned_seconds(run)
    searches = [c for c in run if c.mode == "capacity"]
    repeat = sweep.warmup + sweep.duration + 0.01

    # (and settling each fresh server: 1.7 s per server start, capacity searches included, or
    # the target's registry warm-up - PyPy's, node's - when longer)
    def settle(target: str) -> float:
        return max(1.7, next(t.warmup for t in sweep.targets if t.name == target) + 0.2)

    # (a search's steps are 1 s whatever the cells' windows; the last confirms its answer for
    # the capacity hold, 5 s)
    assert sweep.capacity_step == 1.0 and sweep.duration == 0.75
    step = sweep.warmup + sweep.capacity_step + 0.01
    hold = sweep.warmup + sweep.capacity_hold + 0.01
    searches_s = sum(
        0.15 + settle(c.target) + (sweep.capacity_steps() - 1) * step + hold for c in searches
    )
    assert planned == pytest.approx(
        (len(run) - len(searches)) * repeat
        + searches_s
        + 1.0
        + sum(0.15 + settle(t) for _, t, _ in processes)
    )
    # three capacity searches per server, each on a fresh server, over http, at C = 25, within
    # their own budget
    assert {(c.target, c.protocol, c.load) for c in searches} == {(t, "http", 25) for t in declared}
    assert sorted(c.repeat for c in searches if c.target == "beast") == [0, 1, 2]
    assert searches_s <= DEFAULT_CAPACITY_BUDGET_S
    assert planned <= DEFAULT_CELL_BUDGET_S + DEFAULT_CAPACITY_BUDGET_S, (
        f"{len(run)} cells, {planned:.0f} s"
    )
    assert sweep.repeats >= 3  # a median and a spread per cell
    assert {t for t, p in groups if p in HTTP2} == set(declared) - {
        "python-asyncio",
        "python-asyncio-3.13",
        "ruby-puma",
        "nim",
    }


class FakeRun:
    """Stands in for loadbench.run: records each call, answers with a made-up result."""

    def __init__(self):
        self.calls = []

    def __call__(self, url, **kwargs):
        self.calls.append((url, kwargs))
        data = result_dict(
            1000.0 * (2 if kwargs.get("protocol") == "h2" else 1), 500, 400, 900, 0.1
        )

        class R:
            def to_dict(self):
                return data

        return R()


def python_peer() -> Target:
    return next(t for t in default_peer_targets(PEERS) if t.name == "python-asyncio")


def test_runner_gets_protocol_and_streams_only_for_http2_cells(tmp_path):
    fake = FakeRun()
    sweep = Sweep(
        settle=False,  # a scripted runner: its answers are the cells' own
        targets=[Target("beast"), python_peer()],
        protocols=["http", "https", "h2c", "h2"],
        concurrencies=[3],
        streams={"h2c": 10, "h2": 5},
        requests=500,
        repeats=1,
        peers_dir=str(PEERS),
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False, runner=fake, environment=False)
    by_scheme = {}
    for url, kwargs in fake.calls:
        assert kwargs["requests"] == 500 and kwargs["duration"] is None
        if "protocol" in kwargs:
            assert kwargs["protocol"] == "h2"
            by_scheme[url.split(":")[0]] = kwargs["streams"]
        else:
            assert "streams" not in kwargs
    assert by_scheme == {"http": 10, "https": 5}  # h2c over http://, h2 over https://
    assert len(fake.calls) == 4 + 2  # beast on four protocols, the asyncio peer on two
    records = {r["id"]: r for r in results.read_records(tmp_path / "results.jsonl")}
    assert records["beast|h2|plaintext|c3|r0"]["streams"] == 5
    assert records["beast|http|plaintext|c3|r0"].get("streams") is None
    skipped = records["python-asyncio|h2c|plaintext|c3|r0"]
    assert skipped["status"] == "skipped" and "HTTP/1.1 only" in skipped["error"]
    text = report.render(tmp_path)
    assert "n/a: python-asyncio h2c: the asyncio.Protocol peer speaks HTTP/1.1 only" in text
    assert "| beast | 1 000 | 1 000 | 2 000 | 2 000 | 2.00x |" in text


def test_pipeline_goes_to_keepalive_http1_cells_only(tmp_path):
    # plaintext-pipelined is a built-in that no sweep runs unless it names it
    assert "plaintext-pipelined" not in [w.name for w in default_sweep(peers_dir=PEERS).workloads]
    fake = FakeRun()
    sweep = sweep_from_dict(
        {
            "protocols": ["http", "h2c"],
            "concurrencies": [2],
            "requests": 50,
            "repeats": 1,
            "contended_reruns": 0,
            "connection_setup": True,
            "connection_setup_workload": "plaintext-pipelined",
            "pipeline": 2,
            "settle": False,  # a scripted runner: its answers are the cells' own
            "workloads": ["plaintext-pipelined", {"name": "json", "path": "/json"}],
        }
    )
    sweep.run(tmp_path, progress=False, notes=False, runner=fake, environment=False)
    calls = {
        (url.rsplit("/", 1)[1], kwargs.get("protocol"), kwargs["keepalive"]): kwargs.get("pipeline")
        for url, kwargs in fake.calls
    }
    assert calls == {
        ("plaintext", None, True): 16,  # the workload's own depth (TechEmpower's)
        ("plaintext", None, False): None,  # a connection per request carries one
        ("plaintext", "h2", True): None,  # HTTP/2 multiplexes with streams instead
        ("plaintext", "h2", False): None,
        ("json", None, True): 2,  # the sweep's depth
        ("json", "h2", True): None,
    }
    records = {r["id"]: r for r in results.read_records(tmp_path / "results.jsonl")}
    assert records["beast|http|plaintext-pipelined|c2|r0"]["pipeline"] == 16
    assert "pipeline" not in records["beast|h2c|plaintext-pipelined|c2|r0"]
    assert "pipeline" not in records["beast|http|plaintext-pipelined|connect20|r0"]
    text = report.render(tmp_path)  # the settings say which workloads were pipelined
    assert "plaintext-pipelined: GET /plaintext, 16 pipelined per HTTP/1.1 connection" in text
    assert "json: GET /json, 2 pipelined per HTTP/1.1 connection" in text
    assert "HTTP/1.1: one request in flight per connection unless its workload is pipelined" in text


def test_tls_library_goes_to_the_tls_cells_only_and_is_checked(tmp_path):
    from loadbench.core import _core

    with pytest.raises(
        ConfigError, match="tls_library: 'gnutls' is not one of openssl, wolfssl, rustls"
    ):
        Sweep(protocols=["https"], tls_library="gnutls")
    assert (
        sweep_from_dict({"tls_library": "wolfssl", "protocols": ["http"]}).tls_library == "wolfssl"
    )
    library = next((name for name in ("rustls", "wolfssl") if name in _core.tls_libraries()), None)
    if library is None:
        pytest.skip("built without rustls and wolfSSL")
    fake = FakeRun()
    sweep = Sweep(
        settle=False,  # a scripted runner: its answers are the cells' own
        targets=[Target("beast")],
        protocols=["http", "https", "h2c", "h2"],
        concurrencies=[2],
        requests=50,
        repeats=1,
        contended_reruns=0,
        tls_library=library,
    )
    sweep.run(tmp_path, progress=False, notes=False, runner=fake, environment=False)
    by_scheme = {
        (url.split(":")[0], kwargs.get("protocol")): kwargs.get("tls_library")
        for url, kwargs in fake.calls
    }
    assert by_scheme == {
        ("http", None): None,
        ("https", None): library,
        ("http", "h2"): None,
        ("https", "h2"): library,
    }
    assert f"the generator's TLS library: {library}" in report.render(tmp_path)


def _check_exact(records, n):
    for r in records:
        assert r["status"] == "ok", r
        res = r["result"]
        assert res["responses"] + sum(res["errors"].values()) == n, r["id"]
        assert res["status_codes"] == {"200": res["responses"]}


def test_small_real_sweep_http_and_https_with_request_count_cells(tmp_path):
    sweep = Sweep(
        targets=[Target("beast"), Target("beast-2w", workers=2, variant_of="beast")],
        workloads=["plaintext", "json"],
        concurrencies=[4],
        protocols=["http", "https"],
        requests=20000,
        repeats=1,
        warmup=0.1,
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    records = results.read_records(tmp_path / "results.jsonl")
    assert len(records) == 2 * 2 * 2
    _check_exact(records, 20000)
    assert {r["server"]["workers"] for r in records if r["target"] == "beast-2w"} == {2}
    report.write_report(tmp_path)
    m = model.load(tmp_path)
    rps = {(r["target"], r["protocol"], r["workload"]): r["result"]["rps"] for r in records}
    for (t, p, w), value in rps.items():
        assert m.aggs[(t, p, w, "closed", 4)].rps.median == value  # one repeat: its own number
    for t in ("beast", "beast-2w"):  # a busy shared machine may leave cells unranked (contended)
        ranked = [m.aggs[(t, "https", w, "closed", 4)] for w in ("plaintext", "json")]
        ranked = [a.rps.median for a in ranked if a.ranked]
        assert m.peak(t, "https") == (max(ranked) if ranked else None)
    text = (tmp_path / "report.md").read_text()
    assert "## Variant speedup: beast-2w vs beast" in text
    assert "20 000 requests (responses + errors)" in text
    assert "## Protocol comparison" not in text  # no HTTP/2 measured: no H2/H1 table


def test_small_real_sweep_over_all_four_protocols(tmp_path):
    sweep = Sweep(
        targets=[Target("beast")],
        workloads=["plaintext", "json"],
        concurrencies=[4],
        protocols=["http", "https", "h2c", "h2"],
        streams=4,
        repeats=1,
        duration=1.0,
        warmup=0.2,
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    records = results.read_records(tmp_path / "results.jsonl")
    assert len(records) == 4 * 2
    for r in records:
        assert r["status"] == "ok", r
        res = r["result"]
        assert res["status_codes"] == {"200": res["responses"]} and res["responses"] > 0
        assert res["config"].get("protocol", "http/1.1") == (
            "h2" if r["protocol"] in HTTP2 else "http/1.1"
        )
        if r["protocol"] in HTTP2:
            assert res["config"]["streams"] == 4 and r["streams"] == 4
    report.write_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    m = model.load(tmp_path)
    # the peaks from the raw records (one repeat: a cell's median is its own rps), over the cells
    # the model ranks (a busy shared machine may leave some contended or generator-bound)
    ranked = {k[:3] for k, a in m.aggs.items() if a.ranked}
    peak = {}
    for p in ("http", "https", "h2c", "h2"):
        values = [
            r["result"]["rps"]
            for r in records
            if r["protocol"] == p and ("beast", p, r["workload"]) in ranked
        ]
        peak[p] = max(values) if values else None
    for h1, h2 in (("http", "h2c"), ("https", "h2")):
        section = text.split(f": {h1} vs {h2}")[1].split("###")[0]
        if peak[h1] is None or peak[h2] is None:
            assert m.h2_h1_ratio("beast", h1, h2) is None and "| n/a |" in section
            continue
        assert m.h2_h1_ratio("beast", h1, h2) == pytest.approx(peak[h2] / peak[h1])
        assert f"{peak[h2] / peak[h1]:.2f}x" in section
    if all(peak.values()):  # a chart needs ranked values
        assert (tmp_path / "protocol_peak.png").exists() and (
            tmp_path / "latency_by_protocol.png"
        ).exists()


def test_sweep_plan_prints_the_planned_time_and_measures_nothing(tmp_path, capsys, monkeypatch):
    from loadbench.cli import main

    monkeypatch.chdir(REPO)  # the default sweep finds its peers under ./bench/peers
    out = tmp_path / "never"
    assert main(["sweep", "--plan", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "planned" in captured.err and "min on a quiet machine" in captured.err
    # every server gets its lines; beast serves all four protocols
    assert all(f"beast            {p}" in captured.out for p in ("http", "https", "h2c", "h2"))
    assert not out.exists()  # nothing measured, no results folder


def test_sweep_contended_reruns_must_be_zero_or_more(tmp_path, capsys, monkeypatch):
    from loadbench.cli import main

    monkeypatch.chdir(REPO)
    out = tmp_path / "never"
    assert main(["sweep", "--plan", "--contended-reruns", "-1", "--out", str(out)]) == 2
    assert "--contended-reruns -1: must be 0 or more" in capsys.readouterr().err
    assert main(["sweep", "--plan", "--contended-reruns", "0", "--out", str(out)]) == 0
    assert not out.exists()


def test_a_peer_not_installed_is_said_once_per_sweep_not_once_per_protocol(tmp_path, capsys):
    """Issue 58: a runtime bench/install-peers.sh brings (rustup, CPython 3.13) is missing; the
    sweep says so in one line naming every protocol it skips, not in one line per protocol."""
    argv = ["{peers}/no-such-peer/loadbench-peer-gone", "{port}"]
    gone = Target(
        "gone",
        kind="command",
        argv=argv,
        https_argv=argv,
        h2c_argv=argv,
        h2_argv=argv,
        requires=["{peers}/no-such-peer/loadbench-peer-gone"],
        requires_note="needs rustup: bash bench/install-peers.sh",
    )
    sweep = Sweep(
        settle=False,
        targets=[Target("beast"), gone],
        protocols=["http", "https", "h2c", "h2"],
        concurrencies=[3],
        requests=50,
        repeats=1,
        peers_dir=str(PEERS),
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=True, runner=FakeRun(), environment=False)
    said = [line for line in capsys.readouterr().err.splitlines() if "needs rustup" in line]
    assert len(said) == 1, said
    assert said[0].startswith("loadbench: skipping gone http/https/h2c/h2: "), said
