"""loadbench: an HTTP benchmark engine with a C++ core.

One obvious entry per job:
  loadbench.run(...)          one load run against a URL
  loadbench.Sweep(...)        a matrix of servers x workloads x loads x protocols x repeats
  loadbench.report / plots    markdown reports and charts from results
  loadbench.compare(a, b)     two results compared with statistics (a pandas DataFrame)
  loadbench.ServerProcess     the native Beast reference server as a child process
  loadbench.InProcessServer   the same server on threads of this process (_core.Server)
  loadbench.Sampler(pid)      server CPU time, memory, fds and machine noise from /proc
  loadbench.environment()     the Environment block of a report
"""
from __future__ import annotations

from ._core import Server as InProcessServer
from ._core import build_info
from . import sampler
from .environment import Environment
from .environment import environment as _environment
from .connections import hold_connections
from .errors import ConfigError, LoadbenchError, ServerError
from .paths import server_binary
from .sampler import MachineSnapshot, ProcSnapshot, Sampler
from .result import LatencyHistogram, Result
from .run import Request, RunningLoad, run, start
from .server import ServerProcess
from . import analysis, gate, model, report, results
from .comparison import compare
from .sweep import Sweep, Workload
from .sweep_config import load_sweep
from .targets import Target

# `loadbench.environment(...)` is the function (the module stays importable by its full name).
environment = _environment

__version__ = build_info()["version"]

__all__ = [
    "ConfigError",
    "Environment",
    "InProcessServer",
    "MachineSnapshot",
    "ProcSnapshot",
    "Sampler",
    "environment",
    "hold_connections",
    "sampler",
    "LatencyHistogram",
    "Request",
    "Result",
    "RunningLoad",
    "LoadbenchError",
    "ServerError",
    "ServerProcess",
    "Sweep",
    "Target",
    "Workload",
    "__version__",
    "build_info",
    "compare",
    "gate",
    "model",
    "load_sweep",
    "run",
    "start",
    "server_binary",
]
