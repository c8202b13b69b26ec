"""Which loop an open-loop run's generator threads run: busy-poll or the sleeping tick.

A wake-up from a sleep costs this project's 2-core VM 23-37 us of CPU (reports/wakeup-cost.md),
so a generator thread that sleeps between sends is on time only up to ~70 000 req/s. A thread
that owns its CPU has nothing to give it back to: it polls instead (the clock, the sends due,
epoll_wait with no timeout) and its sends go out microseconds after they fall due - at the price
of the whole CPU, which is why it is chosen only for CPUs the generator has to itself. On a CPU
another task is pinned to (the server of a sweep, a second generator) a polling thread would
take that task's time: there the tick stays, or, asked for explicitly, the run says so.

``busy_poll``: None (the default) chooses busy-poll when the run is pinned (``cpus``), each of its
threads has a CPU of its own, no other task is pinned to those CPUs, and they were at most 20 %
busy over the 50 ms before the run (something unpinned runs there otherwise); True asks for it
(refused when two threads would share a CPU; warned about on a CPU others are pinned to); False
keeps the tick.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from .errors import ConfigError

PF_KTHREAD = 0x00200000  # /proc/PID/stat flags: a kernel thread (per-CPU ones are pinned by design)
# The default polls only on CPUs that were this idle just before the run: busier, and something
# unpinned (a build, another generator) runs there, whose time a polling thread would take.
BUSY_BY_OTHERS_AT_MOST = 0.2
PROBE_S = 0.05


@dataclass(frozen=True)
class LoopChoice:
    busy_poll: bool
    why: str  # one clause: why this loop (said in the result's config and the summary)
    warning: Optional[str] = None  # busy-poll asked for where it competes with another task


def pinned_elsewhere(cpus: Sequence[int], proc: Path = Path("/proc")) -> list[str]:
    """'NAME (pid P)' of every user task - not this process's own - whose CPU affinity is a
    strict subset of the machine's and includes one of ``cpus``: a task pinned there, which a
    busy-polling thread on those CPUs would starve. Kernel threads are left out (every CPU has
    its own). Tasks that vanish while read are skipped."""
    wanted = set(cpus)
    online = os.cpu_count() or 1
    own = os.getpid()
    found: list[str] = []
    try:
        pids = [int(p.name) for p in proc.iterdir() if p.name.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == own:
            continue
        try:
            tasks = list((proc / str(pid) / "task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                stat = (task / "stat").read_text()
                status = (task / "status").read_text()
            except OSError:
                continue
            comm_end = stat.rfind(")")
            fields = stat[comm_end + 2 :].split()
            if len(fields) > 6 and int(fields[6]) & PF_KTHREAD:
                continue
            allowed = _allowed(status)
            if allowed is None or len(allowed) >= online or not (allowed & wanted):
                continue
            found.append(f"{stat[stat.find('(') + 1 : comm_end]} (pid {pid})")
            break  # one task of a process names it
    return found


def busy_share(
    cpus: Sequence[int], seconds: float = PROBE_S, stat: Path = Path("/proc/stat")
) -> Optional[float]:
    """The share of ``cpus``' time that was busy (not idle, not waiting for I/O) over ``seconds``
    from now: what else runs there before the generator starts (None: /proc/stat unreadable)."""

    def sample() -> Optional[tuple[int, int]]:
        try:
            lines = stat.read_text().splitlines()
        except OSError:
            return None
        total = idle = 0
        names = {f"cpu{c}" for c in cpus}
        for line in lines:
            fields = line.split()
            if fields and fields[0] in names:
                ticks = [
                    int(v) for v in fields[1:9]
                ]  # user nice system idle iowait irq softirq steal
                total += sum(ticks)
                idle += ticks[3] + ticks[4]
        return total, idle

    before = sample()
    time.sleep(seconds)
    after = sample()
    if before is None or after is None or after[0] <= before[0]:
        return None
    elapsed = after[0] - before[0]
    return 1.0 - (after[1] - before[1]) / elapsed


def _allowed(status: str) -> Optional[set[int]]:
    for line in status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            cpus: set[int] = set()
            for part in line.split(":", 1)[1].strip().split(","):
                low, _, high = part.partition("-")
                if low:
                    cpus.update(range(int(low), int(high or low) + 1))
            return cpus
    return None


def choose_loop(
    busy_poll: Optional[bool],
    open_loop: bool,
    cpus: Optional[Sequence[int]],
    threads: int,
    measure: bool = True,
) -> LoopChoice:
    """The loop an open-loop run's threads run (see the module docstring). A closed loop never
    waits for a due time: it has no tick to replace (busy_poll=True is refused there).
    ``measure``: look at the machine (tasks pinned to ``cpus``, and the default: how busy they
    were over the last PROBE_S); without it, only the refusals are checked."""
    if not open_loop:
        if busy_poll:
            raise ConfigError(
                "busy_poll: the closed loop never waits for a due time; busy-poll is for an open "
                "loop (give a rate)"
            )
        return LoopChoice(False, "closed loop")
    if busy_poll is False:
        return LoopChoice(False, "the sleeping tick, as asked (--no-busy-poll)")
    cpu_count = len(set(cpus or []))
    if busy_poll and cpu_count and threads > cpu_count:
        raise ConfigError(
            f"busy_poll: {threads} generator threads on {cpu_count} CPU(s) would poll by turns, "
            "each waiting out the other's time slice: give every thread a CPU of its own "
            "(--cpus with as many CPUs as -t), or leave busy-poll off"
        )
    if not cpus:
        if busy_poll:
            return LoopChoice(
                True,
                "busy-poll, as asked",
                "busy-poll on unpinned threads: each takes a whole CPU from whatever else runs "
                "here, the server included (pin the generator with --cpus to CPUs of its own)",
            )
        return LoopChoice(False, "the sleeping tick: the generator is not pinned (--cpus)")
    if threads > cpu_count:
        return LoopChoice(False, f"the sleeping tick: {threads} threads share {cpu_count} CPU(s)")
    if not measure:
        return LoopChoice(bool(busy_poll), "not measured")
    others = pinned_elsewhere(cpus)
    where = f"CPU{'s' if cpu_count > 1 else ''} {','.join(str(c) for c in sorted(set(cpus)))}"
    if others:
        named = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        if busy_poll:
            return LoopChoice(
                True,
                "busy-poll, as asked",
                f"busy-poll on {where}, which {named} is pinned to: the polling threads take its "
                "time there",
            )
        return LoopChoice(False, f"the sleeping tick: {named} is pinned to {where} too")
    if busy_poll:
        return LoopChoice(True, "busy-poll, as asked")
    busy = busy_share(cpus)
    if busy is not None and busy > BUSY_BY_OTHERS_AT_MOST:
        return LoopChoice(
            False,
            f"the sleeping tick: {where} {'were' if cpu_count > 1 else 'was'} {100 * busy:.0f} % "
            f"busy with other work just before the run (busy-poll takes a CPU at most "
            f"{100 * BUSY_BY_OTHERS_AT_MOST:.0f} % busy)",
        )
    return LoopChoice(True, f"busy-poll: {where} the generator's own")
