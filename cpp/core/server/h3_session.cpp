#include "core/server/h3_session.hpp"

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
#include "core/server/answer.hpp"
#include "core/server/h3_resumption.hpp"
#include "core/server/responses.hpp"
#include "core/server/routes.hpp"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <boost/beast/http/verb.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

namespace loadbench::server {

namespace http = boost::beast::http;

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
constexpr std::size_t kept_body_capacity = 64 * 1024;

std::string_view id_bytes(const ngtcp2_cid& cid) { return {reinterpret_cast<const char*>(cid.data), cid.datalen}; }

nghttp3_nv header(std::string_view name, std::string_view value) {
    // NO_COPY: names are constants and values live in the Stream until it closes.
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP3_NV_FLAG_NO_COPY_NAME | NGHTTP3_NV_FLAG_NO_COPY_VALUE};
}

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

struct Http3Session::Impl {
    // One request/response exchange (a client bidirectional stream).
    struct Stream {
        std::int64_t id = -1;
        http::verb method = http::verb::unknown;
        std::string target;
        std::string content_type;
        std::string body;
        std::optional<std::uint64_t> content_length;
        std::size_t header_bytes = 0;
        bool header_too_large = false;
        bool headers_done = false;
        bool timed_out = false;
        std::uint64_t headers_deadline = 0;  // --header-timeout-ms after the stream's first header
        bool answered = false;
        bool delayed = false;
        std::uint64_t delay_until = 0;
        // The response: referenced by nghttp3 until the stream closes.
        std::string response_body;
        std::string_view response_view;
        char status[4] = {};
        char length[24] = {};
        std::size_t length_size = 0;
        char date[http_date_length] = {};
    };

    HandlerContext& ctx;
    ConnectionIdRouter& router;
    ngtcp2_conn* quic = nullptr;
    nghttp3_conn* h3 = nullptr;
    gnutls_session_t tls = nullptr;
    ngtcp2_crypto_conn_ref conn_ref{};
    ngtcp2_path_storage path{};
    std::vector<std::string> ids;  // every id registered with the router
    std::vector<Stream*> live;     // owned (freed on nghttp3's stream_close or with the session)
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
    bool goaway_final = false;
    std::uint64_t final_goaway_at = never;

    Impl(HandlerContext& c, ConnectionIdRouter& r) : ctx(c), router(r) { ngtcp2_path_storage_zero(&pending_path); }

    ~Impl() {
        for (const std::string& id : ids) router.remove_id(id);
        if (h3) nghttp3_conn_del(h3);
        if (quic) ngtcp2_conn_del(quic);
        if (tls) gnutls_deinit(tls);
        for (Stream* st : live) delete st;
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
        return (s.h3 || s.setup_http3()) ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;  // 0-RTT: set up already
    }

    // 0-RTT: the client's early requests arrive before the handshake completes, so HTTP/3 is set
    // up as soon as the server can send (its 1-RTT key), as ngtcp2's server example does.
    static int recv_tx_key(ngtcp2_conn*, ngtcp2_crypto_level level, void* user) {
        Impl& s = self(user);
        if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION || s.h3) return 0;
        return s.setup_http3() ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
    }

    static int recv_stream_data(ngtcp2_conn* conn, std::uint32_t flags, std::int64_t stream_id, std::uint64_t,
                                const std::uint8_t* data, std::size_t size, void* user, void*) {
        Impl& s = self(user);
        if (!s.h3) return 0;
        const nghttp3_ssize consumed =
            nghttp3_conn_read_stream(s.h3, stream_id, data, size, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) ? 1 : 0);
        if (consumed < 0) {
            ngtcp2_connection_close_error e{};
            ngtcp2_connection_close_error_set_application_error(
                &e, nghttp3_err_infer_quic_app_error_code(static_cast<int>(consumed)), nullptr, 0);
            s.close_with(e);
            return NGTCP2_ERR_CALLBACK_FAILURE;
        }
        // What nghttp3 consumed itself (frame headers, QPACK); request bodies count in recv_data.
        ngtcp2_conn_extend_max_stream_offset(conn, stream_id, static_cast<std::uint64_t>(consumed));
        ngtcp2_conn_extend_max_offset(conn, static_cast<std::uint64_t>(consumed));
        return 0;
    }

    static int acked_stream_data_offset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t size,
                                        void* user, void*) {
        Impl& s = self(user);
        if (s.h3 && nghttp3_conn_add_ack_offset(s.h3, stream_id, size) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int stream_close(ngtcp2_conn*, std::uint32_t flags, std::int64_t stream_id, std::uint64_t app_error_code,
                            void* user, void*) {
        Impl& s = self(user);
        if (!s.h3) return 0;
        if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
        const int rv = nghttp3_conn_close_stream(s.h3, stream_id, app_error_code);
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
        // A client request stream is gone: the client may open one more (the stream limit).
        if (ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(s.quic, 1);
        return 0;
    }

    static int stream_reset(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.h3 && nghttp3_conn_shutdown_stream_read(s.h3, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int stream_stop_sending(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.h3 && nghttp3_conn_shutdown_stream_read(s.h3, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static int extend_max_remote_streams_bidi(ngtcp2_conn*, std::uint64_t max_streams, void* user) {
        Impl& s = self(user);
        if (s.h3) nghttp3_conn_set_max_client_streams_bidi(s.h3, max_streams);
        return 0;
    }

    static int extend_max_stream_data(ngtcp2_conn*, std::int64_t stream_id, std::uint64_t, void* user, void*) {
        Impl& s = self(user);
        if (s.h3 && nghttp3_conn_unblock_stream(s.h3, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
        return 0;
    }

    static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref) { return self(ref->user_data).quic; }

    // --- nghttp3 callbacks -----------------------------------------------------------------------
    static int h3_begin_headers(nghttp3_conn* conn, std::int64_t stream_id, void* user, void* stream_user) {
        if (stream_user) return 0;  // trailers' begin is its own callback; this is the request's
        Impl& s = self(user);
        auto* st = new Stream();
        st->id = stream_id;
        st->headers_deadline = quic_now() + std::uint64_t{s.ctx.config.header_timeout_ms} * NGTCP2_MILLISECONDS;
        s.live.push_back(st);
        nghttp3_conn_set_stream_user_data(conn, stream_id, st);
        return 0;
    }

    static int h3_recv_header(nghttp3_conn*, std::int64_t, std::int32_t token, nghttp3_rcbuf* name,
                              nghttp3_rcbuf* value, std::uint8_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (!st || st->answered) return 0;
        const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
        const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
        st->header_bytes += n.len + v.len + 32;  // RFC 9114 4.2.2's accounting (as HTTP/2's)
        if (st->header_bytes > self(user).ctx.config.max_header_bytes) {
            st->header_too_large = true;
            return 0;
        }
        const std::string_view text(reinterpret_cast<const char*>(v.base), v.len);
        switch (token) {
            case NGHTTP3_QPACK_TOKEN__METHOD:
                st->method = http::string_to_verb(text);
                break;
            case NGHTTP3_QPACK_TOKEN__PATH:
                st->target.assign(text);
                break;
            case NGHTTP3_QPACK_TOKEN_CONTENT_TYPE:
                st->content_type.assign(text);
                break;
            case NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH: {
                std::uint64_t length = 0;
                const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
                if (ec == std::errc{} && end == text.data() + text.size()) st->content_length = length;
                break;
            }
            default:
                break;
        }
        return 0;
    }

    static int h3_end_headers(nghttp3_conn*, std::int64_t, int fin, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (st) st->headers_done = true;
        if (!st || st->answered) return 0;
        Impl& s = self(user);
        if (st->header_too_large) {
            s.respond(*st, limit_answer(RequestKind::header_too_large));
        } else if (!fin && st->content_length && *st->content_length > s.ctx.config.max_body_bytes) {
            s.respond(*st, limit_answer(RequestKind::body_too_large));  // before any DATA
        }
        return 0;
    }

    static int h3_recv_data(nghttp3_conn*, std::int64_t stream_id, const std::uint8_t* data, std::size_t size,
                            void* user, void* stream_user) {
        Impl& s = self(user);
        // Consumed as it arrives: the client's windows open again at once.
        ngtcp2_conn_extend_max_stream_offset(s.quic, stream_id, size);
        ngtcp2_conn_extend_max_offset(s.quic, size);
        auto* st = static_cast<Stream*>(stream_user);
        if (!st || st->answered) return 0;  // answered early (413, 431): the rest is discarded
        if (st->body.size() + size > s.ctx.config.max_body_bytes) {
            std::string().swap(st->body);
            s.respond(*st, limit_answer(RequestKind::body_too_large));
            return 0;
        }
        st->body.append(reinterpret_cast<const char*>(data), size);
        return 0;
    }

    static int h3_deferred_consume(nghttp3_conn*, std::int64_t stream_id, std::size_t consumed, void* user, void*) {
        Impl& s = self(user);
        ngtcp2_conn_extend_max_stream_offset(s.quic, stream_id, consumed);
        ngtcp2_conn_extend_max_offset(s.quic, consumed);
        return 0;
    }

    static int h3_end_stream(nghttp3_conn*, std::int64_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (st && !st->answered && !st->delayed) self(user).on_request(*st);
        return 0;
    }

    static int h3_stream_close(nghttp3_conn*, std::int64_t, std::uint64_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (!st) return 0;
        Impl& s = self(user);
        s.live.erase(std::find(s.live.begin(), s.live.end(), st));
        delete st;
        return 0;
    }

    static int h3_stop_sending(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code, void* user, void*) {
        Impl& s = self(user);
        if (ngtcp2_conn_shutdown_stream_read(s.quic, stream_id, app_error_code) != 0) {
            return NGHTTP3_ERR_CALLBACK_FAILURE;
        }
        return 0;
    }

    static int h3_reset_stream(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code, void* user, void*) {
        Impl& s = self(user);
        if (ngtcp2_conn_shutdown_stream_write(s.quic, stream_id, app_error_code) != 0) {
            return NGHTTP3_ERR_CALLBACK_FAILURE;
        }
        return 0;
    }

    static nghttp3_ssize h3_read_body(nghttp3_conn*, std::int64_t, nghttp3_vec* vec, std::size_t veccnt,
                                      std::uint32_t* flags, void*, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        *flags |= NGHTTP3_DATA_FLAG_EOF;
        if (!st || veccnt == 0 || st->response_view.empty()) return 0;
        // The whole body at once: it stays in the Stream (or is a constant) until the stream closes.
        vec[0].base = reinterpret_cast<std::uint8_t*>(const_cast<char*>(st->response_view.data()));
        vec[0].len = st->response_view.size();
        return 1;
    }

    // --- HTTP/3 --------------------------------------------------------------------------------
    Http3Session* session = nullptr;

    bool setup_http3() {
        nghttp3_callbacks cb{};
        cb.stream_close = &h3_stream_close;
        cb.recv_data = &h3_recv_data;
        cb.deferred_consume = &h3_deferred_consume;
        cb.begin_headers = &h3_begin_headers;
        cb.recv_header = &h3_recv_header;
        cb.end_headers = &h3_end_headers;
        cb.stop_sending = &h3_stop_sending;
        cb.end_stream = &h3_end_stream;
        cb.reset_stream = &h3_reset_stream;
        nghttp3_settings settings;
        nghttp3_settings_default(&settings);
        settings.qpack_max_dtable_capacity = 4096;
        settings.qpack_blocked_streams = 100;
        settings.max_field_section_size = ctx.config.max_header_bytes;
        if (nghttp3_conn_server_new(&h3, &cb, &settings, nullptr, this) != 0) {
            h3 = nullptr;
            return false;
        }
        const ngtcp2_transport_params* params = ngtcp2_conn_get_local_transport_params(quic);
        nghttp3_conn_set_max_client_streams_bidi(h3, params->initial_max_streams_bidi);
        std::int64_t control = -1, encoder = -1, decoder = -1;
        return ngtcp2_conn_open_uni_stream(quic, &control, nullptr) == 0 &&
               nghttp3_conn_bind_control_stream(h3, control) == 0 &&
               ngtcp2_conn_open_uni_stream(quic, &encoder, nullptr) == 0 &&
               ngtcp2_conn_open_uni_stream(quic, &decoder, nullptr) == 0 &&
               nghttp3_conn_bind_qpack_streams(h3, encoder, decoder) == 0;
    }

    void on_request(Stream& st) {
        const Answer answer = answer_for(match_route(st.method, st.target));
        if (answer.delayed) {
            st.delayed = true;
            st.delay_until = quic_now() + std::uint64_t{answer.delay_ms} * 1'000'000;
            return;
        }
        respond(st, answer);
    }

    // The HTTP/3 encoder: HEADERS (:status, server, date, content-type, content-length, allow)
    // and the body as DATA, the same fields as HTTP/2's.
    void respond(Stream& st, const Answer& answer) {
        st.answered = true;
        st.delayed = false;
        std::string_view type = answer.content_type;
        if (answer.echo) {
            st.response_body.swap(st.body);
            st.response_view = st.response_body;
            type = st.content_type.empty() ? default_echo_type : std::string_view(st.content_type);
        } else {
            st.response_view = answer.body;
        }
        std::to_chars(st.status, st.status + 3, answer.status);
        st.length_size = static_cast<std::size_t>(
            std::to_chars(st.length, st.length + sizeof st.length, st.response_view.size()).ptr - st.length);
        const std::string_view date = ctx.date_value();
        std::memcpy(st.date, date.data(), std::min(date.size(), sizeof st.date));

        std::array<nghttp3_nv, 6> nv;
        std::size_t n = 0;
        nv[n++] = header(":status", {st.status, 3});
        nv[n++] = header("server", server_name);
        nv[n++] = header("date", {st.date, sizeof st.date});
        if (!type.empty()) nv[n++] = header("content-type", type);
        nv[n++] = header("content-length", {st.length, st.length_size});
        if (!answer.allow.empty()) nv[n++] = header("allow", answer.allow);
        // A HEAD gets the GET's header block, content-length included, and no DATA.
        const nghttp3_data_reader reader{&h3_read_body};
        const bool head = st.method == http::verb::head;
        if (nghttp3_conn_submit_response(h3, st.id, nv.data(), n, head ? nullptr : &reader) != 0) return;
        ctx.counters.request(answer.kind);
        ctx.counters.h3_request();
    }

    bool streams_in_flight() const { return !live.empty(); }
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
        std::int64_t stream_id = -1;
        int fin = 0;
        nghttp3_vec vec[16];
        nghttp3_ssize count = 0;
        if (s.h3 && ngtcp2_conn_get_max_data_left(s.quic) > 0) {
            count = nghttp3_conn_writev_stream(s.h3, &stream_id, &fin, vec, 16);
            if (count < 0) {
                ngtcp2_connection_close_error e{};
                ngtcp2_connection_close_error_set_application_error(
                    &e, nghttp3_err_infer_quic_app_error_code(static_cast<int>(count)), nullptr, 0);
                s.close_with(e);
                flush(sink, now);
                return;
            }
        }
        ngtcp2_ssize written = -1;
        std::uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
        if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        // nghttp3_vec and ngtcp2_vec are the same {base, len} pair (ngtcp2's own examples cast).
        const ngtcp2_ssize n = ngtcp2_conn_writev_stream(
            s.quic, &ps.path, &pi, s.packet.data(), s.packet.size(), &written, flags, stream_id,
            reinterpret_cast<const ngtcp2_vec*>(vec), static_cast<std::size_t>(count), now);
        if (n < 0) {
            switch (n) {
                case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                    nghttp3_conn_block_stream(s.h3, stream_id);
                    continue;
                case NGTCP2_ERR_STREAM_SHUT_WR:
                    nghttp3_conn_shutdown_stream_write(s.h3, stream_id);
                    continue;
                case NGTCP2_ERR_WRITE_MORE:
                    nghttp3_conn_add_write_offset(s.h3, stream_id, static_cast<std::size_t>(written));
                    continue;
                default:
                    s.fail_liberr(static_cast<int>(n));
                    flush(sink, now);
                    return;
            }
        }
        if (written >= 0 && stream_id >= 0) {
            nghttp3_conn_add_write_offset(s.h3, stream_id, static_cast<std::size_t>(written));
        }
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
    if (s.goaway_final && !s.streams_in_flight() && s.pending_size == 0) {
        ngtcp2_connection_close_error e{};
        ngtcp2_connection_close_error_set_application_error(&e, NGHTTP3_H3_NO_ERROR, nullptr, 0);
        s.close_with(e);
        flush(sink, now);
    }
}

std::uint64_t Http3Session::next_wakeup() const {
    const Impl& s = *impl_;
    if (s.over || !s.quic) return never;
    if (s.closing) return 0;
    std::uint64_t at = ngtcp2_conn_get_expiry(s.quic);
    at = std::min(at, s.final_goaway_at);
    for (const Impl::Stream* st : s.live) {
        if (st->delayed) at = std::min(at, st->delay_until);
        if (!st->headers_done && !st->timed_out) at = std::min(at, st->headers_deadline);
    }
    return at;
}

void Http3Session::on_timer(std::uint64_t now) {
    Impl& s = *impl_;
    if (s.over || s.closing || !s.quic) return;
    for (Impl::Stream* st : std::vector<Impl::Stream*>(s.live)) {
        if (st->delayed && st->delay_until <= now) s.respond(*st, delay_answer());
        if (!st->headers_done && !st->timed_out && st->headers_deadline <= now) {
            // Slowloris over HTTP/3: a header section still incomplete after --header-timeout-ms
            // ends its stream (RESET_STREAM + STOP_SENDING), not the connection.
            st->timed_out = true;
            ngtcp2_conn_shutdown_stream(s.quic, st->id, NGHTTP3_H3_REQUEST_INCOMPLETE);
        }
    }
    if (s.final_goaway_at <= now) {
        s.final_goaway_at = never;
        // The last stream id accepted; streams above it were not processed (RFC 9114 5.2).
        if (nghttp3_conn_shutdown(s.h3) == 0) s.ctx.counters.h3_goaway();
        s.goaway_final = true;
    }
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
    if (!s.h3) {
        // Still in its handshake: nothing was asked, so nothing to finish.
        ngtcp2_connection_close_error e{};
        ngtcp2_connection_close_error_set_application_error(&e, NGHTTP3_H3_NO_ERROR, nullptr, 0);
        s.close_with(e);
        return;
    }
    // A GOAWAY with the largest id first (no new requests, RFC 9114 5.2), the final one after a
    // PTO - requests the client sent meanwhile are still taken.
    nghttp3_conn_submit_shutdown_notice(s.h3);
    s.final_goaway_at = now + ngtcp2_conn_get_pto(s.quic);
}

bool Http3Session::finished() const { return impl_->over || !impl_->constructed; }

}  // namespace loadbench::server

#endif  // LOADBENCH_HAVE_HTTP3
