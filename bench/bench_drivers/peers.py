"""The registry's peers as the bench drivers run them.

A driver names its servers by the label its report uses ("loadbench-server", "nginx h2",
"node:http2 h2c"); each label is one entry of the peer registry (bench/peers/peers.toml, read by
loadbench.sweep.registry.peer_registry) and one protocol (:class:`PeerChoice`), and the registry
says the label too (its ``label`` key; :func:`registry_choices`). Starting one is
loadbench.sweep.targets.launch - the same launch, pinning, cgroup and readiness probe as a
sweep's - plus a loadbench.core.sampler.Sampler over its process tree, whose snapshots the
drivers read right before and after each run (:class:`LaunchedPeer`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence
from urllib.parse import urlsplit

from loadbench.core import protocols
from loadbench.core.errors import ConfigError, ServerError
from loadbench.core.sampler import Sampler
from loadbench.sweep.registry import REGISTRY, peer_registry, peer_target
from loadbench.sweep.targets import RunningServer, Target, launch


@dataclass(frozen=True)
class PeerChoice:
    """A server of a bench report: its label there, the registry entry and the protocol."""

    label: str
    peer: str  # a name in bench/peers/peers.toml
    protocol: str = "http"  # http, https, h2c or h2

    @property
    def https(self) -> bool:
        return self.protocol in protocols.TLS


def registry_choices(
    servers: Iterable[tuple[str, str]], peers_dir: Path, *, protocol_in_label: bool = False
) -> list[PeerChoice]:
    """Each (registry peer, protocol) of ``servers`` as a :class:`PeerChoice`, labelled as the
    registry says (Target.label_for: "loadbench-server", "node:http2"), with " <protocol>"
    appended when ``protocol_in_label`` (a report that runs a peer over several protocols:
    "loadbench-server h2c"). A peer the registry lacks is a ConfigError naming the known ones."""
    registry = {t.name: t for t in peer_registry(peers_dir)}
    choices = []
    for peer, protocol in servers:
        if peer not in registry:
            raise ConfigError(
                f"{Path(peers_dir) / REGISTRY}: no peer {peer!r} (known: {', '.join(registry)})"
            )
        label = registry[peer].label_for(protocol)
        choices.append(
            PeerChoice(f"{label} {protocol}" if protocol_in_label else label, peer, protocol)
        )
    return choices


@dataclass
class LaunchedPeer:
    """A started registry peer: where to send load (:meth:`url`), its process tree's CPU
    (:meth:`snapshot`, loadbench.sampler.window between two of them), and :meth:`stop`."""

    choice: PeerChoice
    server: RunningServer
    sampler: Any = field(repr=False)
    version: str = ""

    @property
    def name(self) -> str:
        return self.choice.label

    @property
    def https(self) -> bool:
        return self.choice.https

    @property
    def pid(self) -> int:
        return self.server.pid

    @property
    def port(self) -> int:
        return urlsplit(self.server.base_url).port

    def url(self, path: str = "/") -> str:
        return self.server.base_url + path

    def snapshot(self) -> Any:
        """loadbench.sampler.ProcSnapshot of the peer's whole process tree, read now."""
        return self.sampler.snapshot()

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> "LaunchedPeer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def unavailable(choice: PeerChoice, peers_dir: Path) -> Optional[str]:
    """Why the registry peer cannot serve the choice's protocol here (not installed, not served),
    or None."""
    return peer_target(choice.peer, peers_dir).unavailable_reason(choice.protocol, peers_dir)


def launch_peer(
    choice: PeerChoice,
    *,
    cpus: Optional[Sequence[int]],
    peers_dir: Path,
    workers: int = 1,
    env: Optional[dict] = None,
    binary: Optional[str] = None,
) -> LaunchedPeer:
    """Start the registry peer for the choice's protocol, pinned to ``cpus``, ready when it
    answers (loadbench.sweep.targets.launch); ServerError / ConfigError when it cannot.
    ``binary``: another loadbench-server for the beast entry (--beast-bin)."""
    target: Target = peer_target(choice.peer, peers_dir)
    why = target.unavailable_reason(choice.protocol, peers_dir)
    if why:
        raise ConfigError(f"{choice.label}: {why}")
    server = launch(
        target,
        choice.protocol,
        workers=workers,
        cpus=cpus,
        peers_dir=peers_dir,
        env=env,
        binary=binary if target.kind == "beast" else None,
    )
    try:
        # no syscall counters: while one is open every system call of the machine takes the
        # kernel's slower entry (reports/syscall-counting-cost.md), and these drivers compare
        # CPU per response with runs measured before the counters existed
        sampler = Sampler(server.pid, tree=True, syscalls=False)
    except BaseException:
        server.stop()
        raise
    return LaunchedPeer(choice, server, sampler, target.version_text(peers_dir))


def start_peers(
    choices: Sequence[PeerChoice],
    cpus: Sequence[int],
    env: dict[str, str],
    peers_dir: Path,
    binary: Optional[str] = None,
    env_prefix: str = "Server ",
) -> list[LaunchedPeer]:
    """Start every peer; each one's version goes into the environment block ``env`` under
    ``env_prefix + label``, and one that is not installed or does not start is n/a there with
    its reason - never dropped silently."""
    running = []
    for choice in choices:
        key = env_prefix + choice.label
        why = unavailable(choice, peers_dir)
        if why:
            env[key] = f"n/a ({why})"
            continue
        try:
            running.append(launch_peer(choice, cpus=cpus, peers_dir=peers_dir, binary=binary))
        except (ServerError, ConfigError, OSError) as exc:
            print(f"{choice.label}: n/a - {exc}", file=sys.stderr, flush=True)
            env[key] = f"n/a (did not start: {str(exc)[:200]})"
            continue
        env[key] = running[-1].version
    return running


def stop_all(peers: Sequence[LaunchedPeer]) -> None:
    for peer in peers:
        peer.stop()
