"""The generator against the native Beast server: its own counters must agree exactly."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

import loadbench
from loadbench import ServerProcess
from loadbench.core.certificates import self_signed


def test_request_count_equals_the_servers_own_counter(beast_server: ServerProcess):
    r = loadbench.run(
        beast_server.url("/plaintext"), connections=10, threads=2, requests=5000, prime=False
    )
    stopped = beast_server.stop()
    assert r.responses == 5000 == stopped["requests"]["plaintext"] == stopped["requests_total"]
    assert r.status_codes == {200: 5000}
    assert r.connections_opened == 10 == stopped["connections_accepted"]
    assert r.error_count == 0


def test_latency_of_the_20ms_delay_route(beast_server: ServerProcess):
    r = loadbench.run(beast_server.url("/delay?ms=20"), connections=4, duration=1.0)
    assert r.error_count == 0 and r.responses >= 40
    assert r.latency.min >= 20_000
    # Issue 3's accuracy contract: the generator adds at most 3 ms to a 20 ms wait at the median.
    assert 20_000 <= r.percentile(50) <= 23_000
    # Closed loop: 4 connections' latencies add up to at most 4 windows (see test_generator).
    assert r.latency.mean * r.responses <= 4 * (r.duration_s * 1e6 + r.latency.max)


def test_https_keepalive(server_factory: Callable[..., ServerProcess]):
    server = server_factory(tls=True, http=False)
    r = loadbench.run(server.url("/plaintext", https=True), connections=4, requests=1000)
    stopped = server.stop()
    assert r.responses == 1000 == stopped["requests"]["plaintext"]
    assert r.tls_handshakes == 4 == r.connections_opened
    assert r.bytes_read >= 1000 * len(b"Hello, World!\n")
    assert r.error_count == 0


def test_https_handshake_per_request(server_factory: Callable[..., ServerProcess]):
    server = server_factory(tls=True, http=False)
    r = loadbench.run(
        server.url("/plaintext", https=True),
        connections=2,
        requests=60,
        keepalive=False,
        prime=False,  # the server counts the run's own connections only
    )
    stopped = server.stop()
    assert r.responses == 60 == stopped["requests"]["plaintext"]
    assert r.tls_handshakes == 60 == r.connections_opened == stopped["connections_accepted"]
    assert r.tls_handshakes_per_s > 0


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make a certificate"
)
def test_certificate_verification(server_factory: Callable[..., ServerProcess], tmp_path: Path):
    cert, key = self_signed(
        tmp_path / "cert.pem",
        tmp_path / "key.pem",
        "/CN=127.0.0.1",
        ["subjectAltName=IP:127.0.0.1"],
    )
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    url = server.url("/plaintext", https=True)
    checked = loadbench.run(url, connections=1, requests=20, cacert=cert)
    assert checked.responses == 20 and checked.error_count == 0
    refused = loadbench.run(
        url, connections=1, requests=3, verify=True
    )  # system CAs do not know it
    assert refused.responses == 0 and refused.errors["connect"] == 3
    assert "certificate" in refused.first_error
    insecure = loadbench.run(url, connections=1, requests=5)  # the default: no checks
    assert insecure.responses == 5


def test_ipv6_literal_and_host_name_targets(server_factory: Callable[..., ServerProcess]):
    import socket

    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    v6 = server_factory(host="::1")
    r = loadbench.run(v6.url("/plaintext?x=1"), connections=2, requests=50)
    assert v6.url("/").startswith("http://[::1]:")
    assert r.responses == 50 and r.status_codes == {200: 50}
    v4 = server_factory()
    named = loadbench.run(f"http://localhost:{v4.http_port}/plaintext", connections=1, requests=10)
    assert named.responses == 10


@pytest.mark.parametrize(
    "key_type",
    [
        ["-newkey", "rsa:2048"],
        ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"],
        ["-newkey", "ed25519"],
    ],
)
def test_full_handshakes_with_rsa_ec_and_ed25519_certificates_verified_or_not(
    server_factory, tmp_path, key_type
):
    """The generator's TLS clients run in a library context that offers OpenSSL's default provider
    with only the SubjectPublicKeyInfo decoders (cheaper certificate parsing): every common key
    type still decodes, verifies against its CA file, and a wrong CA is still refused."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl CLI")
    cert, key = self_signed(
        tmp_path / "cert.pem",
        tmp_path / "key.pem",
        extensions=["subjectAltName=IP:127.0.0.1"],
        newkey=key_type,
    )
    server = server_factory(tls=True, http=False, cert=str(cert), key=str(key))
    url = server.url("/", https=True)
    for cacert in (None, str(cert)):
        r = loadbench.run(url, connections=2, requests=10, keepalive=False, cacert=cacert)
        assert r.responses == 10 and r.error_count == 0 and r.tls_handshakes == 10, r.first_error
    other, _ = self_signed(tmp_path / "other.pem", tmp_path / "other.key", "/CN=other")
    refused = loadbench.run(url, connections=1, requests=2, keepalive=False, cacert=str(other))
    assert refused.responses == 0 and refused.errors["connect"] == 2
    assert "certificate" in refused.first_error
