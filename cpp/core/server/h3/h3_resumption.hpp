#pragma once
// QUIC session resumption and 0-RTT for the server's HTTP/3: one session ticket key per server
// process (so a ticket from any worker resumes on any worker), and - when asked for
// (--h3-0rtt) - early data accepted under GnuTLS's anti-replay: each ClientHello that carries
// early data is accepted once within the anti-replay window (RFC 8446 8.2), a replay of it is
// answered with a full 1-RTT handshake. Shared by the workers (the ClientHello record is the
// one thing written, under its lock). Only included where the build has HTTP/3.
#include <gnutls/gnutls.h>

#include <memory>

namespace loadbench::server {

class Http3Resumption {
public:
    // Throws std::runtime_error (GnuTLS's reason) when the ticket key or the anti-replay context
    // cannot be made.
    explicit Http3Resumption(bool early_data);
    ~Http3Resumption();
    Http3Resumption(const Http3Resumption&) = delete;
    Http3Resumption& operator=(const Http3Resumption&) = delete;

    bool early_data() const { return anti_replay_ != nullptr; }
    // What gnutls_init must be given for this server's sessions (beside GNUTLS_SERVER).
    unsigned int session_flags() const;
    // After gnutls_init: tickets (and 0-RTT) on this session. False: GnuTLS refused.
    bool configure(gnutls_session_t session) const;

private:
    struct SeenClientHellos;
    gnutls_datum_t ticket_key_{};
    gnutls_anti_replay_t anti_replay_ = nullptr;
    std::unique_ptr<SeenClientHellos> seen_;
};

}  // namespace loadbench::server
