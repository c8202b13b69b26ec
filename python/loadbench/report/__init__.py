"""Everything a reader sees, drawn from one report model (model.py) of a results folder:
report.md, the PNG charts, report.html, `compare` and the CI gate.

    loadbench.report.write_report("reports/2026-12-01-vm")   # -> report.md (+ charts)
"""

from __future__ import annotations

from .document import headline_lines, render, write_report

__all__ = ["headline_lines", "render", "write_report"]
