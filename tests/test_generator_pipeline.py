"""HTTP/1.1 pipelining (`--pipeline N`, `pipeline=N`) against real sockets on 127.0.0.1: requests
really leave back to back, counts stay exact when a server ends a pipeline (Connection: close,
or a close after some answers), a timeout fails every request a connection carried, and the
combinations that cannot pipeline are refused with one clear message."""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_runner import loadbench_cli
from http_test_servers import PipelineServer
from nginx_access_log import NGINX, nginx_with_access_log

import loadbench
from loadbench import ConfigError


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return loadbench_cli("run", *args, timeout=timeout)


def test_cli_pipelined_exact_count_against_the_embedded_server(beast_server, tmp_path):
    out = tmp_path / "r.json"
    proc = cli(
        beast_server.url("/plaintext"),
        "-n",
        "1000",
        "--pipeline",
        "16",
        "-c",
        "4",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "up to 16 requests in flight per connection" in proc.stdout
    saved = json.loads(out.read_text())
    assert saved["responses"] == 1000
    assert saved["status_codes"] == {"200": 1000}
    assert sum(saved["errors"].values()) == 0 and saved["unfinished"] == 0
    assert saved["connections_opened"] == 4 and saved["reconnects"] == 0
    assert saved["config"]["pipeline"] == 16  # the reader knows the run was pipelined
    stopped = beast_server.stop()
    assert stopped["requests_total"] == 1000  # the server's own count agrees


def test_pipelined_over_tls_with_a_large_body(server_factory):
    # 16 x 4 KiB request bodies per connection: TLS takes the gathered requests a record (16 KiB)
    # at a time, so writes end inside requests and the rest follows with later ones behind it.
    server = server_factory(tls=True, http=False)
    r = loadbench.run(
        server.url("/echo", https=True),
        method="POST",
        body=b"x" * 4096,
        requests=800,
        connections=3,
        pipeline=16,
    )
    assert r.responses == 800 and r.error_count == 0 and r.status_codes == {200: 800}
    assert r.bytes_read > 800 * 4096
    assert server.stop()["requests_total"] == 800


def test_head_requests_in_a_pipeline_have_no_body(beast_server):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        requests_list=[{"method": "GET"}, {"method": "HEAD"}, {"method": "HEAD"}],
        requests=600,
        connections=2,
        pipeline=8,
    )
    assert r.responses == 600 and r.error_count == 0 and r.status_codes == {200: 600}
    assert beast_server.stop()["requests_total"] == 600


def test_open_loop_pipelined_every_due_request_has_one_outcome(beast_server):
    r = loadbench.run(
        beast_server.url("/plaintext"),
        rate=500,
        duration=1.0,
        connections=2,
        max_connections=2,
        pipeline=4,
    )
    assert r.error_count == 0 and r.responses > 0
    assert r.due == r.responses + r.unfinished
    assert beast_server.stop()["requests_total"] == r.responses


@pytest.mark.parametrize("depth", [8, 1])
def test_requests_arrive_back_to_back(depth):
    # The server waits (up to 1 s) for 8 requests before its first answer: a pipelining client
    # has written them all; one that waits for each answer has written one.
    with PipelineServer(gather=8) as server:
        r = loadbench.run(server.url("/"), requests=200, connections=2, pipeline=depth)
    assert r.responses == 200 == server.served and r.error_count == 0
    assert server.first_batch == [depth, depth]
    assert r.latency.count == 200


def test_connection_close_mid_pipeline_resends_the_rest_on_a_fresh_connection():
    # Every connection's 3rd response says Connection: close; the requests pipelined behind it
    # were never answered and go out again, each answered exactly once.
    with PipelineServer(close_after=3) as server:
        r = loadbench.run(
            server.url("/"), requests=100, connections=2, pipeline=16, timeout=5, prime=False
        )
    assert r.responses == 100 == server.served
    assert r.status_codes == {200: 100} and r.error_count == 0 and r.unfinished == 0
    assert server.closes_sent >= 100 // 3
    assert r.reconnects == server.closes_sent  # one reconnect per connection the server ended
    assert server.connections == r.connections_opened


def test_server_closing_after_some_answers_of_a_pipeline_resends_the_unanswered():
    # Each connection answers 5 requests and closes without a word: the pipelined requests it
    # read but never answered are sent again once, on a fresh connection (where they lead).
    with PipelineServer(drop_after=5) as server:
        r = loadbench.run(server.url("/"), requests=200, connections=2, pipeline=4, timeout=5)
    assert r.responses == 200 == server.served
    assert r.error_count == 0 and r.unfinished == 0
    assert server.drops >= 200 // 5 - 2
    assert 1 <= r.reconnects <= server.drops


def test_a_timeout_fails_every_request_in_flight():
    with PipelineServer(silent=True) as server:
        r = loadbench.run(
            server.url("/"), requests=12, connections=1, pipeline=4, timeout=0.3, prime=False
        )
    assert r.responses == 0 and r.unfinished == 0
    assert r.errors["timeout"] == 12 == r.error_count
    # three connections, each carrying four requests written back to back
    assert server.connections == 3 and server.first_batch == [4, 4, 4]


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--pipeline", "0"], "pipeline must be an integer >= 1 (got 0)"),
        (["--pipeline", "4", "--h2"], "pipeline > 1 is HTTP/1.1 pipelining"),
        (["--pipeline", "4", "--disable-keepalive"], "pipeline > 1 needs keep-alive"),
    ],
)
def test_cli_refuses_what_cannot_pipeline(flags, named):
    proc = cli("http://127.0.0.1:1/", "-n", "10", *flags, timeout=60)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loadbench: error: ") and named in lines[0]


def test_python_api_refuses_a_pipeline_that_is_not_a_positive_integer():
    for bad, named in [(0, ">= 1"), (-3, ">= 1"), ("4", "must be an integer"), (2.0, "integer")]:
        with pytest.raises(ConfigError, match=named):
            loadbench.run("http://127.0.0.1:1/", requests=1, pipeline=bad)
    with pytest.raises(ConfigError, match="needs keep-alive"):
        loadbench.run("http://127.0.0.1:1/", requests=1, pipeline=2, keepalive=False)


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed")
@pytest.mark.parametrize("keepalive_requests", [100000, 7])
def test_pipelined_exact_count_against_nginx(keepalive_requests):
    # nginx's own access log counts what it answered; keepalive_requests 7 makes it end every
    # connection with Connection: close mid-pipeline.
    with nginx_with_access_log(keepalive_requests) as nginx:
        r = loadbench.run(
            f"http://127.0.0.1:{nginx.port}/", requests=1000, connections=4, pipeline=16
        )
    assert r.responses == 1000 and r.error_count == 0 and r.status_codes == {200: 1000}
    assert len(nginx.logged) == 1000
    if keepalive_requests < 1000:
        assert r.reconnects >= 1000 // keepalive_requests - 4
