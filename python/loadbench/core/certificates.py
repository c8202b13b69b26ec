"""Self-signed certificates and spare keys, made with the openssl command.

The https peers, the handshake proof (bench/) and the TLS tests all need one; they share this
single recipe, so a change to what "a test certificate" is (curve, lifetime, extensions) is made
once. The server binary makes its own default certificate in C++ (cpp/core/server/tls/tls_context.cpp).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Sequence

from .errors import ServerError

# The key every loadbench certificate has unless asked otherwise: EC P-256, what the embedded
# server and the nginx peer use (one ECDSA signature per full handshake).
EC_P256 = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256")


def _openssl() -> str:
    # Debian's openssl is in /usr/bin; also look where a non-root PATH may not.
    found = shutil.which("openssl") or shutil.which("openssl", path="/usr/sbin:/sbin")
    if found is None:
        raise ServerError("openssl is not installed: cannot make a self-signed certificate")
    return found


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ServerError(f"openssl could not make a certificate: {proc.stderr.strip()}")


def self_signed(
    cert: Path,
    key: Path,
    subject: str = "/CN=localhost",
    extensions: Sequence[str] = (),
    days: int = 1,
    newkey: Sequence[str] = EC_P256,
) -> tuple[Path, Path]:
    """Writes a self-signed certificate and its unencrypted key; returns (cert, key).
    ``extensions``: ``-addext`` values, e.g. "subjectAltName=IP:127.0.0.1";
    ``newkey``: the ``openssl req -newkey`` arguments (e.g. ("-newkey", "rsa:2048"))."""
    argv = [_openssl(), "req", "-x509", *newkey, "-nodes", "-keyout", str(key), "-out", str(cert)]
    argv += ["-days", str(days), "-subj", subject]
    for extension in extensions:
        argv += ["-addext", extension]
    _run(argv)
    return cert, key


def private_key(path: Path) -> Path:
    """A spare EC P-256 private key (one no certificate names: forged-handshake checks)."""
    _run(
        [
            _openssl(),
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            str(path),
        ]
    )
    return path
