"""What every bench report shares besides its tables (loadbench.report.markdown): the head
(title, where it came from, settings, environment), the ours-vs-theirs headline sentence, and
writing the file."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional

from loadbench.report.markdown import table

from .checkout import reports_dir
from .jsonl import read_jsonl


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


def add_report_args(parser: argparse.ArgumentParser, default_name: str) -> None:
    """Every driver's --out (the report; its raw JSONL goes beside it) and --report-only."""
    parser.add_argument("--out", default=None, help=f"report path (default reports/{default_name})")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the report from its JSONL"
    )


def report_paths(out: Optional[str], repo: Optional[Path], default_name: str) -> tuple[Path, Path]:
    """(report, its raw JSONL beside it): --out, else reports/<default_name>."""
    report = Path(out) if out else reports_dir(repo) / default_name
    return report, report.with_suffix(".jsonl")


def rewrite_report(report: Path, raw: Path, render: Callable[..., str]) -> None:
    """--report-only: the report again from its raw data, measuring nothing; ``render`` takes
    (records, environment, command, the raw file's name)."""
    records, env, command = read_jsonl(raw)
    write_report(report, render(records, env, command, raw.name))
    print(f"wrote {report}")


def report_from_raw(raw: Path, render: Callable[[list, dict, str], str]) -> Path:
    """A small driver's last step, after measuring or with --report-only: STEM.md rendered from
    its raw STEM.jsonl (``render`` takes the records, the environment and the command)."""
    records, env, command = read_jsonl(raw)
    report = raw.with_suffix(".md")
    write_report(report, render(records, env, command))
    print(report)
    return report


def add_stem_args(parser: argparse.ArgumentParser, default_stem: str, smoke: str) -> None:
    """A small driver's --out STEM (STEM.md and its raw STEM.jsonl), --smoke (``smoke`` says
    what it shortens to) and --report-only."""
    parser.add_argument("--out", help=f"report stem (default reports/{default_stem})")
    parser.add_argument(
        "--smoke", action="store_true", help=f"{smoke}, into a temp dir unless --out"
    )
    parser.add_argument("--report-only", action="store_true", help="re-render from the .jsonl")


def stem_of(args: argparse.Namespace, repo: Path, default_stem: str) -> Path:
    """--out, else a fresh temp dir's (--smoke: a smoke run writes nothing under reports/), else
    reports/<default_stem>."""
    if args.out:
        return Path(args.out)
    folder = Path(tempfile.mkdtemp()) if args.smoke else repo / "reports"
    return folder / default_stem


def command_of(script: str, argv: Optional[list[str]]) -> str:
    """The command line a report states: `python3 bench/X.py` and the arguments it was given."""
    return shlex.join(["python3", script, *(argv if argv is not None else sys.argv[1:])])
