"""loadbench: an HTTP benchmark engine with a C++ core.

One obvious entry per job:
  loadbench.run(...)          one load run against a URL
  loadbench.capacity(...)     the highest rate that meets latency/error objectives (p99<10ms)
  loadbench.Sweep(...)        a matrix of servers x workloads x loads x protocols x repeats
  loadbench.report            report.md, charts and report.html from a results folder
  loadbench.compare(a, b)     two results compared with statistics (a pandas DataFrame)
  loadbench.ServerProcess     the native Beast reference server as a child process
  loadbench.InProcessServer   the same server on threads of this process (core._core.Server)
  loadbench.Sampler(pid)      server CPU time, memory, fds and machine noise from /proc
  loadbench.environment()     the Environment block of a report

The package is layered, each layer importing only the ones below it:
  loadbench.core       one run: options, the engine, Result, sampler, servers, the load gate
  loadbench.distributed  one run split over Dask workers
  loadbench.slo        objectives (p99<10ms) judged per run and per window; the capacity search
  loadbench.sweep      the matrix: config, planner, runner, targets (the peer registry), results folder
  loadbench.report     the one report model, markdown, charts, HTML, compare and the CI gate
  loadbench.cli        the `loadbench` command: a thin shell over the same API
"""

from __future__ import annotations

from .core import analysis, gate, sampler
from .core._core import Server as InProcessServer
from .core._core import build_info
from .core.connections import hold_connections
from .core.environment import Environment, environment
from .core.errors import ConfigError, LoadbenchError, ServerError
from .core.options import Request, RunOptions
from .core.paths import server_binary
from .core.result import LatencyHistogram, Result
from .core.run import RunningLoad, run, start
from .core.sampler import MachineSnapshot, ProcSnapshot, Sampler
from .core.server import ServerProcess
from .report import model
from .report.comparison import compare
from .slo import capacity
from .sweep.file import load_sweep
from .sweep.runner import Sweep, Workload
from .sweep.targets import Target

__version__ = build_info()["version"]

__all__ = [
    "ConfigError",
    "Environment",
    "InProcessServer",
    "LatencyHistogram",
    "LoadbenchError",
    "MachineSnapshot",
    "ProcSnapshot",
    "Request",
    "Result",
    "RunOptions",
    "RunningLoad",
    "Sampler",
    "ServerError",
    "ServerProcess",
    "Sweep",
    "Target",
    "Workload",
    "__version__",
    "analysis",
    "build_info",
    "capacity",
    "compare",
    "environment",
    "gate",
    "hold_connections",
    "load_sweep",
    "model",
    "run",
    "sampler",
    "server_binary",
    "start",
]
