"""A sweep described in TOML (bench/sweeps/example.toml) -> :class:`loadbench.Sweep`.

Every key is checked: an unknown key or a value of the wrong type raises ConfigError naming
the key as a path (``targets[1].argv``, ``workloads[0].concurrencies``), so a typo never
silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from ..core import protocols
from ..core.errors import ConfigError
from .plan import builtin_workloads
from .registry import default_peer_targets, load_peer_registry, peer_registry
from .runner import Sweep
from .targets import Target
from .toml_tables import SWEEP_KEYS, _check, _list_of, _read_toml, _target, _workload, parse_seconds

__all__ = ["default_sweep", "load_peer_registry", "load_sweep", "parse_seconds", "sweep_from_dict"]


def sweep_from_dict(data: dict, base_dir: Optional[Path] = None) -> Sweep:
    """The same as a TOML file, from a dict already parsed.

    Relative paths (peers_dir, a target's cwd) are relative to ``base_dir``, by default the
    current directory - the repository root when run as the README shows.
    """
    _check(data, SWEEP_KEYS, "")
    kwargs: dict = {}
    for key in ("duration", "warmup", "timeout", "interval"):
        if key in data:
            kwargs[key] = parse_seconds(data[key], key)
    if "contended_share" in data:
        kwargs["contended_share"] = float(data["contended_share"])
    if "capacity_precision" in data:
        kwargs["capacity_precision"] = float(data["capacity_precision"])
    if "capacity_hold" in data:
        kwargs["capacity_hold"] = parse_seconds(data["capacity_hold"], "capacity_hold")
    if "capacity_step" in data:
        kwargs["capacity_step"] = parse_seconds(data["capacity_step"], "capacity_step")
    for key in (
        "repeats",
        "connection_setup",
        "connection_setup_concurrency",
        "connection_setup_workload",
        "workers",
        "generator_threads",
        "baseline",
        "open_fractions",
        "open_loop_workload",
        "capacity",
        "capacity_repeats",
        "settle",
        "blocks",
        "order_seed",
        "contended_reruns",
        "cluster",
        "shards",
        "streams",
        "pipeline",
        "requests",
        "hold_connections",
        "tls_library",
        "ack_with_request",
        "rst_close",
        "transport",
        "allocations",
        "allocation_sites",
        "profile",
    ):
        if key in data:
            kwargs[key] = data[key]
    if "run" in data:  # the [run] table: loadbench.run options for every cell
        kwargs["run_options"] = data["run"]
    if "twins" in data:
        kwargs["twins"] = _list_of(data["twins"], str, "twins", "a target name")
    for key in ("concurrencies", "server_cpus", "generator_cpus"):
        if key in data:
            kwargs[key] = _list_of(data[key], int, key, "an integer")
    if "protocols" in data:
        kwargs["protocols"] = _list_of(data["protocols"], str, "protocols", protocols.choices())
    if "detail_protocols" in data:
        kwargs["detail_protocols"] = _list_of(
            data["detail_protocols"], str, "detail_protocols", "a protocol"
        )
    base = base_dir or Path.cwd()
    peers_dir = base / data["peers_dir"] if "peers_dir" in data else base / "bench" / "peers"
    kwargs["peers_dir"] = str(peers_dir)
    targets = [_target(t, i) for i, t in enumerate(data.get("targets", []))]
    if not targets:
        targets = [Target("beast", description=BEAST_DESCRIPTION)]
    if data.get("default_peers", False):
        targets += [
            t for t in default_peer_targets(peers_dir) if t.name not in {x.name for x in targets}
        ]
    for t in targets:
        if t.cwd and not Path(t.cwd).is_absolute():
            t.cwd = str(base / t.cwd)
    kwargs["targets"] = targets
    if "workloads" in data:
        kwargs["workloads"] = [_workload(w, i) for i, w in enumerate(data["workloads"])]
    return Sweep(**kwargs)


def load_sweep(path: Union[str, Path]) -> Sweep:
    """Read a sweep TOML file; every problem is one ConfigError naming the file and key."""
    path = Path(path)
    data = _read_toml(path, "sweep file")
    try:
        return sweep_from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


BEAST_DESCRIPTION = "the embedded Boost.Beast reference server"

# The default sweep's planned time on 2 cores (Sweep.planned_seconds, re-runs of contended
# windows not included). It was sized under ~10 minutes for Beast and seven peers (570 s, with
# room for the re-runs a quiet machine still needs: 24 re-runs, 54 s, on 2026-11-30); issue 32
# added the seed reports' other peers (PyPy, CPython 3.13, Ruby, Nim, axum: 14 servers), whose
# cells at the same windows and repeats plan 730 s. Nothing per cell was cut to keep ten minutes:
# a sweep file that names fewer targets is the short sweep.
DEFAULT_CELL_BUDGET_S = 1010.0
# ... plus three capacity searches per server over http (p99 < 10 ms, 5 % precision), each on a
# fresh, settled server: about 6 bisecting steps of 1.26 s each and a confirmation held for 5 s
# after its start and settling (1.7 s; PyPy 12 s and node 5 s, their registry warm-ups), 660 s
# for all 14 (issue 42: one search's figure was its luck - h2o 24 716 in one sweep, 65 619 three
# hours later; and half of one sweep's capacities confirmed for 1 s did not hold for 5 s under
# wrk2 or loadbench). Settling every other fresh server adds 220 s to the cells' 790.
DEFAULT_CAPACITY_BUDGET_S = 670.0
DEFAULT_CAPACITY_OBJECTIVES = ["p99<10ms"]


def default_sweep(quick: bool = False, peers_dir: Optional[Path] = None) -> Sweep:
    """`loadbench sweep` with no file: the Beast server and every installed peer of
    ./bench/peers over HTTP/1.1 and HTTP/2, cleartext and TLS, sized to finish in about 27
    minutes on 2 cores with all 13 peers installed - 25 planned (Sweep.planned_seconds) plus
    re-runs of contended windows; with the ten servers `bash .ci/install.sh` brings to a fresh
    Debian 12 (no Rust, no CPython 3.13) 18.4 planned
    (``quick``: 1 repeat of 0.5 s windows and no capacity search, 3.9 minutes planned with those
    ten servers, 5.1 with all 14).

    Full: plaintext, json and echo (4 KiB POST) at C = 25 (seed report 001's concurrency; HTTP/2
    with 10 streams per connection) over http, https, h2c and h2; over http also a new
    connection per request at c = 20 and open loop at 50 and 95 % of each server's plaintext
    capacity, and the capacity under p99 < 10 ms (three searches, each on a fresh server,
    steps of 1 s, loadbench.capacity: their median and range); median of 3 x 0.75 s windows
    after a 0.25 s warm-up each, each repeat on a freshly started and settled server in its own
    block of the sweep (core/steady.py, sweep/runner.py). (Before HTTP/2 it also
    swept plaintext at C = 1, 10, 200, had 2 s windows and ran connection setup and open loop over
    https: four protocols and seven peers did not fit ten minutes with them.)
    """
    peers = Path(peers_dir) if peers_dir is not None else Path.cwd() / "bench" / "peers"
    registry = peer_registry(peers)  # Beast and every peer, as bench/peers/peers.toml declares them
    # The HTTP/3 peers (those with an h3_argv: quic-go, caddy) are there for h3, which this sweep
    # does not measure; over https and h2 alone they would push it past its budget. A sweep file
    # with `default_peers = true` and h3 in its protocols (bench/sweeps/h3.toml) runs them.
    targets = [t for t in registry if t.kind == "beast"] + [
        t for t in registry if t.kind != "beast" and t.h3_argv is None
    ]
    if quick:
        concurrencies, repeats, duration, warmup, fractions = [25], 1, 0.5, 0.2, [0.5]
    else:
        # three replications, each a fresh process in its own block of the sweep: on this VM
        # 1-64 % of a server's variance lies between processes and minutes, which three windows
        # of one process never see, and windows are as noisy as processes (CV 7-13 % at 1 s;
        # reports/variance-split.md) - so three 0.75 s windows on three processes say more than
        # three 1 s windows on one, and the shorter windows pay for the extra server starts
        concurrencies, repeats, duration, warmup, fractions = [25], 3, 0.75, 0.25, [0.5, 0.95]
    builtins = builtin_workloads()
    workloads = [builtins["plaintext"], builtins["json"], builtins["echo"]]
    return Sweep(
        targets=targets,
        workloads=workloads,
        concurrencies=concurrencies,
        protocols=["http", "https", "h2c", "h2"],
        streams={"h2c": 10, "h2": 10},
        detail_protocols=["http"],
        connection_setup=True,
        connection_setup_concurrency=20,
        repeats=repeats,
        duration=duration,
        warmup=warmup,
        peers_dir=str(peers),
        open_fractions=fractions,
        # --quick has no capacity search: each is a fresh, settled server and six steps, 120 of
        # the 351 s that --quick planned with the ten servers command 1 installs (issue 58: a
        # first look in <= 5 min); its open loop still runs at a share of the closed-loop peak
        capacity=[] if quick else list(DEFAULT_CAPACITY_OBJECTIVES),
        capacity_precision=0.1 if quick else 0.05,
        # a capacity is judged per 1 s window (slo/search.py), whatever the cells' windows
        capacity_step=None if quick else 1.0,
        # three searches, each on a fresh and settled server: a capacity is their median and
        # range, never one search's luck
        capacity_repeats=1 if quick else 3,
    )
