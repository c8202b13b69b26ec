"""The errors a user can cause. Each carries one clear, complete message."""

from __future__ import annotations


class LoadbenchError(Exception):
    """Base class: the CLI prints `loadbench: error: <message>` and exits non-zero."""

    exit_code = 1


class ConfigError(LoadbenchError, ValueError):
    """Bad input: a flag, an argument, a URL, a sweep file key. CLI exit code 2."""

    exit_code = 2


class ServerError(LoadbenchError, RuntimeError):
    """A server process could not start, never became ready, or died."""

    exit_code = 1
