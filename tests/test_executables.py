"""Which binary each measurement measured: server.executables (path, SHA-256, role) of the
sampled tree - the executable of each process and the scripts on their command lines."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import loadbench
from loadbench.sweep.targets import Target, launch

PEERS = Path(__file__).resolve().parents[1] / "bench" / "peers"


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_script_server_records_its_interpreter_and_its_script():
    target = Target("py", kind="command", argv=["{python}", "{peers}/python/server.py", "{port}"])
    server = launch(target, "http", workers=1, cpus=None, peers_dir=PEERS)
    try:
        result = loadbench.run(server.base_url + "/plaintext", requests=200, sample_pid=server.pid)
    finally:
        server.stop()
    found = {e["path"]: e for e in result.extras["server"]["executables"]}
    interpreter = os.path.realpath(sys.executable)
    script = os.path.realpath(PEERS / "python" / "server.py")
    assert found[interpreter]["role"] == "executable"
    assert found[interpreter]["sha256"] == _sha(interpreter)
    assert found[script] == {"path": script, "sha256": _sha(script), "role": "script"}


def test_the_embedded_server_records_its_binary():
    with loadbench.ServerProcess() as server:
        result = loadbench.run(server.url("/"), requests=100, sample_pid=server.pid)
        binary = os.path.realpath(server.argv()[0])
    (only,) = result.extras["server"]["executables"]
    assert only == {"path": binary, "sha256": _sha(binary), "role": "executable"}
