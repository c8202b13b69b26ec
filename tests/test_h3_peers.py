"""HTTP/3 peers (issue 33): `loadbench run --h3` against the quic-go peer reads exactly N responses
and the peer's own counter says N, and a small real sweep over caddy and quic-go (h2 and h3)
writes a report whose HTTP/3 section holds the figures of its own records. Both peers come from
the registry (bench/peers/peers.toml); each test skips with the install reason when one is not
there, or when this build has no HTTP/3."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from cli_runner import loadbench_cli
from sweep_data import table_rows

import loadbench
from loadbench import ConfigError, Sweep, Target
from loadbench.report import document as report_document
from loadbench.sweep import results_folder
from loadbench.sweep.registry import peer_target
from loadbench.sweep.targets import (
    _expand,
    beast_serves_h3,
    free_udp_tcp_port,
    h3_unavailable_reason,
    launch,
    self_signed_cert,
)

PEERS = Path(__file__).resolve().parent.parent / "bench" / "peers"


def _need(name: str, protocol: str = "h3"):
    target = peer_target(name, PEERS)
    reason = target.unavailable_reason(protocol, PEERS)
    if reason:
        pytest.skip(f"{name} {protocol}: {reason}")
    return target


def _udp_bound(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        try:
            u.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _tcp_up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class QuicGoPeer:
    """The quic-go peer started from its registry command by hand (no readiness request of the
    sweep's, which would be one more response): ready once its UDP and TCP ports are bound. At
    exit it is stopped with SIGTERM and `counts` holds the line it prints then."""

    def __init__(self, tmp_path: Path) -> None:
        target = _need("quic-go")
        cert, key = self_signed_cert(tmp_path)
        self.port = free_udp_tcp_port()
        values = {"peers": str(PEERS), "port": self.port, "cert": cert, "key": key}
        self._argv = [_expand(str(a), values) for a in target.h3_argv]
        self._err_path = tmp_path / "peer.err"
        self.stderr = ""

    def __enter__(self) -> "QuicGoPeer":
        self._err = open(self._err_path, "w+b")
        self._proc = subprocess.Popen(self._argv, stdout=subprocess.DEVNULL, stderr=self._err)
        try:
            deadline = time.monotonic() + 10
            while not (_udp_bound(self.port) and _tcp_up(self.port)):
                assert self._proc.poll() is None, self._err_path.read_text()
                assert time.monotonic() < deadline, "the quic-go peer did not bind within 10 s"
                time.sleep(0.05)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._err.seek(0)
        self.stderr = self._err.read().decode(errors="replace")
        self._err.close()


def test_cli_run_h3_reads_exactly_n_and_the_quic_go_peer_counts_n(tmp_path: Path) -> None:
    with QuicGoPeer(tmp_path) as peer:
        n = 300
        out = tmp_path / "r.json"
        url = f"https://127.0.0.1:{peer.port}/plaintext"
        done = loadbench_cli("run", url, "--h3", "-n", str(n), "-c", "3", "--json", str(out))
        assert done.returncode == 0, done.stderr
        result = json.loads(out.read_text())
        assert result["config"]["protocol"] == "h3"
        assert result["responses"] == n and result["status_codes"] == {"200": n}
        assert sum(result["errors"].values()) == 0
    # the TCP readiness checks were bare connects: no request, so no TCP response either
    assert re.search(rf"^loadbench-peer-quicgo: responses h3={n} tcp=0$", peer.stderr, re.M), (
        peer.stderr
    )


def test_tls_resume_and_0rtt_against_the_quic_go_peer_exact_counts(tmp_path: Path) -> None:
    """Resumption and 0-RTT with a server no one here wrote (quic-go issues tickets that allow
    early data): N requests without keep-alive on C connection slots resume all but each slot's
    first handshake, send those as 0-RTT, and quic-go accepts each; it counts every request once."""
    n, c = 24, 3
    with QuicGoPeer(tmp_path) as peer:
        url = f"https://127.0.0.1:{peer.port}/plaintext"
        for early in (False, True):
            r = loadbench.run(
                url,
                protocol="h3",
                keepalive=False,
                requests=n,
                connections=c,
                tls_session_resumption=True,
                quic_early_data=early,
            )
            assert r.responses == n and r.status_codes == {200: n} and sum(r.errors.values()) == 0
            assert r.tls_handshakes == n and r.tls_resumed == n - c
            sent_early = n - c if early else 0
            assert r.to_dict()["quic"]["zero_rtt"] == {
                "attempted": sent_early,
                "accepted": sent_early,
                "rejected": 0,
            }
    assert re.search(rf"^loadbench-peer-quicgo: responses h3={2 * n} tcp=0$", peer.stderr, re.M), (
        peer.stderr
    )


def test_small_sweep_of_caddy_and_quic_go_over_h2_and_h3_reports_the_h3_h2_ratio(
    tmp_path: Path,
) -> None:
    targets = [_need("caddy"), _need("quic-go")]
    sweep = Sweep(
        targets=targets,
        workloads=["plaintext"],
        concurrencies=[4],
        protocols=["h2", "h3"],
        streams=4,
        repeats=1,
        duration=0.3,
        warmup=0.1,
        peers_dir=str(PEERS),
        contended_reruns=0,
        # the figures are checked, not the machine's quiet: a cell is never set aside as contended
        contended_share=1.0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    records = results_folder.read_records(tmp_path / "results.jsonl")
    assert sorted((r["target"], r["protocol"]) for r in records) == [
        ("caddy", "h2"),
        ("caddy", "h3"),
        ("quic-go", "h2"),
        ("quic-go", "h3"),
    ]
    rps = {}
    for r in records:
        assert r["status"] == "ok", (
            r["id"],
            r.get("error"),
            r.get("reason"),
            {k: v for k, v in r.items() if k != "result"},
        )
        res = r["result"]
        assert res["responses"] > 0 and res["status_codes"] == {"200": res["responses"]}, r["id"]
        assert sum(res["errors"].values()) == 0, r["id"]
        assert res["config"]["protocol"] == ("h3" if r["protocol"] == "h3" else "h2"), r["id"]
        assert r["streams"] == 4 and r["server"]["url"].startswith("https://127.0.0.1:")
        rps[(r["target"], r["protocol"])] = res["rps"]
    report_document.write_report(tmp_path)
    text = (tmp_path / "report.md").read_text()
    rows = table_rows(text, "## Protocol comparison: HTTP/2 vs HTTP/3")
    assert rows[0][:6] == [
        "Server",
        "HTTP/2 TLS peak (req/s)",
        "HTTP/2 TLS mean (req/s)",
        "HTTP/3 peak (req/s)",
        "HTTP/3 mean (req/s)",
        "H3 / H2 peak ratio",
    ]
    assert rows[0][6:] == ["HTTP/2 TLS CPU us/req", "HTTP/3 CPU us/req"]
    by_server = {row[0]: row for row in rows[1:]}
    assert set(by_server) == {"caddy", "quic-go"}
    for t, row in by_server.items():
        # one cell per protocol: its req/s is the peak (a bound "≥" only if generator-bound)
        h2, h3 = (float(row[i].lstrip("≥ ").replace(" ", "")) for i in (1, 3))
        assert h2 == pytest.approx(rps[(t, "h2")], abs=0.5)
        assert h3 == pytest.approx(rps[(t, "h3")], abs=0.5)
        ratio = row[5].lstrip("≥≤ ").rstrip("x")
        if row[1].startswith("≥") or row[3].startswith("≥"):
            continue  # a ratio of a bound is printed as one; its digits are not the plain quotient
        assert float(ratio) == pytest.approx(rps[(t, "h3")] / rps[(t, "h2")], abs=0.006)


def test_h3_cells_of_a_target_without_h3_are_skipped_with_the_reason(tmp_path: Path) -> None:
    """A server that declares no h3 is never started for it: its h3 cell is n/a with the reason
    (as h2 is for an HTTP/1.1-only peer), and the report names it."""
    target = Target("plain", kind="command", argv=["/bin/false", "{port}"])
    sweep = Sweep(
        targets=[target],
        workloads=["plaintext"],
        concurrencies=[2],
        protocols=["h3"],
        repeats=1,
        duration=0.2,
        warmup=0.0,
        contended_reruns=0,
    )
    sweep.run(tmp_path, progress=False, notes=False)
    (record,) = results_folder.read_records(tmp_path / "results.jsonl")
    assert record["status"] == "skipped" and record["protocol"] == "h3"
    assert record["error"] == (h3_unavailable_reason() or "plain does not serve h3 (serves http)")


def test_an_h3_url_must_be_https() -> None:
    with pytest.raises(ConfigError, match="h3_url must be an https:// URL"):
        Target("far", kind="url", h3_url="http://127.0.0.1:1/")
    assert Target("far", kind="url", h3_url="https://127.0.0.1:1").protocols == ["h3"]


def test_beast_declares_h3_only_when_its_server_lists_the_flag(tmp_path: Path) -> None:
    """Whether loadbench-server serves HTTP/3 is what its --help says (another branch adds --h3);
    a beast target is not started for h3 by a server without it."""
    with_h3, without = tmp_path / "with-h3", tmp_path / "without"
    with_h3.write_text(
        "#!/bin/sh\necho '  --tls    also serve HTTPS'\necho '  --h3     HTTP/3 too'\n"
    )
    without.write_text("#!/bin/sh\necho '  --tls    also serve HTTPS'\necho '  --h3x    not it'\n")
    for script in (with_h3, without):
        script.chmod(0o755)
    assert beast_serves_h3(str(with_h3)) and not beast_serves_h3(str(without))
    assert not beast_serves_h3(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="this loadbench-server has no --h3"):
        launch(Target("beast"), "h3", workers=1, cpus=None, binary=str(without))
