"""A driver's matrix (connection counts x seconds x repeats, the same flags for every driver) and
a cell's repeats summed up: the median (loadbench.analysis.median, the one median of the
package) with the lowest and highest repeat, and how far they disagree."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Iterable, Optional

from loadbench.core import analysis


def add_pinning_args(p: argparse.ArgumentParser) -> None:
    """--server-cpu and --generator-cpu: the one core each side is pinned to (0 and 1)."""
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--generator-cpu", type=int, default=1)


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    """-c/--concurrencies, -d/--duration and -r/--repeats, as every comparison driver takes them."""
    p.add_argument(
        "-c", "--concurrencies", default="1,10,50,200", help="comma-separated connection counts"
    )
    p.add_argument("-d", "--duration", type=int, default=10, help="seconds per run (default 10)")
    p.add_argument(
        "-r", "--repeats", type=int, default=3, help="runs per cell; the median is reported"
    )


@dataclass(frozen=True)
class Summary:
    median: float
    low: float
    high: float
    count: int

    @property
    def spread_pct(self) -> float:
        """(max - min) / median: how far the repeats disagree."""
        return 100.0 * (self.high - self.low) / self.median if self.median else 0.0


def summarize(values: Iterable[Optional[float]]) -> Optional[Summary]:
    """Median with min/max of the repeats (None values left out); None when there are none."""
    spread = analysis.median_spread(list(values))
    if spread is None:
        return None
    return Summary(spread.median, spread.min, spread.max, spread.n)


def median_range(values: Iterable[Optional[float]], digits: int = 2) -> str:
    """A cell of a small driver's table: "median (min-max)" of the repeats, or n/a."""
    usable = [v for v in values if v is not None]
    if not usable:
        return "n/a"
    med = analysis.median(usable)
    return f"{med:.{digits}f} ({min(usable):.{digits}f}-{max(usable):.{digits}f})"
