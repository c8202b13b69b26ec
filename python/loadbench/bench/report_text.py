"""What every bench report shares besides its tables (loadbench.report.markdown): the head
(title, where it came from, settings, environment), the ours-vs-theirs headline sentence, and
writing the file."""

from __future__ import annotations

from pathlib import Path

from ..report.markdown import table


def report_head(title: str, generated_by: str, env: dict, settings: dict, raw: str) -> list[str]:
    """Every bench report opens the same way: title, where it came from, the settings and the
    environment (load at start, outside CPU) - so a reader finds them in one place in each."""
    return [
        f"# {title}",
        "",
        f"Generated {env.get('Date (UTC)', '?')} UTC by `{generated_by}`; raw data ({raw}). Do not edit by hand.",
        "",
        "## Settings",
        table(["Setting", "Value"], settings.items()),
        "",
        "## Environment",
        table(["Item", "Value"], env.items()),
        "",
    ]


def versus(ours: str, a: float, theirs: str, b: float, unit: str = "us/req") -> str:
    """`ours a vs theirs b: ratio, at or below / ABOVE theirs` (lower is better)."""
    verdict = "at or below" if a <= b else "ABOVE"
    return f"{ours} {a:.2f} {unit} vs {theirs} {b:.2f} {unit}: {a / b:.2f}x, {verdict} {theirs}"


def write_report(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
