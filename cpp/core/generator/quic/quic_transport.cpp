// The QUIC connection of QuicTransport: the GnuTLS session, the ngtcp2 client connection, packets
// in and out, the expiry timer, CONNECTION_CLOSE, and ngtcp2's callbacks - those about streams
// handed to the application on them (QuicStreams). Session tickets and 0-RTT: quic_resumption.cpp.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include "core/generator/quic/quic_transport.hpp"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <cstdio>
#include <cstring>

#include "core/generator/base/plan.hpp"
#include "core/generator/quic/quic_callbacks.hpp"
#include "core/http/quic_tls.hpp"

namespace loadbench::generator {

namespace {

constexpr size_t kDatagramCapacity = 1500;  // ngtcp2 writes at most max_tx_udp_payload_size (1452 on IPv4)
// Flow-control windows the server may fill without waiting for us (data is consumed as it
// arrives, so they only need to cover the bandwidth-delay product; ngtcp2 grows them to max_*).
constexpr uint64_t kStreamWindow = 4u << 20;
constexpr uint64_t kConnectionWindow = 16u << 20;

}  // namespace

QuicTransport::QuicTransport(const QuicOptions& options) : options_(options) {}

QuicTransport::~QuicTransport() {
    teardown();
    if (credentials_) gnutls_certificate_free_credentials(credentials_);
}

void QuicTransport::reset() noexcept {
    teardown();
    failed_ = false;
    closed_by_peer_ = false;
    handshake_done_ = false;
    resumed_ = false;
    sending_early_ = false;
    counted_at_handshake_ = false;
    early_data_ = EarlyData::NotAttempted;
    packet_len_ = 0;
    error_.clear();
}

std::string_view QuicTransport::output() noexcept {
    if (packet_len_ == 0) produce();
    return {reinterpret_cast<const char*>(packet_.data()), packet_len_};
}

void QuicTransport::wrote(int64_t now) noexcept {
    if (packet_len_ == 0) return;
    packet_len_ = 0;  // a datagram goes whole or not at all
    streams_->on_datagram_sent(now);
}

bool QuicTransport::handshake_completed() noexcept {
    gnutls_datum_t alpn{};
    if (gnutls_alpn_get_selected_protocol(tls_, &alpn) != 0 || alpn.size != 2 || std::memcmp(alpn.data, "h3", 2) != 0)
        return fail("ALPN: the server did not select h3; --h3 needs a server that speaks HTTP/3");
    handshake_done_ = true;
    counted_at_handshake_ = streams_->carries_counted();
    resumed_ = gnutls_session_is_resumed(tls_) != 0;
    return settle_early_data() && streams_->on_established();
}

bool QuicTransport::fail(const std::string& why) noexcept {
    failed_ = true;
    if (error_.empty()) error_ = why;
    return false;
}

bool QuicTransport::setup_tls() noexcept {
    if (!credentials_) {
        if (gnutls_certificate_allocate_credentials(&credentials_) != 0)
            return fail("QUIC: cannot allocate TLS credentials (out of memory)");
        if (options_.verify) {
            const int n = options_.cacert.empty() ? gnutls_certificate_set_x509_system_trust(credentials_)
                                                  : gnutls_certificate_set_x509_trust_file(
                                                        credentials_, options_.cacert.c_str(), GNUTLS_X509_FMT_PEM);
            if (n <= 0)
                return fail("TLS: no CA certificate could be loaded from " +
                            (options_.cacert.empty() ? std::string("the system trust store") : options_.cacert));
        }
    }
    const unsigned int flags = GNUTLS_CLIENT | (options_.early_data ? http::kQuicEarlyDataFlags : 0u);
    if (gnutls_init(&tls_, flags) != 0) return fail("QUIC: cannot create a TLS session");
    if (ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
        gnutls_priority_set_direct(tls_, http::kQuicTlsPriority, nullptr) != 0 ||
        gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, credentials_) != 0)
        return fail("QUIC: cannot configure the TLS session");
    gnutls_session_set_ptr(tls_, &conn_ref_);
    http::offer_h3_alpn_only(tls_);  // the run's protocol is never negotiated down
    if (options_.resume)
        gnutls_handshake_set_hook_function(tls_, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST,
                                           &QuicCallbacks::tls_message);
    const std::string& name = options_.server_name;
    if (!options_.server_name_is_ip) gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, name.data(), name.size());
    if (options_.verify) gnutls_session_set_verify_cert(tls_, name.c_str(), 0);
    return true;
}

bool QuicTransport::start(const sockaddr* local, socklen_t local_len, const sockaddr* remote, socklen_t remote_len,
                          int64_t now) noexcept {
    now_ = now;
    ngtcp2_path_storage_init(&path_, local, local_len, remote, remote_len, nullptr);
    ngtcp2_cid dcid{}, scid{};
    dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN + 2;
    scid.datalen = 16;
    gnutls_rnd(GNUTLS_RND_NONCE, dcid.data, dcid.datalen);
    gnutls_rnd(GNUTLS_RND_NONCE, scid.data, scid.datalen);

    ngtcp2_callbacks cb{};
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb.encrypt = ngtcp2_crypto_encrypt_cb;
    cb.decrypt = ngtcp2_crypto_decrypt_cb;
    cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
    cb.update_key = ngtcp2_crypto_update_key_cb;
    cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    cb.rand = &QuicCallbacks::rand;
    cb.get_new_connection_id = &QuicCallbacks::get_new_connection_id;
    cb.handshake_completed = &QuicCallbacks::handshake_completed;
    cb.recv_stream_data = &QuicCallbacks::recv_stream_data;
    cb.acked_stream_data_offset = &QuicCallbacks::acked_stream_data_offset;
    cb.stream_close = &QuicCallbacks::stream_close;
    cb.stream_reset = &QuicCallbacks::stream_reset;
    cb.stream_stop_sending = &QuicCallbacks::stream_stop_sending;
    cb.extend_max_stream_data = &QuicCallbacks::extend_max_stream_data;
    cb.extend_max_local_streams_bidi = &QuicCallbacks::extend_max_local_streams_bidi;

    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = static_cast<ngtcp2_tstamp>(now);
    if (options_.handshake_timeout_ns > 0)
        settings.handshake_timeout = static_cast<ngtcp2_duration>(options_.handshake_timeout_ns);
    settings.max_window = 4 * kConnectionWindow;
    settings.max_stream_window = 4 * kStreamWindow;
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_streams_uni = 3;   // the server's control and QPACK streams
    params.initial_max_streams_bidi = 0;  // a server opens none
    params.initial_max_stream_data_bidi_local = kStreamWindow;
    params.initial_max_stream_data_uni = kStreamWindow;
    params.initial_max_data = kConnectionWindow;
    params.max_idle_timeout = 30 * NGTCP2_SECONDS;

    const int rv = ngtcp2_conn_client_new(&quic_, &dcid, &scid, &path_.path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                                          &params, nullptr, this);
    if (rv != 0) {
        quic_ = nullptr;
        return fail(std::string("QUIC: cannot create a connection: ") + ngtcp2_strerror(rv));
    }
    conn_ref_.get_conn = &QuicCallbacks::get_conn;
    conn_ref_.user_data = this;
    if (!setup_tls()) return false;
    ngtcp2_conn_set_tls_native_handle(quic_, tls_);
    // Before the first packet: the ClientHello (written then) offers the ticket.
    if (options_.resume && !ticket_.empty()) return resume_from_ticket();
    return true;
}

void QuicTransport::teardown() noexcept {
    if (quic_) ngtcp2_conn_del(quic_);
    quic_ = nullptr;
    if (tls_) gnutls_deinit(tls_);
    tls_ = nullptr;
}

void QuicTransport::produce() noexcept {
    packet_len_ = 0;
    if (!quic_ || failed_ || closed_by_peer_ || ngtcp2_conn_is_in_closing_period(quic_) ||
        ngtcp2_conn_is_in_draining_period(quic_))
        return;
    if (packet_.size() < kDatagramCapacity) packet_.resize(kDatagramCapacity);
    const auto ts = static_cast<ngtcp2_tstamp>(monotonic_ns());
    ngtcp2_pkt_info pi{};
    while (true) {
        int64_t stream_id = -1;
        bool fin = false;
        ngtcp2_vec vec[16];
        int64_t count = 0;
        if (ngtcp2_conn_get_max_data_left(quic_) > 0) {
            count = streams_->next_stream_data(stream_id, fin, vec, 16);
            if (count < 0) return;  // the application failed (its reason is error())
        }
        ngtcp2_ssize written = -1;  // stream bytes that went into the packet (-1: none)
        // the stream's FIN goes with its data when all of it fits in the packet
        size_t offered = 0;
        for (int64_t i = 0; i < count; ++i) offered += vec[i].len;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        const ngtcp2_ssize n = ngtcp2_conn_writev_stream(quic_, nullptr, &pi, packet_.data(), packet_.size(), &written,
                                                         flags, stream_id, vec, static_cast<size_t>(count), ts);
        if (n < 0) {
            switch (n) {
                case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                    streams_->on_stream_blocked(stream_id);
                    continue;
                case NGTCP2_ERR_STREAM_SHUT_WR:
                    streams_->on_stream_shut_write(stream_id);
                    continue;
                case NGTCP2_ERR_WRITE_MORE:  // room left in the packet: the next stream's data joins it
                    streams_->on_stream_data_packed(stream_id, static_cast<size_t>(written),
                                                    fin && static_cast<size_t>(written) == offered);
                    continue;
                default:
                    fail(std::string("QUIC: cannot write a packet: ") + ngtcp2_strerror(static_cast<int>(n)));
                    return;
            }
        }
        if (written >= 0 && stream_id >= 0)
            streams_->on_stream_data_packed(stream_id, static_cast<size_t>(written),
                                            fin && static_cast<size_t>(written) == offered);
        // Paced once the handshake is done, not before: until its first RTT sample ngtcp2 0.12
        // paces on RFC 9002's initial 333 ms guess, which held the handshake's second flight (the
        // Finished, and the requests with it) back ~27 ms per connection on loopback - and with
        // 0-RTT past the response, so the connection closed with its Finished unsent.
        if (handshake_done_) ngtcp2_conn_update_pkt_tx_time(quic_, ts);
        packet_len_ = static_cast<size_t>(n);  // 0: nothing to send now
        return;
    }
}

InputResult QuicTransport::input(const char* data, size_t n, int64_t now) noexcept {
    if (!quic_) {
        fail("QUIC: a datagram with no connection");
        return InputResult::Error;
    }
    now_ = now;
    ngtcp2_pkt_info pi{};
    const int rv = ngtcp2_conn_read_pkt(quic_, &path_.path, &pi, reinterpret_cast<const uint8_t*>(data), n,
                                        static_cast<ngtcp2_tstamp>(now));
    if (rv == 0) return InputResult::Ok;
    if (rv == NGTCP2_ERR_DRAINING) {  // the server's CONNECTION_CLOSE
        closed_by_peer_ = true;
        read_close_reason();
        return streams_->in_flight() > 0 || !handshake_done_ ? InputResult::Error : InputResult::Ok;
    }
    if (rv == NGTCP2_ERR_CRYPTO) {
        const uint8_t alert = ngtcp2_conn_get_tls_alert(quic_);
        const char* name = gnutls_alert_get_name(static_cast<gnutls_alert_description_t>(alert));
        fail(std::string("QUIC handshake: TLS alert ") + (name ? name : std::to_string(alert)));
    } else {
        fail(std::string("QUIC: ") + ngtcp2_strerror(rv));
    }
    return InputResult::Error;
}

void QuicTransport::read_close_reason() noexcept {
    ngtcp2_connection_close_error ccerr{};
    ngtcp2_conn_get_connection_close_error(quic_, &ccerr);
    std::string what;
    const bool transport = ccerr.type != NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION;
    // CRYPTO_ERROR (0x100 + alert, RFC 9001 4.8): the TLS handshake failed with that alert.
    const bool alert = transport && ccerr.error_code >= 0x100 && ccerr.error_code <= 0x1ff;
    if (alert) {
        const auto description = static_cast<gnutls_alert_description_t>(ccerr.error_code - 0x100);
        const char* name = gnutls_alert_get_name(description);
        what = "TLS alert " + (name ? std::string(name) : std::to_string(ccerr.error_code - 0x100));
    } else {
        char code[32];
        std::snprintf(code, sizeof code, "0x%llx", static_cast<unsigned long long>(ccerr.error_code));
        what = std::string(transport ? "transport" : "application") + " error " + code;
    }
    if (ccerr.reasonlen > 0) what += ": " + std::string(reinterpret_cast<const char*>(ccerr.reason), ccerr.reasonlen);
    std::string why =
        std::string(handshake_done_ ? "QUIC" : "QUIC handshake") + ": the server closed the connection (" + what + ")";
    if (alert && ccerr.error_code - 0x100 == GNUTLS_A_NO_APPLICATION_PROTOCOL)
        why += "; --h3 offers ALPN h3 only, and this server does not speak HTTP/3";
    if (error_.empty()) error_ = why;
}

int64_t QuicTransport::expiry_ns() const noexcept {
    if (!quic_ || failed_ || closed_by_peer_) return INT64_MAX;
    const ngtcp2_tstamp at = ngtcp2_conn_get_expiry(quic_);
    return at >= static_cast<ngtcp2_tstamp>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(at);
}

InputResult QuicTransport::on_expiry(int64_t now) noexcept {
    if (!quic_ || failed_ || closed_by_peer_) return InputResult::Ok;
    now_ = now;
    const int rv = ngtcp2_conn_handle_expiry(quic_, static_cast<ngtcp2_tstamp>(now));
    if (rv == 0) return InputResult::Ok;
    if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT || !handshake_done_)
        fail("QUIC handshake: no answer from the server within " +
             (options_.handshake_timeout_ns > 0 ? std::to_string(options_.handshake_timeout_ns / 1'000'000) + " ms"
                                                : std::string("ngtcp2's handshake timeout")) +
             " (is an HTTP/3 server listening on that UDP port?)");
    else if (rv == NGTCP2_ERR_IDLE_CLOSE)
        fail("QUIC: idle timeout (the server sent nothing for 30 s)");
    else
        fail(std::string("QUIC: ") + ngtcp2_strerror(rv));
    return InputResult::Error;
}

std::string_view QuicTransport::farewell(int64_t now) noexcept {
    if (!quic_ || !handshake_done_ || closed_by_peer_ || ngtcp2_conn_is_in_closing_period(quic_) ||
        ngtcp2_conn_is_in_draining_period(quic_))
        return {};
    if (packet_.size() < kDatagramCapacity) packet_.resize(kDatagramCapacity);
    ngtcp2_connection_close_error ccerr{};
    ngtcp2_connection_close_error_set_application_error(&ccerr, options_.no_error_code, nullptr, 0);
    ngtcp2_pkt_info pi{};
    const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(quic_, nullptr, &pi, packet_.data(), packet_.size(),
                                                              &ccerr, static_cast<ngtcp2_tstamp>(now));
    packet_len_ = 0;
    if (n <= 0) return {};
    return {reinterpret_cast<const char*>(packet_.data()), static_cast<size_t>(n)};
}

// --- ngtcp2's callbacks ---------------------------------------------------------------------------
void QuicCallbacks::rand(uint8_t* dest, size_t destlen, const ngtcp2_rand_ctx*) {
    gnutls_rnd(GNUTLS_RND_NONCE, dest, destlen);
}

int QuicCallbacks::get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
    if (gnutls_rnd(GNUTLS_RND_NONCE, cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int QuicCallbacks::handshake_completed(ngtcp2_conn*, void* user) {
    return static_cast<QuicTransport*>(user)->handshake_completed() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::recv_stream_data(ngtcp2_conn* conn, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data,
                                    size_t datalen, void* user, void*) {
    auto* self = static_cast<QuicTransport*>(user);
    const int64_t consumed =
        self->streams_->on_stream_data(stream_id, data, datalen, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
    if (consumed < 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    // What the application consumed itself (its framing); what it hands on is counted as it goes.
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, static_cast<uint64_t>(consumed));
    ngtcp2_conn_extend_max_offset(conn, static_cast<uint64_t>(consumed));
    return 0;
}

int QuicCallbacks::acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t datalen, void* user,
                                            void*) {
    return static_cast<QuicTransport*>(user)->streams_->on_stream_acked(stream_id, datalen)
               ? 0
               : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user,
                                void*) {
    auto* self = static_cast<QuicTransport*>(user);
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = self->options_.no_error_code;
    return self->streams_->on_stream_close(stream_id, app_error_code) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user, void*) {
    return static_cast<QuicTransport*>(user)->streams_->on_stream_reset(stream_id) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    return static_cast<QuicTransport*>(user)->streams_->on_stream_reset(stream_id) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    return static_cast<QuicTransport*>(user)->streams_->on_stream_unblocked(stream_id) ? 0
                                                                                       : NGTCP2_ERR_CALLBACK_FAILURE;
}

int QuicCallbacks::extend_max_local_streams_bidi(ngtcp2_conn*, uint64_t, void* user) {
    static_cast<QuicTransport*>(user)->streams_->on_more_streams();  // requests waiting for MAX_STREAMS
    return 0;
}

ngtcp2_conn* QuicCallbacks::get_conn(ngtcp2_crypto_conn_ref* ref) {
    return static_cast<QuicTransport*>(ref->user_data)->quic_;
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
