"""A sweep described in TOML (bench/sweeps/example.toml) -> :class:`loadbench.Sweep`.

Every key is checked: an unknown key or a value of the wrong type raises ConfigError naming
the key as a path (``targets[1].argv``, ``workloads[0].concurrencies``), so a typo never
silently falls back to a default.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Union

from ..core.errors import ConfigError
from .runner import Sweep, Workload, builtin_workloads
from .targets import Target, default_peer_targets, peer_registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

# key -> (accepted types, description used in messages)
_INT = (int,)
_NUM = (int, float)
_STR = (str,)
_BOOL = (bool,)
_LIST = (list,)
_DICT = (dict,)

SWEEP_KEYS = {
    "duration": (_NUM + _STR, "seconds, or a string like '2s' / '500ms'"),
    "warmup": (_NUM + _STR, "seconds, or a string like '1s'"),
    "timeout": (_NUM + _STR, "seconds, or a string like '5s'"),
    "repeats": (_INT, "a positive integer"),
    "concurrencies": (_LIST, "a list of positive integers"),
    "protocols": (_LIST, 'a list of "http", "https", "h2c", "h2"'),
    "streams": (_INT + _DICT, "streams per HTTP/2 connection: an integer, or a table like {h2c = 10, h2 = 10}"),
    "requests": (_INT, "responses + errors per closed-loop cell (instead of duration)"),
    "detail_protocols": (_LIST, "the protocols that get connection-setup and open-loop cells"),
    "connection_setup": (_BOOL, "true or false"),
    "connection_setup_concurrency": (_INT, "a positive integer"),
    "connection_setup_workload": (_STR, "a workload name"),
    "workers": (_INT, "a positive integer"),
    "server_cpus": (_LIST, "a list of CPU numbers"),
    "generator_cpus": (_LIST, "a list of CPU numbers"),
    "generator_threads": (_INT, "a positive integer"),
    "peers_dir": (_STR, "a directory"),
    "open_fractions": (_LIST, "a list of fractions of capacity, e.g. [0.5, 0.8, 0.95]"),
    "open_loop_workload": (_STR, "a workload name"),
    "hold_connections": (_INT, ("idle keep-alive connections to hold per server for memory per connection "
                                "(an integer >= 1; 0 or absent: no hold cells)")),
    "baseline": (_STR, "a target name (the report's ratios divide by it)"),
    "contended_share": (_NUM, "a share of the machine's CPU in (0, 1], e.g. 0.05"),
    "contended_reruns": (_INT, "how often a contended cell is re-run (0 or more)"),
    "default_peers": (_BOOL, "true or false (add the installed peers of peers_dir)"),
    "cluster": (_STR, "a Dask scheduler address (tcp://HOST:8786) or 'local'"),
    "shards": (_INT, "a positive integer (generator shards per cell, with cluster)"),
    "ack_with_request": (_BOOL, "true or false (connection-setup cells: the handshake's last ACK rides on the request)"),
    "rst_close": (_BOOL, "true or false (connection-setup cells: close a connection the server closed with RST)"),
    "tls_library": (_STR, 'the generator\'s TLS library for https/h2 cells: "openssl" (default), "wolfssl" or "rustls"'),
    "targets": (_LIST, "an array of [[targets]] tables"),
    "workloads": (_LIST, "an array of [[workloads]] tables or workload names"),
}
TARGET_KEYS = {
    "name": (_STR, "a name"), "kind": (_STR, "beast, command or url"),
    "argv": (_LIST, "a list of strings"), "https_argv": (_LIST, "a list of strings"),
    "h2c_argv": (_LIST, "a list of strings"), "h2_argv": (_LIST, "a list of strings"),
    "protocol_notes": (_DICT, "a table protocol = why it is not served"),
    "h2c_url": (_STR, "an http:// URL serving h2c"), "h2_url": (_STR, "an https:// URL serving h2"),
    "workers": (_INT, "a positive integer (overrides the sweep's workers)"),
    "variant_of": (_STR, "the name of the target this is another configuration of"),
    "env": (_DICT, "a table of strings"), "workers_env": (_STR, "an environment variable name"),
    "cwd": (_STR, "a directory"), "requires": (_LIST, "a list of programs or files"),
    "url": (_STR, "an http:// URL"), "https_url": (_STR, "an https:// URL"),
    "pid": (_INT, "a process id"), "tree": (_BOOL, "true or false"),
    "ready_timeout": (_NUM + _STR, "seconds"), "probe_path": (_STR, "a path"),
    "unsupported_workloads": (_LIST, "a list of workload names"), "description": (_STR, "text"),
    "version": (_LIST, "a command printing the server's version, a list of strings"),
    "version_pattern": (_STR, "a regular expression: the part of the version command's output to keep"),
}
WORKLOAD_KEYS = {
    "name": (_STR, "a name"), "method": (_STR, "an HTTP method"), "path": (_STR, "a path"),
    "headers": (_DICT, "a table of strings"), "body": (_STR, "a string"),
    "body_size": (_INT, "a byte count (a body of that many 'x')"),
    "requests": (_LIST, "an array of {method, path, headers, body} tables"),
    "concurrencies": (_LIST, "a list of positive integers"),
}
REQUEST_KEYS = {"method": _STR, "path": _STR, "headers": _DICT, "body": _STR}


def parse_seconds(value: Union[int, float, str], key: str) -> float:
    """2, 2.5, "2s", "500ms", "1m" -> seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected seconds, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = value.strip().lower()
    for suffix, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            number = text[: -len(suffix)]
            break
    else:
        number, scale = text, 1.0
    try:
        return float(number) * scale
    except ValueError:
        raise ConfigError(f"{key}: {value!r} is not a duration (try 2, '2s' or '500ms')") from None


def _check(table: dict, schema: dict, where: str) -> None:
    for key, value in table.items():
        path = f"{where}{key}"
        if key not in schema:
            known = ", ".join(sorted(schema))
            raise ConfigError(f"unknown key {path!r} (known keys: {known})")
        types, what = schema[key]
        if isinstance(value, bool) and bool not in types:
            raise ConfigError(f"{path}: expected {what}, got {value!r}")
        if not isinstance(value, types):
            raise ConfigError(f"{path}: expected {what}, got {value!r}")


def _list_of(value: list, kind: type, path: str, what: str) -> list:
    for i, item in enumerate(value):
        if not isinstance(item, kind) or isinstance(item, bool) and kind is not bool:
            raise ConfigError(f"{path}[{i}]: expected {what}, got {item!r}")
    return value


def _target(table: Any, i: int) -> Target:
    where = f"targets[{i}]."
    if not isinstance(table, dict):
        raise ConfigError(f"targets[{i}]: expected a table, got {table!r}")
    _check(table, TARGET_KEYS, where)
    if "name" not in table:
        raise ConfigError(f"{where}name is required")
    data = dict(table)
    for key in ("argv", "https_argv", "h2c_argv", "h2_argv", "requires", "unsupported_workloads", "version"):
        if key in data:
            _list_of(data[key], str, where + key, "a string")
    for name, value in data.get("protocol_notes", {}).items():
        if not isinstance(value, str):
            raise ConfigError(f"{where}protocol_notes.{name}: expected a string, got {value!r}")
    for name, value in data.get("env", {}).items():
        if not isinstance(value, (str, int)):
            raise ConfigError(f"{where}env.{name}: expected a string, got {value!r}")
    if "ready_timeout" in data:
        data["ready_timeout"] = parse_seconds(data["ready_timeout"], where + "ready_timeout")
    try:
        return Target(**data)
    except ConfigError as exc:
        raise ConfigError(f"targets[{i}]: {exc}") from None


def _workload(item: Any, i: int) -> Workload:
    builtins = builtin_workloads()
    if isinstance(item, str):
        if item not in builtins:
            raise ConfigError(f"workloads[{i}]: {item!r} is not a built-in workload ({', '.join(builtins)})")
        return builtins[item]
    if not isinstance(item, dict):
        raise ConfigError(f"workloads[{i}]: expected a name or a table, got {item!r}")
    where = f"workloads[{i}]."
    _check(item, WORKLOAD_KEYS, where)
    if "name" not in item:
        raise ConfigError(f"{where}name is required")
    data = dict(item)
    if "body_size" in data:
        if "body" in data:
            raise ConfigError(f"{where}body_size: give body or body_size, not both")
        size = data.pop("body_size")
        if size < 0:
            raise ConfigError(f"{where}body_size: {size} is negative")
        data["body"] = "x" * size
    if "concurrencies" in data:
        _list_of(data["concurrencies"], int, where + "concurrencies", "a positive integer")
    for j, req in enumerate(data.get("requests") or []):
        if not isinstance(req, dict):
            raise ConfigError(f"{where}requests[{j}]: expected a table, got {req!r}")
        for key, value in req.items():
            if key not in REQUEST_KEYS:
                raise ConfigError(f"unknown key {where}requests[{j}].{key!r} (known keys: {', '.join(REQUEST_KEYS)})")
            if not isinstance(value, REQUEST_KEYS[key]):
                raise ConfigError(f"{where}requests[{j}].{key}: wrong type {value!r}")
    # A named built-in with overrides (e.g. json at fewer concurrencies) keeps its request.
    if item["name"] in builtins and set(data) <= {"name", "concurrencies"}:
        base = builtins[item["name"]]
        base.concurrencies = data.get("concurrencies")
        return base
    try:
        return Workload(**data)
    except ConfigError as exc:
        raise ConfigError(f"workloads[{i}]: {exc}") from None


def sweep_from_dict(data: dict, base_dir: Optional[Path] = None) -> Sweep:
    """The same as a TOML file, from a dict already parsed.

    Relative paths (peers_dir, a target's cwd) are relative to ``base_dir``, by default the
    current directory - the repository root when run as the README shows.
    """
    _check(data, SWEEP_KEYS, "")
    kwargs: dict = {}
    for key in ("duration", "warmup", "timeout"):
        if key in data:
            kwargs[key] = parse_seconds(data[key], key)
    if "contended_share" in data:
        kwargs["contended_share"] = float(data["contended_share"])
    for key in ("repeats", "connection_setup", "connection_setup_concurrency",
                "connection_setup_workload", "workers", "generator_threads", "baseline",
                "open_fractions", "open_loop_workload", "contended_reruns", "cluster", "shards",
                "streams", "requests", "hold_connections", "tls_library",
                "ack_with_request", "rst_close"):
        if key in data:
            kwargs[key] = data[key]
    for key in ("concurrencies", "server_cpus", "generator_cpus"):
        if key in data:
            kwargs[key] = _list_of(data[key], int, key, "an integer")
    if "protocols" in data:
        kwargs["protocols"] = _list_of(data["protocols"], str, "protocols", '"http", "https", "h2c" or "h2"')
    if "detail_protocols" in data:
        kwargs["detail_protocols"] = _list_of(data["detail_protocols"], str, "detail_protocols", "a protocol")
    base = base_dir or Path.cwd()
    peers_dir = base / data["peers_dir"] if "peers_dir" in data else base / "bench" / "peers"
    kwargs["peers_dir"] = str(peers_dir)
    targets = [_target(t, i) for i, t in enumerate(data.get("targets", []))]
    if not targets:
        targets = [Target("beast", description=BEAST_DESCRIPTION)]
    if data.get("default_peers", False):
        targets += [t for t in default_peer_targets(peers_dir) if t.name not in {x.name for x in targets}]
    for t in targets:
        if t.cwd and not Path(t.cwd).is_absolute():
            t.cwd = str(base / t.cwd)
    kwargs["targets"] = targets
    if "workloads" in data:
        kwargs["workloads"] = [_workload(w, i) for i, w in enumerate(data["workloads"])]
    return Sweep(**kwargs)


def _read_toml(path: Path, what: str) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


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
                raise ConfigError(f"targets[{i}]: {target.name!r}: a registry peer is started by loadbench "
                                  "(kind beast or command), not a url")
            seen.add(target.name)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return targets


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
# windows not included): under the issue's ~10 minutes with room for the re-runs a quiet machine
# still needs (24 re-runs, 54 s, in the quiet sweep of 2026-11-30).
DEFAULT_CELL_BUDGET_S = 570.0


def default_sweep(quick: bool = False, peers_dir: Optional[Path] = None) -> Sweep:
    """`loadbench sweep` with no file: the Beast server and every installed peer of
    ./bench/peers over HTTP/1.1 and HTTP/2, cleartext and TLS, sized to finish in about 10
    minutes on 2 cores - 7.5 planned (Sweep.planned_seconds) plus re-runs of contended windows
    (``quick``: 1 repeat of 0.5 s windows, about 2-3 minutes: 30 server starts).

    Full: plaintext, json and echo (4 KiB POST) at C = 25 (seed report 001's concurrency; HTTP/2
    with 10 streams per connection) over http, https, h2c and h2; over http also a new
    connection per request at c = 20 and open loop at 50 and 95 % of each server's plaintext
    capacity; median of 3 x 1 s windows after a 0.25 s warm-up each. (Before HTTP/2 it also
    swept plaintext at C = 1, 10, 200, had 2 s windows and ran connection setup and open loop over
    https: four protocols and seven peers did not fit ten minutes with them.)
    """
    peers = Path(peers_dir) if peers_dir is not None else Path.cwd() / "bench" / "peers"
    registry = peer_registry(peers)  # Beast and every peer, as bench/peers/peers.toml declares them
    targets = [t for t in registry if t.kind == "beast"] + [t for t in registry if t.kind != "beast"]
    if quick:
        concurrencies, repeats, duration, warmup, fractions = [25], 1, 0.5, 0.2, [0.5]
    else:
        concurrencies, repeats, duration, warmup, fractions = [25], 3, 1.0, 0.25, [0.5, 0.95]
    builtins = builtin_workloads()
    workloads = [builtins["plaintext"], builtins["json"], builtins["echo"]]
    return Sweep(targets=targets, workloads=workloads, concurrencies=concurrencies,
                 protocols=["http", "https", "h2c", "h2"], streams={"h2c": 10, "h2": 10},
                 detail_protocols=["http"], connection_setup=True, connection_setup_concurrency=20,
                 repeats=repeats, duration=duration, warmup=warmup, peers_dir=str(peers),
                 open_fractions=fractions)
