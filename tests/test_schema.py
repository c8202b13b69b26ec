"""A run's schema is written once across the C++/Python boundary (issue 26).

- The engine's counters are one list (LOADBENCH_COUNTERS in core/generator/base/config.hpp): the
  struct fields, their merge and their Python binding come from it, and loadbench.Result carries
  any counter of it into the JSON without a line of Python per counter.
- The engine's config and result structs are bound as classes, field by field; run(), the CLI,
  sweeps and distributed runs fill one RunOptions.
- The Result JSON is one layout, read and written from it: every committed result round-trips
  byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from loadbench import Result, RunOptions
from loadbench.core import _core
from loadbench.core import result as result_module
from loadbench.core.options import FIELD_HELP, field_type

REPO = Path(__file__).resolve().parents[1]


def declared_counters() -> list[str]:
    text = (REPO / "cpp/core/generator/base/config.hpp").read_text()
    block = text[text.index("#define LOADBENCH_COUNTERS(X)") : text.index("struct Measurements")]
    return re.findall(r"X\((\w+),", block)


def test_the_binding_exports_the_one_counter_list():
    assert list(_core.COUNTERS) == declared_counters()
    assert {"responses", "unfinished", "goaways", "retried", "tls_resumed", "late_sends"} <= set(
        _core.COUNTERS
    )
    # the binding names no counter one by one: it walks the list
    binding = (REPO / "cpp/bindings/register_generator.cpp").read_text()
    names = "|".join(_core.COUNTERS)
    assert not re.search(rf"Measurements::({names})\b", binding)
    assert not re.search(rf'def_readonly\("({names})", &generator::Measurements', binding)


def test_a_new_engine_counter_reaches_the_json_with_no_python_change(monkeypatch):
    """What the engine gains (a new line in LOADBENCH_COUNTERS) is in Result.counters, answers as
    an attribute, is written into the JSON and read back - no Result field, no JSON key list."""
    monkeypatch.setattr(result_module, "COUNTERS", result_module.COUNTERS + ("pings_sent",))
    monkeypatch.setattr(result_module, "KNOWN_KEYS", result_module.KNOWN_KEYS | {"pings_sent"})
    counts = {name: 0 for name in result_module.COUNTERS}
    counts.update(responses=10, pings_sent=7)
    r = Result(
        url="http://x/",
        config={},
        duration_s=1.0,
        status_codes={200: 10},
        errors={},
        latency=Result.from_dict(_one_committed_result()).latency,
        counters=counts,
    )
    assert r.pings_sent == 7 and r.responses == 10 and r.rps == 10.0
    d = r.to_dict()
    assert d["pings_sent"] == 7 and list(d).index("pings_sent") < list(d).index("streams_reset")
    assert Result.from_dict(d).pings_sent == 7 and "pings_sent" not in Result.from_dict(d).extras
    with pytest.raises(AttributeError):
        r.no_such_counter  # noqa: B018 - an unknown name is still an error


def test_a_counter_lives_in_four_files_besides_its_readers():
    """tls_resumed, the newest counter before this layout: the result struct (the list), the
    Recorder, its place in the JSON layout (kept for byte-compatible output; a new counter needs
    none) and where a reader sees it; besides those, only code that reads a run's JSON as a
    consumer (a bench driver). Nothing else in the source names it."""
    # The drivers and their package by name, not bench/ whole: bench/peers may hold a PyPy venv.
    drivers = list((REPO / "bench").glob("*.py")) + list(
        (REPO / "bench/bench_drivers").glob("*.py")
    )
    sources = [
        p
        for p in list((REPO / "cpp").rglob("*.[ch]pp"))
        + list((REPO / "python").rglob("*.py"))
        + drivers
        if "tests" not in p.parts
    ]
    naming = sorted(
        str(p.relative_to(REPO)) for p in sources if re.search(r"\btls_resumed\b", p.read_text())
    )
    assert naming == [
        # a bench driver reading a run's JSON, as any consumer of the result does (the QUIC
        # handshake benchmark reports how many resumed)
        "bench/bench_drivers/h3_handshakes.py",
        "cpp/core/generator/base/config.hpp",
        "cpp/core/generator/base/recorder.hpp",
        "python/loadbench/core/result.py",
        "python/loadbench/core/summary.py",
    ]


def test_the_engine_config_is_filled_field_by_field_from_run_options():
    options = RunOptions(
        connections=7,
        threads=2,
        requests=100,
        protocol="http2",
        streams=4,
        rate=500.0,
        max_connections=9,
        arrival="poisson",
        cpus=[0],
        headers=["X-A: 1"],
        body="hi",
    )
    c = options.engine_config("http://127.0.0.1:8080/echo")
    assert (c.url, c.connections, c.threads, c.total_requests, c.duration_s) == (
        "http://127.0.0.1:8080/echo",
        7,
        2,
        100,
        0.0,
    )
    assert (c.h2, c.streams, c.rate, c.max_connections, c.poisson, c.cpus) == (
        True,
        4,
        500.0,
        9,
        True,
        [0],
    )
    (template,) = c.requests
    assert (template.method, template.headers, template.body) == ("GET", [("X-A", "1")], b"hi")
    # every option says what it is, once; the CLI's help is built from the same text
    assert set(FIELD_HELP) == {f.name for f in fields(RunOptions)} and all(FIELD_HELP.values())
    assert field_type("duration") == "seconds" and field_type("connections") == "integer"
    assert options.changed()["streams"] == 4 and "insecure" not in options.changed()


def _one_committed_result() -> dict:
    for folder in sorted((REPO / "reports").glob("*/results.jsonl")):
        for line in folder.read_text().splitlines():
            record = json.loads(line)
            if record.get("result"):
                return record["result"]
    raise AssertionError("no committed result")


def test_every_committed_result_round_trips_byte_for_byte():
    n = 0
    for folder in sorted((REPO / "reports").glob("*/results.jsonl")):
        for line in folder.read_text().splitlines():
            record = json.loads(line)
            d = record.get("result")
            if not d:  # a failed or skipped cell (a peer not installed) has none
                continue
            # a capacity cell's result is its search: every step of it holds a run's result
            runs = [s["result"] for s in d["steps"]] if record.get("mode") == "capacity" else [d]
            for run in runs:
                assert json.dumps(Result.from_dict(run).to_dict()) == json.dumps(run)
                n += 1
    assert n > 100


def test_a_load_shape_reaches_the_engine_config_and_the_result_json():
    """rate_schedule / steps: one RunOptions field each, filled into EngineConfig.rate_schedule;
    the JSON's config records the points, each timeline row its target_rps (recomputed from the
    config when read back), and `stages` follows `rate` - all of it round-trips."""
    options = RunOptions(steps="100:1s, 300:2s", warmup=0.5)
    assert field_type("rate_schedule") == "string or list of (seconds, rate)"
    assert field_type("steps") == "string or list of (rate, seconds)"
    assert field_type("connections_schedule") == "string or list of (seconds, connections)"
    closed = RunOptions(connections_schedule="0s:2, 1s:6").engine_config("http://127.0.0.1:1/")
    assert (closed.connections, closed.duration_s, closed.rate) == (6, 1.0, 0.0)
    assert closed.connections_schedule == [(0.0, 2.0), (1.0, 6.0)] and closed.rate_schedule == []
    c = options.engine_config("http://127.0.0.1:8080/")
    assert (c.rate, c.duration_s, c.warmup_s) == (0.0, 3.0, 0.5)
    assert c.rate_schedule == [(0.0, 100.0), (1.0, 100.0), (1.0, 300.0), (3.0, 300.0)]
    config = options.record()
    assert config["rate"] is None and config["duration_s"] == 3.0
    assert config["rate_schedule"] == [[0.0, 100.0], [1.0, 100.0], [1.0, 300.0], [3.0, 300.0]]
    assert config["steps"] == [[100.0, 1.0], [300.0, 2.0]]
    committed = Result.from_dict(_one_committed_result())
    stage = {"t_s": 0.0, "until_s": 1.0, "rate_from": 100.0, "rate_to": 100.0}
    r = Result(
        url="http://127.0.0.1:8080/",
        config=config,
        duration_s=3.0,
        status_codes={200: 700},
        errors={},
        latency=committed.latency,
        counters={"responses": 700, "due": 700, "sends": 700},
        interval_s=1.0,
        timeline_columns={"responses": np.array([100, 300, 300])},
        open_loop=True,
        target_rate=700 / 3,
        latency_uncorrected=committed.latency,
        lateness=committed.latency,
        stages=[dict(stage, target_rps=100.0), dict(stage, t_s=1.0, until_s=3.0)],
    )
    d = r.to_dict()
    assert [row["target_rps"] for row in d["timeline"]] == [100.0, 300.0, 300.0]
    assert list(d["timeline"][0]) == [
        "t_s",
        "interval_s",
        "responses",
        "errors",
        "rps",
        "target_rps",
        "p50_us",
        "p99_us",
    ]
    assert list(d).index("stages") == list(d).index("rate") + 1
    assert d["stages"] == r.stages
    back = Result.from_dict(d)
    assert back.stages == r.stages and "stages" not in back.extras
    assert json.dumps(back.to_dict()) == json.dumps(d)
    # a run without a shape writes neither
    plain = Result.from_dict(_one_committed_result()).to_dict()
    assert "stages" not in plain and all("target_rps" not in row for row in plain["timeline"])
