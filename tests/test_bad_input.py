"""Bad input everywhere: every flag and argument a user can get wrong ends in one clear
message - ConfigError from the API, `loadbench: error: ...` and exit 2 from the CLI - and
never in a traceback, a hang or a run against nonsense.

Extends test_generator.py's API table (URL forms, connections 0, duration 0/-1, requests 0,
timeout 0, body file, CPUs, header, method, resolution, CA file) and test_server_cli.py.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from cli_runner import loadbench_cli

import loadbench
from loadbench import ConfigError, ServerProcess

DEAD_URL = (
    "http://127.0.0.1:1/"  # nothing listens: a run that starts would only count connect errors
)


def cli(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess:
    return loadbench_cli(*args, timeout=timeout)


def assert_one_clear_error(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1, proc.stderr
    assert message in error_lines[0], proc.stderr


# --- loadbench.run ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(connections=-5), "connections must be >= 1"),
        (dict(connections="4"), "connections must be an integer"),
        (dict(connections=True), "connections must be an integer"),
        (dict(connections=10**12), "connections must be a sensible integer"),
        (dict(threads=0), "threads must be >= 1"),
        (dict(threads=-2), "threads must be >= 1"),
        (dict(duration="abc"), "duration must be a number"),
        (dict(duration=float("nan")), "duration must be > 0"),
        (dict(duration=float("inf")), "duration must be > 0"),
        (dict(duration=None), "give a duration"),
        (dict(requests=-3), "requests must be an integer >= 1"),
        (dict(requests=2.5), "requests must be an integer >= 1"),
        (dict(warmup=-1), "warm-up must be >= 0"),
        (dict(timeout=-1), "timeout must be > 0"),
        (dict(timeout=float("nan")), "timeout must be > 0"),
        (dict(interval=0), "interval must be > 0"),
        (dict(interval=float("inf")), "interval must be > 0"),
        (dict(cpus=[]), "cpus is empty"),
        (dict(cpus=[-1]), "CPU -1 does not exist"),
        (dict(cpus=["a"]), "cpus must be a list of CPU numbers"),
        (dict(cpus=5), "cpus must be a list of CPU numbers"),
        (dict(url="http://:80/"), "no host"),
        (dict(url="https://"), "no host"),
        (dict(url=""), "a URL is required"),
        (dict(url="gopher://127.0.0.1/"), "unknown scheme"),
        (dict(url="http://[::1/"), "IPv6"),
        (dict(url="http://127.0.0.1:abc/"), "not a number"),
        (dict(url="http://127.0.0.1:0/"), "out of range"),
        (dict(url="http://a b/"), "invalid character"),
        (dict(method=None), "method must be a string"),
        (dict(method=""), "bad HTTP method"),
        (dict(headers={"X": "a\r\nb"}), "line break"),
        (dict(headers=5), "headers must be"),
        (dict(headers="X: y"), "headers must be"),
        (dict(body=5), "body must be bytes"),
        (dict(body=Path("/")), "cannot read body file"),
        (dict(requests_list=[]), "requests_list is empty"),
        (dict(requests_list=[{"nope": 1}]), "unknown request keys"),
        (dict(requests_list=[{"path": "no-slash"}]), "must start with '/'"),
        (dict(sample_pid=-1), "pid"),
    ],
)
def test_run_rejects_bad_arguments_with_one_clear_message(kwargs, message):
    args = dict(url=DEAD_URL, duration=0.1)
    args.update(kwargs)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        loadbench.run(args.pop("url"), **args)


def test_more_connections_than_the_fd_limit_is_refused_up_front():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    with pytest.raises(ConfigError, match="open-file limit"):
        loadbench.run(DEAD_URL, connections=soft + 1, duration=0.1)
    with pytest.raises(ConfigError, match="open-file limit"):
        loadbench.run(DEAD_URL, connections=2**31 - 1, duration=0.1)
    with pytest.raises(ConfigError, match="open-file limit"):  # an open-loop pool may grow that far
        loadbench.run(DEAD_URL, connections=1, rate=100, max_connections=soft + 1, duration=0.1)


def test_too_many_threads_is_refused():
    with pytest.raises(ConfigError, match="threads must be <= 1024"):
        loadbench.run(
            DEAD_URL,
            connections=2000 if resource.getrlimit(resource.RLIMIT_NOFILE)[0] > 2100 else 1025,
            threads=1025,
            duration=0.1,
        )


# --- loadbench run ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["-c", "-5"], "connections must be >= 1"),
        (["-c", "abc"], "-c/--connections: invalid int value"),
        (["-t", "0"], "threads must be >= 1"),
        (["-z", "0"], "duration must be > 0"),
        (["-z", "abc"], "bad duration 'abc'"),
        (["-n", "0"], "requests must be an integer >= 1"),
        (["-n", "5", "-z", "1s"], "not both"),
        (["--timeout", "0"], "timeout must be > 0"),
        (["--timeout", "soon"], "bad timeout"),
        (["--warmup", "-1"], "bad warm-up"),
        (["--cpus", "4095"], "CPU 4095 does not exist"),
        (["--cpus", "a"], "bad CPU list"),
        (["--body-file", "/nonexistent/body.bin"], "cannot read body file"),
        (["--body", "x", "--body-file", "/etc/hostname"], "not both"),
        (["-H", "NoColon"], "bad header"),
        (["-m", ""], "bad HTTP method"),
        (["--json", "/nonexistent/dir/r.json"], "--json"),
        (["--hdr-log", "/nonexistent/dir/r.hlog"], "--hdr-log"),
        (["--json", "/"], "is a directory"),
        (["--sample-pid", "0"], "pid"),
        (["--cacert", "/nonexistent/ca.pem"], "CA file"),
    ],
)
def test_loadbench_run_flags(args, message):
    length = (
        [] if ("-z" in args or "-n" in args) else ["-z", "0.1s"]
    )  # keep a run that starts short
    assert_one_clear_error(cli("run", DEAD_URL, *length, *args), message)


@pytest.mark.parametrize(
    "url, message",
    [
        ("http:///x", "no host"),
        ("ftp://127.0.0.1/", "unknown scheme"),
        ("127.0.0.1:80", "must start with http:// or https://"),
        ("http://no-such-host.invalid/", "cannot resolve"),
    ],
)
def test_loadbench_run_urls(url, message):
    assert_one_clear_error(cli("run", url, "-z", "0.1s"), message)


def test_a_failed_json_write_after_the_run_keeps_the_summary(tmp_path, monkeypatch, capsys):
    # The disk fills up during the run: the summary is printed, then one clear error.
    from loadbench.cli import main

    target = tmp_path / "r.json"

    def disk_full(self, path=None, indent=2):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(loadbench.Result, "to_json", disk_full)
    code = main(["run", DEAD_URL, "-z", "0.2s", "--json", str(target)])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.strip() == f"loadbench: error: cannot write {target}: No space left on device"
    assert "errors" in out.lower()  # the summary of what was measured came first


# --- loadbench serve / ServerProcess ---------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workers", "0"], "--workers expects an integer from 1 to 1024, got '0'"),
        (["--port", "70000"], "--port expects an integer from 0 to 65535, got '70000'"),
        (["--port", "-1"], "--port expects an integer from 0 to 65535, got '-1'"),
        (["--tls-port", "70000"], "--tls-port expects an integer from 0 to 65535"),
        (["--max-body", "abc"], "--max-body: invalid int value"),
        (["--max-body", "-5"], "--max-body expects an integer"),
        (["--header-timeout-ms", "-5"], "--header-timeout-ms expects an integer"),
        (["--idle-timeout-ms", "0"], "--idle-timeout-ms expects an integer"),
        (["--cert", "/etc/hostname"], "--cert and --key go together"),
        (["--no-http"], "--no-http needs --tls"),
        (["--accept", "foo"], "invalid choice"),
        (["--cpus", "x"], "--cpus: bad CPU list"),
        (["--cpus", "4095"], "cannot pin loadbench-server to CPUs [4095]"),
    ],
)
def test_loadbench_serve_flags(args, message):
    assert_one_clear_error(cli("serve", *args), message)


def test_server_process_bad_flag_is_a_config_error():
    with pytest.raises(ConfigError, match="--max-body expects an integer"):
        ServerProcess(extra_args=["--max-body", "-1"]).start()
    with pytest.raises(ConfigError, match="cannot pin"):
        ServerProcess(cpus=[os.cpu_count() + 4096]).start()
