"""A sweep run cell by cell: loadbench.Sweep is a SweepPlan (plan.py) that can run.

    sweep = loadbench.Sweep(targets=[Target("beast")], concurrencies=[1, 10], duration=2.0)
    sweep.run("reports/my-run")      # results.jsonl grows one line per cell; resumable

Each cell is one ``loadbench.run`` with its own warm-up and measured window, the server
sampled around exactly that window (``sample_pid``), and its record appended and fsynced to
results.jsonl the moment it ends (group.py). Re-running the same sweep into the same folder
skips the cells already recorded. A repeat is an independent replication (``blocks``, the
default): the sweep runs in blocks - every server's repeat 1, then every server's repeat 2, ...
- each (target, protocol) of a block on a freshly started server, in an order shuffled from
``order_seed`` (SweepPlan.server_groups), so the spread between repeats is the spread between
server processes and minutes of the machine, and repeat r of two servers saw the same minutes
(core/replication.py pairs them). A server is restarted if it dies; a cell during which it
died, or for which it never became ready, is recorded as FAIL and the sweep goes on.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Callable, Optional, Union

from ..core.environment import environment as machine_environment
from ..core.errors import ConfigError
from ..core.gate import LoadGate
from ..core.progress import ProgressBar
from ..core.run import run
from ..distributed import ClusterRunner
from .group import ServerGroup
from .plan import Cell, SweepPlan, Workload, builtin_workloads
from .results_folder import SETTINGS_FILE, ResultsFolder
from .sites import record_sites

__all__ = ["Cell", "Sweep", "SweepPlan", "Workload", "builtin_workloads"]


class Sweep(SweepPlan):
    """A :class:`SweepPlan` that runs: ``Sweep(...).run(out_dir)``."""

    # -- running -------------------------------------------------------------------------
    def run(
        self,
        out_dir: Union[str, Path],
        *,
        progress: bool = True,
        notes: bool = True,
        runner: Optional[Callable] = None,
        environment: bool = True,
        gate: Optional[LoadGate] = None,
    ) -> Path:
        """Run every cell not yet in OUT_DIR/results.jsonl; returns the results file.

        ``progress``: the bar on stderr; ``notes``: skip/FAIL lines on stderr (even without the bar).
        ``gate``: wait for a quiet machine before the sweep and before each cell (the CLI's
        default; None here: no waiting, nothing recorded; ``LoadGate(enabled=False)``: skipped
        and recorded as skipped).
        """
        folder = ResultsFolder(out_dir).create()
        self._check_same_sweep(folder)
        if environment and not folder.environment_path.exists():
            folder.write_environment(
                machine_environment(
                    generator_cpus=self.generator_cpus, server_cpus=self.server_cpus
                ).to_dict()
            )
        folder.repair_tail()
        done = {r.get("id") for r in folder.records()}
        cells = self.cells()
        by_target = {t.name: t for t in self.targets}
        pending = [c for c in cells if c.id not in done]
        peers = Path(self.peers_dir) if self.peers_dir else None
        runnable = [
            c
            for c in pending
            if not by_target[c.target].unavailable_reason(c.protocol, peers)
            and c.workload not in by_target[c.target].unsupported_workloads
        ]
        bar = ProgressBar(
            len(cells),
            done=len(cells) - len(pending),
            to_measure=len(runnable),
            estimate_s=self.cell_seconds(),
            to_measure_s=sum(self.planned_cell_seconds(c) for c in runnable),
            stream=None if notes else io.StringIO(),
            show_bar=progress,
        )
        if gate is not None and runnable:
            gate.on_wait = gate.on_wait or bar.note
            before = gate.wait()
            if before.timed_out:
                bar.note(before.describe())
            if environment:
                folder.update_environment(gate=before.to_dict())
        closing: Optional[Callable] = None
        if runner is None and self.cluster is not None and runnable:
            cluster = ClusterRunner(self.cluster, self.shards)
            runner, closing = cluster, cluster.close
            if environment:  # the report's environment block lists the generator hosts
                folder.update_environment(
                    generators={
                        "cluster": self.cluster,
                        "shards": self.shards,
                        "hosts": cluster.generator_hosts,
                    }
                )
        try:
            self._run_groups(pending, by_target, folder, bar, runner or run, gate)
        finally:
            if closing is not None:
                closing()
        bar.finish("done")
        return folder.results

    def _run_groups(
        self,
        pending: list,
        by_target: dict,
        folder: ResultsFolder,
        bar: ProgressBar,
        runner: Callable,
        gate: Optional[LoadGate],
    ) -> None:
        # One self-signed pair per invocation, outside the results folder (never committed).
        with tempfile.TemporaryDirectory(prefix="loadbench-certs-") as certs:
            quiet: Optional[float] = None
            for (_, name, protocol), group in self.server_groups(pending):
                server_group = ServerGroup(
                    self, by_target[name], protocol, group, folder, bar, runner, Path(certs), gate
                )
                # the last window of the group before, measured quiet seconds ago, vouches for
                # this group's first cell (LoadGate.vouch) instead of a 1 s probe per server
                server_group.last_outside = quiet
                server_group.run()
                quiet = server_group.last_outside
            if self.allocation_sites and runner is run:  # heaptrack needs the servers here
                for target in self.targets:
                    bar.note(f"{target.name}: allocation sites (heaptrack, not timed)")
                    record_sites(self, target, folder, Path(certs))

    def holds_other_sweep(self, out: Union[str, Path]) -> bool:
        """Whether OUT already holds the results of a sweep with other settings (resuming
        into it would mix two sweeps)."""
        folder = ResultsFolder(out)
        if not folder.settings_path.exists():
            return False
        theirs = folder.settings()
        # a key this version added (e.g. contended_share) is not a different sweep
        return theirs != {k: v for k, v in self.settings().items() if k in theirs}

    def _check_same_sweep(self, out: Union[str, Path, ResultsFolder]) -> None:
        folder = out if isinstance(out, ResultsFolder) else ResultsFolder(out)
        if self.holds_other_sweep(folder.path):
            raise ConfigError(
                f"{folder.path} holds results of a different sweep (its {SETTINGS_FILE} differs); "
                "choose another output folder to start a new one"
            )
        folder.write_settings(self.settings())
