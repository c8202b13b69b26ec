"""The generator's TLS library choice: OpenSSL (default) or wolfSSL (`tls_library="wolfssl"`,
`--tls-library wolfssl`), each doing full handshakes against the native server, verifying when
asked and refusing a certificate that a wrong CA did not sign."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

import loadbench
from loadbench import ConfigError, ServerProcess, _core

LIBRARIES = ["openssl", pytest.param("wolfssl", marks=pytest.mark.skipif(
    "wolfssl" not in _core.tls_libraries(), reason="built without wolfSSL (apt-get install libwolfssl-dev)"))]
needs_openssl_cli = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")


def make_cert(tmp_path: Path, name: str, subject: str, san: str | None = None) -> tuple[Path, Path]:
    cert, key = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    argv = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", subject]
    if san:
        argv += ["-addext", f"subjectAltName={san}"]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return cert, key


def test_the_build_lists_openssl_first():
    assert _core.tls_libraries()[0] == "openssl"


@pytest.mark.parametrize("library", LIBRARIES)
def test_full_handshake_per_request(server_factory: Callable[..., ServerProcess], library: str):
    server = server_factory(tls=True, http=False, extra_args=["--no-tls-resumption"])
    r = loadbench.run(server.url("/plaintext", https=True), connections=2, requests=40, keepalive=False,
                      tls_library=library)
    stopped = server.stop()
    assert r.error_count == 0, r.first_error
    assert r.responses == 40 == stopped["requests"]["plaintext"]
    assert r.tls_handshakes == 40 == r.connections_opened == stopped["connections_accepted"]
    assert r.config["tls_library"] == library


@pytest.mark.parametrize("library", LIBRARIES)
def test_keepalive_and_h2_over_alpn(server_factory: Callable[..., ServerProcess], library: str):
    server = server_factory(tls=True, http=False)
    url = server.url("/plaintext", https=True)
    kept = loadbench.run(url, connections=2, requests=200, tls_library=library)
    assert kept.responses == 200 and kept.error_count == 0 and kept.tls_handshakes == 2, kept.first_error
    assert kept.bytes_read >= 200 * len(b"Hello, World!\n")
    h2 = loadbench.run(url, connections=2, requests=100, protocol="h2", streams=5, tls_library=library)
    assert h2.responses == 100 and h2.error_count == 0 and h2.status_codes == {200: 100}, h2.first_error


@pytest.mark.parametrize("library", LIBRARIES)
def test_h2_is_refused_when_the_server_does_not_select_it(server_factory: Callable[..., ServerProcess],
                                                          library: str):
    server = server_factory(tls=True, http=False, h2=False)  # ALPN offers only http/1.1
    r = loadbench.run(server.url("/", https=True), connections=1, requests=2, protocol="h2", tls_library=library)
    assert r.responses == 0 and r.error_count >= 1


@needs_openssl_cli
@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("target", ["ip", "name"])
def test_verification_accepts_the_right_ca_and_refuses_a_wrong_one(server_factory, tmp_path, library, target):
    cert, key = make_cert(tmp_path, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    other, _ = make_cert(tmp_path, "other", "/CN=other")
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key), extra_args=["--no-tls-resumption"])
    url = server.url("/plaintext", https=True)
    if target == "name":
        url = url.replace("127.0.0.1", "localhost")
    ok = loadbench.run(url, connections=1, requests=10, keepalive=False, cacert=str(cert), tls_library=library)
    assert ok.responses == 10 and ok.error_count == 0, ok.first_error
    refused = loadbench.run(url, connections=1, requests=2, keepalive=False, cacert=str(other), tls_library=library)
    assert refused.responses == 0 and refused.errors["connect"] == 2
    assert "certificate" in refused.first_error
    unknown = loadbench.run(url, connections=1, requests=2, keepalive=False, verify=True, tls_library=library)
    assert unknown.responses == 0 and unknown.errors["connect"] == 2  # the system CAs do not know it


@needs_openssl_cli
@pytest.mark.parametrize("library", LIBRARIES)
def test_a_certificate_for_another_address_is_refused(server_factory, tmp_path, library):
    """Signed by the trusted CA (self-signed, given as the CA file) but naming another host."""
    cert, key = make_cert(tmp_path, "elsewhere", "/CN=elsewhere.example", "DNS:elsewhere.example,IP:10.1.2.3")
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    url = server.url("/plaintext", https=True)
    for target in (url, url.replace("127.0.0.1", "localhost")):
        r = loadbench.run(target, connections=1, requests=2, keepalive=False, cacert=str(cert), tls_library=library)
        assert r.responses == 0 and r.errors["connect"] == 2, target
    insecure = loadbench.run(url, connections=1, requests=3, keepalive=False, tls_library=library)
    assert insecure.responses == 3  # not verifying (the default): the name is not checked


def test_unknown_library_and_wolfssl_resumption_are_config_errors():
    with pytest.raises(ConfigError, match="tls_library"):
        loadbench.run("https://127.0.0.1:1/", requests=1, tls_library="gnutls")
    if "wolfssl" in _core.tls_libraries():
        with pytest.raises(ConfigError, match="resumption"):
            loadbench.run("https://127.0.0.1:1/", requests=1, tls_library="wolfssl", tls_session_resumption=True)


@pytest.mark.skipif("wolfssl" not in _core.tls_libraries(), reason="built without wolfSSL")
def test_cli_flag(server_factory: Callable[..., ServerProcess], tmp_path: Path):
    server = server_factory(tls=True, http=False)
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "loadbench", "run", server.url("/plaintext", https=True), "-n", "20",
                           "-c", "2", "--disable-keepalive", "--tls-library", "wolfssl", "--no-progress",
                           "--json", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert '"tls_library": "wolfssl"' in out.read_text()
