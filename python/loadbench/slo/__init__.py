"""Service-level objectives: judge an open-loop run against them (`p99<10ms` over the whole run
and over every window of it), and search the capacity under them - the highest rate a server
takes while meeting every objective, with the generator never mistaken for the server.

    found = loadbench.capacity("http://127.0.0.1:8080/", slo=["p99<10ms", "errors<0.1%"])
    print(found.message())
"""

from __future__ import annotations

from .capacity_result import CapacityResult
from .objectives import Objective, Verdict, judge, parse_objectives
from .search import capacity
from .step import Step

__all__ = [
    "CapacityResult",
    "Objective",
    "Step",
    "Verdict",
    "capacity",
    "judge",
    "parse_objectives",
]
