"""docs/run.md's Result JSON reference checked against what it copies: the layout in
core/result.py (LAYOUT and the engine's counters) and the blocks of a real open-loop run against
the Beast server. Every top-level key the JSON can carry has a row and no row names a key it
cannot carry; every key of a block (config, latency_us, generator, timeline, rate, limit, quic)
is named in its row. A key added to the code without its line in the reference fails here."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import loadbench
from loadbench.core import result as layout

DOC = Path(__file__).resolve().parent.parent / "docs" / "run.md"
# blocks other parts attach, named in the paragraph under the table rather than in a row of it
OTHER_PARTS = {"server", "gate", "shards", "cluster"}


def _rows() -> dict[str, str]:
    """{key: its row's meaning} of the reference table (a row naming two keys gives both)."""
    table = DOC.read_text().split("| key | meaning |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.strip().splitlines()[1:]:  # the |---|---| line first
        keys, meaning = line.strip().strip("|").split("|", 1)
        for key in re.findall(r"`([^`]+)`", keys):
            rows[key] = meaning
    return rows


def _named(meaning: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", meaning))


def test_every_top_level_key_has_a_row_and_every_row_a_key():
    unplaced = {
        c
        for c in layout.COUNTERS
        if c not in layout.PLACED_COUNTERS
        and c not in layout.OPEN_LOOP_COUNTERS
        and c not in layout.QUIC_COUNTERS
        and c not in layout.QUIC_ZERO_RTT_COUNTERS
    }
    possible = {key for key, _, _ in layout.LAYOUT if key} | unplaced | {"limit"}
    documented = set(_rows())
    assert documented - possible == set(), "rows for keys the JSON never carries"
    assert possible - documented == set(), "keys the JSON carries without a row in docs/run.md"


def test_every_key_of_a_real_open_loop_runs_blocks_is_named_in_its_row(beast_server):
    r = loadbench.run(
        beast_server.url("/plaintext"), rate=400, connections=2, duration=0.5, warmup=0.1
    )
    d = r.to_dict()
    assert r.responses > 0 and set(d) - OTHER_PARTS <= set(_rows())
    rows = _rows()
    blocks = {
        "config": d["config"],
        "latency_us": d["latency_us"],
        "generator": d["generator"],
        "timeline": d["timeline"][0],
        "rate": d["rate"],
        "limit": d["limit"],
        # an HTTP/3 run's block, from the layout itself (no QUIC build needed)
        "quic": layout._quic_block(SimpleNamespace(udp={}, counters={})),
    }
    missing = {block: sorted(set(keys) - _named(rows[block])) for block, keys in blocks.items()}
    assert all(not keys for keys in missing.values()), (
        f"keys of a block its row in docs/run.md does not name: {missing}"
    )
