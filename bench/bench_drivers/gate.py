"""The bench drivers' load gate and outside-CPU rule: the same loadbench.core.gate and
loadbench.core.analysis a sweep uses, so a bench report and a sweep report judge a busy machine
alike (quiet before a run, contended when others took more than the sweep's share)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Callable, Optional

from loadbench.core import analysis
from loadbench.core.gate import LoadGate

from .environment_block import environment
from .jsonl import JsonlWriter


def outside_share(server: dict, generator_cpu_s: Optional[float] = None) -> Optional[float]:
    """CPU the rest of the machine used during a run, as a share of all its cores: the CPU of
    every process other than this one (the driver, and the generators it started and reaped) and
    the server tree, read per process at the window's edges (``server["others_cpu_s"]``, from
    loadbench.sampler.window) - loadbench.analysis.outside_share, the rule a sweep uses to re-run
    and mark contended cells. ``generator_cpu_s`` only serves a block from before that reading."""
    return analysis.outside_share(server, os.cpu_count() or 1, generator_cpu_s)


def foreign_cores(server: dict, generator_cpu_s: Optional[float] = None) -> Optional[float]:
    """:func:`outside_share` in cores. Near 0 on a quiet machine; on a shared one it says how
    much other work competed for the two pinned cores."""
    share = outside_share(server, generator_cpu_s)
    return None if share is None else share * (os.cpu_count() or 1)


def is_contended(record: dict) -> bool:
    """A repeat during whose window others took more than analysis.CONTENDED_SHARE of the machine."""
    share = record.get("outside_share")
    return share is not None and share > analysis.CONTENDED_SHARE


# ---------------------------------------------------------------------------------------
# The load gate (loadbench.gate): the same quiet-machine wait as `loadbench sweep`
# ---------------------------------------------------------------------------------------
def add_gate_args(parser: Any) -> None:
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="do not wait for a quiet machine before the run and each repeat",
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="wait at most this long for a quiet machine, then measure and say so (default 120)",
    )
    parser.add_argument(
        "--contended-retries",
        type=int,
        default=2,
        metavar="N",
        help="measure a repeat again, up to N times, when others took more than "
        f"{100 * analysis.CONTENDED_SHARE:g} %% of the machine in its window (default 2)",
    )


def measure_uncontended(
    gate: LoadGate, retries: int, measure: Callable[[], dict], jsonl: Any, records: list[dict]
) -> dict:
    """One repeat, as the sweep measures a cell: wait for a quiet machine, measure, and measure
    again (up to ``retries`` more times) while others took more than the contended share of the
    window - CPU a hypervisor steals comes in bursts. Every attempt goes into the raw data (and
    ``records``); the earlier ones carry ``superseded: true`` and no table reads them (:func:`kept`).
    Returns the kept record."""
    for attempt in range(retries + 1):
        waited = wait_quiet(gate)
        record = measure()
        record["gate"], record["load1_at_start"] = waited, waited["load1_at_start"]
        record["attempt"] = attempt + 1
        if attempt < retries and is_contended(record):
            record["superseded"] = True
            jsonl.write(record)
            records.append(record)
            print(
                f"  contended ({record['outside_share']:.0%} outside): measured again", flush=True
            )
            continue
        jsonl.write(record)
        records.append(record)
        return record
    raise AssertionError("unreachable")


def kept(records: Iterable[dict]) -> list[dict]:
    """The records a report reads: not superseded by a re-measurement."""
    return [r for r in records if not r.get("superseded")]


def make_gate(args: Any) -> LoadGate:
    return LoadGate(
        timeout_s=getattr(args, "wait_timeout", 120.0),
        enabled=not getattr(args, "no_wait", False),
        on_wait=lambda text: print(f"  {text}", flush=True),
    )


def wait_quiet(gate: LoadGate) -> dict:
    """Wait for a quiet machine; the gate's verdict plus the 1-min load when measuring starts."""
    verdict = gate.wait()
    if verdict.timed_out:
        print(f"  {verdict.describe()}", flush=True)
    return {**verdict.to_dict(), "load1_at_start": os.getloadavg()[0]}


def gate_before_text(waited: dict) -> str:
    """What the gate did before a run: skipped, timed out on a busy machine, or quiet."""
    if waited.get("skipped"):
        return "skipped (--no-wait)"
    if waited.get("timed_out"):
        return f"proceeded after {waited.get('timeout_s', 0):g} s on a busy machine"
    return f"quiet after {waited.get('waited_s', 0):.0f} s"


def gate_note(first: dict, records: Iterable[dict]) -> str:
    """The environment block's line: the gate before the run, per repeat, and contended repeats."""
    every = [r for r in records if r.get("status", "ok") == "ok" and "outside_share" in r]
    rows = kept(every)
    late = sum(1 for r in rows if (r.get("gate") or {}).get("timed_out"))
    busy = sum(1 for r in rows if is_contended(r))
    again = len(every) - len(rows)
    before = gate_before_text(first)
    return (
        f"before the run: {before} (load {first.get('load1_at_start', 0):.2f}); {late} of {len(rows)} "
        f"repeat(s) measured after the gate timed out; {busy} repeat(s) contended (others used more than "
        f"{100 * analysis.CONTENDED_SHARE:g} % of the machine in the window)"
        + (f", after {again} contended attempt(s) were measured again" if again else "")
    )


def measure_gated(
    args: Any, raw: Any, command: str, measurements: Iterable[Callable[[], dict]]
) -> list[dict]:
    """A small driver's measuring: its raw JSONL at ``raw`` (the environment record first), then
    each of ``measurements`` through :func:`measure_uncontended` (the load gate, re-measured while
    contended), printed as it ends. ``measurements`` may be a generator that starts and stops
    servers around what it yields: it is closed, whatever happens."""
    jsonl = JsonlWriter(raw)
    jsonl.write({"record": "environment", "environment": environment(), "command": command})
    gate, records = make_gate(args), []
    try:
        for measure in measurements:
            print(
                measure_uncontended(gate, args.contended_retries, measure, jsonl, records),
                flush=True,
            )
    finally:
        close = getattr(measurements, "close", None)
        if close is not None:
            close()
        jsonl.close()
    return records
