"""Launching, pinning and probing sweep targets, and the Python asyncio peer on real sockets."""

import os
import socket
import ssl
import sys
import time
from pathlib import Path

import pytest

from loadbench import ServerError
from loadbench.sweep.registry import default_peer_targets
from loadbench.sweep.targets import Target, default_cpu_split, launch

PEERS = Path(__file__).resolve().parent.parent / "bench" / "peers"


def python_peer() -> Target:
    return next(t for t in default_peer_targets(PEERS) if t.name == "python-asyncio")


def exchange(server, raw: bytes, https: bool = False, expect_responses: int = 1) -> bytes:
    host, port = server.base_url.split("//")[1].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    if https:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
    with sock:
        sock.sendall(raw)
        data = b""
        while data.count(b"HTTP/1.1 ") < expect_responses or not _complete(data, expect_responses):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def _complete(data: bytes, n: int) -> bool:
    """True when the n-th response's body has fully arrived (Content-Length framing)."""
    rest = data
    for _ in range(n):
        head, sep, rest = rest.partition(b"\r\n\r\n")
        if not sep:
            return False
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        if len(rest) < length:
            return False
        rest = rest[length:]
    return True


def test_cpu_split_first_half_servers_second_half_generator():
    assert default_cpu_split([0, 1]) == ([0], [1])
    assert default_cpu_split([0, 1, 2, 3]) == ([0, 1], [2, 3])
    assert default_cpu_split([3]) == ([3], [3])


@pytest.mark.parametrize("protocol", ["http", "https"])
def test_python_peer_routes_keepalive_and_pinning(tmp_path, protocol):
    cpu = sorted(os.sched_getaffinity(0))[0]
    server = launch(
        python_peer(), protocol, workers=1, cpus=[cpu], peers_dir=PEERS, cert_dir=tmp_path
    )
    try:
        assert os.sched_getaffinity(server.pid) == {cpu}
        https = protocol == "https"
        # two pipelined requests on one keep-alive connection, answered in order
        raw = (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-test\r\nContent-Length: 4096\r\n\r\n"
            + b"y"
            * 4096
        )
        data = exchange(server, raw, https, expect_responses=2)
        first, second = data.split(b"HTTP/1.1 ")[1:]
        assert first.startswith(b"200 OK") and first.endswith(b"\r\n\r\nHello, World!\n")
        assert second.startswith(b"200 OK") and b"Content-Type: application/x-test" in second
        assert second.endswith(b"\r\n\r\n" + b"y" * 4096)
        data = exchange(
            server, b"GET /json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", https
        )
        assert (
            data.endswith(b'\r\n\r\n{"message":"Hello, World!"}') and b"Connection: close" in data
        )
        assert exchange(server, b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n", https).endswith(
            b"Hello, World!\n"
        )
        assert exchange(server, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", https).startswith(
            b"HTTP/1.1 404"
        )
        assert exchange(
            server, b"POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", https
        ).startswith(b"HTTP/1.1 405")
        assert server.alive()
    finally:
        server.stop()
    assert not server.alive()


def test_python_peer_workers_are_processes_sharing_the_port():
    server = launch(python_peer(), "http", workers=2, cpus=None, peers_dir=PEERS)
    try:
        # ready = the port answers; the second worker may still be starting: give it 5 s
        deadline = time.monotonic() + 5
        while True:
            children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
            if len(children) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert len(children) == 2
        for _ in range(4):
            assert exchange(
                server, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            ).endswith(b"Hello, World!\n")
    finally:
        server.stop()
    for pid in children:
        assert _gone(int(pid))


def test_server_that_exits_reports_its_stderr():
    target = Target(
        "broken",
        kind="command",
        argv=[
            sys.executable,
            "-c",
            "import sys; sys.stderr.write('cannot bind: boom\\n'); sys.exit(3)",
        ],
    )
    with pytest.raises(ServerError) as info:
        launch(target, "http", workers=1, cpus=None)
    message = str(info.value)
    assert (
        "broken never became ready" in message
        and "code 3" in message
        and "cannot bind: boom" in message
    )


def test_server_that_never_listens_times_out_with_stderr():
    target = Target(
        "silent",
        kind="command",
        ready_timeout=0.5,
        argv=[
            sys.executable,
            "-c",
            "import sys,time; print('warming up', file=sys.stderr, flush=True); time.sleep(30)",
        ],
    )
    with pytest.raises(ServerError) as info:
        launch(target, "http", workers=1, cpus=None)
    assert "silent was not ready within 0.5 s" in str(info.value)
    assert "warming up" in str(info.value)


def test_missing_runtime_or_file_is_a_skip_reason(tmp_path):
    node = Target("n", kind="command", argv=["x"], requires=["no-such-runtime-xyz"])
    assert node.unavailable_reason("http") == "no-such-runtime-xyz is not installed"
    peer = Target("p", kind="command", argv=["x"], requires=["{peers}/gone.js"])
    assert peer.unavailable_reason("http", tmp_path) == f"{tmp_path}/gone.js is missing"
    assert (
        Target("h", kind="command", argv=["x"]).unavailable_reason("https")
        == "h does not serve https (serves http)"
    )
    assert (
        Target("u", kind="url", url="http://127.0.0.1:1").unavailable_reason("https")
        == "no https URL given"
    )
    assert python_peer().unavailable_reason("http", PEERS) is None


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("kind", ["beast", "python"])
def test_a_server_does_not_outlive_a_killed_parent(kind):
    import subprocess

    start = (
        "s = loadbench.ServerProcess().start()"
        if kind == "beast"
        else f"from loadbench.sweep.targets import launch; from loadbench.sweep.registry import default_peer_targets; "
        f"from pathlib import Path; "
        f"s = launch(next(t for t in default_peer_targets(Path({str(PEERS)!r})) if t.name == 'python-asyncio'), "
        f"'http', workers=1, cpus=None, peers_dir=Path({str(PEERS)!r}))"
    )
    code = f"import loadbench, time\n{start}\nprint(s.pid, flush=True)\ntime.sleep(60)\n"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        pid = int(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait()
    assert _gone(pid)
