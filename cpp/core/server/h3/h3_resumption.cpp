// Session tickets and 0-RTT for the server's HTTP/3 (h3_resumption.hpp). The ticket and
// anti-replay set-up follows ngtcp2's GnuTLS server example (0.12 era); unlike that example the
// anti-replay record is real: a ClientHello's early data is accepted once.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, its GnuTLS crypto and nghttp3
#include "core/server/h3/h3_resumption.hpp"

#include <ctime>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/http/quic_tls.hpp"

namespace loadbench::server {

// The ClientHellos whose early data was accepted, each until its anti-replay window ended
// (GnuTLS gives the expiry; keys already carry the window's start, so nothing is confused
// across windows).
struct Http3Resumption::SeenClientHellos {
    std::mutex lock;
    std::map<std::string, std::time_t> until;

    // GnuTLS's gnutls_db_add_func: 0 when first seen, GNUTLS_E_DB_ENTRY_EXISTS for a replay.
    static int add(void* self, std::time_t expires, const gnutls_datum_t* key, const gnutls_datum_t*) {
        auto& seen = *static_cast<SeenClientHellos*>(self);
        const std::time_t now = std::time(nullptr);
        std::lock_guard<std::mutex> guard(seen.lock);
        // Forget the expired ones first: the record stays as small as one window's handshakes.
        for (auto it = seen.until.begin(); it != seen.until.end();)
            it = it->second < now ? seen.until.erase(it) : std::next(it);
        const bool first =
            seen.until.emplace(std::string(reinterpret_cast<const char*>(key->data), key->size), expires).second;
        return first ? 0 : GNUTLS_E_DB_ENTRY_EXISTS;
    }
};

Http3Resumption::Http3Resumption(bool early_data) {
    if (const int rv = gnutls_session_ticket_key_generate(&ticket_key_); rv != 0)
        throw std::runtime_error(std::string("HTTP/3 (GnuTLS): cannot make a session ticket key: ") +
                                 gnutls_strerror(rv));
    if (!early_data) return;
    seen_ = std::make_unique<SeenClientHellos>();
    if (const int rv = gnutls_anti_replay_init(&anti_replay_); rv != 0) {
        anti_replay_ = nullptr;
        gnutls_free(ticket_key_.data);
        throw std::runtime_error(std::string("HTTP/3 (GnuTLS): cannot set up 0-RTT anti-replay: ") +
                                 gnutls_strerror(rv));
    }
    gnutls_anti_replay_set_add_function(anti_replay_, &SeenClientHellos::add);
    gnutls_anti_replay_set_ptr(anti_replay_, seen_.get());
}

Http3Resumption::~Http3Resumption() {
    if (anti_replay_) gnutls_anti_replay_deinit(anti_replay_);
    gnutls_free(ticket_key_.data);
}

unsigned int Http3Resumption::session_flags() const {
    // The ticket goes out when the handshake completes (Http3Session), as in ngtcp2's example:
    // GnuTLS's own moment to send it is not QUIC's.
    return GNUTLS_NO_AUTO_SEND_TICKET | (early_data() ? http::kQuicEarlyDataFlags : 0u);
}

bool Http3Resumption::configure(gnutls_session_t session) const {
    if (gnutls_session_ticket_enable_server(session, &ticket_key_) != 0) return false;
    if (!early_data()) return true;
    gnutls_anti_replay_enable(session, anti_replay_);
    // QUIC's tickets must say 0xffffffff: the limit is QUIC's flow control, not TLS's (RFC 9001 4.6.1).
    return gnutls_record_set_max_early_data_size(session, 0xffffffffu) == 0;
}

}  // namespace loadbench::server

#endif  // LOADBENCH_HAVE_HTTP3
