"""The TOML tables loadbench reads - a sweep file's keys, its ``[[targets]]`` and
``[[workloads]]``, and the peer registry's targets - and the one set of rules that checks them:
an unknown key or a value of the wrong type raises ConfigError naming the key as a path
(``targets[1].argv``, ``workloads[0].concurrencies``), so a typo never silently falls back to a
default.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Union

from ..core import protocols
from ..core.errors import ConfigError
from .plan import Workload, builtin_workloads
from .targets import Target

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
    "interval": (_NUM + _STR, "the timeline interval: seconds, or a string like '100ms'"),
    "repeats": (_INT, "a positive integer"),
    "concurrencies": (_LIST, "a list of positive integers"),
    "protocols": (_LIST, "a list of " + protocols.choices()),
    "streams": (
        _INT + _DICT,
        "streams per HTTP/2 connection: an integer, or a table like {h2c = 10, h2 = 10}",
    ),
    "pipeline": (
        _INT,
        "HTTP/1.1 requests in flight per keep-alive connection (pipelining; 1: none)",
    ),
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
    "capacity": (_LIST + _STR, 'objectives, e.g. ["p99<10ms", "errors<0.1%"]'),
    "capacity_precision": (_NUM, "a fraction, e.g. 0.05"),
    "capacity_hold": (_NUM + _STR, "seconds each capacity is confirmed for, or a string like '5s'"),
    "capacity_repeats": (_INT, "a positive integer"),
    "capacity_step": (_NUM + _STR, "seconds judged per capacity step, or a string like '1s'"),
    "settle": (_BOOL, "true or false (load each fresh server until req/s stops climbing)"),
    "blocks": (
        _BOOL,
        "true or false (each repeat a fresh server process, run in blocks of every server)",
    ),
    "order_seed": (_INT, "an integer (seeds the shuffled server order within each block)"),
    "twins": (_LIST, 'targets to list twice as an A/A check, e.g. ["beast"] (adds "beast-again")'),
    "hold_connections": (
        _INT,
        (
            "idle keep-alive connections to hold per server for memory per connection "
            "(an integer >= 1; 0 or absent: no hold cells)"
        ),
    ),
    "baseline": (_STR, "a target name (the report's ratios divide by it)"),
    "contended_share": (_NUM, "a share of the machine's CPU in (0, 1], e.g. 0.05"),
    "contended_reruns": (_INT, "how often a contended cell is re-run (0 or more)"),
    "default_peers": (_BOOL, "true or false (add the installed peers of peers_dir)"),
    "cluster": (_STR, "a Dask scheduler address (tcp://HOST:8786) or 'local'"),
    "shards": (_INT, "a positive integer (generator shards per cell, with cluster)"),
    "ack_with_request": (
        _BOOL,
        "true or false (connection-setup cells: the handshake's last ACK rides on the request)",
    ),
    "rst_close": (
        _BOOL,
        "true or false (connection-setup cells: close a connection the server closed with RST)",
    ),
    "allocations": (
        _BOOL,
        "true or false (count the heap allocations of every server the sweep starts: allocs/req)",
    ),
    "allocation_sites": (
        _BOOL,
        "true or false (one extra heaptrack window per server: its top allocation sites)",
    ),
    "profile": (
        _BOOL,
        "true or false (after each closed-loop cell, one more window with perf: its CPU profile)",
    ),
    "transport": (
        _STR,
        '"tcp" (default) or "unix" (the embedded server on a unix socket; http and h2c only)',
    ),
    "tls_library": (
        _STR,
        'the generator\'s TLS library for https/h2 cells: "openssl" (default), "wolfssl" or "rustls"',
    ),
    "run": (
        _DICT,
        "a [run] table of loadbench.run options for every cell, e.g. send_batch = '1ms'",
    ),
    "targets": (_LIST, "an array of [[targets]] tables"),
    "workloads": (_LIST, "an array of [[workloads]] tables or workload names"),
}
TARGET_KEYS = {
    "name": (_STR, "a name"),
    "kind": (_STR, "beast, command or url"),
    "argv": (_LIST, "a list of strings"),
    "https_argv": (_LIST, "a list of strings"),
    "h2c_argv": (_LIST, "a list of strings"),
    "h2_argv": (_LIST, "a list of strings"),
    "h3_argv": (_LIST, "a list of strings (HTTP/3: UDP on {port})"),
    "protocol_notes": (_DICT, "a table protocol = why it is not served"),
    "h2c_url": (_STR, "an http:// URL serving h2c"),
    "h2_url": (_STR, "an https:// URL serving h2"),
    "h3_url": (_STR, "an https:// URL serving h3 (QUIC on its port over UDP)"),
    "workers": (_INT, "a positive integer (overrides the sweep's workers)"),
    "variant_of": (_STR, "the name of the target this is another configuration of"),
    "allocator": (_STR, "what the allocation counter (libc malloc) sees of this server's heap"),
    "label": (
        _STR + _DICT,
        "the name bench/*.py reports print (default: name): a string, or a table protocol = name",
    ),
    "env": (_DICT, "a table of strings"),
    "workers_env": (_STR, "an environment variable name"),
    "cwd": (_STR, "a directory"),
    "requires": (_LIST, "a list of programs or files"),
    "requires_note": (_STR, "text: where the requirements come from, told when one is missing"),
    "url": (_STR, "an http:// URL"),
    "https_url": (_STR, "an https:// URL"),
    "pid": (_INT, "a process id"),
    "tree": (_BOOL, "true or false"),
    "ready_timeout": (_NUM + _STR, "seconds"),
    "warmup": (
        _NUM + _STR,
        "seconds of load a fresh server of this target gets at least before any cell (a JIT)",
    ),
    "probe_path": (_STR, "a path"),
    "unsupported_workloads": (_LIST, "a list of workload names"),
    "description": (_STR, "text"),
    "version": (_LIST, "a command printing the server's version, a list of strings"),
    "version_pattern": (
        _STR,
        "a regular expression: the part of the version command's output to keep",
    ),
}
WORKLOAD_KEYS = {
    "name": (_STR, "a name"),
    "method": (_STR, "an HTTP method"),
    "path": (_STR, "a path"),
    "headers": (_DICT, "a table of strings"),
    "body": (_STR, "a string"),
    "body_size": (_INT, "a byte count (a body of that many 'x')"),
    "requests": (_LIST, "an array of {method, path, headers, body} tables"),
    "concurrencies": (_LIST, "a list of positive integers"),
    "pipeline": (_INT, "HTTP/1.1 requests in flight per connection (overrides the sweep's)"),
}
REQUEST_KEYS = {"method": _STR, "path": _STR, "headers": _DICT, "body": _STR}


def parse_seconds(value: Union[int, float, str], key: str) -> float:
    """2, 2.5, "2s", "500ms", "1m" -> seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected seconds, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = value.strip().lower()
    for suffix, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):  # noqa: B007 - scale is used after the break
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
    for key in (
        "argv",
        "https_argv",
        "h2c_argv",
        "h2_argv",
        "h3_argv",
        "requires",
        "unsupported_workloads",
        "version",
    ):
        if key in data:
            _list_of(data[key], str, where + key, "a string")
    for name, value in data.get("protocol_notes", {}).items():
        if not isinstance(value, str):
            raise ConfigError(f"{where}protocol_notes.{name}: expected a string, got {value!r}")
    if isinstance(data.get("label"), dict):
        for name, value in data["label"].items():
            if not isinstance(value, str):
                raise ConfigError(f"{where}label.{name}: expected a string, got {value!r}")
    for name, value in data.get("env", {}).items():
        if not isinstance(value, (str, int)):
            raise ConfigError(f"{where}env.{name}: expected a string, got {value!r}")
    for key in ("ready_timeout", "warmup"):
        if key in data:
            data[key] = parse_seconds(data[key], where + key)
    try:
        return Target(**data)
    except ConfigError as exc:
        raise ConfigError(f"targets[{i}]: {exc}") from None


def _workload(item: Any, i: int) -> Workload:
    builtins = builtin_workloads()
    if isinstance(item, str):
        if item not in builtins:
            raise ConfigError(
                f"workloads[{i}]: {item!r} is not a built-in workload ({', '.join(builtins)})"
            )
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
                raise ConfigError(
                    f"unknown key {where}requests[{j}].{key!r} (known keys: {', '.join(REQUEST_KEYS)})"
                )
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


def _read_toml(path: Path, what: str) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
