"""bench_drivers.handshake_proof: which generators refuse a server that signs its handshake with
another key than its certificate's - checked live for loadbench, rendered for the report."""

from __future__ import annotations

import os

import pytest

from bench_drivers import generators, handshake_proof


def test_loadbench_refuses_the_forgery_and_answers_the_control():
    pytest.importorskip("tlslite")
    if 1 not in os.sched_getaffinity(0):
        pytest.skip(
            "the bench's loadbench runs `--cpus 1`, as on the two-core machine it is made for"
        )
    records: list[dict] = []
    handshake_proof.check(
        [generators.Loadbench(), generators.LoadbenchLeanTcp()], [1], records.append
    )
    assert [r["generator"] for r in records] == ["loadbench", "loadbench-lean-tcp"]
    for r in records:
        assert r["status"] == "ok" and r["answered_right_key"] > 0, r
        assert r["answered_forged_signature"] == 0 and r["checks_signature"] is True, r


def test_handshake_proof_section_names_who_skips_the_signature_check():
    def proof(name, right, forged, status="ok", reason=""):
        return {
            "part": "proof",
            "generator": name,
            "scheme": "https",
            "status": status,
            "reason": reason,
            "answered_right_key": right,
            "answered_forged_signature": forged,
            "checks_signature": bool(right) and not forged,
        }

    records = [
        proof("loadbench", 240, 0),
        proof("oha", 250, 248),
        proof("wrk", 0, 0, "FAIL", "connect refused"),
    ]
    text = "\n".join(handshake_proof.report_lines(records))
    assert "| loadbench | 240 | 0 | yes: refused the forgery |" in text
    assert "| oha | 250 | 248 | NO: answered a server that signed with another key |" in text
    assert "| wrk | 0 | 0 | unknown: not even the control was answered (connect refused) |" in text
    headline = handshake_proof.headline(records)[0]
    assert (
        headline.startswith("Not the same work: oha answered")
        and "loadbench refused it" in headline
    )
    assert handshake_proof.headline([proof("loadbench", 1, 0)])[0].startswith(
        "loadbench refused it"
    )
