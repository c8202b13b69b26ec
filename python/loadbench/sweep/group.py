"""One (target, protocol) of a sweep: its server's lifecycle and its cells, each measured
after the load gate, re-run while the window was contended, and appended to results.jsonl."""

from __future__ import annotations

import datetime as _dt
import os
import time
from pathlib import Path
from typing import Callable, Optional

from ..core import analysis, protocols, tcp_exchange
from ..core.connections import FD_MARGIN, hold_connections, hold_shortfall, raise_fd_limit
from ..core.errors import LoadbenchError
from ..core.gate import LoadGate
from ..core.options import RunOptions
from ..core.progress import ProgressBar
from ..core.result import Result
from ..core.run import run
from ..core.sampler import Sampler
from ..core.steady import settle as settle_server
from ..slo.objectives import judge
from ..slo.pool import presized_pool
from ..slo.search import SEARCH_OWNS, capacity
from .plan import Cell, SweepPlan
from .profiles import profile_cell
from .profiles import wanted as profile_wanted
from .results_folder import ResultsFolder
from .targets import RunningServer, Target, launch

# a fresh server's settling: rounds of at least this (the sweep's warm-up when longer), at most
# this long unless the target's own warm-up is longer (core/steady.py)
SETTLE_ROUND_S = 0.25
SETTLE_MOST_S = 10.0


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class ServerGroup:
    """The pending cells of one (target, protocol): one server lifecycle, restarted if it dies.
    ``runner`` is loadbench.run, a distributed ClusterRunner, or a test's stand-in with run()'s
    keywords."""

    def __init__(
        self,
        sweep: SweepPlan,
        target: Target,
        protocol: str,
        cells: list[Cell],
        folder: ResultsFolder,
        bar: ProgressBar,
        runner: Callable,
        cert_dir: Path,
        gate: Optional[LoadGate] = None,
    ) -> None:
        self.sweep, self.target, self.protocol = sweep, target, protocol
        self.cells, self.folder, self.bar, self.runner = cells, folder, bar, runner
        self.cert_dir = cert_dir
        self.workloads = {w.name: w for w in sweep.workloads}
        self.server: Optional[RunningServer] = None
        self.peers_dir = Path(sweep.peers_dir) if sweep.peers_dir else None
        self.started_at = _now()
        self.sampled: Optional[dict] = None
        self.gate = gate
        self.pool: Optional[int] = None  # the open loop's fixed connection count
        # while a generator-bound cell is measured again with threads on spare CPUs: its CPUs
        self.widened_cpus: Optional[list[int]] = None
        # other processes' CPU share in the last window of this group, when it was measured
        # cleanly: the gate before the next cell takes it instead of probing (LoadGate.vouch)
        self.last_outside: Optional[float] = None
        # how the running server was brought to steady state (core/steady.py), recorded per cell
        self.settling: Optional[dict] = None
        # an open-loop cell's verdict under the sweep's capacity objectives (_judge)
        self.slo_verdict: Optional[dict] = None

    def run(self) -> None:
        reason = self.target.unavailable_reason(self.protocol, self.peers_dir)
        if reason:  # said once per sweep, naming every protocol it skips (ProgressBar.note_once)
            self.bar.note_once(*self.target.skip_note(reason, self.sweep.protocols, self.peers_dir))
        launch_error: Optional[str] = None
        try:
            for cell in self.cells:
                if reason or cell.workload in self.target.unsupported_workloads:
                    why = (
                        reason or f"{self.target.name} does not serve the {cell.workload} workload"
                    )
                    self._record(cell, "skipped", why, None, 0.0)
                    self.bar.end_cell(measured=False)
                    continue
                self.bar.start_cell(cell.label(), self.sweep.planned_cell_seconds(cell))
                started = time.monotonic()
                self.started_at = _now()
                if cell.mode == "hold" and launch_error is None:
                    # Each hold cell on a fresh server: the growth per connection is then not
                    # hidden by buffers the load cells left in its allocator, and repeats are
                    # repeats. The open-file limit is raised first, so the server inherits it.
                    raise_fd_limit(cell.load + FD_MARGIN)
                    launch_error = self._start()
                elif cell.mode == "capacity" and launch_error is None:
                    # Each capacity search on a fresh server, settled: a search after thousands
                    # of cells on a server whose queues, caches and heap they filled - or in the
                    # backlog of the last one - is one search's luck, not a repeat.
                    launch_error = self._start(cell)
                if launch_error is None and (self.server is None or not self.server.alive()):
                    launch_error = self._start(cell)
                if launch_error is not None:
                    self._record(cell, "fail", launch_error, None, time.monotonic() - started)
                    self.bar.end_cell(measured=False, planned=True)
                    continue
                if cell.mode == "hold":
                    status, error, result = self._hold(cell)
                    extra = {}
                    if self.sweep.cluster is not None:
                        extra["note"] = (
                            "held from this machine: hold cells do not use the cluster's generators"
                        )
                else:
                    status, error, result, extra = self._measure_quiet(cell)
                self._record(cell, status, error, result, time.monotonic() - started, extra)
                if status == "fail":
                    self.bar.note(f"FAIL {cell.label()}: {error}")
                elif profile_wanted(
                    self.sweep, cell, status, self.folder,
                    self.server.pid if self.server is not None else None, self.runner is run,
                ):  # fmt: skip
                    # after the measured repeats: a profiled window is never a measured one
                    self.bar.note(f"{cell.label()}: CPU profile (perf, not timed)")
                    profile_cell(cell, *self._run_kwargs(cell), self.server.pid, self.folder)
                self.bar.end_cell()
        finally:
            if self.server is not None:
                self.server.stop()

    def _start(self, cell: Optional[Cell] = None) -> Optional[str]:
        """Launch the server (stopping the one before) and, for a load cell, bring it to steady
        state under that cell's load: None, or why it could not start."""
        if self.server is not None:
            self.server.stop()
        self.settling = None
        try:
            self.server = launch(
                self.target,
                self.protocol,
                workers=self.target.workers or self.sweep.workers,
                cpus=self.sweep.server_cpus,
                peers_dir=self.peers_dir,
                cert_dir=self.cert_dir,
                transport=self.sweep.transport,
                allocations=self.sweep.allocations,
            )
        except LoadbenchError as exc:
            self.server = None
            self.bar.note(f"{self.target.name} {self.protocol}: {exc}")
            return str(exc)
        if self.target.kind != "url":  # each record names what it measured ("ruby 3.1.2 +YJIT")
            self.server.version = self.target.version_text(self.peers_dir)
        if cell is not None and cell.mode != "hold" and self.sweep.settle:
            self._settle(cell)
        return None

    def _settle(self, cell: Cell) -> None:
        """Closed-loop rounds of the cell's workload and protocol until req/s stops climbing
        (core/steady.py), at least the target's own warm-up (a JIT): no cell of this server is
        measured cold, and a capacity search starts from the steady throughput."""
        assert self.server is not None
        closed = Cell(
            cell.target, cell.protocol, cell.workload, "closed", self.settle_load(cell), 0
        )
        url, kwargs = self._run_kwargs(closed)
        settled = settle_server(
            url,
            minimum=self.target.warmup,
            most=max(SETTLE_MOST_S, 2 * self.target.warmup),
            round_s=max(SETTLE_ROUND_S, self.sweep.warmup),
            runner=self.runner,
            **kwargs,
        )
        self.settling = settled.to_dict()
        if settled.error or not settled.steady:
            self.bar.note(f"{self.target.name} {self.protocol}: {settled.text()}")

    def settle_load(self, cell: Cell) -> int:
        """The closed-loop concurrency a cell's server is settled at: the cell's own (an open or
        capacity cell's: the sweep's highest)."""
        return cell.load if cell.mode in ("closed", "connect") else max(self.sweep.concurrencies)

    def _measure_quiet(self, cell: Cell) -> tuple[str, Optional[str], Optional[dict], dict]:
        """Measure after the load gate; re-run while other processes took more than the
        contended share of the machine (up to contended_reruns times), then keep the last."""
        reruns = 0
        cores = os.cpu_count() or 1
        while True:
            extra: dict = {"machine_cores": cores}
            if self.gate is not None:
                vouched = self.gate.vouch(self.last_outside, self.gate.cell_timeout_s)
                extra["gate"] = (vouched or self.gate.wait(self.gate.cell_timeout_s)).to_dict()
            self.last_outside = None  # until this window proves quiet
            status, error, result = self._measure(cell)
            if self.slo_verdict is not None:
                extra["objectives"] = self.slo_verdict
            server = (result or {}).get("server") or {}
            outside = analysis.outside_share(server, cores)
            contended = (
                status == "ok" and outside is not None and outside > self.sweep.contended_share
            )
            if status == "ok":
                self.last_outside = outside
            if contended and reruns < self.sweep.contended_reruns:
                reruns += 1
                self.bar.note(
                    f"re-running {cell.label()}: other processes and steal took {100 * outside:.0f} % of the "
                    f"machine's CPU in its window{_who(server)} (re-run {reruns} of "
                    f"{self.sweep.contended_reruns})"
                )
                continue
            if outside is not None:
                extra.update(outside_share=round(outside, 4), contended=contended)
            spare = self._spare_generator_cpus()
            if status == "ok" and not contended and spare and analysis.is_generator_bound(result):
                # The generator's own cores were the limit and the machine has cores neither
                # side uses: measure again with a generator thread on each of them before the
                # cell is marked generator-bound (§). The first attempt stays in the raw data.
                self.bar.note(
                    f"re-running {cell.label()} with {len(spare)} more generator thread(s) on CPU(s) "
                    f"{','.join(map(str, spare))}: the generator's own core(s) were saturated"
                )
                self.widened_cpus = list(self.sweep.generator_cpus) + spare
                try:
                    status2, error2, result2, extra2 = self._measure_quiet(cell)
                finally:
                    self.widened_cpus = None
                extra2["generator_headroom"] = {
                    "cpus": list(self.sweep.generator_cpus) + spare,
                    "first_attempt": {
                        "rps": result["rps"],
                        "generator": result.get("generator"),
                        "cpus": list(self.sweep.generator_cpus),
                    },
                }
                return status2, error2, result2, extra2
            extra["reruns"] = reruns
            if contended:
                self.bar.note(
                    f"CONTENDED {cell.label()}: still {100 * outside:.0f} % outside CPU{_who(server)} "
                    f"after {reruns} re-run(s); marked and left out of peaks"
                )
            return status, error, result, extra

    def _spare_generator_cpus(self) -> list[int]:
        """CPUs this process may use that neither the servers nor the generator are pinned to
        (none with the default split, which hands every core to one side): where a saturated
        generator gets more threads. None while a cell already runs widened, or when the sweep
        fixes generator_threads."""
        if self.widened_cpus is not None or self.sweep.generator_threads:
            return []
        used = set(self.sweep.server_cpus) | set(self.sweep.generator_cpus)
        return sorted(set(os.sched_getaffinity(0)) - used)

    def _run_kwargs(self, cell: Cell) -> tuple[str, dict]:
        """(URL, loadbench.run keywords) of ``cell`` against the running server, but for the
        open loop's rate and the capacity search's own settings."""
        assert self.server is not None
        w = self.workloads[cell.workload]
        generator_cpus = self.widened_cpus or self.sweep.generator_cpus
        threads = self.sweep.generator_threads or len(generator_cpus)
        kwargs: dict = {
            "connections": cell.load,
            "threads": max(1, min(threads, cell.load)),
            "duration": self.sweep.duration,
            "warmup": self.sweep.warmup,
            "timeout": self.sweep.timeout,
            "interval": self.sweep.interval,
            "keepalive": cell.mode != "connect",
            "insecure": True,
            "cpus": generator_cpus,
        }
        if self.sweep.requests is not None and cell.mode != "open":
            kwargs.update(
                requests=self.sweep.requests, duration=None
            )  # exactly N outcomes, as run() counts them
        if cell.protocol in protocols.MULTIPLEXED:
            # Only HTTP/2 cells name the protocol: an HTTP/1.1 cell's call is what it always was.
            kwargs.update(
                protocol=protocols.get(cell.protocol).wire,
                streams=self.sweep.streams_for(cell.protocol),
            )
        if self.server.unix_socket is not None:
            kwargs["unix_socket"] = self.server.unix_socket  # transport "unix"
        if self.sweep.pipeline_for(cell) > 1:
            # Only when asked: an unpipelined cell's call is what it always was.
            kwargs.update(pipeline=self.sweep.pipeline_for(cell))
        if cell.protocol in protocols.TLS_OVER_TCP and self.sweep.tls_library != "openssl":
            kwargs.update(tls_library=self.sweep.tls_library)
        if cell.mode == "connect":
            # Only when asked: a connection-setup cell's call is otherwise what it always was.
            kwargs.update({k: True for k in tcp_exchange.OPTIONS if getattr(self.sweep, k)})
        kwargs.update(self.sweep.run_options)  # the [run] table: none of the keys set above
        if w.requests is not None:
            kwargs["requests_list"] = [dict(r) for r in w.requests]
            url = self.server.base_url + str(w.requests[0].get("path", "/"))
        else:
            kwargs.update(method=w.method, headers=dict(w.headers), body=w.body)
            url = self.server.base_url + w.path
        return url, kwargs

    def _measure(self, cell: Cell) -> tuple[str, Optional[str], Optional[dict]]:
        assert self.server is not None
        self.pool = None
        url, kwargs = self._run_kwargs(cell)
        threads = kwargs["threads"]
        if cell.mode == "open":
            capacity = self._capacity(cell)
            if capacity is None:
                return (
                    "fail",
                    "no closed-loop capacity was measured for this server, so no open-loop rate",
                    None,
                )
            rate = capacity[0] * cell.load / 100.0
            # The capacity search's pool rule (slo/pool.py): sized before the window from Little's
            # law at the rate and the loosest latency objective (else the server's own latency at
            # its closed-loop peak, twice over), then fixed
            # (wrk2's model): a request that finds every connection busy waits - the corrected
            # latency counts that wait, and the cell's `limit` says so (pool-bound, ¶). (With a
            # pool allowed to grow 4x mid-window, a 10 000 req/s https run against Beast had a
            # p99 of 437 ms instead of 58 ms: the growth, not the server.)
            pool = presized_pool(
                rate, capacity[1], capacity[0], self.sweep.capacity_latency_limit_s()
            )
            self.pool = pool
            kwargs.update(
                rate=rate,
                arrival="constant",
                connections=pool,
                max_connections=pool,
                threads=max(1, min(threads, pool)),
            )
        start = peak = None
        if cell.mode == "capacity":
            # the search starts at half the steady throughput of its fresh server (else half the
            # closed-loop peak measured earlier, else it probes)
            peak = (self.settling or {}).get("rps") or (self._capacity(cell) or (None,))[0]
            start = peak / 2 if peak else None
        self.slo_verdict = None
        self.sampled = None
        sampler = None
        if self.server.pid is not None:
            # Exact server block at the window's edges (run's sample_pid), plus a background
            # series around the whole cell for the peaks between the edges.
            kwargs["sample_pid"] = self.server.pid
            try:
                sampler = Sampler(self.server.pid, interval=0.1, tree=self.target.tree).start()
            except LoadbenchError:
                sampler = None
        sample_pid = kwargs.pop("sample_pid", None)
        try:
            # One RunOptions checks the cell's options (a bad sweep setting is a ConfigError here,
            # for every runner); the runner is called with the ones the cell names, so an
            # HTTP/1.1 cell never names a protocol.
            options = RunOptions(**kwargs)
            named = {name: getattr(options, name) for name in kwargs}
            if cell.mode == "capacity":
                result = self._search(url, named, sample_pid, start, peak)
            else:
                if sample_pid is not None:
                    named["sample_pid"] = sample_pid
                outcome = self.runner(url, **named)
                if cell.mode == "open" and self.sweep.capacity and isinstance(outcome, Result):
                    self.slo_verdict = self._judge(outcome)
                result = outcome.to_dict()
        except Exception as exc:  # noqa: BLE001 - any failure of one cell must not end the sweep
            if not self.server.alive():
                return "fail", f"server died during the cell: {self.server.death_note()}", None
            return "fail", f"{type(exc).__name__}: {exc}", None
        finally:
            if sampler is not None:
                sampler.stop()
                self.sampled = sampler.totals()
        if result.get("interrupted") or result.get("outcome") == "interrupted":
            raise KeyboardInterrupt  # Ctrl-C cut the window short: not a cell to keep
        if not self.server.alive():
            return "fail", f"server died during the cell: {self.server.death_note()}", result
        if cell.mode == "capacity":
            return "ok", None, result  # every outcome of a search is a finding, said in it
        if not result.get("responses"):
            errors = (
                ", ".join(f"{k} {v}" for k, v in (result.get("errors") or {}).items()) or "none"
            )
            return "fail", f"no responses in the window (errors: {errors})", result
        return "ok", None, result

    def _judge(self, result: Result) -> dict:
        """An open-loop cell judged by the capacity search's own rule (slo/objectives.judge: the
        whole window and each 1 s window with enough requests for the percentile), against the
        sweep's capacity objectives - so the open-loop table and the capacity judge alike."""
        objectives = self.sweep.capacity_objectives()
        verdict = judge(result, objectives, self.sweep.interval)
        return {
            "objectives": [o.text for o in objectives],
            "passed": verdict.passed,
            "failures": verdict.failures[:3],
            "windows_judged": verdict.windows,
        }

    def _search(
        self,
        url: str,
        named: dict,
        sample_pid: Optional[int],
        start: Optional[float],
        peak: Optional[float],
    ) -> dict:
        """A capacity cell: loadbench.capacity with the cell's run options, each step a window
        of the sweep's duration after its warm-up, judged per 1 s window (or per step when the
        steps are shorter), the answer confirmed for the sweep's capacity hold."""
        for key in SEARCH_OWNS:
            named.pop(key, None)
        found = capacity(
            url,
            self.sweep.capacity,
            start=start,
            peak=peak,  # sizes each step's pool (slo/pool.py), as the open-loop cells' are
            step=self.sweep.capacity_step_seconds(),
            hold=self.sweep.capacity_hold_seconds(),
            settle=self.sweep.warmup,
            window=min(1.0, self.sweep.capacity_step_seconds()),
            precision=self.sweep.capacity_precision,
            repeats=1,
            sample_pid=sample_pid,
            contended_share=self.sweep.contended_share,
            contended_reruns=self.sweep.contended_reruns,
            runner=self.runner,  # a sweep over a cluster sends every step from its shards
            **named,
        )
        self.bar.note(f"{self.target.name} {self.protocol}: {found.message()}")
        return found.to_dict()

    def _hold(self, cell: Cell) -> tuple[str, Optional[str], Optional[dict]]:
        """Hold ``cell.load`` idle connections to the fresh server and measure its memory per
        connection. No load gate and no contention re-runs: memory growth does not depend on
        the CPU other processes use, and there is no window to contend."""
        assert self.server is not None
        self.sampled = None
        # the server was restarted: the next load cell probes the machine again
        self.last_outside = None
        url = self.server.base_url + self.sweep.hold_workload().path
        try:
            record = hold_connections(
                url, cell.load, sample_pid=self.server.pid, tree=self.target.tree
            )
        except Exception as exc:  # noqa: BLE001 - any failure of one cell must not end the sweep
            if not self.server.alive():
                return "fail", f"server died during the cell: {self.server.death_note()}", None
            return "fail", f"{type(exc).__name__}: {exc}", None
        if not self.server.alive():
            return "fail", f"server died during the cell: {self.server.death_note()}", record
        reason = hold_shortfall(record)
        return ("fail" if reason else "ok"), reason, record

    def _capacity(self, cell: Cell) -> Optional[tuple[float, int]]:
        """(best median req/s, its concurrency) of this target/protocol/workload's closed cells."""
        by_c: dict[int, list[float]] = {}
        for r in self.folder.records():
            if (
                r.get("target"),
                r.get("protocol"),
                r.get("workload"),
                r.get("mode"),
                r.get("status"),
            ) == (cell.target, cell.protocol, cell.workload, "closed", "ok"):
                by_c.setdefault(r["connections"], []).append(r["result"]["rps"])
        if not by_c:
            return None
        medians = {c: analysis.median(values) for c, values in by_c.items()}
        best = max(medians, key=lambda c: medians[c])
        return medians[best], best

    def _record(
        self,
        cell: Cell,
        status: str,
        error: Optional[str],
        result: Optional[dict],
        wall_s: float,
        extra: Optional[dict] = None,
    ) -> None:
        record = {
            "id": cell.id,
            "target": cell.target,
            "protocol": cell.protocol,
            "workload": cell.workload,
            "mode": cell.mode,
            "connections": self.pool if cell.mode == "open" else cell.load,
            "repeat": cell.repeat,
            # the sweep block this repeat ran in, on its own server process (runner.py): the
            # report pairs servers' repeats by it (core/replication.py)
            **({"block": cell.repeat} if self.sweep.blocks and cell.mode != "hold" else {}),
            "status": status,
            "error": error,
            "started": self.started_at if wall_s else _now(),
            "wall_s": round(wall_s, 3),
            "server": self.server.describe() if self.server is not None else None,
        }
        if cell.mode == "open":
            record["load_pct"] = cell.load
        if cell.protocol in protocols.MULTIPLEXED:
            record["streams"] = self.sweep.streams_for(cell.protocol)
        if self.sweep.pipeline_for(cell) > 1:
            record["pipeline"] = self.sweep.pipeline_for(cell)
        if self.sweep.requests is not None and cell.mode not in ("open", "hold"):
            record["requests"] = self.sweep.requests
        record.update(extra or {})
        if self.settling is not None and status != "skipped":
            record["settling"] = (
                self.settling
            )  # how this server instance was brought to steady state
        if result is not None:
            record["result"] = result
        if self.sampled and status != "skipped":
            record["sampler"] = self.sampled
            self.sampled = None
        self.folder.append(record)


def _who(server: dict) -> str:
    """' (cc1plus 0.41 s, chromium 0.05 s, steal 0.30 s)': who took the CPU: the other processes
    that used the most, and the hypervisor's steal."""
    top = [
        f"{o['command']} {o['cpu_s']:.2f} s"
        for o in server.get("others_top") or []
        if o.get("cpu_s")
    ]
    if (server.get("steal_s") or 0) >= 0.005:
        top.append(f"hypervisor steal {server['steal_s']:.2f} s")
    return f" ({', '.join(top)})" if top else ""
