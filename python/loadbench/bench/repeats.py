"""A cell's repeats summed up: the median (loadbench.analysis.median, the one median of the
package) with the lowest and highest repeat, and how far they disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from ..core import analysis


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
