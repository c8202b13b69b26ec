"""The kernel's own TCP counters (the `nstat` figures) for both ends of every loopback
connection together: segments sent, resets sent, TIME_WAITs entered, connections opened - read
around a run and divided by the new connections the generator counted."""

from __future__ import annotations

from pathlib import Path

TCP_COUNTERS = {
    ("Tcp", "OutSegs"): "segments",
    ("Tcp", "OutRsts"): "resets",
    ("Tcp", "ActiveOpens"): "opens",
    ("TcpExt", "TW"): "time_waits",
}


def tcp_counters(proc: Path = Path("/proc")) -> dict[str, int]:
    values: dict[str, int] = {}
    for path in (proc / "net" / "snmp", proc / "net" / "netstat"):
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        for names, numbers in zip(lines[::2], lines[1::2]):
            group, _, keys = names.partition(":")
            for key, value in zip(keys.split(), numbers.partition(":")[2].split()):
                if (group, key) in TCP_COUNTERS:
                    values[TCP_COUNTERS[(group, key)]] = int(value)
    return values


def tcp_per_connection(
    before: dict[str, int], after: dict[str, int], connections: int
) -> dict[str, float]:
    """Each counter's growth over a run / the new connections the generator counted."""
    return (
        {name: (after[name] - before[name]) / connections for name in after if name in before}
        if connections
        else {}
    )
