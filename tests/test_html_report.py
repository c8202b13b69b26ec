"""report.html: one offline file whose charts render in a real browser (headless Debian
`chromium`) without a single network request.

A tiny real sweep (Beast, plaintext at C = 1 and 2, an open-loop cell at 50 % of capacity) is
reported with `loadbench report DIR --html --compare DIR`; chromium loads the page with a
proxy and a resolver pointing nowhere, dumps the DOM after the scripts ran and writes a net
log. Every chart div must hold plotly's SVG with at least one trace; the net log must show no
http(s) request the page started (a control page with an external image proves the check sees
one), and the console no CSP violation or script error.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("plotly")
pytest.importorskip("scipy")

from loadbench import Sweep, Target
from loadbench.cli import main
from loadbench.report.html import CSP

CHARTS = {"comparison", "throughput", "latency_spectrum", "open_loop", "timelines", "cpu", "rss"}
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
    assert "<table>" in text and "<th>Metric</th>" in text  # the report's tables, as HTML
    for chart in CHARTS:
        assert f'data-chart="{chart}"' in text


def _chromium(page: Path, tmp: Path, *extra: str) -> tuple[str, str, list[str]]:
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
        "--window-size=1400,5000",
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
    assert {"throughput", "cpu", "rss"} <= set(re.findall(r'data-chart="(\w+)"', text))
    assert "FAIL" in text and "✗" in text  # the model's marks, as in report.md
    assert main(["report", str(out), "--compare", str(out)]) == 2
    assert "use it with --html" in capsys.readouterr().err
