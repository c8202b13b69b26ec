"""Ranking is per metric: a generator-bound (§) cell measured the generator's limit for req/s
and latency, but its CPU us/req and memory are still the server's own, so they stay ranked.

The hand-made sweep (two servers, C = 10, three identical repeats per cell):

    cell                 a                                   b
    http plaintext       100 000 req/s, 2 us/req, §          50 000 req/s, 5 us/req
    http json             60 000 req/s, 3 us/req             40 000 req/s, 6 us/req
    https plaintext       30 000 req/s, 1 us/req, 30 % 503   20 000 req/s, 4 us/req

Under the old rule (a § cell is unranked for every metric) a's CPU average would be over
http json only (3.00, b 6.00) and b's CPU would be bold in http plaintext; every assertion
on CPU below fails there.
"""
import copy
import json

import pytest
from loadbench import comparison, model, report, results
from sweep_data import SETTINGS, record, result_dict


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (split into cells) of the first markdown table after ``heading``."""
    rows = []
    for line in text[text.index(heading):].splitlines()[1:]:
        if line.startswith("|"):
            if not set(line.replace("|", "").strip()) <= {"-"}:  # skip the |---| line
                rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows


def by_metric(rows: list[list[str]]) -> dict:
    """{(metric, server): values} of a load table (the metric is named on its first row only)."""
    out, metric = {}, None
    for r in rows[1:]:
        metric = r[0] or metric
        out[(metric, r[1])] = r[2:]
    return out


# (target, protocol, workload) -> (rps, cpu us/req, generator saturated, share shed as 503s)
CELLS = {
    ("a", "http", "plaintext"): (100_000, 2.0, True, 0.0),
    ("a", "http", "json"): (60_000, 3.0, False, 0.0),
    ("a", "https", "plaintext"): (30_000, 1.0, False, 0.3),
    ("b", "http", "plaintext"): (50_000, 5.0, False, 0.0),
    ("b", "http", "json"): (40_000, 6.0, False, 0.0),
    ("b", "https", "plaintext"): (20_000, 4.0, False, 0.0),
}


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    d = tmp_path_factory.mktemp("per-metric")
    settings = copy.deepcopy(SETTINGS)
    settings["targets"] = [{"name": "a", "kind": "beast", "description": "A"},
                           {"name": "b", "kind": "beast", "description": "B"}]
    settings.update(concurrencies=[10], connection_setup=False)
    (d / results.SETTINGS_FILE).write_text(json.dumps(settings))
    (d / results.ENVIRONMENT_FILE).write_text(json.dumps({"host": "testhost", "cpu": {"logical_cores": 2}}))
    for (t, p, w), (rps, us, saturated, shed) in CELLS.items():
        # the faster server answers sooner: a's latencies are half of b's in every cell
        p50 = 100 if t == "a" else 200
        cpu_s = us * rps * 2.0 / 1e6  # us/req x responses (rps x the 2 s window)
        for r in range(3):
            results.append_record(d / results.RESULTS_FILE, record(t, p, w, "closed", 10, r, result=result_dict(
                rps, p50 * 1.1, p50, p50 * 2, cpu_s, saturated=saturated, shed=shed,
                rss_kib=8192 if t == "a" else 4096)))
    return d


def test_a_generator_bound_cell_is_ranked_for_cpu_and_memory_only(directory):
    m = model.load(directory)
    bound = m.aggs[("a", "http", "plaintext", "closed", 10)]
    assert bound.generator_bound
    assert not bound.ranked and not bound.ranked_for("rps")
    assert not bound.ranked_for("p50_ms") and not bound.ranked_for("mean_ms")
    assert bound.ranked_for("cpu_us") and bound.ranked_for("rss_peak_mib")
    assert bound.exclusions("rps") == ["generator-bound"] and bound.exclusions("cpu_us") == []
    # non-2xx/errors (and contention) still exclude a cell from every metric
    dirty = m.aggs[("a", "https", "plaintext", "closed", 10)]
    assert not dirty.ranked_for("rps") and not dirty.ranked_for("cpu_us")
    assert len(m.excluded("a")) == 2 and len(m.excluded("a", "cpu_us")) == 1


def test_averages_run_over_the_cells_ranked_for_each_metric(directory):
    m = model.load(directory)
    # req/s: a is ranked only in http json, so both servers average that one cell
    assert m.common() == {("http", "json", 10)}
    assert m.average("a") == pytest.approx(60_000) and m.average("b") == pytest.approx(40_000)
    assert m.peak("a") == pytest.approx(60_000)  # not the generator-bound 100 000
    # CPU us/req: the § cell counts, the 503-shedding one does not (b's https is a's gap)
    assert m.average("a", metric="cpu_us") == pytest.approx(2.5)  # (2 + 3) / 2; the old rule: 3
    assert m.average("b", metric="cpu_us") == pytest.approx(5.5)
    assert m.common(metric="cpu_us") == {("http", "plaintext", 10), ("http", "json", 10)}


def test_bold_per_metric_in_the_tables(directory):
    text = report.render(directory)
    rows = table_after(text, "## HTTP/1.1 (http), plaintext, keep-alive")
    by = by_metric(rows)
    assert by[("req/s", "a")] == ["100 000 §"] and by[("req/s", "b")] == ["**50 000**"]
    assert by[("p50 (ms)", "a")] == ["0.10 §"] and by[("p50 (ms)", "b")] == ["**0.20**"]
    assert by[("CPU us/req", "a")] == ["**2.00** §"] and by[("CPU us/req", "b")] == ["5.00"]
    rows = table_after(text, "## HTTP/1.1 over TLS (https), plaintext, keep-alive")
    by = by_metric(rows)
    assert by[("CPU us/req", "a")] == ["1.00 ✗"] and by[("CPU us/req", "b")] == ["**4.00**"]
    assert "its CPU us/req and peak memory are still the server's own" in text


def test_summary_ranks_and_averages_per_metric(directory):
    text = report.render(directory)
    summary = table_after(text, "## Summary")
    assert summary[0] == ["Server", "Peak req/s", "Average req/s", "Peak vs a", "Best CPU us/req",
                          "Average CPU us/req", "Peak RSS (MiB)", "Cells excluded (req/s / CPU)",
                          "Rank by peak req/s", "Rank by best CPU us/req"]
    rows = {r[0]: r for r in summary[1:]}
    # a's best CPU is its § cell (2.00), not its dirty https cell (1.00)
    assert rows["a"][1:] == ["60 000", "60 000", "1.00x", "2.00", "2.50", "8.0", "2 / 1", "1", "1"]
    assert rows["b"][1:] == ["50 000", "40 000", "0.83x", "4.00", "5.50", "4.0", "0 / 0", "2", "2"]
    assert "req/s over the 1 closed-loop cells" in text and "CPU us/req over the 2 cells" in text


def test_comparison_flags_a_generator_bound_cell_for_req_s_not_for_cpu(directory):
    df = comparison.compare(directory, directory, metrics=["rps", "cpu"])
    cell = df[(df.target == "a") & (df.protocol == "http") & (df.workload == "plaintext")].set_index("metric")
    assert "generator-bound" in cell.loc["rps", "flags"]
    assert cell.loc["cpu", "flags"] == ""
