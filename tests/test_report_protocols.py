"""Seed report 001's sections (overall ranking, HTTP/1.1 vs HTTP/2 with the H2/H1 peak ratio,
workload breakdown per protocol, mean latency by protocol, variant speedup) and their charts,
from hand-made results over all four protocols. Every figure is checked against the raw rows
with arithmetic done here, independently of loadbench.model."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from sweep_data import result_dict

from loadbench import model as lm
from loadbench.core import protocols
from loadbench.report import document as report
from loadbench.sweep import results_folder as rs

PROTOCOLS = ("http", "https", "h2c", "h2")
WORKLOADS = ("plaintext", "json", "echo")
CS = (10, 50)
# beast and beast-2w serve all four protocols, py HTTP/1.1 only (its h2c/h2 cells are skipped
# with a reason), h2o has no echo.
SPEED = {"beast": 40000, "beast-2w": 70000, "py": 8000, "h2o": 30000}
PROTO_FACTOR = {"http": 1.0, "https": 0.8, "h2c": 1.5, "h2": 1.2}
WORKLOAD_FACTOR = {"plaintext": 1.0, "json": 0.9, "echo": 0.6}
SKIP_REASON = "py does not serve h2c (the asyncio peer speaks HTTP/1.1 only)"

SETTINGS = {
    "targets": [
        {"name": "beast", "kind": "beast"},
        {"name": "beast-2w", "kind": "beast", "workers": 2, "variant_of": "beast"},
        {"name": "py", "kind": "command", "argv": ["x"]},
        {"name": "h2o", "kind": "command", "argv": ["x"]},
    ],
    "workloads": [{"name": w} for w in WORKLOADS],
    "concurrencies": list(CS),
    "protocols": list(PROTOCOLS),
    "repeats": 3,
    "duration": 2.0,
    "warmup": 0.5,
    "streams": {"h2c": 10, "h2": 10},
    "timeout": 5.0,
    "workers": 1,
    "server_cpus": [0],
    "generator_cpus": [1],
}


def rps_of(t, p, w, c, r):
    return SPEED[t] * PROTO_FACTOR[p] * WORKLOAD_FACTOR[w] * (1 + c / 100) * (1 + 0.01 * r)


def mean_us_of(t, p, w, c, r):
    return 1e6 * c * (10 if p in ("h2c", "h2") else 1) / rps_of(t, p, w, c, r)


def make_records() -> list[dict]:
    out = []
    for t in SPEED:
        for p in PROTOCOLS:
            for w in WORKLOADS:
                for c in CS:
                    for r in range(3):
                        rec = {
                            "id": f"{t}|{p}|{w}|c{c}|r{r}",
                            "target": t,
                            "protocol": p,
                            "workload": w,
                            "mode": "closed",
                            "connections": c,
                            "repeat": r,
                            "started": "2026-11-30T13:00:00+00:00",
                            "wall_s": 2.5,
                            "server": None,
                            "machine_cores": 2,
                        }
                        if p in ("h2c", "h2"):
                            rec["streams"] = 10
                        if t == "py" and p in ("h2c", "h2"):
                            rec.update(status="skipped", error=SKIP_REASON.replace("h2c", p))
                        elif t == "h2o" and w == "echo":
                            rec.update(
                                status="skipped", error="h2o does not serve the echo workload"
                            )
                        else:
                            rps, mean = rps_of(t, p, w, c, r), mean_us_of(t, p, w, c, r)
                            rec.update(
                                status="ok",
                                error=None,
                                result=result_dict(
                                    rps, mean, mean * 0.9, mean * 3, 0.5, rss_kib=1024 * (10 + c)
                                ),
                            )
                        out.append(rec)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("h2sweep")
    (d / rs.SETTINGS_FILE).write_text(json.dumps(SETTINGS))
    (d / rs.ENVIRONMENT_FILE).write_text(json.dumps({"logical_cores": 2}))
    with open(d / rs.RESULTS_FILE, "w") as f:
        for rec in make_records():
            f.write(json.dumps(rec) + "\n")
    return d


@pytest.fixture(scope="module")
def model(folder):
    return lm.load(folder)


# -- the expected figures, from the raw rows --------------------------------------------------
def cell_medians(metric: str) -> dict:
    rows = [r for r in make_records() if r["status"] == "ok"]
    groups: dict = {}
    for r in rows:
        value = r["result"]["rps"] if metric == "rps" else r["result"]["latency_us"]["mean"] / 1000
        groups.setdefault((r["target"], r["protocol"], r["workload"], r["connections"]), []).append(
            value
        )
    return {k: statistics.median(v) for k, v in groups.items()}


def expect_peak(t, protocols, workload=None):
    m = cell_medians("rps")
    vals = [
        v
        for k, v in m.items()
        if k[0] == t and k[1] in protocols and (workload is None or k[2] == workload)
    ]
    return max(vals) if vals else None


def expect_mean(t, protocols, workload=None, metric="rps"):
    """The mean of the server's own cell medians over ``protocols`` (and ``workload``): an
    average covers the cells the server has - h2o's without echo - never n/a for want of a cell
    every server shares (two servers are compared over the cells they share: shared_mean)."""
    m = cell_medians(metric)
    vals = [
        v
        for k, v in m.items()
        if k[0] == t and k[1] in protocols and (workload is None or k[2] == workload)
    ]
    return sum(vals) / len(vals) if vals else None


def shared_mean(t, other, protocols, metric="rps"):
    """The mean of ``t``'s cell medians over the cells ``other`` has too."""
    m = cell_medians(metric)
    theirs = {k[1:] for k in m if k[0] == other and k[1] in protocols}
    vals = [v for k, v in m.items() if k[0] == t and k[1:] in theirs]
    return sum(vals) / len(vals)


def table_after(text: str, heading: str) -> list[list[str]]:
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return [rows[0]] + rows[2:]


def num(text: str) -> float:
    """The number of a table cell, without its note ("37 420 (4 of 6 cells)": 37420)."""
    return float(text.split(" (")[0].replace(" ", "").replace("*", "").rstrip("x"))


def test_model_protocol_figures_match_raw_rows(model):
    assert model.protocols == list(PROTOCOLS)
    for t in SPEED:
        for _label, h1, h2 in protocols.pairs():
            assert model.peak(t, h1) == pytest.approx(expect_peak(t, [h1]))
            assert model.average(t, h1) == pytest.approx(expect_mean(t, [h1]))
            if t == "py":
                assert model.peak(t, h2) is None and model.h2_h1_ratio(t, h1, h2) is None
                assert model.unserved(t, h2) == SKIP_REASON.replace("h2c", h2)
                continue
            assert model.peak(t, h2) == pytest.approx(expect_peak(t, [h2]))
            assert model.h2_h1_ratio(t, h1, h2) == pytest.approx(
                expect_peak(t, [h2]) / expect_peak(t, [h1])
            )
        for w in WORKLOADS:
            for p in PROTOCOLS:
                assert (
                    model.peak(t, p, w) == pytest.approx(expect_peak(t, [p], w))
                    if expect_peak(t, [p], w)
                    else model.peak(t, p, w) is None
                )
        assert model.mean_latency(t) == pytest.approx(expect_mean(t, PROTOCOLS, metric="mean_ms"))
        assert model.mean_latency(t, protocols.names(family="HTTP/1.1")) == pytest.approx(
            expect_mean(t, protocols.names(family="HTTP/1.1"), metric="mean_ms")
        )
    # the H2 cells of every server with H2 share one set: echo is out (h2o has none) - which is
    # the set beast and h2o are compared over
    assert {k[1] for k in model.common("h2c")} == {"plaintext", "json"}
    assert model.average("beast", "h2c", shared_with="h2o") == pytest.approx(
        shared_mean("beast", "h2o", ["h2c"])
    )
    assert model.average("beast", "h2c", shared_with="h2o").cells == 4
    assert model.variants() == [("beast", "beast-2w")]
    assert model.speedup("beast", "beast-2w", "h2c", "json") == pytest.approx(70000 / 40000)


def test_protocol_comparison_tables(folder, model):
    text = report.render(model)
    for heading, h1, h2 in (
        ("### Cleartext: http vs h2c", "http", "h2c"),
        ("### TLS: https vs h2", "https", "h2"),
    ):
        rows = table_after(text, heading)
        assert rows[0] == [
            "Server",
            f"{'HTTP/1.1' if h1 == 'http' else 'HTTP/1.1 TLS'} peak (req/s)",
            rows[0][2],
            rows[0][3],
            rows[0][4],
            "H2 / H1 peak ratio",
        ]
        by = {r[0]: r for r in rows[1:]}
        for t in ("beast", "beast-2w", "h2o"):
            assert num(by[t][1]) == pytest.approx(expect_peak(t, [h1]), abs=0.5)
            assert num(by[t][2]) == pytest.approx(expect_mean(t, [h1]), abs=0.5)
            assert num(by[t][3]) == pytest.approx(expect_peak(t, [h2]), abs=0.5)
            assert num(by[t][4]) == pytest.approx(expect_mean(t, [h2]), abs=0.5)
            assert num(by[t][5]) == pytest.approx(
                expect_peak(t, [h2]) / expect_peak(t, [h1]), abs=0.005
            )
        assert by["py"][3:] == ["n/a", "n/a", "n/a"]
        note = text.split(heading, 1)[1].split("###", 1)[0]
        # the reason in full once, under the first table with py's n/a (issue 58); then named
        reason = SKIP_REASON.replace("h2c", h2)
        assert f"n/a: py {h2}: as given above." in note
        assert text.count(f"py {h2}: {reason}") == 1, text


def test_ranking_workload_latency_and_variant_tables(model):
    text = report.render(model)
    rows = table_after(text, "## Overall ranking")
    assert rows[0] == [
        "Rank",
        "Server",
        "Peak req/s",
        "Average req/s",
        "Mean latency (ms)",
        "Peak RSS (MiB)",
    ]
    assert [r[1] for r in rows[1:]] == sorted(SPEED, key=lambda t: -expect_peak(t, PROTOCOLS))
    for r in rows[1:]:
        assert num(r[2]) == pytest.approx(expect_peak(r[1], PROTOCOLS), abs=0.5)
        assert num(r[3]) == pytest.approx(expect_mean(r[1], PROTOCOLS), abs=0.5)
        assert num(r[4]) == pytest.approx(expect_mean(r[1], PROTOCOLS, metric="mean_ms"), abs=0.006)
        assert float(r[5]) == pytest.approx(10 + 50)
    for p in PROTOCOLS:
        rows = table_after(
            text.split("## Workload breakdown by protocol")[1],
            f"### {protocols.get(p).short} ({p})",
        )
        assert rows[0][:3] == ["Server", "plaintext peak (req/s)", "plaintext mean (req/s)"]
        by = {r[0]: r for r in rows[1:]}
        for t in ("beast", "h2o"):
            assert num(by[t][3]) == pytest.approx(expect_peak(t, [p], "json"), abs=0.5)
            assert num(by[t][4]) == pytest.approx(expect_mean(t, [p], "json"), abs=0.5)
        assert by["h2o"][5:] == ["n/a", "n/a"]
    rows = table_after(text, "## Mean latency by protocol")
    assert rows[0] == [
        "Server",
        "HTTP/1.1 mean latency (ms)",
        "HTTP/2 mean latency (ms)",
        "Overall mean latency (ms)",
    ]
    by = {r[0]: r for r in rows[1:]}
    assert num(by["beast"][2]) == pytest.approx(
        expect_mean("beast", ("h2c", "h2"), metric="mean_ms"), abs=0.006
    )
    assert by["py"][2] == "n/a"
    overall = [num(r[3]) for r in rows[1:]]
    assert overall == sorted(overall)
    rows = table_after(text, "## Variant speedup: beast-2w vs beast")
    by = {r[0]: r for r in rows[1:]}
    assert num(by["HTTP/2 TLS echo"][1]) == pytest.approx(
        expect_peak("beast", ["h2"], "echo"), abs=0.5
    )
    assert num(by["HTTP/2 TLS echo"][3]) == pytest.approx(70000 / 40000, abs=0.005)
    assert num(by["Overall peak"][3]) == pytest.approx(
        expect_peak("beast-2w", PROTOCOLS) / expect_peak("beast", PROTOCOLS), abs=0.005
    )
    # the per-concurrency tables stay, for every protocol, with the streams said
    assert (
        "## HTTP/2 cleartext (h2c, prior knowledge) (h2c), json, keep-alive, 10 streams per connection"
        in text
    )
    assert (
        "## HTTP/2 over TLS (ALPN h2) (h2), plaintext, keep-alive, 10 streams per connection"
        in text
    )


def test_charts_of_the_protocol_sections(folder):
    pytest.importorskip("matplotlib")
    path = report.write_report(folder)
    names = {p.name for p in folder.glob("*.png")}
    for name in (
        "protocol_peak.png",
        "protocol_average.png",
        "workloads_peak.png",
        "workloads_average.png",
        "latency_by_protocol.png",
        "variant_beast-2w_vs_beast.png",
        "throughput_peak.png",
    ):
        assert name in names
        assert f"({name})" in path.read_text()
