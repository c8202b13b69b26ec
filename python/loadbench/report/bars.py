"""The drawing vocabulary of every PNG chart: one colour per server (by its place in the list of
measured servers), neutral tones for series that are not servers, number labels, hatched bars
for bounds, and one bar layout - panels of **sorted horizontal bars** (:func:`hbar_figure`): a
server's name is read on its own line whatever its length, the ranking is read top to bottom, a
bar carries its repeats' min-max as a whisker and a bound's CPU ceiling as a dashed reach, and
the value axis turns logarithmic when the values span more than :data:`LOG_SPREAD` (a 15 MiB bar
beside a 1 354 MiB one). :func:`grouped_figure` and :func:`panel_figure` lay their series out on
it. A figure is never wider than :data:`MAX_WIDTH_PX`. matplotlib is imported when a chart is
drawn (_plt), not when loadbench is: it takes about half a second.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

# One colour per server, by its place in the list of measured servers, in every chart (tab10,
# then the lighter tab20 shades for sweeps of more than ten servers).
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
]

# Series that are not servers (workloads, protocols) get neutral tones, so a colour always means
# the same server.
NEUTRAL = ["#3b3b3b", "#8c8c8c", "#c8c8c8", "#5e5e5e", "#aaaaaa", "#e0e0e0"]

DPI = 110
# the widest PNG a report writes: readable at its natural size on a laptop screen
MAX_WIDTH_PX = 1600
# values spanning more than this factor get a log value axis (a linear one flattens the small)
LOG_SPREAD = 30.0
BOUND_HATCH = "///"
BOUND_NOTE = "hatched: a bound (≥ at least, ≤ at most - the generator was the limit)"
# said only where a chart drew one (connection-setup bounds have no CPU ceiling: vm-3's
# connection_setup.png promised dashed ceilings and drew none)
CEILING_NOTE = "dashed to its CPU ceiling"
WHISKER_NOTE = "whiskers: min-max of the repeats"


def server_colors(targets: list[str]) -> dict[str, str]:
    """The colour of each server, the same in every chart of a report."""
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(targets)}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _fmt(value: float) -> str:
    """A bar's label; a bound keeps its sign ("≥ 264,590", see analysis.Figure)."""
    sign = getattr(value, "prefix", "")
    if value >= 100:
        return sign + f"{value:,.0f}"
    if value >= 10:
        return sign + f"{value:.1f}"
    if value >= 1:
        return sign + f"{value:.2f}"
    return sign + f"{value:.3f}"


def _label(value: float) -> str:
    return _fmt(value).replace(",", " ")  # 12 345, as in the tables


def mark_bounds(bars, values) -> bool:
    """Hatch and outline the bars whose value is a bound (a Figure with ``bound``): the
    server's value is beyond the bar, not on it. True when any was."""
    marked = False
    for bar, value in zip(bars, values):
        if getattr(value, "bound", None):
            bar.set_hatch(BOUND_HATCH)
            bar.set_edgecolor("#222222")
            bar.set_linewidth(1.0)
            bar.set_alpha(0.55)
            marked = True
    return marked


def save_figure(fig, path: Path) -> Optional[Path]:
    """Write a chart's PNG and free its figure. ``fig`` None (nothing to draw): no file, and any
    old one of that name removed - e.g. every cell contended: a chart of empty bars says nothing."""
    if fig is None:
        path.unlink(missing_ok=True)
        return None
    fig.savefig(path, dpi=DPI)
    _plt().close(fig)
    return path


@dataclass
class HPanel:
    """One panel of horizontal bars: a row per ``rows`` entry (top to bottom), a bar per series
    in each row; ``gaps`` say why a row has no value ("excluded: contended", "FAIL");
    ``row_colors`` colour a single series' bars by row (a server each)."""

    title: str
    rows: list[str]
    series: dict[str, list]
    gaps: list[str] = field(default_factory=list)
    row_colors: Optional[list[str]] = None


def sort_panel(panel: HPanel, lower_is_better: bool = False) -> HPanel:
    """The rows best first by the panel's first series (missing values last), and without the
    rows that have no value for a plain "n/a" (a server that does not serve this): no slot for
    what was never measured."""
    first = next(iter(panel.series.values()), [])
    keep = [
        i
        for i, _ in enumerate(panel.rows)
        if any(vals[i] is not None for vals in panel.series.values())
        or (panel.gaps[i] if i < len(panel.gaps) else "n/a") not in ("n/a", "")
    ]

    def key(i: int):
        v = first[i] if i < len(first) else None
        return (v is None, (1 if lower_is_better else -1) * float(v or 0))

    keep.sort(key=key)
    return HPanel(
        panel.title,
        [panel.rows[i] for i in keep],
        {k: [vals[i] for i in keep] for k, vals in panel.series.items()},
        [panel.gaps[i] if i < len(panel.gaps) else "n/a" for i in keep],
        [panel.row_colors[i] for i in keep] if panel.row_colors else None,
    )


class _Scale:
    """The value axis: linear from 0, or log when the values (their whiskers and ceilings
    included) span more than ``log_if_spread``."""

    def __init__(self, values: list, log_if_spread: Optional[float]):
        ends = []
        for v in values:
            if v is None:
                continue
            ends.append(float(v))
            spread = getattr(v, "spread", None)
            if spread:
                ends += list(spread)
            ceiling = getattr(v, "ceiling", None)
            if ceiling:
                ends.append(ceiling)
        positive = [v for v in ends if v > 0 and math.isfinite(v)]
        self.top, self.bottom = max(positive or [1.0]), min(positive or [1.0])
        self.log = log_if_spread is not None and self.top / self.bottom > log_if_spread

    def apply(self, ax, label: str) -> None:
        from matplotlib.ticker import FuncFormatter

        if self.log:
            from matplotlib.ticker import LogLocator

            ax.set_xscale("log")
            ax.set_xlim(self.bottom / 2, self.top * 4)
            # decades only: 1 000, 10 000, 100 000 (their 2 and 5 run into each other)
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v)))
            ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            ax.set_xlabel(label + ", log scale", fontsize=8)
            return
        ax.set_xlim(0, self.top * 1.3)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v)))
        ax.set_xlabel(label, fontsize=8)

    @property
    def gap_x(self) -> float:
        """Where a gap's label (FAIL, excluded) starts: just right of the axis."""
        return self.bottom / 1.8 if self.log else self.top * 0.01


def _tick(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}".replace(",", " ")
    return f"{v:g}"


def _grid(count: int, widest_label: int, rows: int) -> tuple[int, float]:
    """(columns, inches per panel): as many columns as fit MAX_WIDTH_PX with room for the
    server names, at most three."""
    width_in = MAX_WIDTH_PX / DPI - 0.2
    fits = [n for n in (3, 2, 1) if n <= count and width_in / n >= 3.2 + 0.07 * widest_label]
    # the fewest empty slots in the last row (4 panels: 2 x 2, not 3 + 1), then the most columns
    ncols = min(fits or [1], key=lambda n: (-count % n, -n))
    # one panel alone reads better at about 1 150 px than stretched over the full width
    return ncols, width_in / ncols if count > 1 else min(width_in, 10.5)


def hbar_figure(
    title: str,
    xlabel: str,
    panels: list[HPanel],
    colors: Optional[list[str]] = None,
    log_if_spread: Optional[float] = LOG_SPREAD,
    fmt: Optional[Callable[[float], str]] = None,
    reference: Optional[float] = None,
):
    """Panels of horizontal bars (each panel's rows in the order given: sort them with
    :func:`sort_panel`), one shared value scale, a bar per series in each row - coloured by row
    (``HPanel.row_colors``: a server each) or by series (``colors``, with a legend) - its value
    at its end, its repeats' min-max as a whisker, a bound hatched and dashed out to its CPU
    ceiling, a row without a value labelled with why; ``reference``: a value drawn as a line
    across every panel (1.0 of a ratio). Panels with no value at all are left out; None when
    nothing has a value. Never wider than MAX_WIDTH_PX."""
    panels = [p for p in panels if any(v is not None for vals in p.series.values() for v in vals)]
    if not panels:
        return None
    fmt = fmt or _label
    plt = _plt()
    values = [v for p in panels for vals in p.series.values() for v in vals]
    scale = _Scale(values, log_if_spread)
    widest = max(len(r) for p in panels for r in p.rows)
    ncols, panel_in = _grid(len(panels), widest, max(len(p.rows) for p in panels))
    nrows = math.ceil(len(panels) / ncols)
    n_series = max(len(p.series) for p in panels)
    row_in = 0.2 + 0.12 * (n_series - 1)
    heights = [
        max(1.2, 0.75 + row_in * max(len(p.rows) for p in panels[r * ncols : (r + 1) * ncols]))
        for r in range(nrows)
    ]
    legend = n_series > 1 or not all(p.row_colors for p in panels)
    fig_w = min(MAX_WIDTH_PX / DPI, panel_in * ncols + 0.2)
    title_lines = _wrap(title, fig_w)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(fig_w, sum(heights) + 0.35 * len(title_lines) + (0.45 if legend else 0.2)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    bounded = whiskers = ceilings = False
    palette = colors or NEUTRAL
    for ax, panel in zip(axes.flat, panels):
        n = max(1, len(panel.series))
        height = 0.8 / n
        for i, (name, vals) in enumerate(panel.series.items()):
            ys = [r + (i - (n - 1) / 2) * height for r in range(len(panel.rows))]
            color = panel.row_colors if panel.row_colors and n == 1 else palette[i % len(palette)]
            bars = ax.barh(
                ys, [float(v) if v is not None else 0 for v in vals], height * 0.9, color=color
            )
            bars.set_label(name)
            bounded = mark_bounds(bars, vals) or bounded
            for y, v in zip(ys, vals):
                if v is None:
                    continue
                end = float(v)
                spread = getattr(v, "spread", None)
                if spread and spread[1] > spread[0]:
                    ax.errorbar(
                        float(v),
                        y,
                        xerr=[[float(v) - spread[0]], [spread[1] - float(v)]],
                        fmt="none",
                        ecolor="#333333",
                        elinewidth=0.8,
                        capsize=2,
                    )
                    end, whiskers = max(end, spread[1]), True
                ceiling = getattr(v, "ceiling", None)
                if ceiling:
                    ax.plot([float(v), ceiling], [y, y], "--", color="#333333", linewidth=0.8)
                    ceilings = True
                    ax.plot([ceiling], [y], "|", color="#333333", markersize=7)
                    end = max(end, ceiling)
                ax.text(
                    end * (1.08 if scale.log else 1.0) + (0 if scale.log else scale.top * 0.01),
                    y,
                    fmt(v),
                    va="center",
                    fontsize=7,
                )
        for r, gap in enumerate(panel.gaps):
            if all(vals[r] is None for vals in panel.series.values()):
                ax.text(scale.gap_x, r, gap or "n/a", va="center", fontsize=7, color="#555555")
        ax.set_yticks(range(len(panel.rows)))
        ax.set_yticklabels(panel.rows, fontsize=8)
        ax.set_ylim(len(panel.rows) - 0.5, -0.5)  # the first row on top
        ax.set_title(panel.title, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3, which="both")
        if reference is not None:
            ax.axvline(reference, color="#555555", linewidth=1, linestyle="--")
        scale.apply(ax, xlabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    bound_note = BOUND_NOTE + (", " + CEILING_NOTE if ceilings else "")
    notes = ([WHISKER_NOTE] if whiskers else []) + ([bound_note] if bounded else [])
    lines = title_lines + _wrap("; ".join(notes), fig_w, 60) if notes else title_lines
    fig.suptitle("\n".join(lines), fontsize=10)
    if legend:
        from matplotlib.patches import Patch

        names = list(dict.fromkeys(k for p in panels for k in p.series))
        fig.legend(
            [Patch(facecolor=palette[i % len(palette)]) for i in range(len(names))],
            names,
            loc="lower center",
            ncol=min(len(names), 6),
            fontsize=8,
            frameon=False,
        )
    fig.tight_layout(rect=(0, 0.05 if legend else 0, 1, 1))
    return fig


def _wrap(text: str, width_in: float, shrink: int = 0) -> list[str]:
    """``text`` broken into lines that fit ``width_in`` inches at 10 pt (a character is about
    0.55 em); "C = 25" stays on one line."""
    chars = max(40, int(width_in * 72 / (10 * 0.55)) - shrink)
    return [line.replace("\0", " ") for line in textwrap.wrap(text.replace(" = ", "\0=\0"), chars)]


def grouped_figure(
    title: str,
    xlabel: str,
    groups: list[str],
    series: dict[str, list],
    missing: Optional[dict[str, list]] = None,
    colors: Optional[list[str]] = None,
    log_if_spread: Optional[float] = LOG_SPREAD,
    group_colors: Optional[list[str]] = None,
    lower_is_better: bool = False,
):
    """One panel: a row per group (a server), a bar per series, rows sorted best first by the
    first series; ``group_colors`` colour a single series by row (each server in its colour);
    ``missing`` says why a row has no value. None when there is no value at all."""
    gaps = [
        next((m[i] for m in (missing or {}).values() if i < len(m) and m[i]), "n/a")
        for i in range(len(groups))
    ]
    panel = sort_panel(
        HPanel("", list(groups), series, gaps, group_colors if len(series) == 1 else None),
        lower_is_better,
    )
    return hbar_figure(title, xlabel, [panel], colors, log_if_spread)


def panel_figure(
    title: str,
    xlabel: str,
    panels: list[tuple],
    colors: dict[str, str],
    fmt=None,
    log_if_spread: Optional[float] = LOG_SPREAD,
    lower_is_better: bool = False,
    per_group: bool = True,
):
    """Panels given as (title, groups, {server: [value per group]}, {server: [gap per group]}):
    each (panel, group) becomes its own sorted panel of the servers in their colours - the
    servers ranked within a protocol or workload, which is what the eye compares - or, with
    ``per_group`` False (a variant against its base), a row per group, a bar per server."""
    out: list[HPanel] = []
    for sub, groups, series, missing in panels:
        servers = list(series)
        if not per_group:
            out.append(
                HPanel(
                    sub,
                    list(groups),
                    {s: list(series[s]) for s in servers},
                    [
                        next((missing.get(s, [])[g] for s in servers if missing.get(s)), "n/a")
                        for g in range(len(groups))
                    ],
                )
            )
            continue
        for g, group in enumerate(groups):
            name = " ".join(str(group).split())
            out.append(
                sort_panel(
                    HPanel(
                        f"{sub}: {name}" if sub else name,
                        servers,
                        {"value": [series[s][g] for s in servers]},
                        [(missing.get(s) or ["n/a"] * len(groups))[g] for s in servers],
                        [colors.get(s, "#7f7f7f") for s in servers],
                    ),
                    lower_is_better,
                )
            )
    palette = [colors.get(s, "#7f7f7f") for s in panels[0][2]] if not per_group and panels else None
    return hbar_figure(title, xlabel, out, palette, log_if_spread, fmt)


def plain_log_axis(ax, axis: str = "y") -> None:
    """A log axis labelled 0.5, 1, 2, 5, 10 ... instead of 5x10^-1 (the line charts' latency)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    # a rate axis (x) spans more decades than a latency one: 1 and 3 per decade stay apart
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if axis == "y" else (1, 3)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(FuncFormatter(lambda v, _: ""))
