"""QUIC session resumption and 0-RTT (the handshake cells' opt-ins): `loadbench run --h3
--tls-resume [--h3-0rtt]` against `loadbench-server --tls --h3 [--h3-0rtt]`, counted exactly on
both sides (aioquic, a client no one here wrote, resumes and sends 0-RTT to the server in
test_server_h3.py).

The expectation, derived: with --disable-keepalive every request is its own connection and
handshake, made by one of the -c connection slots in turn. A slot keeps the newest ticket its
server sent (the TCP path's scope), and the server sends one as each handshake completes - before
any response, so it has arrived when the slot's next connection starts. Only each slot's first
handshake has no ticket: of N handshakes, N - C resume. With 0-RTT, each of those N - C sends its
request as early data, and the server accepts it (--h3-0rtt) or not (it then comes again in 1-RTT:
the server still answers it exactly once).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench import ConfigError
from loadbench.core import _core
from loadbench.core.paths import server_binary
from loadbench.core.server import ServerProcess
from loadbench.sweep.targets import free_udp_tcp_port

pytestmark = pytest.mark.skipif(
    not _core.http3_available(),
    reason="this build has no HTTP/3: apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev "
    "libnghttp3-dev libgnutls28-dev, then rebuild",
)

N = 24  # requests, each on its own connection
C = 3  # connection slots: each one's first handshake is a full one


def free_port() -> int:
    """A port free for TCP and UDP both (the server's TLS port and HTTP/3 share the number)."""
    return free_udp_tcp_port()


def h3_server(zero_rtt: bool) -> ServerProcess:
    # Fresh per test: GnuTLS's anti-replay window (10 s) starts with the server, and a ticket
    # issued before it rolls over has its early data refused (docs/server.md).
    return ServerProcess(tls=True, tls_port=free_port(), h3=True, h3_0rtt=zero_rtt, cgroup=False)


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    with h3_server(zero_rtt=False) as s:
        yield s


@pytest.fixture
def server_0rtt() -> Iterator[ServerProcess]:
    with h3_server(zero_rtt=True) as s:
        yield s


def run_cli(url: str, tmp_path: Path, *flags: str) -> tuple[dict, str]:
    out = tmp_path / "r.json"
    done = loadbench_cli(
        "run",
        url,
        "--h3",
        "--disable-keepalive",
        "-n",
        str(N),
        "-c",
        str(C),
        "--json",
        str(out),
        *flags,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), done.stdout


def test_tls_resume_over_h3_resumes_every_handshake_but_each_slots_first(
    server: ServerProcess, tmp_path: Path
) -> None:
    r, stdout = run_cli(server.url("/", https=True), tmp_path, "--tls-resume")
    assert r["responses"] == N and sum(r["errors"].values()) == 0
    assert r["tls_handshakes"] == N and r["connections_opened"] == N
    assert r["tls_resumed"] == N - C
    assert r["quic"]["handshakes"] == N
    assert r["quic"]["zero_rtt"] == {"attempted": 0, "accepted": 0, "rejected": 0}
    assert f"TLS handshakes {N:,}" in stdout and f"{N - C:,} resumed" in stdout
    stopped = server.stop()
    h3 = stopped["h3"]
    assert h3["connections"] == N == h3["handshakes"] == h3["requests"]
    assert h3["resumed"] == N - C and h3["zero_rtt"] == 0


def test_without_tls_resume_every_h3_handshake_is_a_full_one(server: ServerProcess) -> None:
    # The server issues tickets all the same: resumption is the generator's opt-in.
    r = loadbench.run(
        server.url("/", https=True), protocol="h3", keepalive=False, requests=N, connections=C
    )
    assert r.responses == N and r.tls_handshakes == N and r.tls_resumed == 0
    stopped = server.stop()
    assert stopped["h3"]["handshakes"] == N and stopped["h3"]["resumed"] == 0


def test_0rtt_accepted_by_a_server_that_takes_early_data(
    server_0rtt: ServerProcess, tmp_path: Path
) -> None:
    r, stdout = run_cli(server_0rtt.url("/", https=True), tmp_path, "--tls-resume", "--h3-0rtt")
    assert r["responses"] == N and sum(r["errors"].values()) == 0
    assert r["status_codes"] == {"200": N}
    assert r["tls_handshakes"] == N and r["tls_resumed"] == N - C
    assert r["quic"]["zero_rtt"] == {"attempted": N - C, "accepted": N - C, "rejected": 0}
    assert r["config"]["quic_early_data"] is True
    assert f"0-RTT on {N - C:,} (accepted {N - C:,}, rejected and re-sent 0)" in stdout
    stopped = server_0rtt.stop()
    h3 = stopped["h3"]
    assert h3["handshakes"] == N == h3["requests"] == stopped["requests"]["plaintext"]
    assert h3["resumed"] == N - C and h3["zero_rtt"] == N - C


def test_0rtt_with_a_request_body_reaches_the_server_whole(server_0rtt: ServerProcess) -> None:
    # A POST in early data (replayable - the docs say so; the tool sends what was asked).
    body = b"0-RTT body " * 50
    r = loadbench.run(
        server_0rtt.url("/echo", https=True),
        protocol="h3",
        keepalive=False,
        requests=N,
        connections=C,
        method="POST",
        body=body,
        tls_session_resumption=True,
        quic_early_data=True,
    )
    assert r.responses == N and r.status_codes == {200: N}
    assert r.quic_zero_rtt_accepted == N - C and r.quic_zero_rtt_rejected == 0
    stopped = server_0rtt.stop()
    assert stopped["requests"]["echo"] == N and stopped["h3"]["zero_rtt"] == N - C


def test_0rtt_refused_by_the_server_is_resent_once_in_1rtt(server: ServerProcess) -> None:
    # This server resumes but does not take early data: every attempt is rejected, and each
    # request still gets exactly one answer (the server saw none of the early ones).
    r = loadbench.run(
        server.url("/json", https=True),
        protocol="h3",
        keepalive=False,
        requests=N,
        connections=C,
        tls_session_resumption=True,
        quic_early_data=True,
    )
    assert r.responses == N and r.status_codes == {200: N} and sum(r.errors.values()) == 0
    assert r.tls_resumed == N - C
    zero_rtt = r.to_dict()["quic"]["zero_rtt"]
    assert zero_rtt == {"attempted": N - C, "accepted": 0, "rejected": N - C}
    stopped = server.stop()
    assert (
        stopped["requests"]["json"] == N == stopped["h3"]["requests"] == stopped["requests_total"]
    )
    assert stopped["h3"]["resumed"] == N - C and stopped["h3"]["zero_rtt"] == 0


def test_keepalive_resumes_nothing_more_than_it_needs(server_0rtt: ServerProcess) -> None:
    # Keep-alive: one handshake per connection slot, none with a ticket yet - nothing to resume.
    r = loadbench.run(
        server_0rtt.url("/", https=True),
        protocol="h3",
        requests=N,
        connections=C,
        tls_session_resumption=True,
        quic_early_data=True,
    )
    assert r.responses == N and r.tls_handshakes == C and r.tls_resumed == 0
    assert r.quic_zero_rtt_attempted == 0


def test_0rtt_needs_h3_and_tls_resume_one_clear_error_each() -> None:
    with pytest.raises(ConfigError, match="needs --tls-resume"):
        loadbench.run("https://127.0.0.1:1/", protocol="h3", requests=1, quic_early_data=True)
    with pytest.raises(ConfigError, match="HTTP/3 only: add --h3"):
        loadbench.run(
            "https://127.0.0.1:1/",
            requests=1,
            tls_session_resumption=True,
            quic_early_data=True,
        )
    done = loadbench_cli("run", "https://127.0.0.1:1/", "--h3", "-n", "1", "--h3-0rtt")
    assert done.returncode != 0
    assert "needs --tls-resume" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") <= 2, done.stderr


def test_server_0rtt_flag_errors_and_help() -> None:
    binary = str(server_binary())
    for argv, message in (
        (["--tls", "--h3-0rtt"], "--h3-0rtt accepts HTTP/3 early data: it needs --h3"),
        (
            ["--tls", "--h3", "--h3-0rtt", "--no-tls-resumption"],
            "it cannot go with --no-tls-resumption",
        ),
    ):
        done = subprocess.run([binary, *argv], capture_output=True, text=True, timeout=10)
        assert done.returncode != 0 and message in done.stderr, done.stderr
    helped = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    assert "--h3-0rtt" in helped.stdout + helped.stderr
    cli_help = loadbench_cli("run", "--help").stdout
    assert "--h3-0rtt" in cli_help and "replayable" in cli_help


def test_quic_handshakes_are_phases_full_and_resumed_apart(server: ServerProcess) -> None:
    # one connection per request: C full QUIC handshakes (each slot's first), the rest resumed
    # with the tickets; no TCP, so no connect phase; each response's phases counted once
    r = loadbench.run(
        server.url("/plaintext", https=True), protocol="h3", keepalive=False, requests=N,
        connections=C, tls_session_resumption=True,
    )  # fmt: skip
    assert r.responses == N and r.error_count == 0, r.first_error
    assert "connect" not in r.phases and not {"tls_full", "tls_resume"} & set(r.phases)
    full, resumed = r.phases["quic_full"].count, r.phases.get("quic_resume")
    assert full + (resumed.count if resumed else 0) == r.tls_handshakes == N
    assert (resumed.count if resumed else 0) == r.tls_resumed
    assert {r.phases[p].count for p in ("write", "ttfb", "transfer")} == {N}
