"""The sweep's progress bar on stderr: cells done, the cell running now, and the ETA."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def format_seconds(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class ProgressBar:
    """``[#####.....] 12/48 25% | beast https plaintext c=50 #2 | ETA 3m20s``

    The ETA uses the mean wall time of the cells measured so far in this invocation (before the
    first one ends: ``estimate_s`` per cell). With ``to_measure_s`` (the planned seconds of the
    cells left, each cell's share passed to start_cell) it is instead the planned time left,
    scaled by how long the measured cells took against their plan: cells of different kinds (a
    1 s window, a hold cell of 10 000 idle connections) then each count for what they cost. On a
    terminal the line redraws in place; into a file or pipe it prints one line per cell, so logs
    stay readable.
    """

    def __init__(
        self,
        total: int,
        done: int = 0,
        estimate_s: float = 1.0,
        stream: Optional[TextIO] = None,
        width: int = 24,
        show_bar: bool = True,
        to_measure: Optional[int] = None,
        to_measure_s: Optional[float] = None,
    ) -> None:
        self.total = total
        # cells that will really run (skipped ones take no time); default: all that are left
        self.to_measure = total - done if to_measure is None else to_measure
        self.done = done
        self.estimate_s = estimate_s
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.show_bar = show_bar
        self._measured = 0
        self._measured_s = 0.0
        self._cell_started: Optional[float] = None
        self.to_measure_s = to_measure_s
        self._cell_planned_s = 0.0
        self._measured_planned_s = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._said: set = set()  # note_once's keys

    def eta_s(self) -> float:
        if self.to_measure_s is not None:
            pace = (
                self._measured_s / self._measured_planned_s if self._measured_planned_s > 0 else 1.0
            )
            return max(0.0, self.to_measure_s) * pace
        per_cell = self._measured_s / self._measured if self._measured else self.estimate_s
        return per_cell * max(0, self.to_measure)

    def line(self, current: str) -> str:
        filled = int(self.width * self.done / self.total) if self.total else self.width
        pct = 100 * self.done // self.total if self.total else 100
        bar = "#" * filled + "." * (self.width - filled)
        return (
            f"[{bar}] {self.done}/{self.total} {pct:3d}% | {current} | "
            f"ETA {format_seconds(self.eta_s())}"
        )

    def start_cell(self, label: str, planned_s: float = 0.0) -> None:
        """``planned_s``: this cell's planned seconds (its part of ``to_measure_s``)."""
        self._cell_started = time.monotonic()
        self._cell_planned_s = planned_s
        self._emit(self.line(label))

    def end_cell(self, measured: bool = True, planned: Optional[bool] = None) -> None:
        """Count a cell done; cells that ran (not skipped ones) feed the ETA. ``planned``: the
        cell was one of ``to_measure`` (default: when measured; a launch failure is planned
        but not measured)."""
        self.done += 1
        if measured if planned is None else planned:
            self.to_measure -= 1
            if self.to_measure_s is not None:
                self.to_measure_s -= self._cell_planned_s
        if measured and self._cell_started is not None:
            self._measured += 1
            self._measured_s += time.monotonic() - self._cell_started
            self._measured_planned_s += self._cell_planned_s
        self._cell_started = None
        self._cell_planned_s = 0.0

    def note(self, text: str) -> None:
        """A line that stays (skips, failures) above the redrawn bar; shown even without the bar."""
        if self._tty and self.show_bar:
            self.stream.write("\r\x1b[K")
        self.stream.write(f"loadbench: {text}\n")
        self.stream.flush()

    def note_once(self, key, text: str) -> None:
        """note(text) the first time ``key`` comes: a reason that holds for many cells (a peer
        not installed skips every protocol it serves) is said once per sweep, not per group."""
        if key not in self._said:
            self._said.add(key)
            self.note(text)

    def finish(self, text: str) -> None:
        self._emit(self.line(text))
        if self._tty and self.show_bar:
            self.stream.write("\n")
            self.stream.flush()

    def _emit(self, text: str) -> None:
        if not self.show_bar:
            return
        if self._tty:
            self.stream.write("\r\x1b[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
