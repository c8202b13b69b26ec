"""The PNG charts follow the data's shape (issue 29, part 3).

A sweep that measured every (protocol, workload) at one concurrency gets bars at that C, one
bar per server in its colour (throughput_at_c25.png), never a line chart over C (a column of
dots); a sweep with several concurrencies gets throughput_vs_concurrency.png, one line per
server. Every chart's title says what it holds fixed, a server keeps its colour in every chart,
and no chart draws a line through a single point. The figures are read back from matplotlib
(charts.chart_figures draws them without saving).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from sweep_data import SETTINGS, record, result_dict

from loadbench.report import bars, charts, model
from loadbench.sweep import results_folder as results

pytest.importorskip("matplotlib")

SERVERS = ("beast", "py")  # node is in the sweep but never measured (not installed)
COLORS = bars.server_colors(list(SERVERS))
PANELS = ["HTTP/1.1 (http)", "HTTP/1.1 TLS (https)"]


def write_sweep(
    directory: Path, concurrencies: dict[str, list[int]], open_loop=False, slow: float = 2.5
) -> Path:
    """beast, py and node over http and https, the workloads and concurrencies given, 3 repeats:
    beast's https plaintext at the highest C is generator-bound (a lower bound), py's http json
    sheds 30 % as 503s (excluded: errors), py's https plaintext at the highest C failed, node is
    not installed (every cell skipped). ``open_loop``: open-loop plaintext cells at 50 % and
    95 % of capacity for beast and py over both protocols. ``slow``: how many times slower py
    is than beast."""
    directory.mkdir(parents=True)
    settings = copy.deepcopy(SETTINGS)
    settings["workloads"] = [
        dict(w, concurrencies=concurrencies[w["name"]])
        for w in settings["workloads"]
        if w["name"] in concurrencies
    ]
    settings.update(connection_setup=False, protocols=["http", "https"])
    (directory / results.SETTINGS_FILE).write_text(json.dumps(settings))
    (directory / results.ENVIRONMENT_FILE).write_text(
        json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}})
    )
    path = directory / results.RESULTS_FILE
    for workload, cs in concurrencies.items():
        for c in cs:
            for protocol in ("http", "https"):
                slower = 1.0 if protocol == "http" else 0.8
                for r in range(3):
                    for t, rps in (("beast", 5000 * c), ("py", 5000 * c / slow)):
                        if (t, protocol, workload, c) == ("py", "https", "plaintext", max(cs)):
                            results.append_record(
                                path,
                                record(t, protocol, workload, "closed", c, r, "fail", None, "boom"),
                            )
                            continue
                        result = result_dict(
                            rps * slower + 100 * r,
                            c * 1e6 / rps,
                            100,
                            300,
                            0.5,
                            saturated=(t, protocol, workload, c)
                            == ("beast", "https", "plaintext", max(cs)),
                            shed=0.3 if (t, protocol, workload) == ("py", "http", "json") else 0.0,
                        )
                        results.append_record(
                            path, record(t, protocol, workload, "closed", c, r, result=result)
                        )
                    results.append_record(
                        path,
                        record("node", protocol, workload, "closed", c, r, "skipped", None, "nope"),
                    )
    if open_loop:
        for protocol in ("http", "https"):
            for pct in (50, 95):
                for t, capacity in (("beast", 50_000), ("py", 20_000)):
                    for r in range(3):
                        result = result_dict(capacity * pct / 100, 500, 400, 10 * pct, 0.5)
                        results.append_record(
                            path, record(t, protocol, "plaintext", "open", pct, r, result=result)
                        )
    return directory


@pytest.fixture
def figures():
    """figures(directory) -> {file name: Figure} of every chart, closed after the test."""
    opened: list = []

    def draw(directory: Path) -> dict:
        drawn = {name: fig for name, fig in charts.chart_figures(model.load(directory)) if fig}
        opened.extend(drawn.values())
        return drawn

    yield draw
    plt = bars._plt()
    for fig in opened:
        plt.close(fig)


def title(fig) -> str:
    """The chart's title on one line (a long one is wrapped to the figure's width)."""
    text = fig.get_suptitle() or " ".join(ax.get_title() for ax in fig.axes)
    return " ".join(text.split())


def panels(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison and ax.get_title()] or [
        ax for ax in fig.axes if ax.get_visible() and ax.axison
    ]


def rgb(color) -> str:
    from matplotlib.colors import to_hex

    return to_hex(color, keep_alpha=False)


def test_one_concurrency_writes_bars_at_that_c_and_no_line_chart(tmp_path):
    directory = write_sweep(tmp_path / "one", {"plaintext": [25], "json": [25]})
    (directory / "throughput_vs_concurrency.png").write_bytes(b"a chart of an earlier run")
    (directory / "notebook_concurrency.png").write_bytes(b"not a chart write_charts owns")
    names = {p.name for p in charts.write_charts(directory)}
    assert "throughput_at_c25.png" in names and (directory / "throughput_at_c25.png").exists()
    assert "throughput_vs_concurrency.png" not in names
    # the old line chart of a shape this folder no longer has is gone; other PNGs stay
    assert not (directory / "throughput_vs_concurrency.png").exists()
    assert (directory / "notebook_concurrency.png").exists()
    # a peak and an average of one cell per (protocol, workload) would draw the same bars again
    assert not names & {"workloads_peak.png", "workloads_average.png"}


def bars_of(ax) -> list:
    """The bar patches of a horizontal bar panel, top row first."""
    patches = [p for c in ax.containers if hasattr(c, "patches") for p in c.patches]
    return sorted(patches, key=lambda p: p.get_y())


def test_bars_at_one_concurrency_one_per_server_in_its_colour(tmp_path, figures):
    """A panel per (protocol, workload), its servers ranked top to bottom, each bar in its
    server's colour with the repeats' min-max as a whisker; node, never measured (not
    installed), has no row anywhere."""
    fig = figures(write_sweep(tmp_path / "one", {"plaintext": [25], "json": [25]}))[
        "throughput_at_c25.png"
    ]
    words = title(fig)
    for fixed in ("Throughput at C = 25", "closed loop", "keep-alive", "median of 3 repeats"):
        assert fixed in words
    assert "whiskers: min-max of the repeats" in words
    by_title = {ax.get_title(): ax for ax in panels(fig)}
    assert list(by_title) == [f"{p}: {w}" for p in PANELS for w in ("plaintext", "json")]
    for ax in by_title.values():
        names = [t.get_text() for t in ax.get_yticklabels()]
        assert "node" not in names and "n/a" not in {t.get_text() for t in ax.texts}
        assert names[0] == "beast"  # the fastest on top
        for name, bar in zip(names, bars_of(ax)):
            if bar.get_width() > 0:
                assert rgb(bar.get_facecolor()) == COLORS[name]
        assert ax.collections or ax.lines  # the whiskers (errorbar) of the repeats
    https = by_title["HTTP/1.1 TLS (https): plaintext"]
    beast = bars_of(https)[0]
    # generator-bound: hatched, labelled as a lower bound; the failed cell says why
    assert beast.get_hatch() == bars.BOUND_HATCH
    texts = {t.get_text().strip() for t in https.texts}
    assert any(t.startswith("≥ 100 100") for t in texts) and "FAIL" in texts
    assert "excluded: errors" in {t.get_text() for t in by_title["HTTP/1.1 (http): json"].texts}


def test_workloads_at_different_single_concurrencies_say_their_c(tmp_path, figures):
    drawn = figures(write_sweep(tmp_path / "mixed", {"plaintext": [1], "json": [10]}))
    assert "throughput_vs_concurrency.png" not in drawn
    fig = drawn["throughput_at_c1_c10.png"]
    assert "C = 1, 10" in title(fig)
    assert [ax.get_title() for ax in panels(fig)][:2] == [
        "HTTP/1.1 (http): plaintext C = 1",
        "HTTP/1.1 (http): json C = 10",
    ]


def test_every_chart_is_at_most_1600_px_wide_with_a_log_axis_past_30x(tmp_path, figures):
    """A fast and a slow server (100x apart): the per-protocol peaks are drawn on a log axis;
    two servers 2.5x apart on a linear one. No PNG is wider than 1 600 px."""
    drawn = figures(write_sweep(tmp_path / "span", {"plaintext": [25]}, slow=100.0))
    for name, fig in drawn.items():
        assert fig.get_figwidth() * bars.DPI <= bars.MAX_WIDTH_PX, name
    for ax in panels(drawn["throughput_peak.png"]):
        assert ax.get_xscale() == "log" and "log scale" in ax.get_xlabel()
    near = figures(write_sweep(tmp_path / "near", {"plaintext": [25]}))
    for ax in panels(near["throughput_peak.png"]):
        assert ax.get_xscale() == "linear"
    # and the file itself, as written
    from matplotlib.image import imread

    directory = write_sweep(tmp_path / "files", {"plaintext": [25], "json": [25]}, slow=100.0)
    for path in charts.write_charts(directory):
        assert imread(path).shape[1] <= bars.MAX_WIDTH_PX, path.name


def test_several_concurrencies_draw_one_line_per_server(tmp_path, figures):
    directory = write_sweep(tmp_path / "two", {"plaintext": [1, 10], "json": [1, 10]})
    names = {p.name for p in charts.write_charts(directory)}
    assert "throughput_vs_concurrency.png" in names
    assert not [n for n in names if n.startswith("throughput_at_")]
    assert {"workloads_peak.png", "workloads_average.png"} <= names
    fig = figures(directory)["throughput_vs_concurrency.png"]
    words = title(fig)
    assert "plaintext" in words and "closed loop" in words and "median of 3 repeats" in words
    http, https = panels(fig)
    assert [http.get_title(), https.get_title()] == PANELS
    lines = {line.get_label(): line for line in http.get_lines() if line.get_label() in SERVERS}
    assert sorted(lines) == ["beast", "py"]  # node was not measured: no line
    for server, line in lines.items():
        assert rgb(line.get_color()) == COLORS[server]
        assert list(line.get_xdata()) == [1, 10] and line.get_linestyle() == "-"
    # py's https plaintext failed at C = 10: one point, drawn as a marker with no line
    py = next(line for line in https.get_lines() if line.get_label() == "py")
    assert list(py.get_xdata()) == [1] and py.get_linestyle() == "None"


def test_open_loop_panel_per_protocol_servers_in_their_colours(tmp_path, figures):
    drawn = figures(write_sweep(tmp_path / "open", {"plaintext": [25]}, open_loop=True))
    fig = drawn["latency_vs_throughput.png"]
    words = title(fig)
    assert "Open loop, plaintext" in words and "corrected" in words
    http, https = panels(fig)
    assert [http.get_title(), https.get_title()] == PANELS
    for ax in (http, https):
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert sorted(lines) == ["beast", "py"]
        for server, line in lines.items():
            assert rgb(line.get_color()) == COLORS[server] and len(line.get_xdata()) == 2


@pytest.mark.parametrize(
    "concurrencies", [{"plaintext": [25], "json": [25]}, {"plaintext": [1, 10], "json": [1, 10]}]
)
def test_every_chart_names_its_c_keeps_server_colours_and_no_line_through_one_point(
    tmp_path, figures, concurrencies
):
    drawn = figures(write_sweep(tmp_path / "sweep", concurrencies, open_loop=True))
    assert len(drawn) >= 8
    for name, fig in drawn.items():
        if name not in ("memory_peak_rss.png", "latency_vs_throughput.png"):
            assert "C = " in title(fig), name
        for ax in fig.axes:
            for line in ax.get_lines():
                if line.get_linestyle() not in ("None", "none", "", " "):
                    assert len(line.get_xdata()) > 1, (name, line.get_label())
                if line.get_label() in COLORS:
                    assert rgb(line.get_color()) == COLORS[line.get_label()], name
            for container in ax.containers:
                if container.get_label() in COLORS:  # a series per server: its colour
                    for bar in container:
                        assert rgb(bar.get_facecolor()) == COLORS[container.get_label()], name
    # one series over the servers: each server's bar in its colour, best first (the most req/s,
    # the least memory); node, never measured, has no bar and no slot
    for name in ("throughput_peak.png", "throughput_average.png", "memory_peak_rss.png"):
        for ax in panels(drawn[name]):
            names = [t.get_text() for t in ax.get_yticklabels()]
            assert sorted(names) == ["beast", "py"]
            widths = [bar.get_width() for bar in bars_of(ax)]
            lower = name == "memory_peak_rss.png"  # lower is better: the least on top
            assert widths == sorted(widths, reverse=not lower), name
            assert [rgb(bar.get_facecolor()) for bar in bars_of(ax)] == [COLORS[s] for s in names]


def test_a_chart_promises_dashed_ceilings_only_where_it_draws_one():
    """Issue 58: connection_setup.png's legend promised dashed CPU ceilings, and a connection
    rate's bound has none: the note names the dash only where a bar has a ceiling."""
    import matplotlib.pyplot as plt

    from loadbench.core.analysis import Figure

    bound = Figure(900.0, "lower")  # a generator-bound rate, no ceiling
    capped = Figure(900.0, "lower", interval=(900.0, 1_500.0))  # closed by the server's CPU
    for value, dashed in ((bound, False), (capped, True)):
        fig = bars.grouped_figure(
            "Connection setup", "Rate", ["a", "b"], {"conn/s": [value, Figure(500.0)]}
        )
        title = fig._suptitle.get_text().replace("\n", " ")
        assert "hatched: a bound" in title
        assert ("dashed to its CPU ceiling" in title) is dashed, title
        plt.close(fig)
