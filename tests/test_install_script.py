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
TEST_PACKAGES = BUILD_PACKAGES | {
    "libgtest-dev",
    "clang",
    "openssl",
    "curl",
    "nghttp2-client",
    "nodejs",
    "nginx-light",
    "iproute2",
    "chromium",
    "nghttp2-server",
    "h2o",
    "caddy",
    "wrk",
    "strace",
    "puma",
    "ruby-rack",
    "heaptrack",
    "gdb",
    "zstd",
    "golang-go",
    "ccache",
    "nim",
    "pypy3",
    "pypy3-venv",
}
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


@pytest.mark.parametrize("args,expected", [([], BUILD_PACKAGES), (["test"], TEST_PACKAGES)])
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
        assert not packages & (TEST_PACKAGES - BUILD_PACKAGES), "test tools only for `test`"


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
