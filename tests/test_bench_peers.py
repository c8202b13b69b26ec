"""The benchmark peers (bench/peers) answer the shared routes exactly, launched the way the
bench drivers launch them: the registry's entry (bench/peers/peers.toml) through
loadbench.sweep.targets.launch, pinned, ready when it answers."""

from __future__ import annotations

import http.client
import shutil
import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench_drivers import environment_block, gate, repeats
from bench_drivers.peers import LaunchedPeer, PeerChoice, launch_peer, unavailable

PEERS = Path(__file__).resolve().parent.parent / "bench" / "peers"


# The bench drivers' helpers these tests exercise, under the name the drivers once shared.
benchlib = SimpleNamespace(
    summarize=repeats.summarize,
    wait_quiet=gate.wait_quiet,
    make_gate=gate.make_gate,
    outside_share=gate.outside_share,
    foreign_cores=gate.foreign_cores,
    gate_note=gate.gate_note,
    machine_note=environment_block.machine_note,
)


def _peer(peer: str, protocol: str = "http", workers: int = 1) -> LaunchedPeer:
    return launch_peer(PeerChoice(peer, peer, protocol), cpus=[0], peers_dir=PEERS, workers=workers)


def _missing(peer: str, protocol: str = "http") -> bool:
    return unavailable(PeerChoice(peer, peer, protocol), PEERS) is not None


PLAINTEXT = b"Hello, World!\n"
JSON = b'{"message":"Hello, World!"}'


def _get(
    peer: LaunchedPeer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict | None = None,
) -> tuple[int, str, bytes]:
    if peer.https:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", peer.port, timeout=5, context=ssl._create_unverified_context()
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type", ""), resp.read()
    finally:
        conn.close()


def _keepalive_count(peer: LaunchedPeer, n: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", peer.port, timeout=5)
    served = 0
    for _ in range(n):
        conn.request("GET", "/plaintext")
        resp = conn.getresponse()
        served += resp.read() == PLAINTEXT
    conn.close()
    return served


def test_a_contended_repeat_is_measured_again_and_the_superseded_one_kept_apart() -> None:
    """Bursts of steal or of another process: the bench re-measures a contended repeat (as the
    sweep does a cell), writes every attempt to the raw data, and its tables read the last."""
    from types import SimpleNamespace

    shares = iter([0.4, 0.3, 0.01, 0.5, 0.5, 0.5])
    measure = lambda: {"status": "ok", "outside_share": next(shares)}  # noqa: E731
    written: list[dict] = []
    sink = SimpleNamespace(write=written.append)
    records: list[dict] = []
    g = gate.make_gate(SimpleNamespace(no_wait=True, wait_timeout=1.0))
    first = gate.measure_uncontended(g, 2, measure, sink, records)
    assert first["outside_share"] == 0.01 and first["attempt"] == 3
    # retries exhausted: the last attempt is kept, contended, and says so in the gate note
    last = gate.measure_uncontended(g, 2, measure, sink, records)
    assert last["outside_share"] == 0.5 and last["attempt"] == 3 and not last.get("superseded")
    assert written == records and len(records) == 6
    assert [r["outside_share"] for r in gate.kept(records)] == [0.01, 0.5]
    note = gate.gate_note({"skipped": True, "load1_at_start": 0.0}, records)
    assert (
        "1 repeat(s) contended" in note
        and "after 4 contended attempt(s) were measured again" in note
    )


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not installed (bench/install-peers.sh)"
)
@pytest.mark.parametrize("workers", [1, 2])
def test_node_peer_routes(workers: int) -> None:
    with _peer("node", workers=workers) as peer:
        assert _get(peer, "GET", "/") == (200, "text/plain", PLAINTEXT)
        assert _get(peer, "GET", "/plaintext") == (200, "text/plain", PLAINTEXT)
        assert _get(peer, "GET", "/json") == (200, "application/json", JSON)
        assert _get(
            peer, "POST", "/echo", b"abc\x00def", {"Content-Type": "application/x-test"}
        ) == (200, "application/x-test", b"abc\x00def")
        assert _get(peer, "GET", "/missing")[0] == 404
        assert _get(peer, "POST", "/plaintext")[0] == 405
        assert _keepalive_count(peer, 50) == 50
        assert peer.snapshot().cpu_s >= 0.0


@pytest.mark.skipif(_missing("nginx"), reason="nginx is not installed (bench/install-peers.sh)")
def test_nginx_peer_routes_and_tree_cpu() -> None:
    with _peer("nginx") as peer:
        assert _get(peer, "GET", "/") == (200, "text/plain", PLAINTEXT)
        assert _get(peer, "GET", "/plaintext") == (200, "text/plain", PLAINTEXT)
        assert _get(peer, "GET", "/json") == (200, "application/json", JSON)
        assert _get(peer, "GET", "/missing")[0] == 404
        assert _keepalive_count(peer, 50) == 50
        tree = peer.snapshot().pids
        assert len(tree) == 3  # launcher + nginx master + one worker: all charged to the peer
        words = [
            w
            for pid in tree
            for w in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
        ]
        run_dir = Path(words[words.index(b"-p") + 1].decode())
        assert (run_dir / "nginx.conf").is_file()
    assert not run_dir.exists()  # the launcher removes its run dir when nginx stops


@pytest.mark.skipif(
    _missing("nginx", "https") or shutil.which("openssl") is None,
    reason="nginx or openssl is not installed",
)
def test_nginx_tls_peer_serves_tls13_with_ec_certificate() -> None:
    with _peer("nginx", "https") as peer:
        assert _get(peer, "GET", "/plaintext") == (200, "text/plain", PLAINTEXT)
        ctx = ssl._create_unverified_context()
        import socket

        with socket.create_connection(("127.0.0.1", peer.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.version() == "TLSv1.3"
                cert = tls.getpeercert(binary_form=True)
        assert b"localhost" in cert


def test_bench_drivers_share_the_gate_median_and_outside_cpu_rule() -> None:
    from types import SimpleNamespace

    # the one median (even count: mean of the middle two), as in the sweep's report
    assert benchlib.summarize([4.0, None, 1.0, 3.0, 2.0]).median == 2.5
    # --no-wait: the gate is skipped but the load at start is still recorded
    first = benchlib.wait_quiet(benchlib.make_gate(SimpleNamespace(no_wait=True, wait_timeout=1.0)))
    assert first["skipped"] and first["load1_at_start"] >= 0
    # outside CPU per repeat: other processes' CPU over 2 s x cores
    import os

    cores = os.cpu_count() or 1
    server = {"machine": {"busy_share": 0.5}, "window_s": 2.0, "cpu_s": 0.5, "others_cpu_s": 0.3}
    share = benchlib.outside_share(server, 0.5)
    assert share == pytest.approx(0.3 / (2.0 * cores))
    assert benchlib.foreign_cores(server, 0.5) == pytest.approx(0.3 / 2.0)  # cores, over the 2 s
    # a block from before the per-process reading: busy share minus server + generator
    old = {"machine": {"busy_share": 0.5}, "window_s": 2.0, "cpu_s": 0.5}
    assert benchlib.outside_share(old, 0.5) == max(0.0, 0.5 - 1.0 / (2.0 * cores))
    records = [
        {"status": "ok", "outside_share": 0.2, "gate": {"timed_out": True}},
        {"status": "ok", "outside_share": 0.01, "gate": {"timed_out": False}},
    ]
    note = benchlib.gate_note(first, records)
    assert note.startswith("before the run: skipped (--no-wait)")
    assert "1 of 2 repeat(s) measured after the gate timed out; 1 repeat(s) contended" in note


@pytest.mark.skipif(
    shutil.which("curl") is None, reason="curl is not installed (apt-get install curl)"
)
def test_h2_peers_answer_over_http2(tmp_path: Path) -> None:
    """Every peer of the HTTP/2 benchmark (server_vs_peers --protocol h2) that is installed
    answers / and /json over HTTP/2 (h2c prior knowledge or TLS with ALPN h2)."""
    import argparse
    import subprocess

    from bench_drivers import server_comparison_h2 as server_h2_part

    args = argparse.Namespace(
        servers=list(server_h2_part.known_servers(PEERS)), peers_dir=PEERS, beast_bin=None
    )
    specs = server_h2_part.peer_choices(args)
    assert specs["loadbench-server h2c"] is not None and specs["loadbench-server h2"] is not None
    for name, spec in specs.items():
        if unavailable(spec, PEERS):
            continue
        with launch_peer(spec, cpus=[0], peers_dir=PEERS) as peer:
            for path, body in (("/", PLAINTEXT), ("/json", JSON)):
                mode = ["--http2", "-k"] if spec.https else ["--http2-prior-knowledge"]
                out = subprocess.run(
                    [
                        "curl",
                        "-sS",
                        "--max-time",
                        "5",
                        *mode,
                        "-w",
                        "\n%{http_version}",
                        peer.url(path),
                    ],
                    capture_output=True,
                    timeout=10,
                ).stdout
                assert out == body + b"\n2", (name, path, out)


# -- every peer of the default sweep over every protocol it declares ---------------------------
import subprocess  # noqa: E402

from h3_client import h3_request  # noqa: E402

from loadbench.core.protocols import names as protocol_names  # noqa: E402
from loadbench.sweep.registry import default_peer_targets  # noqa: E402
from loadbench.sweep.targets import launch  # noqa: E402

HTTP2 = protocol_names(family="HTTP/2")

PEERS_DIR = PEERS
SWEEP_PEERS = {t.name: t for t in default_peer_targets(PEERS_DIR)}
PEER_PROTOCOLS = [(name, p) for name, t in SWEEP_PEERS.items() for p in t.protocols]


def _curl(
    url: str,
    protocol: str,
    method: str = "GET",
    body: bytes | None = None,
    content_type: str | None = None,
) -> tuple[str, int, str, bytes]:
    """(HTTP version, status, content type, body) through curl: --http2-prior-knowledge for h2c,
    --http2 over TLS for h2 (ALPN), --http1.1 otherwise; h3 through aioquic (Debian's curl has no
    HTTP/3)."""
    if protocol == "h3":
        port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
        path = "/" + url.rsplit(":", 1)[1].split("/", 1)[1]
        return ("3", *h3_request(port, method, path, body, content_type))
    mode = {
        "http": ["--http1.1"],
        "https": ["--http1.1"],
        "h2c": ["--http2-prior-knowledge"],
        "h2": ["--http2"],
    }[protocol]
    args = [
        "curl",
        "-sk",
        "--max-time",
        "5",
        *mode,
        "-X",
        method,
        "-o",
        "-",
        "-w",
        "\n%{http_version} %{http_code} %{content_type}",
    ]
    if body is not None:
        args += ["--data-binary", "@-", "-H", f"Content-Type: {content_type}"]
    out = subprocess.run(args + [url], input=body or b"", capture_output=True, timeout=10).stdout
    payload, _, meta = out.rpartition(b"\n")
    version, status, ctype = (meta.decode().split(" ", 2) + ["", ""])[:3]
    return version, int(status or 0), ctype.split(";")[0].strip(), payload


@pytest.mark.skipif(
    shutil.which("curl") is None, reason="curl is not installed (bench/install-peers.sh)"
)
@pytest.mark.parametrize(
    "name,protocol", PEER_PROTOCOLS, ids=[f"{n}-{p}" for n, p in PEER_PROTOCOLS]
)
def test_sweep_peer_answers_every_route_over_each_declared_protocol(tmp_path, name, protocol):
    target = SWEEP_PEERS[name]
    reason = target.unavailable_reason(protocol, PEERS_DIR)
    if reason:
        pytest.skip(f"{name} {protocol}: {reason} (bash bench/install-peers.sh)")
    server = launch(target, protocol, workers=1, cpus=None, peers_dir=PEERS_DIR, cert_dir=tmp_path)
    try:
        version = "3" if protocol == "h3" else "2" if protocol in HTTP2 else "1.1"
        base = server.base_url
        assert _curl(base + "/", protocol) == (version, 200, "text/plain", PLAINTEXT)
        assert _curl(base + "/plaintext", protocol) == (version, 200, "text/plain", PLAINTEXT)
        assert _curl(base + "/json", protocol) == (version, 200, "application/json", JSON)
        if "echo" not in target.unsupported_workloads:
            body = b"abc\x00def" * 600  # 4 KiB and more, like the echo workload
            assert _curl(base + "/echo", protocol, "POST", body, "application/x-test") == (
                version,
                200,
                "application/x-test",
                body,
            )
        assert _curl(base + "/missing", protocol)[1] == 404
    finally:
        server.stop()


def test_the_load_note_calls_a_machine_shared_only_when_the_gate_did_not_find_it_quiet():
    # A 1-min load average of 0.66 right after a test run is that run's trail: the gate that
    # sampled other processes' CPU and found it quiet decides, not the average.
    cores = __import__("os").cpu_count() or 1
    high = 0.5 * cores
    assert "SHARED" not in benchlib.machine_note(
        high, {"quiet": True, "timed_out": False, "skipped": False}
    )
    assert "trailing" in benchlib.machine_note(
        high, {"quiet": True, "timed_out": False, "skipped": False}
    )
    assert "SHARED" in benchlib.machine_note(
        high, {"quiet": False, "timed_out": True, "skipped": False}
    )
    assert "SHARED" in benchlib.machine_note(
        high, {"quiet": True, "skipped": True}
    )  # --no-wait: nothing measured
    assert "SHARED" in benchlib.machine_note(high)
    assert benchlib.machine_note(0.0).startswith("quiet")


# -- issue 32's peers through a small real sweep ------------------------------------------------
import dataclasses  # noqa: E402

from loadbench import Sweep  # noqa: E402
from loadbench.report import document as report_document  # noqa: E402
from loadbench.sweep import results_folder  # noqa: E402

ISSUE_32_PEERS = [
    "pypy-hypercorn",
    "python-asyncio-3.13",
    "hypercorn-3.13",
    "rust-axum",
    "ruby-puma",
    "nim",
]


@pytest.mark.parametrize("name", ISSUE_32_PEERS)
def test_new_peer_runs_a_small_real_sweep(tmp_path, name):
    """Each installed new peer, started, pinned, loaded and stopped by the sweep itself over every
    protocol it declares and every workload it answers: every cell ok, only 200s, no errors. A
    variant runs beside its base (a sweep needs the base of a variant_of) and gets its table."""
    target = SWEEP_PEERS[name]
    reason = target.unavailable_reason(target.protocols[0], PEERS_DIR)
    if reason:
        pytest.skip(f"{name}: {reason}")
    targets = [target]
    if target.variant_of:
        base = SWEEP_PEERS[target.variant_of]
        if base.unavailable_reason(base.protocols[0], PEERS_DIR):
            targets = [dataclasses.replace(target, variant_of=None)]  # measured alone
        else:
            targets = [base, target]
    workloads = [w for w in ("plaintext", "json", "echo") if w not in target.unsupported_workloads]
    # Settled as usual, but not held for a JIT's declared warm-up (PyPy's 12 s per server start
    # were 48 of this test's 108 s): what is checked here is that every cell runs, not its speed.
    targets = [dataclasses.replace(t, warmup=0.0) for t in targets]
    sweep = Sweep(
        targets=targets,
        workloads=workloads,
        concurrencies=[4],
        protocols=target.protocols,
        streams=4,
        repeats=1,
        duration=0.3,
        warmup=0.1,
        peers_dir=str(PEERS_DIR),
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    records = [
        r for r in results_folder.read_records(tmp_path / "results.jsonl") if r["target"] == name
    ]
    assert sorted((r["protocol"], r["workload"]) for r in records) == sorted(
        (p, w) for p in target.protocols for w in workloads
    )
    for r in records:
        assert r["status"] == "ok", r
        res = r["result"]
        assert res["responses"] > 0 and res["status_codes"] == {"200": res["responses"]}, r["id"]
        assert sum(res["errors"].values()) == 0, r["id"]
        assert r["server"]["workers"] == 1 and r["server"]["cpus"] == sweep.server_cpus
        if r["workload"] == "echo":  # the 4 KiB body came back whole, every time
            assert res["bytes_read"] >= res["responses"] * 4096, r["id"]
    report_document.write_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    if len(targets) == 2:
        assert f"## Variant speedup: {name} vs {target.variant_of}" in text


# -- the drivers' report labels come from the registry ---------------------------------------
# Committed raw data (reports/*.jsonl) carries these labels and the report code reads them back:
# a label that changes breaks every report re-made from it.
from bench_drivers import generator_comparison, server_comparison, server_comparison_h2  # noqa: E402
from bench_drivers.peers import registry_choices  # noqa: E402
from loadbench import ConfigError  # noqa: E402


def _triples(choices) -> list[tuple[str, str, str]]:
    return [(c.label, c.peer, c.protocol) for c in choices]


def test_server_comparison_labels_its_servers_from_the_registry() -> None:
    args = server_comparison.parse_args([], repo=PEERS.parents[1])
    assert args.servers == ["loadbench-server", "nginx", "node:http"]
    assert _triples(server_comparison.peer_choices(args)) == [
        ("loadbench-server", "beast", "http"),
        ("nginx", "nginx", "http"),
        ("node:http", "node", "http"),
    ]
    args.before_bin = "/old/loadbench-server"
    assert _triples(server_comparison.setup_choices(args, https=True)) == [
        ("loadbench-server", "beast", "https"),
        ("loadbench-server (before)", "beast", "https"),
        ("nginx", "nginx", "https"),
    ]
    args.servers = ["nginx", "apache"]
    with pytest.raises(SystemExit) as exc:
        server_comparison.peer_choices(args)
    assert str(exc.value) == (
        "server_vs_peers: unknown server(s) apache (known: loadbench-server, nginx, node:http)"
    )


def test_server_comparison_h2_labels_its_servers_from_the_registry() -> None:
    args = server_comparison.parse_args(["--protocol", "h2"], repo=PEERS.parents[1])
    every = {
        "loadbench-server h2c": ("beast", "h2c"),
        "loadbench-server h2": ("beast", "h2"),
        "nginx h2": ("nginx", "h2"),
        "h2o h2c": ("h2o", "h2c"),
        "h2o h2": ("h2o", "h2"),
        "node:http2 h2c": ("node", "h2c"),
        "node:http2 h2": ("node", "h2"),
    }
    known = server_comparison_h2.known_servers(args.peers_dir)
    assert {label: (c.peer, c.protocol) for label, c in known.items()} == every
    assert list(known) == list(every)  # the report's row order
    assert list(
        server_comparison_h2.known_servers(args.peers_dir, server_comparison_h2.DEFAULT_SERVERS)
    ) == [label for label in every if label != "node:http2 h2"]
    args.servers = ["nginx h2", "node:http2 h2"]
    assert _triples(server_comparison_h2.peer_choices(args).values()) == [
        ("nginx h2", "nginx", "h2"),
        ("node:http2 h2", "node", "h2"),
    ]
    args.servers = ["nginx h2c"]
    with pytest.raises(SystemExit) as exc:
        server_comparison_h2.peer_choices(args)
    assert str(exc.value) == (
        "server_vs_peers --protocol h2: unknown server(s) nginx h2c (known: "
        + ", ".join(every)
        + ")"
    )


def test_generator_comparison_labels_its_servers_from_the_registry() -> None:
    args = generator_comparison.parse_args([], repo=PEERS.parents[1])
    assert args.servers == ["nginx", "loadbench-server"]
    assert args.h2_servers == ["nginx", "loadbench-server", "h2o"]
    assert _triples(generator_comparison.server_choices(args, https=False)) == [
        ("nginx", "nginx", "http"),
        ("loadbench-server", "beast", "http"),
    ]
    assert _triples(generator_comparison.server_choices(args, https=True)) == [
        ("nginx", "nginx", "https"),
        ("loadbench-server", "beast", "https"),
    ]
    # the driver's choice of protocol: nginx over TLS (ALPN h2), the others h2c
    assert _triples(generator_comparison.h2_choices(args)) == [
        ("nginx h2", "nginx", "h2"),
        ("loadbench-server h2c", "beast", "h2c"),
        ("h2o h2c", "h2o", "h2c"),
    ]
    args = generator_comparison.parse_args(
        ["--servers", "loadbench-server", "--h2-servers", "h2o"], repo=PEERS.parents[1]
    )
    assert _triples(generator_comparison.server_choices(args, https=False)) == [
        ("loadbench-server", "beast", "http")
    ]
    assert _triples(generator_comparison.h2_choices(args)) == [("h2o h2c", "h2o", "h2c")]
    args.servers, args.h2_servers = ["node"], ["nginx h2"]
    with pytest.raises(SystemExit, match=r"^unknown server 'node' \(nginx, loadbench-server\)$"):
        generator_comparison.server_choices(args, https=False)
    with pytest.raises(
        SystemExit, match=r"^unknown HTTP/2 server 'nginx h2' \(nginx, loadbench-server, h2o\)$"
    ):
        generator_comparison.h2_choices(args)


def test_no_driver_keeps_a_label_table_of_its_own() -> None:
    for module in (server_comparison, server_comparison_h2, generator_comparison):
        assert not hasattr(module, "PEERS") and not hasattr(module, "H2_PEERS"), module.__name__


def test_registry_choices_label_by_the_registry_and_name_a_missing_peer() -> None:
    assert _triples(registry_choices([("node", "http"), ("node", "h2c")], PEERS)) == [
        ("node:http", "node", "http"),
        ("node:http2", "node", "h2c"),
    ]
    # a peer without a label is reported by its registry name
    assert _triples(registry_choices([("go", "h2")], PEERS, protocol_in_label=True)) == [
        ("go h2", "go", "h2")
    ]
    with pytest.raises(ConfigError, match=r"no peer 'apache' \(known: beast, python-asyncio"):
        registry_choices([("apache", "http")], PEERS)
