"""HTTP/3 in the report (issue 33): the "HTTP/2 vs HTTP/3" section's peaks, means, H3/H2 peak
ratio and CPU us/req per TLS protocol, from hand-made results of two servers over https, h2 and
h3 (one serves no h3: n/a with its reason). Every figure is checked against the raw rows with
arithmetic done here, independently of loadbench.model; a sweep without h3 has no such section."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from sweep_data import result_dict, table_rows

from loadbench import model as lm
from loadbench.report import document as report
from loadbench.sweep import results_folder as rs

PROTOCOLS = ("https", "h2", "h3")
CS = (4, 16)
SPEED = {"caddy": 20000.0, "quic-go": 30000.0, "nginx": 50000.0}
PROTO_FACTOR = {"https": 1.0, "h2": 1.3, "h3": 0.7}
CPU_S = {"https": 0.50, "h2": 0.40, "h3": 0.90}  # server CPU seconds per 2 s cell
NO_H3 = "nginx does not serve h3 (serves http, https, h2c, h2)"


def rps_of(t: str, p: str, c: int, r: int) -> float:
    return SPEED[t] * PROTO_FACTOR[p] * (1 + c / 100) * (1 + 0.01 * r)


def make_records() -> list[dict]:
    out = []
    for t in SPEED:
        for p in PROTOCOLS:
            for c in CS:
                for r in range(3):
                    rec = {
                        "id": f"{t}|{p}|plaintext|c{c}|r{r}",
                        "target": t,
                        "protocol": p,
                        "workload": "plaintext",
                        "mode": "closed",
                        "connections": c,
                        "repeat": r,
                        "started": "2026-12-02T09:00:00+00:00",
                        "wall_s": 2.5,
                        "server": None,
                        "machine_cores": 2,
                    }
                    if p != "https":
                        rec["streams"] = 10
                    if t == "nginx" and p == "h3":
                        rec.update(status="skipped", error=NO_H3)
                    else:
                        rps = rps_of(t, p, c, r)
                        mean = 1e6 * c / rps
                        result = result_dict(rps, mean, mean * 0.9, mean * 3, CPU_S[p] * (1 + r))
                        rec.update(status="ok", error=None, result=result)
                    out.append(rec)
    return out


def write(folder: Path, protocols=PROTOCOLS) -> Path:
    settings = {
        "targets": [{"name": t, "kind": "command", "argv": ["x"]} for t in SPEED],
        "workloads": [{"name": "plaintext"}],
        "concurrencies": list(CS),
        "protocols": list(protocols),
        "repeats": 3,
        "duration": 2.0,
        "warmup": 0.5,
        "streams": {"h2": 10, "h3": 10},
        "timeout": 5.0,
        "workers": 1,
        "server_cpus": [0],
        "generator_cpus": [1],
    }
    (folder / rs.SETTINGS_FILE).write_text(json.dumps(settings))
    (folder / rs.ENVIRONMENT_FILE).write_text(json.dumps({"logical_cores": 2}))
    with open(folder / rs.RESULTS_FILE, "w") as f:
        for rec in make_records():
            if rec["protocol"] in protocols:
                f.write(json.dumps(rec) + "\n")
    return folder


def medians(t: str, p: str, key) -> list[float]:
    """Per cell (C), the median over repeats of key(result)."""
    out = []
    for c in CS:
        vals = [
            key(r["result"])
            for r in make_records()
            if r["target"] == t
            and r["protocol"] == p
            and r["connections"] == c
            and r["status"] == "ok"
        ]
        if vals:
            out.append(statistics.median(vals))
    return out


def expect_peak(t: str, p: str):
    vals = medians(t, p, lambda res: res["rps"])
    return max(vals) if vals else None


def expect_cpu(t: str, p: str):
    vals = medians(t, p, lambda res: res["server"]["cpu_us_per_req"])
    return min(vals) if vals else None


def num(text: str) -> float:
    return float(text.replace(" ", "").rstrip("x"))


def test_h3_section_has_peaks_ratio_and_cpu_per_protocol_from_the_rows(tmp_path):
    folder = write(tmp_path)
    model = lm.load(folder)
    assert model.protocols == ["https", "h2", "h3"]
    report.write_report(folder)
    text = (folder / "report.md").read_text()
    rows = table_rows(text, "## Protocol comparison: HTTP/2 vs HTTP/3")
    assert rows[0] == [
        "Server",
        "HTTP/2 TLS peak (req/s)",
        "HTTP/2 TLS mean (req/s)",
        "HTTP/3 peak (req/s)",
        "HTTP/3 mean (req/s)",
        "H3 / H2 peak ratio",
        "HTTP/1.1 TLS CPU us/req",
        "HTTP/2 TLS CPU us/req",
        "HTTP/3 CPU us/req",
    ]
    by_server = {r[0]: r for r in rows[1:]}
    assert set(by_server) == set(SPEED)
    for t in ("caddy", "quic-go"):
        row = by_server[t]
        assert num(row[1]) == pytest.approx(expect_peak(t, "h2"), abs=0.5)
        assert num(row[3]) == pytest.approx(expect_peak(t, "h3"), abs=0.5)
        assert num(row[5]) == pytest.approx(expect_peak(t, "h3") / expect_peak(t, "h2"), abs=0.005)
        for col, p in zip((6, 7, 8), PROTOCOLS):
            assert num(row[col]) == pytest.approx(expect_cpu(t, p), abs=0.005)
    # the mean over the h3 cells every server with h3 has: caddy and quic-go share both C
    caddy_h3 = medians("caddy", "h3", lambda res: res["rps"])
    assert num(by_server["caddy"][4]) == pytest.approx(sum(caddy_h3) / len(caddy_h3), abs=0.5)
    # nginx has no h3: n/a with the reason its skipped cells recorded, under the table
    nginx = by_server["nginx"]
    assert nginx[3] == "n/a" and nginx[5] == "n/a" and nginx[8] == "n/a"
    assert num(nginx[1]) == pytest.approx(expect_peak("nginx", "h2"), abs=0.5)
    section = text.split("## Protocol comparison: HTTP/2 vs HTTP/3", 1)[1].split("\n## ", 1)[0]
    # the reason in full once in the report (under the h3 ranking table), then named (issue 58)
    assert "nginx h3: as given above." in section and text.count(f"nginx h3: {NO_H3}") == 1
    # HTTP/3 beside the TCP protocols in a chart of its own, one colour per server as elsewhere
    for kind in ("peak", "average"):
        assert (folder / f"protocol_h3_{kind}.png").is_file()
        assert f"(protocol_h3_{kind}.png)" in text

    # the executive summary says the same ratios, with the peaks they divide
    def rps(v: float) -> str:
        return f"{v:,.0f}".replace(",", " ")

    (line,) = [x for x in text.splitlines() if "HTTP/3 peak over HTTP/2 (TLS) peak: " in x]
    for t in ("caddy", "quic-go"):
        h3, h2 = expect_peak(t, "h3"), expect_peak(t, "h2")
        assert f"{t} {h3 / h2:.2f}x ({rps(h3)} vs {rps(h2)} req/s)" in line
    assert line.endswith("; nginx measured no h3 cell.")
    # the known limits say what was measured, not "No HTTP/3"
    assert "No HTTP/3" not in text
    assert "HTTP/2 at 10 and HTTP/3 at 10 streams per connection only" in text


def test_a_sweep_without_h3_has_no_http3_section_or_chart(tmp_path):
    folder = write(tmp_path, protocols=("https", "h2"))
    report.write_report(folder)
    text = (folder / "report.md").read_text()
    assert "HTTP/3 peak" not in text and "H3 / H2" not in text and "HTTP/2 vs HTTP/3" not in text
    assert "No HTTP/3" in text  # the known limits, as before
    assert not list(folder.rglob("protocol_h3_*.png"))
