"""report.md's "Where the time goes" section: for each protocol, each server's responses split
into write, time to first byte and transfer at its peak keep-alive cell, and - where the sweep
opened a connection per request - the new connection's connect and TLS (or QUIC) handshake
beside them. Every number is a cell of the report model (medians over repeats of each phase's
p50 and p99, core/phases.py); this module only lays them out."""

from __future__ import annotations

from typing import Optional

from ..core import protocols
from ..core.analysis import Spread
from ..core.phases import CONNECTION_PHASES, LABELS, RESPONSE_PHASES
from .cells import Aggregate
from .markdown import table
from .model import Model


def _us(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} us"


def _median(spread: Optional[Spread], scale: float = 1.0) -> Optional[float]:
    return None if spread is None else spread.median * scale


def _pair(p50: Optional[float], p99: Optional[float]) -> str:
    return "n/a" if p50 is None else f"{_us(p50)} / {_us(p99)}"


# a phase whose p99 stays under this in every row says nothing (a request written in one call
# that returns at once): its column is dropped and a line says why
SILENT_US = 1.0


def _p99(agg: Aggregate, phase: str) -> Optional[float]:
    return _median(agg.phases.get(phase, (None, None))[1])


def silent(cells: list[tuple[str, Aggregate]], phases: tuple[str, ...]) -> list[str]:
    """The phases measured in these cells whose p99 is under SILENT_US in every one."""
    return [
        p
        for p in phases
        if any(p in agg.phases for _, agg in cells)
        and all((_p99(agg, p) or 0.0) < SILENT_US for _, agg in cells)
    ]


def widest(cells: list[tuple[str, Aggregate]], phases: tuple[str, ...]) -> Optional[str]:
    """The sentence naming the phase whose p99 differs most between the servers (in time, over
    the cells no generator or pool limited), its fastest and its slowest server; None with
    fewer than two such servers."""
    clean = [(t, a) for t, a in cells if not a.mark]
    best: Optional[tuple[float, str, tuple, tuple]] = None
    for p in phases:
        values = [(v, t) for t, a in clean if (v := _p99(a, p)) is not None]
        if len(values) < 2:
            continue
        low, high = min(values), max(values)
        if best is None or high[0] - low[0] > best[0]:
            best = (high[0] - low[0], p, low, high)
    if best is None or best[0] < SILENT_US:
        return None
    _, phase, (low, fast), (high, slow) = best
    return (
        f"The phase that differs most between the servers here is *{LABELS[phase]}*: at p99 "
        f"{slow} spends {_us(high)} in it, {fast} {_us(low)}."
    )


def _table(cells: list[tuple[str, Aggregate]], phases: tuple[str, ...]) -> str:
    quiet = set(silent(cells, phases))
    shown = [p for p in phases if any(p in agg.phases for _, agg in cells) and p not in quiet]
    header = ["Server", "Cell"] + [f"{LABELS[p]} p50 / p99" for p in shown] + ["latency p50 / p99"]
    rows = []
    for target, agg in cells:
        row = [target, f"{agg.workload}, c={agg.load}" + (f" {agg.mark}" if agg.mark else "")]
        for p in shown:
            p50, p99 = agg.phases.get(p, (None, None))
            row.append(_pair(_median(p50), _median(p99)))
        row.append(_pair(_median(agg.p50_ms, 1000), _median(agg.p99_ms, 1000)))
        rows.append(row)
    return table(header, rows)


def setup_cell(model: Model, target: str, protocol: str) -> Optional[Aggregate]:
    """The server's connection-setup cell with the most new connections per second."""
    cells = [a for a in model.cells(target, protocol, mode="connect") if a.phases and a.conn_per_s]
    return max(cells, key=lambda a: a.conn_per_s.median, default=None)


def section(model: Model) -> list[str]:
    """The section's lines (empty for a sweep whose results carry no phases)."""
    out: list[str] = []
    for protocol in model.protocols:
        keep_alive = [
            (t, cell)
            for t in model.listed
            if (cell := model.peak_cell(t, protocol)) is not None and cell.phases
        ]
        setup = [(t, cell) for t in model.listed if (cell := setup_cell(model, t, protocol))]
        if not keep_alive and not setup:
            continue
        out += [f"### {protocols.title(protocol)}", ""]
        if keep_alive:
            out += [_table(keep_alive, RESPONSE_PHASES), ""]
            dropped = silent(keep_alive, RESPONSE_PHASES)
            if dropped:
                out += [
                    f"Not shown: {', '.join(LABELS[p] for p in dropped)} - under "
                    f"{SILENT_US:g} us at p99 in every row (each request left in one write that "
                    "returned at once).",
                    "",
                ]
            sentence = widest(keep_alive, RESPONSE_PHASES)
            if sentence:
                out += [sentence, ""]
        if setup:
            out += [
                "A new connection per request (the connection-setup cells):",
                "",
                _table(setup, CONNECTION_PHASES + RESPONSE_PHASES),
                "",
            ]
    if not out:
        return []
    return [
        "## Where the time goes",
        "",
        (
            "Each response's time split where the generator saw it happen (exact HDR histograms, "
            "the window's rules): *write* from its request's first byte handed to the socket to "
            "its last, *first byte* from there to the response's first byte arriving (the "
            "server's wait and work plus one trip over loopback), *transfer* from that byte to "
            "its last. Together they are the response's service time; a closed loop's latency "
            "is that, the open loop's adds its send lateness. A new connection adds *connect* "
            "(connect() until the TCP connection is up) and the TLS or QUIC *handshake*. Each "
            "figure is the median over repeats of that phase's p50 / p99, at the server's peak "
            "keep-alive cell (the cell column) and at its fastest connection-setup cell. "
            "Latency percentiles do not add up: the p99 of a sum is not the sum of the p99s. "
            "A cell marked § or ¶ was limited by the generator or its pool: its loop noticed new "
            "connections and arriving responses late, so its connect and first byte include the "
            "generator's own delay - not the server's."
        ),
        "",
        *out,
    ]
