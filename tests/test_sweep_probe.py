"""`loadbench sweep FILE --probe`: each target started as the sweep starts it, every workload's
request sent once per protocol, the answer (status and bytes, or the error) printed per target x
protocol x workload, the servers stopped; exit 1 when one did not start or answered without a
2xx. Real servers on 127.0.0.1: the embedded one, a Python server that gets one route wrong, a
command that never starts."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

from cli_runner import loadbench_cli

from loadbench.sweep.file import load_sweep
from loadbench.sweep.probe import probe_sweep

# Answers /plaintext, 404s everything else and 500s POSTs: a server with its routes wrong.
HALF_RIGHT = textwrap.dedent(
    """
    import http.server, sys

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status, body):
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self._send(200 if self.path in ("/", "/plaintext") else 404, b"Hello, World!\\n")

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(500, b"no\\n")

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    """
)


def _sweep_file(tmp_path: Path) -> Path:
    server = tmp_path / "half_right.py"
    server.write_text(HALF_RIGHT)
    config = tmp_path / "probe.toml"
    config.write_text(
        textwrap.dedent(
            f"""
            protocols = ["http", "h2c"]
            workloads = ["plaintext", "json", "echo"]

            [[targets]]
            name = "beast"
            kind = "beast"

            [[targets]]
            name = "half-right"
            kind = "command"
            argv = ["{sys.executable}", "{server}", "{{port}}"]
            protocol_notes = {{ h2c = "http.server speaks HTTP/1.1 only" }}
            unsupported_workloads = ["echo"]

            [[targets]]
            name = "never-up"
            kind = "command"
            argv = ["{sys.executable}", "-c", "import sys; sys.exit('no such config: {tmp_path}')"]
            """
        )
    )
    return config


def _lines(out: str) -> dict:
    """{(target, protocol, workload): answer} from the probe's table on stdout."""
    rows = {}
    for line in out.splitlines():
        target, protocol, workload, answer = line.split(None, 3)
        rows[(target, protocol, workload)] = answer
    return rows


def test_probe_prints_what_each_target_answered_per_protocol_and_workload(tmp_path):
    proc = loadbench_cli("sweep", str(_sweep_file(tmp_path)), "--probe", timeout=120)
    assert proc.returncode == 1, proc.stderr
    rows = _lines(proc.stdout)
    for protocol in ("http", "h2c"):  # the embedded server answers everything, over both
        for workload in ("plaintext", "json", "echo"):
            answer = rows[("beast", protocol, workload)]
            assert re.fullmatch(r"200, \d+ bytes read \(headers included\)", answer), answer
    # the 4 KiB echo body came back: more bytes than the plaintext answer by about 4 KiB
    echo = int(rows[("beast", "http", "echo")].split(", ")[1].split()[0])
    plain = int(rows[("beast", "http", "plaintext")].split(", ")[1].split()[0])
    assert echo - plain >= 4096
    assert rows[("half-right", "http", "plaintext")].startswith("200, ")
    assert rows[("half-right", "http", "json")].startswith("404, ")
    assert rows[("half-right", "http", "echo")] == "n/a: in the target's unsupported_workloads"
    assert rows[("half-right", "h2c", "-")] == "not measured: http.server speaks HTTP/1.1 only"
    never = rows[("never-up", "http", "-")]
    assert (
        never.startswith("did not start: never-up never became ready") and "no such config" in never
    )
    assert "2 probe(s) failed" in proc.stderr  # half-right's json (404) and never-up
    assert len(rows) == 2 * 3 + 3 + 1 + 2  # beast 6, half-right 3 + h2c, never-up http + h2c
    # every server it started is stopped: no process left with this test's paths in its argv
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(tmp_path).encode() in cmdline and int(pid) != os.getpid():
            left.append(cmdline)
    assert not left, left


def test_probe_of_a_target_that_answers_everything_exits_0(tmp_path):
    config = tmp_path / "beast.toml"
    config.write_text('protocols = ["https", "h2"]\n[[targets]]\nname = "beast"\nkind = "beast"\n')
    proc = loadbench_cli("sweep", str(config), "--probe", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert set(_lines(proc.stdout)) == {("beast", p, "plaintext") for p in ("https", "h2")}
    assert "every served workload answered 2xx" in proc.stderr


def test_probe_answers_come_from_the_sweeps_own_runner_options(tmp_path):
    """The probe sends what a cell sends (method, body, headers; HTTP/2 for h2c) once, through the
    runner a sweep would call: a runner that records its calls shows the options."""
    sweep = load_sweep(_sweep_file(tmp_path))
    sweep.targets = sweep.targets[:1]
    calls = []

    class Answer:
        def __init__(self, url):
            self.url = url

        def to_dict(self):
            return {"status_codes": {"200": 1}, "errors": {}, "bytes_read": 100}

    def runner(url, **kwargs):
        calls.append((url, kwargs))
        return Answer(url)

    answers = list(probe_sweep(sweep, runner=runner))
    assert [a.ok for a in answers] == [True] * 6
    echo = [k for u, k in calls if u.endswith("/echo")]
    assert len(echo) == 2 and all(k["method"] == "POST" and len(k["body"]) == 4096 for k in echo)
    assert all(
        k["requests"] == 1 and k["connections"] == 1 and k["duration"] is None for _, k in calls
    )
    assert [k.get("protocol") for u, k in calls if u.endswith("/json")] == [None, "h2"]


def test_probe_and_plan_together_is_one_clear_error(tmp_path):
    proc = loadbench_cli("sweep", str(_sweep_file(tmp_path)), "--probe", "--plan")
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "loadbench: error: --plan and --probe: choose one (--plan starts nothing)"
    )
