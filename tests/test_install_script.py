"""The install scripts on a machine that has none of the tools yet (issue: exit 127 on a fresh
Debian machine). `--dry-run` probes exactly as a real install does, so running it with a PATH
that holds only the base system's programs shows what a fresh machine would be told."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What a minimal Debian root has besides the tools the scripts install. No dpkg-query: without
# it nothing counts as installed, so every package the scripts can need must be named.
BASE_TOOLS = [
    "bash",
    "env",
    "sed",
    "grep",
    "head",
    "id",
    "uname",
    "cat",
    "dirname",
    "mkdir",
    "rm",
    "sort",
    "tr",
    "apt-cache",
]
BUILD_PACKAGES = {
    "g++",
    "cmake",
    "ninja-build",
    "make",
    "pkg-config",
    "libssl-dev",
    "libnghttp2-dev",
    "libwolfssl-dev",
    "libngtcp2-dev",
    "libngtcp2-crypto-gnutls-dev",
    "libnghttp3-dev",
    "libgnutls28-dev",
}
# The default sweep's peers that the registries serve (issue 58): README command 1 installs them.
PEER_PACKAGES = {
    "openssl",  # the TLS cells' certificate
    "nginx-light",
    "h2o",
    "nodejs",
    "ruby",
    "puma",
    "ruby-rack",
    "caddy",
    "golang-go",  # the go and quic-go peers, with Go's toolchain from the Go module proxy
    "nim",
    "pypy3",
    "pypy3-venv",
}
TEST_PACKAGES = (
    BUILD_PACKAGES
    | PEER_PACKAGES
    | {
        "libgtest-dev",
        "clang",
        "curl",
        "nghttp2-client",
        "iproute2",
        "chromium",
        "nghttp2-server",
        "wrk",
        "strace",
        "heaptrack",
        "gdb",
        "zstd",
        "ccache",
    }
)
# The servers README command 1 brings to a fresh Debian 12: Beast and every peer whose runtime
# the registries serve. The others need rustup or CPython 3.13 (bench/install-peers.sh).
FRESH_DEBIAN_SERVERS = {
    "beast",
    "python-asyncio",
    "hypercorn",
    "pypy-hypercorn",
    "node",
    "nginx",
    "h2o",
    "go",
    "ruby-puma",
    "nim",
}
LEFT_TO_INSTALL_PEERS = {"rust-hyper", "rust-axum", "python-asyncio-3.13", "hypercorn-3.13"}
PYTHON_PACKAGES = {"python3", "python3-dev", "python3-pip", "python3-venv"}


def _bare_path(tmp_path: Path, with_python: bool) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = BASE_TOOLS + (["python3"] if with_python else [])
    for tool in tools:
        real = shutil.which(tool)
        if tool == "python3":
            real = os.path.realpath(sys.executable)  # not a pyenv shim: that needs pyenv on PATH
        if real is None:
            pytest.fail(f"the base tool {tool} is not on this machine")
        (bin_dir / tool).symlink_to(real)
    return str(bin_dir)


def _dry_run(script: str, args: list[str], path: str) -> tuple[set[str], str]:
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LC_ALL": "C"}
    proc = subprocess.run(
        ["/bin/bash", str(REPO / script), "--dry-run", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert "command not found" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line and " " not in line for line in lines), "one package per line: " + proc.stdout
    return set(lines), proc.stderr


@pytest.mark.parametrize(
    "args,expected", [([], BUILD_PACKAGES | PEER_PACKAGES), (["test"], TEST_PACKAGES)]
)
def test_install_dry_run_names_every_package_on_a_machine_without_the_tools(
    tmp_path, args, expected
):
    packages, said = _dry_run(".ci/install.sh", args, _bare_path(tmp_path, with_python=False))
    missing = (expected | PYTHON_PACKAGES) - packages
    # h2spec is no Debian package: built with Go (named above) unless this HOME already has it
    has_h2spec = Path(os.environ.get("HOME", "/root"), "go", "bin", "h2spec").exists()
    assert has_h2spec or args != ["test"] or "would build h2spec" in said, said
    assert not missing, f"not named: {sorted(missing)}; named: {sorted(packages)}"
    assert any(p.startswith("libboost") and p.endswith("-dev") for p in packages)
    if args == ["test"]:
        # libFuzzer's package carries clang's major version, told by apt before clang exists.
        assert any(p.startswith("libclang-rt-") and p.endswith("-dev") for p in packages)
    else:
        test_only = TEST_PACKAGES - BUILD_PACKAGES - PEER_PACKAGES
        assert not packages & test_only, "test tools only for `test`"
    # the peers it builds (each only while missing) and hypercorn from PyPI, said on stderr
    peers = REPO / "bench" / "peers"
    for built, said_as in (
        ("go/loadbench-peer-go", "the Go peers"),
        ("nim/loadbench-peer-nim", "the Nim peer"),
        ("pypy/.venv/bin/hypercorn", "the PyPy peer"),
    ):
        assert (peers / built).exists() or f"would build {said_as}" in said, said
    assert "hypercorn" in said and "bench/install-peers.sh" in said, said


def _install_script_number(name: str) -> int:
    text = (REPO / ".ci/install.sh").read_text()
    line = next(x for x in text.splitlines() if x.startswith(f"{name}="))
    return int(line.split("=", 1)[1].split()[0])


def test_command_1_brings_ten_servers_and_says_how_long_the_sweep_takes():
    """Issue 58: README command 1 measures >= 10 servers on a fresh Debian 12, and its install
    says up front how long the sweep after it is planned to take; --quick is a first look in
    <= 5 min. Each fresh-machine server's requirements come from command 1: a Debian package it
    names, a file in git, a peer it builds, or hypercorn (the `peers` extra)."""
    from loadbench.sweep.file import default_sweep

    peers = REPO / "bench" / "peers"
    script = (REPO / ".ci/install.sh").read_text()
    pyproject = (REPO / "pyproject.toml").read_text()
    programs = {"nginx": "nginx-light", "h2o": "h2o", "node": "nodejs", "puma": "puma"}
    programs["ruby"] = "ruby"
    built = {
        "{peers}/go/loadbench-peer-go": "build_go_peers",
        "{peers}/nim/loadbench-peer-nim": "build_nim_peer",
        "{peers}/pypy/.venv/bin/hypercorn": "build_pypy_peer",
    }
    tracked = set(
        subprocess.run(
            ["git", "ls-files", "bench/peers"], cwd=REPO, capture_output=True, text=True
        ).stdout.split()
    )
    minutes = {}
    for quick in (False, True):
        sweep = default_sweep(quick=quick, peers_dir=peers)
        by = {t.name: t for t in sweep.targets}
        assert set(by) == FRESH_DEBIAN_SERVERS | LEFT_TO_INSTALL_PEERS
        assert len(FRESH_DEBIAN_SERVERS) >= 10
        for name in FRESH_DEBIAN_SERVERS - {"beast"}:
            for need in by[name].requires:
                if need.startswith("python-module:"):
                    assert need == "python-module:hypercorn", need
                    assert '"hypercorn' in pyproject.split("peers = [", 1)[1].split("]", 1)[0]
                elif need in built:
                    assert (
                        built[need] in script and need.replace("{peers}", "bench/peers") in script
                    )
                elif need.startswith("{peers}/"):
                    assert need.replace("{peers}", "bench/peers") in tracked, need
                else:
                    assert f"need_tool {need} {programs[need]}" in script or (
                        f"need {programs[need]}" in script
                    ), need
        cells = [
            c
            for c in sweep.cells()
            if c.target in FRESH_DEBIAN_SERVERS
            and c.protocol in by[c.target].protocols
            and c.workload not in by[c.target].unsupported_workloads
        ]
        minutes[quick] = sweep.planned_seconds(cells) / 60
    assert minutes[True] <= 5.0, minutes
    assert minutes[False] + _install_script_number("INSTALL_MIN") <= 30, minutes
    # what the install says up front is the plan's figure
    assert _install_script_number("SWEEP_MIN") == round(minutes[False]), minutes
    assert _install_script_number("QUICK_MIN") == round(minutes[True]), minutes


def test_install_dry_run_with_a_python_that_has_headers_adds_no_python_package(tmp_path):
    import sysconfig

    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        pytest.fail("the test suite runs on a Python with headers (it built the extension)")
    packages, _ = _dry_run(".ci/install.sh", ["test"], _bare_path(tmp_path, with_python=True))
    assert not packages & {"python3", "python3-pip"}
    assert not any(p.startswith("python3") and p.endswith("-dev") for p in packages)


def test_install_script_rejects_an_unknown_argument():
    proc = subprocess.run(
        ["bash", str(REPO / ".ci/install.sh"), "--dryrun"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown argument '--dryrun'" in proc.stderr


def test_install_peers_dry_run_names_the_peer_packages(tmp_path):
    packages, err = _dry_run("bench/install-peers.sh", [], _bare_path(tmp_path, with_python=False))
    expected = {
        "wrk",
        "nghttp2-client",
        "apache2-utils",
        "nginx-light",
        "nodejs",
        "openssl",
        "util-linux",
        "hey",
        "h2o",
        "curl",
        "strace",
        "linux-perf",
        "caddy",  # the HTTP/3 peer
    }
    assert not expected - packages, f"named: {sorted(packages)}"
    # oha and bombardier build from the Rust and Go registries: said, not installed.
    assert "oha" in err and "bombardier" in err
    # so do the Rust and Go HTTP/2 peers; hypercorn comes from PyPI into loadbench's Python
    assert "Rust peer" in err and "Go peer" in err and "hypercorn" in err
    assert "quic-go peer" in err  # the HTTP/3 peer built with go (bench/peers/quicgo)


def test_install_peers_dry_run_names_the_new_peers_and_says_what_cannot_be_had(tmp_path):
    """Issue 32's peers: their Debian packages on stdout; the builds and venvs said on stderr;
    falcon (RubyGems only) and a missing CPython 3.13 (no Debian 12 package) each with why."""
    home = tmp_path / "home"  # no pyenv here: CPython 3.13 can only come from the venv
    home.mkdir()
    env_path = _bare_path(tmp_path, with_python=False)
    proc = subprocess.run(
        ["/bin/bash", str(REPO / "bench/install-peers.sh"), "--dry-run"],
        env={"PATH": env_path, "HOME": str(home), "LC_ALL": "C"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0 and "command not found" not in proc.stderr, proc.stderr
    packages, err = set(proc.stdout.split()), proc.stderr
    peers = REPO / "bench" / "peers"
    assert {"pypy3", "ruby", "puma", "ruby-rack", "nim"} <= packages, packages
    # pypy3's venv module is asked for only while the PyPy venv does not exist yet
    assert ("pypy3-venv" in packages) == (not (peers / "pypy/.venv/bin/python").exists())
    assert "axum peer" in err and "Nim peer" in err and "pypy" in err.lower()
    assert "falcon" in err and "RubyGems only" in err
    if not (peers / "python3.13" / ".venv" / "bin" / "hypercorn").exists():
        assert "Debian 12 packages no python3.13" in err and "would be skipped" in err
    else:
        assert "CPython 3.13 venv present" in err
