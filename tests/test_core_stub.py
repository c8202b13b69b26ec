"""The typed stub of the native module (python/loadbench/core/_core.pyi) lists what the module
really has: the engine's options come from one C++ declaration (LOADBENCH_ENGINE_OPTIONS), and
the stub must follow it, in order."""

from __future__ import annotations

import ast
from pathlib import Path

from loadbench.core import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
if not STUB.exists():  # an installed wheel without stubs: read the checkout's
    STUB = Path(__file__).parents[1] / "python" / "loadbench" / "core" / "_core.pyi"


def _annotated_fields(class_name: str) -> list[str]:
    tree = ast.parse(STUB.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)]


def test_the_stub_lists_every_engine_option_in_declaration_order():
    declared = [name for name, _, _ in _core.ENGINE_OPTIONS]
    assert _annotated_fields("EngineConfig") == declared
    config = _core.EngineConfig()
    for name, default, help in _core.ENGINE_OPTIONS:
        assert getattr(config, name) == default, name  # the defaults are the struct's own
        assert help and help == getattr(_core.EngineConfig, name).__doc__, name
