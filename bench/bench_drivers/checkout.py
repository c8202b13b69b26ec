"""Where the bench drivers find the peer registry (bench/peers) and write reports (reports/):
the repository checkout they run from."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from loadbench.sweep.registry import REGISTRY


def repo_root(start: Optional[Path] = None) -> Path:
    """The checkout: ``start`` when given, else the current directory when it holds
    bench/peers/peers.toml (how bench/README.md runs the drivers), else the checkout this package
    lives in (bench/bench_drivers: two folders up), else the current directory."""
    if start is not None:
        return Path(start)
    for candidate in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (candidate / "bench" / "peers" / REGISTRY).is_file():
            return candidate
    return Path.cwd()


def peers_dir(repo: Optional[Path] = None) -> Path:
    """bench/peers: the peer servers and their registry, peers.toml."""
    return repo_root(repo) / "bench" / "peers"


def reports_dir(repo: Optional[Path] = None) -> Path:
    """reports/: where the drivers write STEM.md and STEM.jsonl by default."""
    return repo_root(repo) / "reports"
