"""The one parser of CPU lists on the command line (run, serve, env): the `taskset -c` form."""

from __future__ import annotations

from ..core.errors import ConfigError


def parse_cpu_list(text: str, flag: str = "--cpus") -> list[int]:
    """'1', '1,3', '0-3' or '0-1,4' -> the sorted, distinct CPU numbers."""
    cpus: set[int] = set()
    try:
        for part in str(text).split(","):
            low, _, high = part.strip().partition("-")
            first, last = int(low), int(high or low)
            if last < first:
                raise ValueError
            cpus.update(range(first, last + 1))
    except ValueError:
        cpus.clear()
    if not cpus or min(cpus) < 0:
        raise ConfigError(f"{flag}: bad CPU list {text!r}: use e.g. 1, 0-3 or 0-1,4")
    return sorted(cpus)
