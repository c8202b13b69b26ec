"""notebooks/compare.ipynb runs headless on two generated sweeps and shows its charts inline."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("scipy")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from test_compare import SAME_A, SLOW, write_side  # noqa: E402 - after the importorskips

REPO = Path(__file__).resolve().parent.parent


def test_compare_notebook_runs_and_shows_charts_inline(tmp_path, monkeypatch):
    base, new = write_side(tmp_path / "base", SAME_A), write_side(tmp_path / "new", SLOW)
    monkeypatch.setenv("LOADBENCH_BASE", str(base))
    monkeypatch.setenv("LOADBENCH_NEW", str(new))
    nb = nbformat.read(REPO / "notebooks" / "compare.ipynb", as_version=4)
    nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(REPO / "notebooks")}},
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    printed = "".join(o.get("text", "") for o in outputs)
    assert f"base {base}, new {new}: 5 rows" in printed
    assert "gate: FAIL" in printed and "beyond rps:-5%" in printed
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 2  # both charts inline, not only saved
    tables = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "worse" in tables
