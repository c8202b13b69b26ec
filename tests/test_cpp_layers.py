"""The C++ parts' folders are their layers: in cpp/core/server and cpp/core/generator a file
includes only its own folder and the folders of lower layers, never its part's top level (what
composes the part) nor a folder beside it. The order is declared here, lowest first; a new
folder has to be placed in it, and an include that runs back up (or sideways) fails, named.

Only includes within the part count: core/http, core/stats and the rest of the core are below
every part and are not the part's layering.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "cpp" / "core"
TOP = ""  # the part's top level: what composes it (the server, the engine)

# part -> its folders by layer, lowest first; folders of one layer do not include each other.
LAYERS: dict[str, list[set[str]]] = {
    "server": [
        {"base"},  # configuration, options, counters: what every piece reads
        {"net", "tls", "app"},  # sockets and listeners; the TLS context; the answers
        {"worker"},  # the worker and what every connection shares (its base and lifecycle)
        {"h2", "h3"},
        {"h1"},  # hands a connection that turns out to be HTTP/2 over to h2
        {TOP},  # server, accept loop, status lines
    ],
    "generator": [
        {"base"},  # the run's config, plan and schedule, a request, the recorder
        {"transports", "quic"},  # TCP and TLS; QUIC
        {"sessions"},
        {"loop"},
        {TOP},  # the engine
    ],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"core/([a-z0-9_]+)/([^"]+)"', re.MULTILINE)


def _folder(relative: str) -> str:
    """The first folder of a path inside a part ("" for a file at its top level)."""
    parts = relative.split("/")
    return parts[0] if len(parts) > 1 else TOP


def upward_includes(root: Path, layers: list[set[str]]) -> list[str]:
    """Each include in the part at `root` (cpp/core/<part>) that is not to its own folder or a
    lower layer's."""
    part = root.name
    rank = {folder: i for i, layer in enumerate(layers) for folder in layer}
    found = []
    for source in sorted(root.rglob("*")):
        if source.suffix not in (".hpp", ".cpp", ".h"):
            continue
        relative = source.relative_to(root).as_posix()
        here = _folder(relative)
        if here not in rank:
            found.append(f"{relative}: folder {here!r} is in no layer of LAYERS[{part!r}]")
            continue
        for included_part, path in INCLUDE.findall(source.read_text(errors="replace")):
            if included_part != part:
                continue
            there = _folder(path)
            if there == here:
                continue
            if there not in rank or rank[there] >= rank[here]:
                found.append(f"{relative} includes core/{part}/{path}")
    return found


@pytest.mark.parametrize("part", sorted(LAYERS))
def test_no_include_runs_back_up_a_layer(part):
    assert (CORE / part).is_dir()
    assert upward_includes(CORE / part, LAYERS[part]) == []


def test_the_check_sees_an_upward_include(tmp_path):
    # The check itself: a lower folder including a higher one, and a folder beside it, fail.
    (tmp_path / "demo" / "low").mkdir(parents=True)
    (tmp_path / "demo" / "mid").mkdir()
    (tmp_path / "demo" / "side").mkdir()
    (tmp_path / "demo" / "low" / "a.hpp").write_text('#include "core/demo/mid/b.hpp"\n')
    (tmp_path / "demo" / "mid" / "b.hpp").write_text(
        '#include "core/demo/low/a.hpp"\n#include "core/demo/side/c.hpp"\n'
    )
    (tmp_path / "demo" / "side" / "c.hpp").write_text('#include "core/demo/top.hpp"\n')
    found = upward_includes(tmp_path / "demo", [{"low"}, {"mid", "side"}, {TOP}])
    assert found == [
        "low/a.hpp includes core/demo/mid/b.hpp",
        "mid/b.hpp includes core/demo/side/c.hpp",
        "side/c.hpp includes core/demo/top.hpp",
    ]
