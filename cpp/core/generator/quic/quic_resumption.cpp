// QuicTransport's session resumption and 0-RTT (QuicOptions::resume, ::early_data): the newest
// session ticket is kept with the server's transport parameters, offered by the next
// connection, and - with early data - that connection's first stream data leaves in 0-RTT
// packets beside its Initial. The server may refuse the early data (settle_early_data): the
// application then sends it again in 1-RTT, as ngtcp2's own client example does.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include <string>

#include "core/generator/quic/quic_callbacks.hpp"
#include "core/generator/quic/quic_transport.hpp"

namespace loadbench::generator {

int QuicCallbacks::tls_message(gnutls_session_t tls, unsigned int type, unsigned int, unsigned int incoming,
                               const gnutls_datum_t*) {
    if (type != GNUTLS_HANDSHAKE_NEW_SESSION_TICKET || !incoming) return 0;
    auto* ref = static_cast<ngtcp2_crypto_conn_ref*>(gnutls_session_get_ptr(tls));
    static_cast<QuicTransport*>(ref->user_data)->keep_ticket();
    return 0;
}

void QuicTransport::keep_ticket() noexcept {
    gnutls_datum_t data{};
    // The session as GnuTLS would resume it, with the ticket that just arrived.
    if (gnutls_session_get_data2(tls_, &data) != 0) return;
    ticket_.assign(data.data, data.data + data.size);
    gnutls_free(data.data);
    // 0-RTT must stay within the limits the server set last time (RFC 9000 7.4.1). Only the
    // plain numbers are kept: ngtcp2 copies no more than those (and the pointers would dangle).
    if (const ngtcp2_transport_params* p = ngtcp2_conn_get_remote_transport_params(quic_)) {
        ticket_params_ = *p;
        ticket_params_.version_info_present = 0;
        ticket_params_.version_info = {};
    }
}

bool QuicTransport::resume_from_ticket() noexcept {
    if (gnutls_session_set_data(tls_, ticket_.data(), ticket_.size()) != 0) {
        ticket_.clear();  // unusable (GnuTLS refused it): a full handshake, and a new ticket from it
        return true;
    }
    if (!options_.early_data) return true;
    ngtcp2_conn_set_early_remote_transport_params(quic_, &ticket_params_);
    // The application's first stream data (HTTP/3: its control and QPACK streams, and the
    // requests already submitted) goes out in 0-RTT.
    sending_early_ = true;
    return streams_->on_early_start() && !failed_;
}

bool QuicTransport::settle_early_data() noexcept {
    if (!sending_early_) return true;
    sending_early_ = false;
    if (gnutls_session_get_flags(tls_) & GNUTLS_SFLAGS_EARLY_DATA) {
        early_data_ = EarlyData::Accepted;
        return true;
    }
    early_data_ = EarlyData::Rejected;
    // Everything sent in 0-RTT is void: the application's state first (so closing the QUIC
    // streams reports nothing to it), then ngtcp2's streams and stream ids.
    streams_->on_early_data_rejected();
    const int rv = ngtcp2_conn_early_data_rejected(quic_);
    if (rv != 0) return fail(std::string("QUIC: cannot drop the rejected 0-RTT data: ") + ngtcp2_strerror(rv));
    return true;
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
