"""A sweep's results folder on disk: :class:`ResultsFolder` owns its three files.

    RESULTS_DIR/
      sweep.json         the sweep's settings (what was asked for)
      environment.json   the machine, versions and pinning (loadbench.environment())
      results.jsonl      one JSON object per cell, appended and fsynced the moment it ends
      profiles.json, profiles/<cell>/   perf's CPU profile per cell (profile = true)
      report.md, *.png   written by `loadbench report` / at the end of `loadbench sweep`

A line of results.jsonl: ``id``, ``target``, ``protocol``, ``workload``, ``mode`` ("closed",
"connect", "open"), ``connections`` (for "open": the fixed connection pool), ``load_pct`` (open
loop only: the rate as a percent of the server's capacity; records written before it existed
kept that percent in ``connections``, and are still read), ``repeat``, ``status`` ("ok",
"fail", "skipped"), ``error``, ``started`` (UTC ISO time), ``wall_s``, ``server`` (pid, argv,
workers, cpus), ``result`` (the Result dict of loadbench.run, absent when the cell never ran),
``gate`` (the load gate's wait before the cell), ``outside_share`` / ``contended`` /
``reruns`` (CPU used by other processes in the window, and how often the cell was re-run
because of it) and ``machine_cores``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.errors import ConfigError

RESULTS_FILE = "results.jsonl"
SETTINGS_FILE = "sweep.json"
ENVIRONMENT_FILE = "environment.json"
SITES_FILE = "allocation_sites.json"  # heaptrack's top allocation sites per server (opt-in)
PROFILES_FILE = "profiles.json"  # perf's profile per cell (profile = true; sweep/profiles.py)
PROFILES_DIR = "profiles"  # each profiled cell's perf.folded, flamegraph.svg and top.md


def append_record(path: Path, record: dict) -> None:
    """Append one line and force it to disk: a crash right after loses nothing."""
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def repair_tail(path: Path) -> None:
    """Drop a half-written last line (a kill mid-write) so the next append starts clean."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())


def read_records(path: Path) -> list[dict]:
    """Every complete line of a results.jsonl (a torn last line is ignored)."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # torn by a crash mid-write: that cell was not finished
            if line.strip():
                try:
                    records.append(json.loads(line))
                except ValueError:
                    raise ConfigError(f"{path}:{number} is not valid JSON") from None
    return records


class ResultsFolder:
    """The files of one sweep's results folder, and the only code that writes them.

    folder = ResultsFolder("reports/2026-12-01-vm")
    folder.records()                      # every complete line of results.jsonl
    folder.append(record)                 # one cell, fsynced
    folder.update_environment(gate=...)   # add keys to environment.json
    """

    def __init__(self, path: "str | os.PathLike") -> None:
        self.path = Path(path)

    @property
    def results(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def settings_path(self) -> Path:
        return self.path / SETTINGS_FILE

    @property
    def environment_path(self) -> Path:
        return self.path / ENVIRONMENT_FILE

    def create(self) -> "ResultsFolder":
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def records(self) -> list[dict]:
        return read_records(self.results)

    def append(self, record: dict) -> None:
        append_record(self.results, record)

    def repair_tail(self) -> None:
        repair_tail(self.results)

    def settings(self) -> dict:
        return _read_json(self.settings_path)

    def write_settings(self, settings: dict) -> None:
        self.settings_path.write_text(json.dumps(settings, indent=2) + "\n")

    def environment(self) -> dict:
        return _read_json(self.environment_path)

    def write_environment(self, environment: dict) -> None:
        self.environment_path.write_text(json.dumps(environment, indent=2, default=str) + "\n")

    def allocation_sites(self) -> dict:
        """target -> its heaptrack window ({protocol, workload, ..., sites} or {error}); {} if none."""
        path = self.path / SITES_FILE
        return _read_json(path) if path.exists() else {}

    def add_allocation_sites(self, target: str, block: dict) -> None:
        path = self.path / SITES_FILE
        path.write_text(json.dumps({**self.allocation_sites(), target: block}, indent=2) + "\n")

    def profiles(self) -> dict:
        """cell key ("target|protocol|workload|cN") -> its profile block; {} if none."""
        path = self.path / PROFILES_FILE
        return _read_json(path) if path.exists() else {}

    def add_profile(self, key: str, block: dict) -> None:
        path = self.path / PROFILES_FILE
        path.write_text(json.dumps({**self.profiles(), key: block}, indent=2) + "\n")

    def update_environment(self, **blocks: object) -> None:
        """Add or replace top-level blocks of environment.json (the load gate, the generator hosts)."""
        self.write_environment({**self.environment(), **blocks})

    def load(self) -> tuple[dict, dict, list[dict]]:
        """(settings, environment, records); a clear error when this is no results folder."""
        if not self.results.exists():
            raise ConfigError(f"{self.path} holds no {RESULTS_FILE}: not a sweep results folder")
        return self.settings(), self.environment(), self.records()


def load_dir(results_dir: "str | os.PathLike") -> tuple[dict, dict, list[dict]]:
    """(settings, environment, records) of a results folder; a clear error if it is not one."""
    return ResultsFolder(results_dir).load()


def _read_json(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ConfigError(f"{path} is not valid JSON") from None
