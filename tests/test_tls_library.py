"""The generator's TLS library choice: OpenSSL (default), wolfSSL (`tls_library="wolfssl"`,
`--tls-library wolfssl`) or rustls (`tls_library="rustls"`), each doing full handshakes against
the native server, verifying when asked and refusing a certificate that a wrong CA did not sign."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

import loadbench
from loadbench import ConfigError, ServerProcess
from loadbench.core import _core
from loadbench.core.certificates import private_key, self_signed

OPTIONAL = {
    "wolfssl": "built without wolfSSL (apt-get install libwolfssl-dev)",
    "rustls": "built without rustls (needs cargo from a Rust toolchain >= 1.78 at install time)",
}
OPTIONAL_LIBRARIES = [
    pytest.param(name, marks=pytest.mark.skipif(name not in _core.tls_libraries(), reason=why))
    for name, why in OPTIONAL.items()
]
LIBRARIES = ["openssl", *OPTIONAL_LIBRARIES]
needs_openssl_cli = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl CLI"
)


def make_cert(
    tmp_path: Path, name: str, subject: str, san: str | None = None, ca: bool = False
) -> tuple[Path, Path]:
    """A self-signed server certificate that is its own trust anchor. CA:FALSE: rustls (webpki)
    refuses a CA certificate as the server's own, where OpenSSL and wolfSSL accept it."""
    extensions = [f"basicConstraints=critical,CA:{'TRUE' if ca else 'FALSE'}"]
    if san:
        extensions.append(f"subjectAltName={san}")
    return self_signed(tmp_path / f"{name}.pem", tmp_path / f"{name}.key", subject, extensions)


def test_the_build_lists_openssl_first():
    assert _core.tls_libraries()[0] == "openssl"


@pytest.mark.parametrize("library", LIBRARIES)
def test_full_handshake_per_request(server_factory: Callable[..., ServerProcess], library: str):
    server = server_factory(tls=True, http=False, extra_args=["--no-tls-resumption"])
    r = loadbench.run(
        server.url("/plaintext", https=True),
        connections=2,
        requests=40,
        keepalive=False,
        tls_library=library,
        prime=False,  # the server counts the run's own connections only
    )
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
    assert kept.responses == 200 and kept.error_count == 0 and kept.tls_handshakes == 2, (
        kept.first_error
    )
    assert kept.bytes_read >= 200 * len(b"Hello, World!\n")
    h2 = loadbench.run(
        url, connections=2, requests=100, protocol="h2", streams=5, tls_library=library
    )
    assert h2.responses == 100 and h2.error_count == 0 and h2.status_codes == {200: 100}, (
        h2.first_error
    )


@pytest.mark.parametrize("library", LIBRARIES)
def test_bodies_larger_than_the_socket_buffers_go_through_whole(
    server_factory: Callable[..., ServerProcess], library: str
):
    """8 MiB each way per request: writes stop on a full socket and resume where they stopped."""
    server = server_factory(tls=True, http=False, extra_args=["--max-body", str(16 << 20)])
    body = bytes(range(256)) * (8 << 12)
    r = loadbench.run(
        server.url("/echo", https=True),
        method="POST",
        body=body,
        connections=2,
        requests=6,
        tls_library=library,
    )
    assert r.responses == 6 and r.error_count == 0 and r.status_codes == {200: 6}, r.first_error
    assert r.bytes_read > 6 * len(body) and r.bytes_written > 6 * len(body)


@pytest.mark.parametrize("library", LIBRARIES)
def test_h2_is_refused_when_the_server_does_not_select_it(
    server_factory: Callable[..., ServerProcess], library: str
):
    server = server_factory(tls=True, http=False, h2=False)  # ALPN offers only http/1.1
    r = loadbench.run(
        server.url("/", https=True), connections=1, requests=2, protocol="h2", tls_library=library
    )
    assert r.responses == 0 and r.error_count >= 1


@needs_openssl_cli
@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("target", ["ip", "name"])
def test_verification_accepts_the_right_ca_and_refuses_a_wrong_one(
    server_factory, tmp_path, library, target
):
    cert, key = make_cert(tmp_path, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1")
    other, _ = make_cert(tmp_path, "other", "/CN=other")
    server = server_factory(
        tls=True, http=False, cert=str(cert), key=str(key), extra_args=["--no-tls-resumption"]
    )
    url = server.url("/plaintext", https=True)
    if target == "name":
        url = url.replace("127.0.0.1", "localhost")
    ok = loadbench.run(
        url, connections=1, requests=10, keepalive=False, cacert=str(cert), tls_library=library
    )
    assert ok.responses == 10 and ok.error_count == 0, ok.first_error
    refused = loadbench.run(
        url, connections=1, requests=2, keepalive=False, cacert=str(other), tls_library=library
    )
    assert refused.responses == 0 and refused.errors["connect"] == 2
    assert "certificate" in refused.first_error
    unknown = loadbench.run(
        url, connections=1, requests=2, keepalive=False, verify=True, tls_library=library
    )
    assert (
        unknown.responses == 0 and unknown.errors["connect"] == 2
    )  # the system CAs do not know it


@needs_openssl_cli
@pytest.mark.skipif("rustls" not in _core.tls_libraries(), reason=OPTIONAL["rustls"])
def test_rustls_says_why_it_refuses_a_ca_certificate_as_the_servers_own(server_factory, tmp_path):
    cert, key = make_cert(
        tmp_path, "server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", ca=True
    )
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    url = server.url("/plaintext", https=True)
    openssl = loadbench.run(url, connections=1, requests=2, keepalive=False, cacert=str(cert))
    assert openssl.responses == 2, openssl.first_error
    r = loadbench.run(
        url, connections=1, requests=2, keepalive=False, cacert=str(cert), tls_library="rustls"
    )
    assert r.responses == 0 and r.errors["connect"] == 2
    assert "CA:TRUE" in r.first_error and "CA:FALSE" in r.first_error


@needs_openssl_cli
@pytest.mark.parametrize("library", LIBRARIES)
def test_a_server_that_signs_with_another_key_than_its_certificates_is_refused(tmp_path, library):
    """Not verifying the chain (the default) never means not checking the server's signature:
    a server presenting a certificate whose private key it does not hold is refused by every
    library, while the same server with the right key is answered (so the refusal is the
    signature's, not the test server's)."""
    pytest.importorskip("tlslite")
    cert, right_key = make_cert(tmp_path, "server", "/CN=localhost")
    other_key = private_key(tmp_path / "other.key")
    for key, refused in ((right_key, False), (other_key, True)):
        proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("forged_tls_server.py")),
                str(cert),
                str(key),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port = int(proc.stdout.readline())
            r = loadbench.run(
                f"https://127.0.0.1:{port}/",
                connections=1,
                requests=2,
                keepalive=False,
                timeout=10,
                tls_library=library,
            )
        finally:
            proc.kill()
            _, err = proc.communicate(timeout=10)
        if refused:
            assert r.responses == 0 and r.errors["connect"] == 2, r.first_error
            assert "signature" in r.first_error.lower(), r.first_error
            assert "decrypt_error" in err  # the alert the client sent: the signature did not verify
        else:
            assert r.responses == 2 and r.error_count == 0, (r.first_error, err)


@needs_openssl_cli
@pytest.mark.parametrize("library", LIBRARIES)
def test_a_certificate_for_another_address_is_refused(server_factory, tmp_path, library):
    """Signed by the trusted CA (self-signed, given as the CA file) but naming another host."""
    cert, key = make_cert(
        tmp_path, "elsewhere", "/CN=elsewhere.example", "DNS:elsewhere.example,IP:10.1.2.3"
    )
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    url = server.url("/plaintext", https=True)
    for target in (url, url.replace("127.0.0.1", "localhost")):
        r = loadbench.run(
            target,
            connections=1,
            requests=2,
            keepalive=False,
            cacert=str(cert),
            tls_library=library,
        )
        assert r.responses == 0 and r.errors["connect"] == 2, target
    insecure = loadbench.run(url, connections=1, requests=3, keepalive=False, tls_library=library)
    assert insecure.responses == 3  # not verifying (the default): the name is not checked


@pytest.mark.parametrize("library", LIBRARIES)
def test_full_handshakes_even_when_the_server_offers_resumption(
    server_factory: Callable[..., ServerProcess], library: str
):
    """The default is a full handshake per connection: a client that kept the server's session
    tickets and resumed by itself would measure a cheaper handshake than the one asked for."""
    server = server_factory(tls=True, http=False)  # session cache and tickets on
    r = loadbench.run(
        server.url("/plaintext", https=True),
        connections=1,
        requests=12,
        keepalive=False,
        tls_library=library,
    )
    assert r.responses == 12 and r.error_count == 0, r.first_error
    assert r.tls_handshakes == 12 and r.tls_resumed == 0


@pytest.mark.parametrize(
    "library",
    [
        "openssl",
        pytest.param(
            "rustls",
            marks=pytest.mark.skipif(
                "rustls" not in _core.tls_libraries(), reason=OPTIONAL["rustls"]
            ),
        ),
    ],
)
def test_resumption_when_asked(server_factory: Callable[..., ServerProcess], library: str):
    server = server_factory(tls=True, http=False)
    r = loadbench.run(
        server.url("/plaintext", https=True),
        connections=1,
        requests=8,
        keepalive=False,
        tls_session_resumption=True,
        tls_library=library,
    )
    assert r.responses == 8 and r.error_count == 0, r.first_error
    assert (
        r.tls_handshakes == 8 and r.tls_resumed == 7
    )  # the first connection has nothing to resume


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_ca_file_without_certificates_is_a_config_error(tmp_path: Path, library: str):
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="CA certificates"):
        loadbench.run("https://127.0.0.1:1/", requests=1, cacert=str(bad), tls_library=library)


def test_unknown_library_and_wolfssl_resumption_are_config_errors():
    with pytest.raises(ConfigError, match="tls_library"):
        loadbench.run("https://127.0.0.1:1/", requests=1, tls_library="gnutls")
    if "wolfssl" in _core.tls_libraries():
        with pytest.raises(ConfigError, match="resumption"):
            loadbench.run(
                "https://127.0.0.1:1/",
                requests=1,
                tls_library="wolfssl",
                tls_session_resumption=True,
            )


@pytest.mark.parametrize("library", OPTIONAL_LIBRARIES)
def test_cli_flag(server_factory: Callable[..., ServerProcess], tmp_path: Path, library: str):
    server = server_factory(tls=True, http=False)
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            server.url("/plaintext", https=True),
            "-n",
            "20",
            "-c",
            "2",
            "--disable-keepalive",
            "--tls-library",
            library,
            "--no-progress",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert f'"tls_library": "{library}"' in out.read_text()


def test_cli_names_what_a_build_without_the_library_lacks(tmp_path: Path):
    missing = [name for name in OPTIONAL if name not in _core.tls_libraries()]
    if not missing:
        pytest.skip("this build has every TLS library")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadbench",
            "run",
            "https://127.0.0.1:1/",
            "-n",
            "1",
            "--tls-library",
            missing[0],
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and f"built without {missing[0]}" in proc.stderr
