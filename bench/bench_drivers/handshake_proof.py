"""What each generator's full TLS handshake proves, for bench/generator_vs_peers.py.

Every tool runs https without verifying the certificate chain there (loadbench's default, wrk,
`oha --insecure`). A client that still checks the server's CertificateVerify signature refuses a
server that presents a certificate and signs with another key; one that answers it has skipped
that check, and its CPU per handshake is for less work than the others'. The server is
tests/forged_tls_server.py (tlslite-ng, pure Python: it signs with whatever key it is given),
run once with the certificate's own key (the control: every tool must be answered) and once
with another key.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional, Sequence

from loadbench.core.certificates import private_key, self_signed
from loadbench.report.markdown import table

from . import generators as gl
from .checkout import repo_root

FORGED_SERVER = Path("tests") / "forged_tls_server.py"  # in the checkout (checkout.repo_root)
SECONDS = 2  # per run: tlslite-ng signs in pure Python, a few handshakes a second are plenty


def unavailable() -> Optional[str]:
    try:
        import tlslite  # noqa: F401
    except ImportError:
        return "tlslite-ng is not installed (pip install .[test])"
    return None


def _keys(tmp: Path) -> tuple[Path, Path, Path]:
    """The server's certificate and key, and a second key the forged server signs with."""
    cert, key = self_signed(
        tmp / "server.pem", tmp / "server.key", extensions=["basicConstraints=critical,CA:FALSE"]
    )
    return cert, key, private_key(tmp / "other.key")


def _answered(gen: gl.Generator, url: str, cpus: Sequence[int]) -> tuple[int, str]:
    """Responses the tool counted against `url` (0 when it refused every handshake), and why not."""
    try:
        _, result = gen.run(url, 1, SECONDS, False, cpus)
    except (RuntimeError, ValueError, KeyError, OSError, subprocess.TimeoutExpired) as exc:
        return 0, f"{type(exc).__name__}: {exc}"[:300]
    return result.responses, ""


def check(
    gens: Sequence[gl.Generator],
    cpus: Sequence[int],
    keep: Callable[[dict], None],
    repo: Optional[Path] = None,
) -> None:
    """One `proof` record per https-capable generator: responses with the right key and with
    another; `checks_signature` is true when the control was answered and the forgery was not.
    The forged server is the checkout's tests/forged_tls_server.py (``repo``: that checkout)."""

    def speaks_https(gen: gl.Generator) -> bool:
        try:
            gen.argv("https://127.0.0.1:1/", 1, SECONDS, False, Path("unused.json"))
            return gen.available
        except gl.UnsupportedMode:
            return False

    gens = [g for g in gens if speaks_https(g)]
    why = unavailable()
    if why:
        for gen in gens:
            keep(
                {
                    "part": "proof",
                    "generator": gen.name,
                    "scheme": "https",
                    "status": "n/a",
                    "reason": why,
                }
            )
        return
    with tempfile.TemporaryDirectory(prefix="bench-forged-") as tmp:
        cert, right_key, other_key = _keys(Path(tmp))
        right, forged = (
            _serve_and_run(gens, cert, key, cpus, repo_root(repo) / FORGED_SERVER)
            for key in (right_key, other_key)
        )
    for gen in gens:
        (right_n, right_why), (forged_n, forged_why) = right[gen.name], forged[gen.name]
        keep(
            {
                "part": "proof",
                "generator": gen.name,
                "scheme": "https",
                "status": "ok" if right_n else "FAIL",
                "answered_right_key": right_n,
                "answered_forged_signature": forged_n,
                "checks_signature": bool(right_n) and not forged_n,
                "reason": forged_why if right_n else right_why,
            }
        )


def _serve_and_run(
    gens: Sequence[gl.Generator], cert: Path, key: Path, cpus: Sequence[int], forged_server: Path
) -> dict[str, tuple[int, str]]:
    """Each generator's (responses, why not) against the forged server signing with `key`."""
    server = subprocess.Popen(
        [sys.executable, str(forged_server), str(cert), str(key)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        # A name, not 127.0.0.1: wrk sends the host as SNI, and an address is no valid one.
        url = f"https://localhost:{int(server.stdout.readline())}/"
        return {gen.name: _answered(gen, url, cpus) for gen in gens}
    finally:
        server.kill()
        server.wait(timeout=10)


def describe(r: dict) -> str:
    if r["status"] == "n/a":
        return f"  proof     {r['generator']}: n/a ({r['reason']})"
    return (
        f"  proof     {r['generator']}: {r['answered_right_key']} responses with the certificate's key, "
        f"{r['answered_forged_signature']} with a forged signature"
    )


def headline(records: list[dict]) -> list[str]:
    """One line for the handshake headline: which tools' figures are for a handshake that does
    not check the server's signature."""
    proofs = [r for r in records if r["part"] == "proof" and r["status"] == "ok"]
    if not proofs:
        return []
    skip = [r["generator"] for r in proofs if not r["checks_signature"]]
    checked = [r["generator"] for r in proofs if r["checks_signature"]]
    return [
        (
            "Not the same work: "
            + ", ".join(skip)
            + " answered a server that signed with another key than its "
            "certificate's (no CertificateVerify check); "
            if skip
            else ""
        )
        + (", ".join(checked) + " refused it" if checked else "no tool refused it")
        + ' ("What each generator\'s full handshake proves" below).',
        "",
    ]


def report_lines(records: list[dict]) -> list[str]:
    proofs = [r for r in records if r["part"] == "proof"]
    if not proofs:
        return []
    rows = []
    for r in proofs:
        if r["status"] == "n/a":
            rows.append([r["generator"], "n/a", "n/a", r["reason"]])
            continue
        verdict = (
            "yes: refused the forgery"
            if r["checks_signature"]
            else "NO: answered a server that signed with another key"
            if r["answered_right_key"]
            else f"unknown: not even the control was answered ({r['reason'][:120]})"
        )
        rows.append(
            [
                r["generator"],
                f"{r['answered_right_key']:,}",
                f"{r['answered_forged_signature']:,}",
                verdict,
            ]
        )
    return [
        "## What each generator's full handshake proves (https, certificate chain not verified)",
        "",
        "Each tool as the setup part runs it, for "
        f"{SECONDS} s at c = 1 against `tests/forged_tls_server.py` (tlslite-ng): once signing its "
        "CertificateVerify with the certificate's own key, once with another P-256 key. A client that "
        "checks the server's signature refuses the second; one that answers it does one signature "
        "verification less per handshake, so its CPU per handshake above is for less work.",
        "",
        table(
            [
                "Generator",
                "responses, right key",
                "responses, forged signature",
                "checks the server's signature",
            ],
            rows,
        ),
        "",
    ]
