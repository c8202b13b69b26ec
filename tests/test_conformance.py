"""RFC conformance of loadbench-server, case by case (tests/conformance.py holds the cases:
the bytes sent and every outcome the RFC allows). Our server's outcomes are asserted; nginx's
and h2o's, where installed, are printed beside them in a table so a reader can compare - not
asserted (nginx, for one, accepts "Host: user@localhost")."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest
from conformance import H1_CASES, H2_CASES, H1Case, H2Case, run_h1, run_h2

from bench_drivers.peers import PeerChoice, launch_peer, unavailable
from loadbench.core.server import ServerProcess

PEERS = Path(__file__).resolve().parent.parent / "bench" / "peers"


@pytest.fixture(scope="module")
def ours() -> Iterator[ServerProcess]:
    server = ServerProcess(tls=True).start()
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            server.kill()


def _explain(case: H1Case | H2Case, got: str, sent: bytes) -> str:
    return f"RFC {case.rfc}: {case.requirement}\n  sent {sent!r}\n  got {got!r}, allowed {case.allowed}"


@pytest.mark.parametrize("case", H1_CASES, ids=lambda c: c.name)
def test_http1(ours: ServerProcess, case: H1Case) -> None:
    got = run_h1(ours.http_port, case)
    assert got in case.allowed, _explain(case, got, case.raw)


@pytest.mark.parametrize("tls", [False, True], ids=["h2c", "h2"])
@pytest.mark.parametrize("case", H2_CASES, ids=lambda c: c.name)
def test_http2(ours: ServerProcess, case: H2Case, tls: bool) -> None:
    sent: list[bytes] = []
    got = run_h2(ours.https_port if tls else ours.http_port, case, tls=tls, sent=sent)
    assert got in case.allowed, _explain(case, got, case.preface + b"".join(sent))


def test_server_still_serves_after_the_suite(ours: ServerProcess) -> None:
    """Every case above ended only its own connection."""
    assert run_h1(ours.http_port, H1_CASES[-1]) == "200 close"


def _outcomes(port: int, cases, run) -> list[str]:
    # Each case is its own connection, and most of a case is waiting for silence (WAIT):
    # side by side they take seconds instead of the minute and a half they took in turn.
    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(lambda case: run(port, case), cases))


def _peer_outcomes(peer: str, protocol: str, cases, run) -> list[str] | None:
    choice = PeerChoice(peer, peer, protocol)
    if unavailable(choice, PEERS) is not None:
        return None
    with launch_peer(choice, cpus=[0], peers_dir=PEERS) as launched:
        return _outcomes(launched.port, cases, run)


def test_print_table_beside_nginx_and_h2o(
    ours: ServerProcess, capsys: pytest.CaptureFixture
) -> None:
    """The table a reader compares: our outcome and the peers', with '*' where one is outside
    what the RFC allows. Only ours is asserted (above)."""
    columns = ["loadbench", "nginx", "h2o"]
    h1 = {"loadbench": _outcomes(ours.http_port, H1_CASES, run_h1)}
    h2 = {"loadbench": _outcomes(ours.http_port, H2_CASES, run_h2)}
    for peer, h2_protocol in (("nginx", "h2c"), ("h2o", "h2c")):
        h1[peer] = _peer_outcomes(peer, "http", H1_CASES, run_h1)
        h2[peer] = _peer_outcomes(peer, h2_protocol, H2_CASES, run_h2)
    lines = [
        "",
        "RFC conformance (HTTP/1.1 plain port; HTTP/2 h2c), * = outside what the RFC allows",
    ]
    for title, cases, results in (("HTTP/1.1", H1_CASES, h1), ("HTTP/2", H2_CASES, h2)):
        lines.append(f"| {title} case | RFC | " + " | ".join(columns) + " |")
        lines.append("|---|---|" + "---|" * len(columns))
        for i, case in enumerate(cases):
            cells = []
            for name in columns:
                outcomes = results.get(name)
                if outcomes is None:
                    cells.append("not installed")
                else:
                    cells.append(outcomes[i] + ("" if outcomes[i] in case.allowed else " *"))
            lines.append(f"| {case.name} | {case.rfc} | " + " | ".join(cells) + " |")
    with capsys.disabled():
        print("\n".join(lines))
    assert all(outcome in case.allowed for outcome, case in zip(h1["loadbench"], H1_CASES))
