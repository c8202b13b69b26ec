"""`strace -c` tables read into calls by name: the system calls a load tool or a server made."""

from __future__ import annotations


def parse_strace_counts(text: str) -> dict[str, int]:
    """`strace -c` table -> {syscall: calls}. Rows are `% time, seconds, usecs/call, calls,
    [errors], name`; the total row is left out (the sum of the rows is the total)."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[-1] == "total" or not fields[0].replace(".", "", 1).isdigit():
            continue
        calls[fields[-1]] = calls.get(fields[-1], 0) + int(fields[3])
    if not calls:
        raise ValueError(f"no strace -c table in {text[-400:]!r}")
    return calls
