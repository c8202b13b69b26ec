"""report.html: one offline file, a dashboard whose charts render in a real browser (headless
Debian `chromium`) without a single network request.

A tiny real sweep (Beast, plaintext at C = 1 and 2 with 0.25 s timeline intervals, an open-loop
cell at 50 % of capacity) is reported with `loadbench report DIR --html --compare DIR`; chromium
loads the page with a proxy and a resolver pointing nowhere, dumps the DOM after the scripts ran
and writes a net log. Every chart div must hold plotly's SVG with at least one trace; the net
log must show no http(s) request the page started (a control page with an external image proves
the check sees one), and the console no CSP violation or script error. The committed default
sweep (8 servers) is drawn too: every chart one slice with a legend entry per server at most, and
its first screen, as a screenshot, holds the executive summary and a chart.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("scipy")

from loadbench import Sweep, Target
from loadbench.cli import main
from loadbench.report.html import CSP

CHARTS = {
    "comparison",
    "peak",
    "cpu_best",
    "throughput",
    "latency_spectrum",
    "open_loop",
    "timelines",
    "cpu",
    "rss",
}
COMMITTED = Path(__file__).resolve().parent.parent / "reports" / "2026-12-01-vm"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def html_report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    Sweep(
        targets=[Target("beast")],
        concurrencies=[1, 2],
        protocols=["http"],
        repeats=1,
        duration=1.0,
        warmup=0.2,
        open_fractions=[0.5],
        contended_reruns=0,
        contended_share=1.0,  # a drawing test: a busy CI machine must not leave cells unranked
        interval=0.25,  # four points per window: a timeline is drawn
    ).run(out, progress=False, notes=False)
    assert main(["report", str(out), "--html", "--compare", str(out)]) == 0
    return out / "report.html"


def test_report_html_is_one_file_with_a_csp_and_plotly_inline(html_report):
    text = html_report.read_text(encoding="utf-8")
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in text
    assert "default-src 'none'" in CSP and "connect-src" not in CSP
    assert not re.search(r"<(?:script|img|link|iframe)[^>]+(?:src|href)=[\"']?(?:https?:)?//", text)
    assert "plotly.js v" in text and len(text) > 1_000_000  # the library itself, from the wheel
    assert "<h2>Comparison</h2>" in text and "<h2>Report</h2>" in text
    # the summary first; the cells once, as data, drawn by the page's script
    assert text.index("<h2>Executive summary</h2>") < text.index('data-chart="throughput"')
    assert text.count('id="dashboard-data"') == 1 and "Plotly.react" in text
    # besides plotly.js, the page is the data and the report's tables: small, no chart copies
    from plotly.offline import get_plotlyjs

    assert len(text) - len(get_plotlyjs()) < 250_000
    assert "<table>" in text and "<th>Metric</th>" in text  # the report's tables, as HTML
    for chart in CHARTS:
        assert f'data-chart="{chart}"' in text


def _chromium(
    page: Path, tmp: Path, *extra: str, size: str = "1400,5000"
) -> tuple[str, str, list[str]]:
    """(DOM after the scripts ran, stderr, http(s) URLs the page requested)."""
    netlog = tmp / "net.json"
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        f"--user-data-dir={tmp / 'profile'}",
        f"--log-net-log={netlog}",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=20000",
        f"--window-size={size}",
        *extra,
        page.resolve().as_uri(),
    ]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    log = json.loads(netlog.read_text())
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for event in log["events"]:
        params = event.get("params") or {}
        url = str(params.get("url", ""))
        # the page's requests carry its origin; the browser's own (update checks, ...) do not
        if (
            names.get(event["type"]) == "URL_REQUEST_START_JOB"
            and url.startswith(("http:", "https:"))
            and params.get("initiator") != "not an origin"
        ):
            urls.append(url)
    return done.stdout, done.stderr, urls


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_every_chart_renders_in_chromium_with_no_network_request(html_report, tmp_path):
    dom, stderr, urls = _chromium(html_report, tmp_path, "--dump-dom")
    assert urls == []
    assert "Content Security Policy" not in stderr and "Uncaught" not in stderr, stderr[-2000:]
    pieces = {p.split('"', 1)[0]: p for p in dom.split('data-chart="')[1:]}
    assert set(pieces) == CHARTS
    for chart, piece in pieces.items():
        assert piece.count('class="main-svg"') >= 2, chart  # plotly drew its SVG layers
        assert re.search(r'class="trace (?:scatter|bars)', piece), chart  # and at least one trace


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_committed_sweep_is_drawn_one_slice_at_a_time(tmp_path):
    """8 servers x 4 protocols x 3 workloads: each chart draws the chosen slice, so no legend
    lists more than the servers (the old page listed ~100 cells per chart)."""
    from loadbench.report.html import write_html

    page = write_html(COMMITTED, out=tmp_path / "report.html")
    dom, stderr, urls = _chromium(page, tmp_path, "--dump-dom")
    assert urls == [] and "Uncaught" not in stderr, stderr[-2000:]
    pieces = {p.split('"', 1)[0]: p for p in dom.split('data-chart="')[1:]}
    assert {
        "peak",
        "cpu_best",
        "throughput",
        "latency_spectrum",
        "cpu",
        "rss",
        "open_loop",
        "connection_setup",
    } <= set(pieces)
    for chart, piece in pieces.items():
        assert re.search(r'class="trace (?:scatter|bars)', piece), chart
        assert piece.count('class="legendtext"') <= 10, chart
    # one concurrency: throughput is bars per server, not a column of dots
    assert 'class="trace bars' in pieces["throughput"]
    # the slice is named in every sliced chart's title
    assert "HTTP/1.1 (http), plaintext, C = 25" in pieces["throughput"]
    # the table of the slice: each server's cells of http plaintext, not all 330
    table = dom[dom.index('id="cells-table"') :]
    table = table[: table.index("</table>")]
    assert 8 <= table.count("<tr>") - 1 <= 8 * 4


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_first_screen_holds_the_summary_and_a_chart(tmp_path):
    """A 1400x900 screenshot: text on the left (the summary's sentences), and the bars of the
    headline chart on the right in the servers' colours."""
    from matplotlib.image import imread

    from loadbench.report.bars import server_colors
    from loadbench.report.html import write_html
    from loadbench.report.model import load

    page = write_html(COMMITTED, out=tmp_path / "report.html")
    shot = tmp_path / "first.png"
    _chromium(page, tmp_path, f"--screenshot={shot}", size="1400,900")
    rgb = (imread(shot)[..., :3] * 255).astype(int)
    assert rgb.shape[:2] == (900, 1400)
    left, right = rgb[150:, :680], rgb[150:, 700:]
    assert (left.sum(axis=2) < 200).mean() > 0.02  # dark text: the summary's sentences
    colors = server_colors(load(COMMITTED).targets)
    for name in list(colors)[:4]:  # the first servers' bars, each in its own colour
        want = np.array([int(colors[name][i : i + 2], 16) for i in (1, 3, 5)])
        share = (np.abs(right - want).sum(axis=2) < 30).mean()
        assert share > 0.001, (name, share)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_network_check_sees_a_page_that_loads_something(tmp_path):
    page = tmp_path / "control.html"
    page.write_text('<html><body><img src="http://example.invalid/x.png"></body></html>')
    _, _, urls = _chromium(page, tmp_path, "--dump-dom")
    assert urls == ["http://example.invalid/x.png"]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_screenshot_has_drawn_plot_areas(html_report, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "report.png"
    _chromium(html_report, tmp_path, f"--screenshot={shot}")
    pixels = imread(shot)
    assert pixels.shape[0] >= 4000 and pixels.shape[1] >= 1300
    # not a blank page: plenty of non-white pixels and many distinct colours (traces, bars)
    rgb = (pixels[..., :3] * 255).astype(int)
    assert (rgb.sum(axis=2) < 700).mean() > 0.02
    assert len({tuple(p) for p in rgb[::7, ::7].reshape(-1, 3)}) > 50


def test_results_without_histograms_or_timelines_still_give_a_report(tmp_path, capsys):
    from sweep_data import write_results_dir

    out = write_results_dir(tmp_path / "r")
    assert main(["report", str(out), "--html", "--no-charts"]) == 0
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Comparison</h2>" not in text and "<h2>Report</h2>" in text
    assert {"throughput", "cpu", "rss", "peak"} <= set(re.findall(r'data-chart="(\w+)"', text))
    assert "No timeline chart" in text  # no timelines stored: said, not drawn empty
    assert "FAIL" in text and "✗" in text  # the model's marks, as in report.md


# A perf script of one sample per line group, as `perf script -F comm,pid,tid,time,event,ip,sym,dso`
# prints it: the leaf first. Parsed, folded and drawn by the product's own functions below.
_PERF_SAMPLE = """{comm} 4242/4242 {t:.6f}: cpu-clock:pppH:
\tffffffff81a00000 {leaf} ([kernel.kallsyms])
\t0000000000401000 {middle} (/usr/bin/{comm})
\t0000000000400800 main (/usr/bin/{comm})

"""


def _profiled_results(directory: Path) -> dict:
    """sweep_data's results folder with a profile per server at the dashboard's first slice
    (http, plaintext, C = 10), its files made as sweep/profiles.py makes them: perf.folded,
    flamegraph.svg and top.md under profiles/<cell>/, its block in profiles.json. Returns each
    server's flame graph's box count."""
    from sweep_data import write_results_dir

    from loadbench.core.flamegraph import layout, write_flamegraph
    from loadbench.core.profile import fold, parse_script, top_functions, top_table, write_folded
    from loadbench.sweep.results_folder import ResultsFolder

    out = write_results_dir(directory)
    folder = ResultsFolder(out)
    boxes = {}
    for server, frames in (
        ("beast", [("tcp_sendmsg", "write_some", 30), ("tcp_recvmsg", "read_some", 20)]),
        ("py", [("do_syscall_64", "PyEval_EvalFrameDefault", 40), ("tcp_sendmsg", "send", 10)]),
    ):
        text = "".join(
            _PERF_SAMPLE.format(comm=server, t=i / 1000, leaf=leaf, middle=middle)
            for leaf, middle, n in frames
            for i in range(n)
        )
        samples = parse_script(text)
        folded = fold(samples)
        relative = f"profiles/{server}-http-plaintext-c10"
        (out / relative).mkdir(parents=True)
        write_folded(folded, out / relative / "perf.folded")
        write_flamegraph(folded, out / relative / "flamegraph.svg", title=f"{server} CPU")
        top = top_functions(samples, cpu_us_per_req=10.0)
        (out / relative / "top.md").write_text(top_table(top))
        folder.add_profile(
            f"{server}|http|plaintext|c10",
            {
                "connections": 10,
                "mode": "closed",
                "dir": relative,
                "folded": f"{relative}/perf.folded",
                "svg": f"{relative}/flamegraph.svg",
                "top_table": f"{relative}/top.md",
                "perf_data": None,
                "samples": len(samples),
                "frequency_hz": 999,
                "call_graph": "fp",
                "event": "cpu-clock:pppH",
                "cpu_us_per_req": 10.0,
                "unknown_share": 0.0,
                "unknown_modules": [],
                "hint": None,
                "top": top,
                "profiled_rps": 1000.0,
                "profiled_cpu_us_per_req": 10.0,
            },
        )
        boxes[server] = len(layout(folded))
    return boxes


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_flame_graphs_render_under_the_csp_from_the_file_system(tmp_path):
    """`loadbench report` writes report.html beside report.md (no --html), and, opened from the
    file system, each server's flame graph of the slice renders inside its <object>: the SVG's
    own script ran there and posted its frame count to the page (data-frames) - which the CSP
    of before (default-src 'none', no object-src) blocked, leaving no flame graph at all."""
    boxes = _profiled_results(tmp_path / "r")
    out = tmp_path / "r"
    assert main(["report", str(out), "--no-charts"]) == 0
    assert (out / "report.md").is_file()
    page = out / "report.html"
    dom, stderr, urls = _chromium(page, tmp_path, "--dump-dom")
    assert urls == []
    assert "Content Security Policy" not in stderr and "Uncaught" not in stderr, stderr[-2000:]
    at = dom.index('id="flamegraphs"')
    section = dom[at : dom.index("</section>", at)]
    objects = re.findall(r"<object[^>]*>", section)
    assert len(objects) == 2, section[:2000]
    for server, obj in zip(("beast", "py"), objects):
        assert f'data="profiles/{server}-http-plaintext-c10/flamegraph.svg"' in obj
        assert 'data-state="loaded"' in obj, obj
        # drawn: the SVG's script counted its boxes, as many as the product's layout places
        assert f'data-frames="{boxes[server]}"' in obj, obj
        assert "aspect-ratio" in obj  # sized as the graph, not a 150 px default box
    assert "not profiled" not in section and "could not be shown" not in section


def test_no_html_writes_report_md_only(tmp_path, capsys):
    from sweep_data import write_results_dir

    out = write_results_dir(tmp_path / "r")
    assert main(["report", str(out), "--no-charts", "--no-html"]) == 0
    assert (out / "report.md").is_file() and not (out / "report.html").exists()
    assert main(["report", str(out), "--no-html", "--compare", str(out)]) == 2
    assert "--no-html writes no report.html" in capsys.readouterr().err


def test_a_sweep_writes_report_html_beside_report_md(tmp_path):
    """`loadbench sweep` (one 0.3 s Beast cell) writes report.html whenever it writes report.md."""
    config = tmp_path / "s.toml"
    config.write_text(
        'duration = 0.3\nwarmup = 0\nrepeats = 1\nconcurrencies = [1]\nprotocols = ["http"]\n'
        'workloads = ["plaintext"]\nopen_fractions = []\nconnection_setup = false\n'
        '[[targets]]\nname = "beast"\nkind = "beast"\n'
    )
    out = tmp_path / "out"
    argv = ["sweep", str(config), "--out", str(out), "--no-wait", "--no-progress"]
    assert main([*argv, "--contended-reruns", "0"]) == 0
    assert (out / "report.md").is_file()
    text = (out / "report.html").read_text(encoding="utf-8")
    assert f'content="{CSP}"' in text and 'data-chart="throughput"' in text
