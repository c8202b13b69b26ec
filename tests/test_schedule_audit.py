"""The open loop's schedule audit (core/schedule_audit.py): the gaps between due times and
between sends, counted by the engine, and the verdict on whether the sends followed the asked
arrival process."""

from __future__ import annotations

import json

import loadbench
from loadbench import ServerProcess
from loadbench.core import schedule_audit as sa


def _counts(**buckets: int) -> list[int]:
    counts = [0] * sa.BUCKETS
    for key, n in buckets.items():
        counts[int(key[1:])] = n
    return counts


def test_the_distance_forgives_a_bucket_of_jitter_and_not_a_burst():
    asked = _counts(b40=1000)
    assert sa.distance(asked, asked) == 0.0
    # a few microseconds either way of a constant gap: the neighbouring buckets
    assert sa.distance(asked, _counts(b39=300, b40=400, b41=300)) == 0.0
    # half the sends back to back, the other half two gaps apart: a burst of two
    assert sa.distance(asked, _counts(b0=500, b44=500)) == 0.5
    assert sa.distance(asked, [0] * sa.BUCKETS) is None
    block = sa.audit_block(asked, _counts(b0=500, b44=500))
    assert block["follows"] is False and block["due_gaps"] == [[40, 1000]]
    assert "did NOT follow" in sa.audit_sentence(block)
    assert "followed" in sa.audit_sentence(sa.audit_block(asked, asked))


def test_bucket_edges_are_quarter_octaves_from_256_ns():
    assert [sa.bucket_low_ns(i) for i in range(6)] == [0, 256, 320, 384, 448, 512]
    lows = [sa.bucket_low_ns(i) for i in range(1, sa.BUCKETS)]
    assert all(b > a for a, b in zip(lows, lows[1:]))


def test_a_run_counts_every_gap_in_the_engines_buckets(beast_server: ServerProcess):
    # 1000 req/s, constant: every due gap is 1 ms - one bucket, the one whose edges hold 1 ms
    r = loadbench.run(beast_server.url("/plaintext"), rate=1000, requests=300, connections=4)
    assert r.responses == r.sends == 300
    one_ms = max(i for i in range(sa.BUCKETS) if sa.bucket_low_ns(i) <= 1_000_000)
    assert {i for i, n in enumerate(r.due_gaps) if n} == {one_ms}
    # each worker counts the gaps between its own consecutive due times and sends
    assert sum(r.due_gaps) == 299 and sum(r.send_gaps) == 299
    d = r.to_dict()
    audit = d["rate"]["schedule_audit"]
    assert audit["due_gaps"] == [[one_ms, 299]] and 0.0 <= audit["distance"] <= 1.0
    back = loadbench.Result.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d and back.send_gaps == r.send_gaps


def test_sends_held_for_a_batch_leave_in_bursts_and_the_audit_says_so(beast_server: ServerProcess):
    # a 10 ms send batch at 1000 req/s: the loop wakes every ~10 ms and sends the ten due - each
    # within 10 ms of its due time, but back to back: not the constant process asked
    r = loadbench.run(
        beast_server.url("/plaintext"), rate=1000, requests=300, connections=4, send_batch=0.01
    )
    audit = r.schedule_audit
    assert audit is not None and audit["follows"] is False and audit["distance"] >= 0.5
    assert "did NOT follow the asked arrivals" in "\n".join(r.summary_lines())
