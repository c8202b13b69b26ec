"""A driver's raw data: one JSON object a line, flushed as each measurement finishes (a crash
loses nothing), with the environment record among them; read back for --report-only."""

from __future__ import annotations

import json
from pathlib import Path


class JsonlWriter:
    """One JSON object a line, flushed as each measurement finishes (a crash loses nothing)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "w")

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_jsonl(path: Path) -> tuple[list[dict], dict[str, str], str]:
    """Runs, the environment block and the command line back from a bench driver's JSONL."""
    records, env, command = [], {}, "unknown"
    for line in path.read_text().splitlines():
        item = json.loads(line)
        if item.get("record") == "environment":
            env, command = item["environment"], item.get("command", command)
        else:
            records.append(item)
    return records, env, command
