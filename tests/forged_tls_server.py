"""A TLS 1.3 server that presents one certificate and signs its handshake (CertificateVerify)
with another key: what a server without the certificate's private key would do. Built on
tlslite-ng (pure Python), whose server does not check that the two belong together, as
OpenSSL-based servers do. Prints its port, then answers each connection it can complete.

    python tests/forged_tls_server.py CERT.pem SIGNING.key
"""

import socket
import sys
import threading

from tlslite.api import HandshakeSettings, TLSConnection, X509CertChain, parsePEMKey


def main() -> None:
    chain = X509CertChain()
    with open(sys.argv[1]) as f:
        chain.parsePemList(f.read())
    with open(sys.argv[2]) as f:
        key = parsePEMKey(f.read(), private=True, implementations=["python"])
    settings = HandshakeSettings()
    settings.minVersion = settings.maxVersion = (3, 4)  # TLS 1.3: the CertificateVerify signature
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print(listener.getsockname()[1], flush=True)

    def serve(sock: socket.socket) -> None:
        try:
            conn = TLSConnection(sock)
            conn.handshakeServer(certChain=chain, privateKey=key, settings=settings)
            conn.read()
            conn.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
            conn.close()
        except Exception as exc:  # the client refusing the handshake ends up here
            print(f"forged_tls_server: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            sock.close()

    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
