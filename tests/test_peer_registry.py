"""The peer registry (bench/peers/peers.toml) is the one place a peer is declared: how it starts,
which protocols it serves and which workloads it answers. The default sweep, a sweep file's
`default_peers = true` and every bench driver take their servers from it; no other code names a
peer's start-up files or builds a command target or a PeerSpec of its own."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

from loadbench import ConfigError
from loadbench.sweep.file import default_sweep, sweep_from_dict
from loadbench.sweep.registry import (
    REGISTRY,
    default_peer_targets,
    load_peer_registry,
    peer_registry,
    peer_target,
)

REPO = Path(__file__).resolve().parents[1]
PEERS = REPO / "bench" / "peers"
PACKAGE = REPO / "python" / "loadbench"
DRIVERS = REPO / "bench" / "bench_drivers"
# Code that could start a server: the package, the bench drivers and their package (docs and the
# installer, which builds the Rust and Go peers, are not code that launches one).
CODE = (
    sorted(PACKAGE.rglob("*.py"))
    + sorted((REPO / "bench").glob("*.py"))
    + sorted(DRIVERS.glob("*.py"))
    + [REPO / "bench" / "quiet_reports.sh"]
)


def _names() -> set[str]:
    return {t.name for t in peer_registry(PEERS)}


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(
        f"loadbench_bench_{name}", REPO / "bench" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_registry_holds_beast_and_every_peer_once():
    targets = peer_registry(PEERS)
    assert [t.name for t in targets] == [
        "beast",
        "python-asyncio",
        "hypercorn",
        "python-asyncio-3.13",
        "hypercorn-3.13",
        "pypy-hypercorn",
        "node",
        "nginx",
        "h2o",
        "rust-hyper",
        "go",
        "rust-axum",
        "ruby-puma",
        "nim",
        "quic-go",
        "caddy",
    ]
    assert [t.kind for t in targets] == ["beast"] + ["command"] * 15
    # two builds of one server are variant pairs: the report's variant speedup tables
    assert {(t.variant_of, t.name) for t in targets if t.variant_of} == {
        ("python-asyncio", "python-asyncio-3.13"),
        ("hypercorn", "hypercorn-3.13"),
        ("hypercorn", "pypy-hypercorn"),
        ("rust-hyper", "rust-axum"),
    }
    assert [t.name for t in default_peer_targets(PEERS)] == [t.name for t in targets[1:]]
    assert peer_target("nginx", PEERS).unsupported_workloads == ["echo"]
    with pytest.raises(ConfigError, match="no peer 'apache'.*known: beast, python-asyncio"):
        peer_target("apache", PEERS)


def test_every_peer_name_the_drivers_and_the_default_sweep_use_is_a_registry_entry():
    from bench_drivers import generator_comparison, server_comparison, server_comparison_h2

    names = _names()
    used = set(server_comparison.SERVERS) | {peer for peer, _ in server_comparison_h2.SERVERS}
    used |= set(generator_comparison.SERVERS) | {
        peer for peer, _ in generator_comparison.H2_SERVERS
    }
    used |= set(_load_script("memory_per_connection").SERVERS) | set(
        _load_script("contention_accounting").SERVERS
    )
    assert used <= names, used - names
    # the default sweep and `default_peers = true` run exactly the registry's servers, as declared there
    registry = {t.name: t for t in peer_registry(PEERS)}
    swept = default_sweep(peers_dir=PEERS).targets
    # but the HTTP/3 peers, which serve h3 beside https and h2: the default sweep measures no h3
    assert {t.name for t in swept} == names - {"quic-go", "caddy"}
    assert all(dataclasses.asdict(t) == dataclasses.asdict(registry[t.name]) for t in swept)
    from_file = sweep_from_dict({"default_peers": True, "peers_dir": str(PEERS)}).targets
    assert [t.name for t in from_file] == [t.name for t in swept] + ["quic-go", "caddy"]


def _startup_files() -> set[str]:
    """The files each registry peer is started from ({peers}/nginx/run.sh -> nginx/run.sh)."""
    files = set()
    for target in peer_registry(PEERS):
        for argv in (
            target.argv,
            target.https_argv,
            target.h2c_argv,
            target.h2_argv,
            target.h3_argv,
        ):
            for arg in argv or ():
                if "{peers}/" in arg:
                    files.add(arg.split("{peers}/", 1)[1].split(":", 1)[0])
    return files


def test_no_code_but_the_registry_says_how_a_peer_starts():
    files = _startup_files()
    assert {
        "nginx/run.sh",
        "node/hello.js",
        "node/hello_h2.js",
        "h2o/run.sh",
        "python/server.py",
        "python/asgi_app.py",
        "rust/target/release/loadbench-peer-rust",
        "go/loadbench-peer-go",
        "axum/target/release/loadbench-peer-axum",
        "ruby/run.sh",
        "nim/loadbench-peer-nim",
        "pypy/.venv/bin/python",
        "python3.13/.venv/bin/python",
        "quicgo/loadbench-peer-quicgo",
        "caddy/run.sh",
    } <= files
    offenders = []
    for path in CODE:
        text = path.read_text()
        # a start-up file as a string of its own ("{peers}/nginx/run.sh", "peers/node/hello.js"):
        # an argv in the making, not prose that tells a reader where a peer lives
        named = sorted(
            f
            for f in files
            if re.search(rf"""["'](\{{peers\}}/|[\w./]*peers/)?{re.escape(f)}["']""", text)
        )
        if named or re.search(r"""["']\{peers\}/""", text):
            offenders.append(f"{path.relative_to(REPO)} names {', '.join(named) or '{peers}/...'}")
        if re.search(r"\b(PeerSpec|RunningPeer)\b", text):
            offenders.append(f"{path.relative_to(REPO)} has a PeerSpec/RunningPeer of its own")
        if re.search(r"""\bkind\s*=\s*["']command["']""", text):
            offenders.append(f"{path.relative_to(REPO)} builds a command target")
    assert not offenders, "a peer declared outside bench/peers/peers.toml:\n" + "\n".join(offenders)


def test_the_package_holds_no_bench_driver_and_imports_none():
    """The drivers need a checkout (bench/peers, reports/), so they live in bench/bench_drivers,
    not in the wheel; the product must run without them."""
    # its files, not the folder: a checkout from before the move may keep a stale __pycache__
    assert not list((PACKAGE / "bench").glob("*.py"))
    importers = [
        str(p.relative_to(REPO))
        for p in PACKAGE.rglob("*.py")
        if re.search(r"^\s*(from|import)\s+(bench_drivers|loadbench\.bench)\b", p.read_text(), re.M)
    ]
    assert not importers


def test_the_registry_is_checked_by_the_sweep_files_rules(tmp_path):
    shutil.copy(PEERS / REGISTRY, tmp_path / REGISTRY)
    text = (tmp_path / REGISTRY).read_text()
    (tmp_path / REGISTRY).write_text(
        text.replace('workers_env = "NGINX_WORKERS"', 'worker_env = "NGINX_WORKERS"')
    )
    with pytest.raises(ConfigError, match=r"peers.toml: unknown key 'targets\[7\].worker_env'"):
        peer_registry(tmp_path)
    (tmp_path / REGISTRY).write_text(text + '\n[[targets]]\nname = "nginx"\nkind = "beast"\n')
    with pytest.raises(ConfigError, match="a second peer named 'nginx'"):
        load_peer_registry(tmp_path / REGISTRY)
    (tmp_path / REGISTRY).write_text(
        text.replace("version_pattern = 'nginx/", "version_pattern = '(nginx/")
    )
    with pytest.raises(ConfigError, match="version_pattern is no regular expression"):
        peer_registry(tmp_path)
    with pytest.raises(ConfigError, match="cannot read the peer registry"):
        peer_registry(tmp_path / "nowhere")


def test_the_label_key_is_checked_by_the_sweep_files_rules(tmp_path):
    text = (PEERS / REGISTRY).read_text()
    node = (
        'label = { http = "node:http", https = "node:http", h2c = "node:http2", h2 = "node:http2" }'
    )
    assert node in text
    for bad, error in (
        ('label = ["loadbench-server"]', r"targets\[0\]\.label: expected the name bench"),
        ("label = 7", r"targets\[0\]\.label: expected the name bench"),
        ("label = { http = 7 }", r"targets\[0\]\.label\.http: expected a string, got 7"),
        ('label = { h4 = "x" }', r"targets\[0\]: target 'beast': label\.h4: not one of http"),
    ):
        (tmp_path / REGISTRY).write_text(text.replace('label = "loadbench-server"', bad, 1))
        with pytest.raises(ConfigError, match=error):
            peer_registry(tmp_path)
    # a sweep file's [[targets]] take it too (the same checker); sweeps report by name
    target = sweep_from_dict(
        {"targets": [{"name": "mine", "kind": "beast", "label": {"h2c": "mine:h2"}}]}
    ).targets[0]
    assert (target.label_for("h2c"), target.label_for("http")) == ("mine:h2", "mine")
    with pytest.raises(ConfigError, match=r"targets\[0\]\.label: expected"):
        sweep_from_dict({"targets": [{"name": "mine", "kind": "beast", "label": True}]})


def test_a_peer_says_its_version_from_the_registrys_command():
    assert peer_target("beast", PEERS).version_text(PEERS).startswith("loadbench ")
    nginx = peer_target("nginx", PEERS)
    if nginx.unavailable_reason("http", PEERS) is None:
        assert re.fullmatch(r"nginx/\S+", nginx.version_text(PEERS))
    assert peer_target("go", PEERS).version_text(PEERS) == "n/a"  # no version command declared


def test_a_peer_whose_runtime_is_missing_says_where_it_comes_from(tmp_path):
    """A peers directory without the built or installed runtimes (a fresh checkout): each new
    peer is skipped with its requires_note, e.g. why CPython 3.13 may not be had at all."""
    shutil.copy(PEERS / REGISTRY, tmp_path / REGISTRY)
    reasons = {
        t.name: t.unavailable_reason(t.protocols[0], tmp_path) for t in peer_registry(tmp_path)
    }
    assert reasons["python-asyncio-3.13"] == (
        f"{tmp_path}/python3.13/.venv/bin/python is missing - no CPython 3.13 venv: Debian 12 "
        "packages no python3.13; bash bench/install-peers.sh makes the venv from a python3.13 on "
        "PATH or in pyenv (pyenv install 3.13)"
    )
    assert "Debian 12 packages no python3.13" in reasons["hypercorn-3.13"]
    assert reasons["pypy-hypercorn"].endswith(
        "(apt pypy3 pypy3-venv, then pip install hypercorn into the venv)"
    )
    # issue 58: what README command 1 brings says so; what needs rustup names install-peers.sh
    for name in ("go", "nim", "quic-go", "pypy-hypercorn", "caddy", "ruby-puma"):
        assert "bash .ci/install.sh" in reasons[name], reasons[name]
    for name in ("rust-hyper", "rust-axum"):
        assert reasons[name].startswith(f"{tmp_path}/"), reasons[name]
        assert "bash bench/install-peers.sh" in reasons[name] and "rustup" in reasons[name]


def test_the_http3_peers_declare_h3_beside_their_tls_protocols():
    """quic-go and caddy serve HTTPS and h2 on TCP and h3 on UDP, from one command each; their
    cleartext protocols are n/a with the reason, and a peer without h3_argv does not serve h3."""
    from loadbench.sweep.targets import h3_unavailable_reason

    for name in ("quic-go", "caddy"):
        target = peer_target(name, PEERS)
        assert target.protocols == ["https", "h2", "h3"]
        assert target.h3_argv == target.h2_argv == target.https_argv
        assert (
            "TLS only" in target.protocol_notes["http"] or "HTTPS" in target.protocol_notes["http"]
        )
    assert peer_target("caddy", PEERS).unsupported_workloads == ["echo"]
    nginx = peer_target("nginx", PEERS)
    assert nginx.unavailable_reason("h3", PEERS) == (
        h3_unavailable_reason() or "nginx does not serve h3 (serves http, https, h2c, h2)"
    )
