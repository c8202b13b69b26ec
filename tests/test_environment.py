"""The Environment block: real facts of this machine, as data, markdown and CLI output."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import loadbench
from loadbench.cli import main
from loadbench.core.environment import format_cpus


def test_environment_states_the_machine_and_toolchain():
    env = loadbench.environment()
    info = loadbench.build_info()
    assert env.logical_cores == os.cpu_count()
    assert env.kernel == f"Linux {platform.release()} {platform.machine()}"
    mem = next(
        line
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert env.memory_kib == int(mem.split()[1])
    assert env.cpu_model and env.cpu_model != "unknown"
    assert env.python.endswith(platform.python_version())
    assert (env.compiler, env.boost, env.openssl, env.loadbench) == (
        info["compiler"],
        info["boost"],
        info["openssl"],
        loadbench.__version__,
    )
    assert len(env.loadavg_at_start) == 3 and all(x >= 0 for x in env.loadavg_at_start)
    assert env.generator_cpus == format_cpus(os.sched_getaffinity(0))
    assert env.server_cpus is None and env.server_pinned is None


def test_affinity_of_a_pinned_server_process():
    cpu = min(os.sched_getaffinity(0))
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    try:
        env = loadbench.environment(server_pid=child.pid, generator_cpus=[cpu])
        assert env.server_pid == child.pid
        assert env.server_cpus == str(cpu) == env.generator_cpus
        assert env.server_pinned == (os.cpu_count() > 1)
        rows = dict(env.rows())
        assert (
            rows["Server CPUs"].startswith(f"cores {cpu}") and str(child.pid) in rows["Server CPUs"]
        )
    finally:
        child.stdin.close()
        child.wait(timeout=5)


def test_unknown_server_pid_is_a_clear_error():
    with pytest.raises(loadbench.ConfigError, match="no process with pid"):
        loadbench.environment(server_pid=int(Path("/proc/sys/kernel/pid_max").read_text()) + 1)


def test_git_commit_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert loadbench.environment().git_commit is None
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], check=True)
    (tmp_path / "f").write_text("x")
    subprocess.run(git + ["add", "f"], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loadbench.environment().git_commit == head
    (tmp_path / "f").write_text("changed")
    assert loadbench.environment().git_commit == head + "-dirty"


def test_markdown_table_and_dict():
    env = loadbench.environment(server_cpus=[0], generator_cpus=[0])
    md = env.to_markdown()
    lines = md.splitlines()
    assert lines[:2] == ["| Item | Value |", "|---|---|"]
    items = [line.split("|")[1].strip() for line in lines[2:]]
    for item in (
        "Host",
        "Kernel",
        "CPU",
        "Memory",
        "Machine load",
        "Python",
        "Compiler",
        "Boost",
        "OpenSSL",
        "loadbench",
        "Commit",
        "Server CPUs",
        "Generator CPUs",
    ):
        assert item in items
    assert f"({os.cpu_count()} logical cores)" in md
    d = env.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["server_cpus"] == "0" and d["logical_cores"] == os.cpu_count()


def test_format_cpus():
    assert format_cpus([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert format_cpus({3}) == "3"


def test_cli_env_prints_markdown_and_json(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| Item | Value |\n") and "| Kernel |" in out
    assert main(["env", "--json", "--server-cpus", "0", "--generator-cpus", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["logical_cores"] == os.cpu_count() and data["server_cpus"] == "0"


def test_cli_env_errors(capsys):
    assert (
        main(["env", "--server-pid", str(int(Path("/proc/sys/kernel/pid_max").read_text()) + 1)])
        == 2
    )
    assert "loadbench: error: no process with pid" in capsys.readouterr().err
    assert main(["env", "--server-cpus", "a-b"]) == 2
    assert "loadbench: error: --server-cpus: bad CPU list 'a-b'" in capsys.readouterr().err
