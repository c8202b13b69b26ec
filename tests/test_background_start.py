"""The suite passes however it is started: in the background (`nohup pytest &`) SIGINT arrives
ignored, and the Ctrl-C tests must still see their SIGINT (conftest.py sets the disposition)."""

import signal
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CTRL_C_TESTS = [
    "test_generator.py::test_ctrl_c_stops_the_run_and_returns_what_was_measured",
    "test_server_cli.py::test_serve_until_ctrl_c_prints_counters",
]


def test_ctrl_c_tests_pass_when_the_suite_starts_with_sigint_ignored():
    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell does for `cmd &`

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *[str(TESTS / t) for t in CTRL_C_TESTS],
        ],
        preexec_fn=ignore_sigint,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=TESTS.parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"{len(CTRL_C_TESTS)} passed" in proc.stdout
