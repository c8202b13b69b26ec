#pragma once
// The GnuTLS settings every QUIC connection of loadbench uses, the generator's
// (core/generator/quic/quic_transport.cpp) and the server's (core/server/h3/h3_session.cpp) alike: header-only, as
// the two live in libraries that share no compiled part; included only where the build found
// ngtcp2's GnuTLS crypto library (LOADBENCH_HAVE_HTTP3).
#include <gnutls/gnutls.h>

namespace loadbench::http {

// QUIC is TLS 1.3 only; the middlebox compatibility mode is forbidden (RFC 9001 8.4). The
// ciphers and groups ngtcp2's own GnuTLS examples use.
inline constexpr const char* kQuicTlsPriority =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:"
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE";

// ALPN h3 only, mandatory: a peer that offers (client) or selects (server) anything else fails
// the handshake - the protocol is never negotiated down.
inline void offer_h3_alpn_only(gnutls_session_t session) {
    gnutls_datum_t h3{reinterpret_cast<unsigned char*>(const_cast<char*>("h3")), 2};
    gnutls_alpn_set_protocols(session, &h3, 1, GNUTLS_ALPN_MANDATORY);
}

// gnutls_init flags for 0-RTT over QUIC: early data on, and no EndOfEarlyData message (QUIC
// ends 0-RTT with the Handshake keys instead, RFC 9001 8.3).
inline constexpr unsigned int kQuicEarlyDataFlags = GNUTLS_ENABLE_EARLY_DATA | GNUTLS_NO_END_OF_EARLY_DATA;

}  // namespace loadbench::http
