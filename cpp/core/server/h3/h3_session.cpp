#include "core/server/h3/h3_session.hpp"

#include <chrono>
#include <stdexcept>

#ifndef LOADBENCH_HAVE_HTTP3  // the build did not find ngtcp2, its GnuTLS crypto or nghttp3

namespace loadbench::server {

bool http3_available() { return false; }
std::string_view http3_missing_reason() {
    return "this loadbench-server was built without HTTP/3: ngtcp2 (with its GnuTLS crypto) and nghttp3 were not "
           "found (apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev, then "
           "rebuild)";
}
std::uint64_t quic_now() {
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
bool read_datagram_header(const std::uint8_t*, std::size_t, DatagramHeader&) { return false; }
struct Http3Session::Impl {};
Http3Session::Http3Session(HandlerContext&, Http3Credentials&, ConnectionIdRouter&, const std::uint8_t*, std::size_t,
                           const sockaddr*, socklen_t, const sockaddr*, socklen_t, std::uint64_t) {}
Http3Session::~Http3Session() = default;
bool Http3Session::ok() const { return false; }
void Http3Session::receive(const std::uint8_t*, std::size_t, const sockaddr*, socklen_t, const sockaddr*, socklen_t,
                           std::uint64_t) {}
void Http3Session::flush(DatagramSink&, std::uint64_t) {}
std::uint64_t Http3Session::next_wakeup() const { return never; }
void Http3Session::on_timer(std::uint64_t) {}
void Http3Session::begin_shutdown(std::uint64_t) {}
bool Http3Session::finished() const { return true; }
Http3Credentials::Http3Credentials(const std::string&, const std::string&) {
    throw std::runtime_error(std::string(http3_missing_reason()));
}
Http3Credentials::Http3Credentials(std::string_view, std::string_view, int) {
    throw std::runtime_error(std::string(http3_missing_reason()));
}
Http3Credentials::~Http3Credentials() = default;
void Http3Credentials::enable_resumption(bool) {}

}  // namespace loadbench::server

#else

#include "core/http/quic_tls.hpp"
#include "core/server/h3/h3_application.hpp"
#include "core/server/h3/h3_resumption.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

namespace loadbench::server {

bool http3_available() { return true; }
std::string_view http3_missing_reason() { return {}; }

std::uint64_t quic_now() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

namespace {

// Our connection ids: long enough to be unguessable, and the length every short header carries.
constexpr std::size_t server_id_length = 18;
constexpr std::size_t datagram_capacity = 1500;  // ngtcp2 writes at most max_tx_udp_payload_size
// What the client may send ahead on a stream and on the connection; the body is consumed as it
// arrives, so these only pace it (ngtcp2 grows them to max_stream_window / max_window).
constexpr std::uint64_t stream_window = 256 * 1024;
constexpr std::uint64_t connection_window = 1024 * 1024;

std::string_view id_bytes(const ngtcp2_cid& cid) { return {reinterpret_cast<const char*>(cid.data), cid.datalen}; }

}  // namespace

bool read_datagram_header(const std::uint8_t* data, std::size_t size, DatagramHeader& header) {
    ngtcp2_version_cid vc{};
    if (ngtcp2_pkt_decode_version_cid(&vc, data, size, server_id_length) != 0) return false;
    header.destination_id = {reinterpret_cast<const char*>(vc.dcid), vc.dcidlen};
    ngtcp2_pkt_hd hd{};
    header.initial = vc.version != 0 && ngtcp2_accept(&hd, data, size) == 0;
    return true;
}

// --- credentials ---------------------------------------------------------------------------------

Http3Credentials::Http3Credentials(const std::string& cert_file, const std::string& key_file) {
    gnutls_certificate_credentials_t cred = nullptr;
    if (gnutls_certificate_allocate_credentials(&cred) != 0) throw std::runtime_error("HTTP/3: out of memory");
    native_ = cred;
    const int rv = gnutls_certificate_set_x509_key_file(cred, cert_file.c_str(), key_file.c_str(), GNUTLS_X509_FMT_PEM);
    if (rv < 0) {
        throw std::runtime_error("HTTP/3 (GnuTLS): cannot load certificate '" + cert_file + "' with key '" + key_file +
                                 "': " + gnutls_strerror(rv));
    }
}

Http3Credentials::Http3Credentials(std::string_view cert_pem, std::string_view key_pem, int) {
    gnutls_certificate_credentials_t cred = nullptr;
    if (gnutls_certificate_allocate_credentials(&cred) != 0) throw std::runtime_error("HTTP/3: out of memory");
    native_ = cred;
    gnutls_datum_t cert{reinterpret_cast<unsigned char*>(const_cast<char*>(cert_pem.data())),
                        static_cast<unsigned>(cert_pem.size())};
    gnutls_datum_t key{reinterpret_cast<unsigned char*>(const_cast<char*>(key_pem.data())),
                       static_cast<unsigned>(key_pem.size())};
    const int rv = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (rv < 0)
        throw std::runtime_error(std::string("HTTP/3 (GnuTLS): cannot load the certificate: ") + gnutls_strerror(rv));
}

void Http3Credentials::enable_resumption(bool early_data) {
    if (!resumption_) resumption_ = new Http3Resumption(early_data);
}

Http3Credentials::~Http3Credentials() {
    delete resumption_;
    if (native_) gnutls_certificate_free_credentials(static_cast<gnutls_certificate_credentials_t>(native_));
}

// --- the session -------------------------------------------------------------------------------

// The QUIC half: ngtcp2 and GnuTLS. The HTTP/3 half (Http3Application), made once the handshake
// is done, reaches it through QuicStreams.
struct Http3Session::Impl final : QuicStreams {
    HandlerContext& ctx;
    ConnectionIdRouter& router;
    Http3Session* session = nullptr;
    ngtcp2_conn* quic = nullptr;
    std::unique_ptr<Http3Application> app;  // once the handshake is done
    gnutls_session_t tls = nullptr;
    ngtcp2_crypto_conn_ref conn_ref{};
    ngtcp2_path_storage path{};
    std::vector<std::string> ids;  // every id registered with the router
    std::vector<std::uint8_t> packet = std::vector<std::uint8_t>(datagram_capacity);
    // A datagram the socket did not take (it would have blocked): sent before anything new.
    std::size_t pending_size = 0;
    ngtcp2_path_storage pending_path{};
    ngtcp2_connection_close_error close_error{};
    bool constructed = false;
    bool handshake_done = false;
    // Resumption: a session ticket goes out when the handshake completes.
    bool send_ticket = false;
    bool closing = false;  // send CONNECTION_CLOSE (close_error) at the next flush, then finished
    bool over = false;     // nothing more: the endpoint deletes the session
    bool shutting_down = false;

    Impl(HandlerContext& c, ConnectionIdRouter& r) : ctx(c), router(r) { ngtcp2_path_storage_zero(&pending_path); }

    ~Impl() override {
        for (const std::string& id : ids) router.remove_id(id);
        app.reset();
        if (quic) ngtcp2_conn_del(quic);
        if (tls) gnutls_deinit(tls);
    }

    // --- QuicStreams: what the HTTP/3 half asks of ngtcp2 --------------------------------------
    std::uint64_t now() override { return quic_now(); }
    bool open_uni_stream(std::int64_t& stream_id) override {
        return ngtcp2_conn_open_uni_stream(quic, &stream_id, nullptr) == 0;
    }
    void extend_max_offsets(std::int64_t stream_id, std::uint64_t size) override {
        ngtcp2_conn_extend_max_stream_offset(quic, stream_id, size);
        ngtcp2_conn_extend_max_offset(quic, size);
    }
    bool shutdown_stream_read(std::int64_t stream_id, std::uint64_t app_error_code) override {
        return ngtcp2_conn_shutdown_stream_read(quic, stream_id, app_error_code) == 0;
    }
    bool shutdown_stream_write(std::int64_t stream_id, std::uint64_t app_error_code) override {
        return ngtcp2_conn_shutdown_stream_write(quic, stream_id, app_error_code) == 0;
    }
    void shutdown_stream(std::int64_t stream_id, std::uint64_t app_error_code) override {
        ngtcp2_conn_shutdown_stream(quic, stream_id, app_error_code);
    }

    static Impl& self(void* user) { return *static_cast<Impl*>(user); }

    void register_id(std::string_view id, Http3Session* session) {
        ids.emplace_back(id);
        router.add_id(id, session);
    }

    void close_with(const ngtcp2_connection_close_error& error) {
        if (closing || over) return;
        close_error = error;
        closing = true;
    }

    void close_with_application_error(std::uint64_t code) {
        ngtcp2_connection_close_error e{};
        ngtcp2_connection_close_error_set_application_error(&e, code, nullptr, 0);
        close_with(e);
    }

    void fail_liberr(int rv) {
        ngtcp2_connection_close_error e{};
        if (rv == NGTCP2_ERR_CRYPTO) {
            ngtcp2_connection_close_error_set_transport_error_tls_alert(&e, ngtcp2_conn_get_tls_alert(quic), nullptr,
                                                                        0);
        } else {
            ngtcp2_connection_close_error_set_transport_error_liberr(&e, rv, nullptr, 0);
        }
        close_with(e);
    }

    // --- ngtcp2 callbacks ----------------------------------------------------------------------
    static void rand(std::uint8_t* dest, std::size_t len, const ngtcp2_rand_ctx*) {
        gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
    }

    static int get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, std::uint8_t* token, std::size_t len, void* user) {
        if (gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, len) != 0 ||
            gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) {
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        cid->datalen = len;
        Impl& s = self(user);
        s.register_id(id_bytes(*cid), s.session);
        return 0;
    }

    static int remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user) {
        Impl& s = self(user);
        const std::string_view id = id_bytes(*cid);
        const auto it = std::find(s.ids.begin(), s.ids.end(), id);
        if (it != s.ids.end()) {
            s.router.remove_id(id);
            s.ids.erase(it);
        }
        return 0;
    }

    static int handshake_completed(ngtcp2_conn*, void* user) {
        Impl& s = self(user);
        s.handshake_done = true;
        s.ctx.counters.h3_handshake();
        if (gnutls_session_is_resumed(s.tls)) s.ctx.counters.h3_resumed();
        if (gnutls_session_get_flags(s.tls) & GNUTLS_SFLAGS_EARLY_DATA) s.ctx.counters.h3_zero_rtt();
        // A ticket the client may not use is no failure of this connection: it goes on without.
        if (s.send_ticket) (void)gnutls_session_ticket_send(s.tls, 1, 0);
        return (s.app || s.start_application()) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;  // 0-RTT: started already
    }

    // 0-RTT: the client's early requests arrive before the handshake completes, so HTTP/3 starts
    // as soon as the server can send (its 1-RTT key), as ngtcp2's server example does.
    static int recv_tx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* user) {
        Impl& s = self(user);
        if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION || s.app) return 0;
        return s.start_application() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    }

    // The HTTP/3 half (control and QPACK streams, then the requests).
    bool start_application() {
        app = std::make_unique<Http3Application>(ctx, *this);
        if (app->start(ngtcp2_conn_get_local_transport_params(quic)->initial_max_streams_bidi)) return true;
        app.reset();
        return false;
    }

    static int recv_stream_data(ngtcp2_conn*, std::uint32_t flags, std::int64_t stream_id, std::uint64_t,
                                const std::uint8_t* data, std::size_t size, void* user, void*) {
        Impl& s = self(user);
        if (!s.app) return 0;
        if (!s.app->read_stream(stream_id, data, size, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0)) {
            s.close_with_application_error(s.app->error_code());
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
    }

    static int acked_stream_data_offset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t size,
                                        void* user, void*) {
        Impl& s = self(user);
        if (s.app && !s.app->add_ack_offset(stream_id, size)) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int stream_close(ngtcp2_conn*, std::uint32_t flags, std::int64_t stream_id, std::uint64_t app_error_code,
                            void* user, void*) {
        Impl& s = self(user);
        if (!s.app) return 0;
        if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
        if (!s.app->close_stream(stream_id, app_error_code)) return NGTCP2_ERR_CALLBACK_FAILURE;
        // A client request stream is gone: the client may open one more (the stream limit).
        if (ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(s.quic, 1);
        return 0;
    }

    static int stream_reset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.app && !s.app->reset_by_client(stream_id)) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int stream_stop_sending(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.app && !s.app->shutdown_stream_read(stream_id)) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int extend_max_remote_streams_bidi(ngtcp2_conn*, std::uint64_t max_streams, void* user) {
        Impl& s = self(user);
        if (s.app) s.app->set_max_client_streams_bidi(max_streams);
        return 0;
    }

    static int extend_max_stream_data(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.app && !s.app->unblock_stream(stream_id)) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) { return self(ref->user_data).quic; }
};

Http3Session::Http3Session(HandlerContext& context, Http3Credentials& credentials, ConnectionIdRouter& router,
                           const std::uint8_t* data, std::size_t size, const sockaddr* local, socklen_t local_len,
                           const sockaddr* remote, socklen_t remote_len, std::uint64_t now)
    : impl_(std::make_unique<Impl>(context, router)) {
    Impl& s = *impl_;
    s.session = this;
    ngtcp2_pkt_hd hd{};
    if (ngtcp2_accept(&hd, data, size) != 0) return;
    ngtcp2_path_storage_init(&s.path, local, local_len, remote, remote_len, nullptr);

    ngtcp2_callbacks cb{};
    cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb.encrypt = ngtcp2_crypto_encrypt_cb;
    cb.decrypt = ngtcp2_crypto_decrypt_cb;
    cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb.update_key = ngtcp2_crypto_update_key_cb;
    cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    cb.rand = &Impl::rand;
    cb.get_new_connection_id = &Impl::get_new_connection_id;
    cb.remove_connection_id = &Impl::remove_connection_id;
    cb.handshake_completed = &Impl::handshake_completed;
    cb.recv_stream_data = &Impl::recv_stream_data;
    cb.acked_stream_data_offset = &Impl::acked_stream_data_offset;
    cb.stream_close = &Impl::stream_close;
    cb.stream_reset = &Impl::stream_reset;
    cb.stream_stop_sending = &Impl::stream_stop_sending;
    cb.extend_max_remote_streams_bidi = &Impl::extend_max_remote_streams_bidi;
    cb.extend_max_stream_data = &Impl::extend_max_stream_data;
    if (credentials.resumption() && credentials.resumption()->early_data()) cb.recv_tx_key = &Impl::recv_tx_key;

    const ServerConfig& config = context.config;
    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = now;
    settings.handshake_timeout = std::uint64_t{config.header_timeout_ms} * NGTCP2_MILLISECONDS;
    settings.max_stream_window = 4 * stream_window;
    settings.max_window = 4 * connection_window;
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_streams_bidi = config.h2_max_streams;  // the same limit as HTTP/2's
    params.initial_max_streams_uni = 3;                       // the client's control and QPACK streams
    params.initial_max_stream_data_bidi_remote = stream_window;
    params.initial_max_stream_data_uni = stream_window;
    params.initial_max_data = connection_window;
    params.max_idle_timeout = std::uint64_t{config.idle_timeout_ms} * NGTCP2_MILLISECONDS;
    params.original_dcid = hd.dcid;

    ngtcp2_cid scid{};
    scid.datalen = server_id_length;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    if (ngtcp2_conn_server_new(&s.quic, &hd.scid, &scid, &s.path.path, hd.version, &cb, &settings, &params, nullptr,
                               &s) != 0) {
        s.quic = nullptr;
        return;
    }
    const Http3Resumption* resumption = credentials.resumption();
    if (gnutls_init(&s.tls, GNUTLS_SERVER | (resumption ? resumption->session_flags() : 0u)) != 0) {
        s.tls = nullptr;
        return;
    }
    if (ngtcp2_crypto_gnutls_configure_server_session(s.tls) != 0 ||
        gnutls_priority_set_direct(s.tls, loadbench::http::kQuicTlsPriority, nullptr) != 0 ||
        gnutls_credentials_set(s.tls, GNUTLS_CRD_CERTIFICATE, credentials.native()) != 0 ||
        (resumption && !resumption->configure(s.tls))) {
        return;
    }
    s.send_ticket = resumption != nullptr;
    // ALPN h3 only, mandatory: a client offering anything else ends the handshake with the
    // no_application_protocol alert (a CONNECTION_CLOSE with CRYPTO_ERROR 0x178).
    loadbench::http::offer_h3_alpn_only(s.tls);
    s.conn_ref.get_conn = &Impl::get_conn;
    s.conn_ref.user_data = &s;
    gnutls_session_set_ptr(s.tls, &s.conn_ref);
    ngtcp2_conn_set_tls_native_handle(s.quic, s.tls);
    // The client's first destination id routes its Initials until it learns ours.
    s.register_id(id_bytes(hd.dcid), this);
    s.register_id(id_bytes(scid), this);
    s.constructed = true;
    receive(data, size, local, local_len, remote, remote_len, now);
}

Http3Session::~Http3Session() = default;

bool Http3Session::ok() const { return impl_->constructed; }

void Http3Session::receive(const std::uint8_t* data, std::size_t size, const sockaddr* local, socklen_t local_len,
                           const sockaddr* remote, socklen_t remote_len, std::uint64_t now) {
    Impl& s = *impl_;
    if (s.over || s.closing) return;
    if (ngtcp2_conn_is_in_closing_period(s.quic) || ngtcp2_conn_is_in_draining_period(s.quic)) return;
    ngtcp2_path path{{const_cast<sockaddr*>(local), local_len}, {const_cast<sockaddr*>(remote), remote_len}, nullptr};
    ngtcp2_pkt_info pi{};
    const int rv = ngtcp2_conn_read_pkt(s.quic, &path, &pi, data, size, now);
    if (rv == 0) return;
    if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_DROP_CONN) {
        s.over = true;  // the client closed it (or there is nothing worth answering)
        return;
    }
    if (!s.closing) s.fail_liberr(rv);
}

void Http3Session::flush(DatagramSink& sink, std::uint64_t now) {
    Impl& s = *impl_;
    if (s.over || !s.quic) return;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi{};
    if (s.closing) {
        const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(s.quic, &ps.path, &pi, s.packet.data(),
                                                                  s.packet.size(), &s.close_error, now);
        if (n > 0) sink.send(ps.path.remote.addr, ps.path.remote.addrlen, s.packet.data(), static_cast<std::size_t>(n));
        s.over = true;
        return;
    }
    if (ngtcp2_conn_is_in_closing_period(s.quic) || ngtcp2_conn_is_in_draining_period(s.quic)) return;
    if (s.pending_size > 0) {
        const ngtcp2_path& to = s.pending_path.path;
        if (!sink.send(to.remote.addr, to.remote.addrlen, s.packet.data(), s.pending_size)) return;
        s.pending_size = 0;
    }
    for (int packets = 0; packets < 1024; ++packets) {
        StreamData data;
        if (s.app && ngtcp2_conn_get_max_data_left(s.quic) > 0 && !s.app->next_stream_data(data)) {
            s.close_with_application_error(s.app->error_code());
            flush(sink, now);
            return;
        }
        const std::int64_t stream_id = data.stream_id;
        std::array<ngtcp2_vec, StreamData::max_pieces> vec;
        for (std::size_t i = 0; i < data.count; ++i) {
            vec[i] = {const_cast<std::uint8_t*>(data.pieces[i].data), data.pieces[i].size};
        }
        ngtcp2_ssize written = -1;
        std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (data.fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        const ngtcp2_ssize n = ngtcp2_conn_writev_stream(s.quic, &ps.path, &pi, s.packet.data(), s.packet.size(),
                                                         &written, flags, stream_id, vec.data(), data.count, now);
        if (n < 0) {
            switch (n) {
                case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                    s.app->block_stream(stream_id);
                    continue;
                case NGTCP2_ERR_STREAM_SHUT_WR:
                    s.app->shutdown_stream_write(stream_id);
                    continue;
                case NGTCP2_ERR_WRITE_MORE:
                    s.app->add_write_offset(stream_id, static_cast<std::size_t>(written));
                    continue;
                default:
                    s.fail_liberr(static_cast<int>(n));
                    flush(sink, now);
                    return;
            }
        }
        if (written >= 0 && stream_id >= 0) s.app->add_write_offset(stream_id, static_cast<std::size_t>(written));
        if (n == 0) break;
        if (!sink.send(ps.path.remote.addr, ps.path.remote.addrlen, s.packet.data(), static_cast<std::size_t>(n))) {
            // The socket is full: keep this one, produce no more until it drains.
            s.pending_size = static_cast<std::size_t>(n);
            ngtcp2_path_copy(&s.pending_path.path, &ps.path);
            break;
        }
    }
    // Paced once the handshake is done (as the generator): before its first RTT sample ngtcp2 0.12
    // paces on the initial 333 ms guess, and the first response waited ~27 ms behind the flight.
    if (s.handshake_done) ngtcp2_conn_update_pkt_tx_time(s.quic, now);
    // Stopping: once the final GOAWAY is out and the last stream has finished, say goodbye.
    if (s.app && s.app->drained() && s.pending_size == 0) {
        s.close_with_application_error(NGHTTP3_H3_NO_ERROR);
        flush(sink, now);
    }
}

std::uint64_t Http3Session::next_wakeup() const {
    const Impl& s = *impl_;
    if (s.over || !s.quic) return never;
    if (s.closing) return 0;
    std::uint64_t at = ngtcp2_conn_get_expiry(s.quic);
    if (s.app) at = std::min(at, s.app->next_wakeup());
    return at;
}

void Http3Session::on_timer(std::uint64_t now) {
    Impl& s = *impl_;
    if (s.over || s.closing || !s.quic) return;
    // The HTTP/3 half's timers first (a /delay answer, a late header section, the final GOAWAY).
    if (s.app) s.app->on_timer(now);
    if (ngtcp2_conn_get_expiry(s.quic) <= now) {
        const int rv = ngtcp2_conn_handle_expiry(s.quic, now);
        if (rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
            s.over = true;  // idle (or never finished its handshake): dropped silently (RFC 9000 10.1)
        } else if (rv != 0) {
            s.fail_liberr(rv);
        }
    }
}

void Http3Session::begin_shutdown(std::uint64_t now) {
    Impl& s = *impl_;
    if (s.shutting_down || s.over || s.closing) return;
    s.shutting_down = true;
    if (!s.app) {
        // Still in its handshake: nothing was asked, so nothing to finish.
        s.close_with_application_error(NGHTTP3_H3_NO_ERROR);
        return;
    }
    // The final GOAWAY one PTO after the first.
    s.app->begin_shutdown(now + ngtcp2_conn_get_pto(s.quic));
}

bool Http3Session::finished() const { return impl_->over || !impl_->constructed; }

}  // namespace loadbench::server

#endif  // LOADBENCH_HAVE_HTTP3
