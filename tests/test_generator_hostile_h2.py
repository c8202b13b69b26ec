"""The generator against hostile HTTP/2 servers (tests/hostile_h2_server.py): the first
connection meets the hostile behaviour, the others a correct server. Each hostile connection
must end in a clear error or timeout of its own, the run's other connections must go on
measuring, and the generator's memory must stay bounded."""

from __future__ import annotations

import pytest
from hostile_h2_server import MODES, HostileH2Server

import loadbench


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("VmHWM")


# What the hostile connection's requests end in: a per-request timeout, or the session's error.
EXPECTED = {
    "no-settings": "timeout",
    "endless-continuation": "CONTINUATION",
    "zero-streams": "timeout",
    "huge-table-update": "HTTP/2",
    "window-closed": "timeout",
}


@pytest.mark.parametrize("mode", [m for m in MODES if m != "honest"])
def test_hostile_connection_ends_alone_and_the_rest_measure(mode: str) -> None:
    before = peak_rss_mib()
    with HostileH2Server(mode, max_seconds=6) as server:
        result = loadbench.run(
            server.url("/"),
            connections=4,
            duration=2,
            protocol="h2",
            streams=2,
            timeout=1,
            method="POST" if mode == "window-closed" else "GET",
            body=b"x" * 100 if mode == "window-closed" else None,
            prime=False,  # the first connection is the hostile one: not a priming one
        )
    # The three well-behaved connections measured throughout.
    assert result.responses >= 100, (result.responses, result.errors, result.first_error)
    assert set(result.status_codes) == {200}, result.status_codes
    # The hostile one ended in a clear error of its own (a few at most: 2 streams, 1 s timeout).
    assert 1 <= result.error_count <= 12, (result.errors, result.first_error)
    reasons = " ".join(result.errors) + " " + result.first_error
    assert EXPECTED[mode] in reasons, (mode, result.errors, result.first_error)
    if mode == "endless-continuation":
        assert server.continuations_sent < 1000, (
            server.continuations_sent
        )  # stopped early, not at timeout
    assert peak_rss_mib() - before < 64
