"""The drawing vocabulary of every PNG chart: one colour per server (by its place in the
sweep's target list), neutral tones for series that are not servers, number labels, hatched
bars for bounds, and the two bar layouts the charts use - grouped bars (grouped_figure) and
panels of grouped bars (panel_figure). Each layout draws a matplotlib Figure that save_figure
writes, so a test can read a chart's bars, colours and titles back. matplotlib is imported when a chart is drawn (_plt), not when loadbench is: it takes about
half a second.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Optional

Panel = tuple  # (title, groups, {series: [value per group]}, {series: [gap text per group]})

# One colour per server, by its place in the sweep's target list, in every chart (tab10, then
# the lighter tab20 shades for sweeps of more than ten servers).
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
LINESTYLES = {"http": "-", "https": "--", "h2c": ":", "h2": "-."}


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


BOUND_HATCH = "///"
BOUND_NOTE = "hatched: a bound, ≥ at least / ≤ at most - the generator was the limit"


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
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def grouped_figure(
    title: str,
    ylabel: str,
    groups: list[str],
    series: dict[str, list],
    missing: Optional[dict[str, list]] = None,
    xlabel: str = "Server",
    colors: Optional[list[str]] = None,
    log_if_spread: Optional[float] = None,
    group_colors: Optional[list[str]] = None,
):
    """Bars for each series within each group, value on each bar (vertical when more than two
    series share a group: horizontal ones run into each other), "n/a"/"FAIL"/"excluded" for
    gaps; None when there is no value at all.
    ``group_colors``: one colour per group (a single series over the servers, each in its colour).

    ``log_if_spread``: use a log value axis when max/min of the values exceeds it (latency
    bars spanning 0.05 ms to 200 ms are unreadable on a linear axis)."""
    if not any(v is not None for values in series.values() for v in values):
        return None
    plt = _plt()
    n = max(1, len(series))
    width = 0.8 / n
    vertical = n > 2
    # about a third of an inch per bar (wider only stretches the labels out of reading range),
    # and room for the longest group name (about 0.085 inch a character at 10 pt)
    group_in = max(0.5 + 0.34 * n, 0.25 + 0.085 * max((len(g) for g in groups), default=0))
    fig, ax = plt.subplots(figsize=(max(6.0, len(groups) * group_in + 2.0), 4.5))
    scale = _Scale([v for vals in series.values() for v in vals], log_if_spread, vertical)
    bounded = False
    from matplotlib.patches import Patch

    legend = []  # plain colour patches: a hatched first bar must not make a series look like a bound
    for i, (label, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        color = (colors or PALETTE)[i % len(colors or PALETTE)]
        heights = [v if v is not None else 0 for v in values]
        bars = ax.bar(
            xs,
            heights,
            width * 0.95,
            label=label,
            color=group_colors if group_colors and n == 1 else color,
        )
        bounded = mark_bounds(bars, values) or bounded
        legend.append(Patch(facecolor=color, label=label))
        for j, (bar, value) in enumerate(zip(bars, values)):
            if value is None:
                text = (missing or {}).get(label, ["n/a"] * len(values))[j] or "n/a"
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    scale.gap_y,
                    text,
                    ha="center",
                    va="bottom",
                    fontsize=8,
                    color="#555555",
                    rotation=90,
                )
            else:
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    value,
                    (" " if vertical else "") + _fmt(value).replace(",", " "),
                    ha="center",
                    va="bottom",
                    rotation=90 if vertical else 0,
                    fontsize=8,
                )
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_title(_wrap_title(title, bounded, fig.get_figwidth() - 1.2, 11), fontsize=11)
    ax.set_xlabel(xlabel)
    scale.apply(ax, ylabel)
    if not (group_colors and n == 1):  # the x labels already name a server's bar
        # outside the axes: it never hides a bar's value
        ax.legend(
            handles=legend,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
            borderaxespad=0,
        )
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


class _Scale:
    """The value axis of a bar chart: linear from 0, or log when ``log_if_spread`` is given and
    the values span more than that factor; headroom above the highest bar for its label (more
    for a vertical one)."""

    def __init__(self, values: list, log_if_spread: Optional[float], vertical: bool):
        positive = [v for v in values if v is not None and v > 0]
        self.top, bottom = max(positive or [1.0]), min(positive or [1.0])
        self.log = log_if_spread is not None and self.top / bottom > log_if_spread
        self.floor = bottom / 2 if self.log else 0.0
        self.vertical = vertical

    @property
    def gap_y(self) -> float:
        """Where a gap's label (n/a, FAIL, excluded) starts: just above the axis."""
        return self.floor * 1.1 if self.log else self.top * 0.01

    def apply(self, ax, ylabel: str) -> None:
        if self.log:
            _plain_log_axis(ax)
            ax.set_ylim(self.floor, self.top * (4.0 if self.vertical else 2.0))
            ax.set_ylabel(ylabel + ", log scale")
            return
        from matplotlib.ticker import FuncFormatter

        top = self.top
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, top * (1.3 if self.vertical else 1.15))
        ax.yaxis.set_major_formatter(
            FuncFormatter(lambda v, _: f"{v:,.0f}".replace(",", " ") if top >= 100 else f"{v:g}")
        )


def _wrap_title(title: str, bounded: bool, width_in: float, fontsize: float) -> str:
    """``title`` broken into lines that fit ``width_in`` inches (a character is about 0.55 em),
    with the note on hatched bars on lines of its own when a bar is a bound. "C = 25" stays on
    one line: a line that ends in "C =" says nothing."""
    chars = max(40, int(width_in * 72 / (fontsize * 0.55)))
    lines = textwrap.wrap(title.replace(" = ", "\0=\0"), chars)
    if bounded:
        lines += textwrap.wrap(f"({BOUND_NOTE})", chars)
    return "\n".join(lines).replace("\0", " ")


def _plain_log_axis(ax) -> None:
    """A log y axis labelled 0.5, 1, 2, 5, 10 ... instead of 5x10^-1."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def panel_figure(
    title: str,
    ylabel: str,
    panels: list[Panel],
    colors: dict[str, str],
    fmt=None,
    log_if_spread: Optional[float] = None,
):
    """Grouped bars in one panel per entry of ``panels`` (same y axis), a legend of the series
    (servers) at the right, values above the bars (vertical when the bars are narrow), gaps
    labelled (n/a, FAIL, excluded), bounds hatched and labelled "≥". None when nothing has a
    value. ``log_if_spread``: as for :func:`grouped_figure`."""
    values = [
        v for _, _, series, _ in panels for vs in series.values() for v in vs if v is not None
    ]
    if not values:
        return None
    fmt = fmt or (lambda v: _fmt(v).replace(",", " "))  # 12 345, as in the tables
    plt = _plt()
    from matplotlib.patches import Patch

    ncols = min(2, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    n_series = max(len(series) for _, _, series, _ in panels)
    n_groups = max(len(groups) for _, groups, _, _ in panels)
    width_in = max(4.5, n_groups * max(1.0, 0.26 * n_series) + 1.2)
    legend_in = 1.9
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(width_in * ncols + legend_in, 4.0 * nrows + 0.7),
        squeeze=False,
        sharey=True,
    )
    handles: dict = {}
    bounded = False
    vertical = n_series > 2
    scale = _Scale(values, log_if_spread, vertical)
    for ax, (sub, groups, series, missing) in zip(axes.flat, panels):
        n = max(1, len(series))
        width = 0.8 / n
        for i, (label, vals) in enumerate(series.items()):
            xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
            bars = ax.bar(
                xs,
                [v if v is not None else 0 for v in vals],
                width * 0.92,
                label=label,
                color=colors.get(label, "#7f7f7f"),
            )
            bounded = mark_bounds(bars, vals) or bounded
            # the legend names the server's colour, never a hatch one of its bars happens to have
            handles.setdefault(label, Patch(facecolor=colors.get(label, "#7f7f7f")))
            for j, (bar, value) in enumerate(zip(bars, vals)):
                x = bar.get_x() + bar.get_width() / 2
                if value is None:
                    ax.text(
                        x,
                        scale.gap_y,
                        (missing.get(label) or ["n/a"] * len(vals))[j] or "n/a",
                        ha="center",
                        va="bottom",
                        rotation=90,
                        fontsize=7,
                        color="#555555",
                    )
                else:
                    ax.text(
                        x,
                        value,
                        " " + fmt(value) if vertical else fmt(value),
                        ha="center",
                        va="bottom",
                        rotation=90 if vertical else 0,
                        fontsize=7,
                    )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, fontsize=9)
        ax.set_title(sub, fontsize=10)
        scale.apply(ax, ylabel)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(labelleft=True)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(_wrap_title(title, bounded, fig.get_figwidth() - legend_in, 11), fontsize=11)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="center left",
        fontsize=8,
        bbox_to_anchor=(1 - (legend_in - 0.1) / fig.get_figwidth(), 0.5),
    )
    # tight_layout leaves room for the (wrapped) title itself (matplotlib >= 3.3)
    fig.tight_layout(rect=(0, 0, 1 - legend_in / fig.get_figwidth(), 1))
    return fig
