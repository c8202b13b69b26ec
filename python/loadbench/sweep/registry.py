"""The peer registry: every server loadbench compares, declared once in ``bench/peers/peers.toml``
(the peers and the embedded ``beast``) in the sweep file's ``[[targets]]`` form and checked by
its rules. The default sweep, a sweep file's ``default_peers = true``, the bench/ drivers and the
tests all read it here; nothing else says how a peer starts, which protocols it serves or which
workloads it answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from ..core.errors import ConfigError
from .targets import Target
from .toml_tables import SWEEP_KEYS, _check, _read_toml, _target

REGISTRY = "peers.toml"  # the peer registry's file name inside a peers directory


def load_peer_registry(path: Union[str, Path]) -> list[Target]:
    """The peer registry (bench/peers/peers.toml): ``[[targets]]`` tables only, each checked as a
    sweep file's target is; names are unique. Every problem is one ConfigError naming file and key."""
    path = Path(path)
    data = _read_toml(path, "the peer registry")
    try:
        _check(data, {"targets": SWEEP_KEYS["targets"]}, "")
        targets = [_target(t, i) for i, t in enumerate(data.get("targets", []))]
        seen: set = set()
        for i, target in enumerate(targets):
            if target.name in seen:
                raise ConfigError(f"targets[{i}]: a second peer named {target.name!r}")
            if target.kind == "url":
                raise ConfigError(
                    f"targets[{i}]: {target.name!r}: a registry peer is started by loadbench "
                    "(kind beast or command), not a url"
                )
            seen.add(target.name)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return targets


def peer_registry(peers_dir: Union[str, Path]) -> list[Target]:
    """Every server declared in ``peers_dir/peers.toml``. A missing file is a ConfigError."""
    return load_peer_registry(Path(peers_dir) / REGISTRY)


def peer_target(name: str, peers_dir: Union[str, Path]) -> Target:
    """The registry's entry ``name`` (ConfigError naming the known ones when there is none)."""
    targets = {t.name: t for t in peer_registry(peers_dir)}
    if name not in targets:
        raise ConfigError(
            f"{Path(peers_dir) / REGISTRY}: no peer {name!r} (known: {', '.join(targets)})"
        )
    return targets[name]


def default_peer_targets(peers_dir: Union[str, Path]) -> list[Target]:
    """The peers of the registry without the embedded Beast server, as the default sweep launches
    them (each skipped with a note when its file or runtime is missing). Every one receives the
    same worker count; each declares the protocols it serves, and why not the others."""
    return [t for t in peer_registry(peers_dir) if t.kind != "beast"]
