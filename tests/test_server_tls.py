"""HTTPS on the Beast server: generated EC P-256 certificate, TLS 1.3 and 1.2, both ports at once."""

from __future__ import annotations

import http.client
import socket
import ssl
import subprocess

import pytest
from server_helpers import read_response

from loadbench.core.certificates import self_signed


def _client_context(maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # self-signed; its content is checked below
    if maximum is not None:
        ctx.maximum_version = maximum
    return ctx


def _handshake(port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def _check_ec_p256_with_openssl(der: bytes) -> None:
    text = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-noout", "-text"],
        input=der,
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert "id-ecPublicKey" in text
    assert "prime256v1" in text or "P-256" in text
    assert "CN = localhost" in text or "CN=localhost" in text


def _check_ec_p256_with_cryptography(der: bytes) -> None:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives.asymmetric import ec

    cert = x509.load_der_x509_certificate(der)
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert key.curve.name == "secp256r1"
    assert cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "localhost"


@pytest.fixture
def tls_server(server_factory):
    return server_factory(tls=True)


def test_http_and_https_served_by_one_process(tls_server):
    assert tls_server.http_port and tls_server.https_port
    assert tls_server.http_port != tls_server.https_port
    plain = http.client.HTTPConnection("127.0.0.1", tls_server.http_port, timeout=5)
    plain.request("GET", "/")
    assert plain.getresponse().read() == b"Hello, World!\n"
    secure = http.client.HTTPSConnection(
        "127.0.0.1", tls_server.https_port, timeout=5, context=_client_context()
    )
    for path, body in (("/", b"Hello, World!\n"), ("/json", b'{"message":"Hello, World!"}')):
        secure.request("GET", path)
        assert secure.getresponse().read() == body
    secure.request("POST", "/echo", body=b"x" * 100_000, headers={"Content-Type": "a/b"})
    resp = secure.getresponse()
    assert resp.getheader("Content-Type") == "a/b" and resp.read() == b"x" * 100_000
    plain.close()
    secure.close()


def test_certificate_is_self_signed_ec_p256_for_localhost(tls_server):
    with _handshake(tls_server.https_port, _client_context()) as sock:
        der = sock.getpeercert(binary_form=True)
    assert der
    _check_ec_p256_with_openssl(der)
    text = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-noout", "-subject", "-issuer"],
        input=der,
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert "CN = localhost" in text or "CN=localhost" in text
    subject, issuer = text.strip().splitlines()
    assert subject.split("=", 1)[1] == issuer.split("=", 1)[1]  # self-signed


def test_certificate_checked_with_cryptography_when_installed(tls_server):
    with _handshake(tls_server.https_port, _client_context()) as sock:
        der = sock.getpeercert(binary_form=True)
    _check_ec_p256_with_cryptography(der)


def test_tls_1_3_is_negotiated(tls_server):
    with _handshake(tls_server.https_port, _client_context()) as sock:
        assert sock.version() == "TLSv1.3"
        sock.sendall(b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert read_response(sock.makefile("rb")).body == b"Hello, World!\n"


def test_tls_1_2_works(tls_server):
    with _handshake(tls_server.https_port, _client_context(ssl.TLSVersion.TLSv1_2)) as sock:
        assert sock.version() == "TLSv1.2"
        sock.sendall(b"GET /json HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert read_response(sock.makefile("rb")).status == 200


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tls_1_1_is_refused(tls_server):
    ctx = _client_context(ssl.TLSVersion.TLSv1_1)
    ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    try:
        ctx.set_ciphers("ALL:@SECLEVEL=0")
    except ssl.SSLError:
        pass
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _handshake(tls_server.https_port, ctx).close()


def test_https_only(server_factory):
    server = server_factory(tls=True, http=False)
    assert server.http_port is None and server.https_port
    conn = http.client.HTTPSConnection(
        "127.0.0.1", server.https_port, timeout=5, context=_client_context()
    )
    conn.request("GET", "/")
    assert conn.getresponse().status == 200
    conn.close()


def test_cert_and_key_files(server_factory, tmp_path):
    cert, key = self_signed(
        tmp_path / "cert.pem",
        tmp_path / "key.pem",
        "/CN=files.example",
        newkey=("-newkey", "rsa:2048"),
    )
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    with _handshake(server.https_port, _client_context()) as sock:
        der = sock.getpeercert(binary_form=True)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock.makefile("rb")).status == 200
    subject = subprocess.run(
        ["openssl", "x509", "-inform", "DER", "-noout", "-subject"],
        input=der,
        capture_output=True,
        check=True,
    ).stdout.decode()
    assert "files.example" in subject


def test_tls_pipelining_and_connection_close(tls_server):
    with _handshake(tls_server.https_port, _client_context()) as sock:
        sock.sendall(
            b"GET /json HTTP/1.1\r\nHost: x\r\n\r\n" * 3
            + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        stream = sock.makefile("rb")
        responses = [read_response(stream) for _ in range(4)]
        assert [r.status for r in responses] == [200] * 4
        assert responses[3].header("connection") == "close"


def test_garbage_instead_of_a_handshake_does_not_hurt_the_server(tls_server):
    with socket.create_connection(("127.0.0.1", tls_server.https_port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
        sock.settimeout(3)
        try:
            sock.recv(100)
        except ConnectionResetError:
            pass
    conn = http.client.HTTPSConnection(
        "127.0.0.1", tls_server.https_port, timeout=5, context=_client_context()
    )
    conn.request("GET", "/")
    assert conn.getresponse().status == 200
    conn.close()


def test_no_tls_resumption_sends_no_ticket_and_resumes_nothing(server_factory):
    """--no-tls-resumption (the setting the nginx peer is measured with): no session ticket,
    so a client that asks to resume gets a full handshake every time."""
    import loadbench

    default = server_factory(tls=True, http=False)
    resumed = loadbench.run(
        default.url("/", https=True),
        connections=1,
        requests=5,
        keepalive=False,
        tls_session_resumption=True,
    )
    assert (
        resumed.responses == 5 and resumed.tls_resumed == 4
    )  # the server's default offers resumption
    server = server_factory(tls=True, http=False, extra_args=["--no-tls-resumption"])
    result = loadbench.run(
        server.url("/", https=True),
        connections=1,
        requests=5,
        keepalive=False,
        tls_session_resumption=True,
    )
    assert result.responses == 5 and result.error_count == 0
    assert result.tls_handshakes == 5 and result.tls_resumed == 0
