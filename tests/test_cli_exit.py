"""Exit statuses of the CLI when the run itself could not measure anything."""

import json
import subprocess
import sys

REFUSED_URL = "http://127.0.0.1:1/"  # nothing listens on port 1


def test_a_run_with_no_responses_exits_non_zero_and_keeps_its_json(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            REFUSED_URL,
            "-c",
            "2",
            "-z",
            "0.3s",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"loadbench: error: no responses from {REFUSED_URL} (connect "
    )
    assert "refused" in lines[0].lower()
    saved = json.loads(out.read_text())
    assert saved["responses"] == 0
    assert saved["errors"]["connect"] > 0  # what was measured is kept


def test_output_piped_into_a_reader_that_leaves_is_not_a_traceback(beast_server):
    cmd = (
        f"{sys.executable} -m loadbench run {beast_server.url('/')} -c 1 -n 50 | true; "
        "exit ${PIPESTATUS[0]}"
    )
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 141), proc.stderr
