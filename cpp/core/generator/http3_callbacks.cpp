// The C callbacks of Http3Session: ngtcp2's (the QUIC connection: handshake, stream data in,
// acknowledgements, flow control, stream ends) and nghttp3's (response headers and body, stream
// ends and resets, GOAWAY, the request body). Each reaches the session through its user data.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include "core/generator/http3_callbacks.hpp"

#include <gnutls/crypto.h>

#include <cstdio>
#include <cstring>

#include "core/generator/http3_session.hpp"

namespace loadbench::generator {

// --- ngtcp2 ------------------------------------------------------------------------------------
void Http3Callbacks::rand(uint8_t* dest, size_t destlen, const ngtcp2_rand_ctx*) {
    gnutls_rnd(GNUTLS_RND_NONCE, dest, destlen);
}

int Http3Callbacks::get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
    if (gnutls_rnd(GNUTLS_RND_NONCE, cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::handshake_completed(ngtcp2_conn*, void* user) {
    auto* self = static_cast<Http3Session*>(user);
    gnutls_datum_t alpn{};
    if (gnutls_alpn_get_selected_protocol(self->tls_, &alpn) != 0 || alpn.size != 2 ||
        std::memcmp(alpn.data, "h3", 2) != 0) {
        self->fail("ALPN: the server did not select h3; --h3 needs a server that speaks HTTP/3");
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    self->handshake_done_ = true;
    self->counted_at_handshake_ = self->carries_counted();
    self->resumed_ = gnutls_session_is_resumed(self->tls_) != 0;
    if (!self->settle_early_data()) return NGTCP2_ERR_CALLBACK_FAILURE;
    if (!self->h3_ && !self->setup_http3()) return NGTCP2_ERR_CALLBACK_FAILURE;  // 0-RTT: set up already
    self->open_streams();
    return 0;
}

int Http3Callbacks::recv_stream_data(ngtcp2_conn* conn, uint32_t flags, int64_t stream_id, uint64_t,
                                     const uint8_t* data, size_t datalen, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (!self->h3_) return 0;
    const nghttp3_ssize consumed =
        nghttp3_conn_read_stream(self->h3_, stream_id, data, datalen, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) ? 1 : 0);
    if (consumed < 0) {
        self->fail(std::string("HTTP/3: ") + nghttp3_strerror(static_cast<int>(consumed)));
        ngtcp2_connection_close_error_set_application_error(
            &self->last_error_, nghttp3_err_infer_quic_app_error_code(static_cast<int>(consumed)), nullptr, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    // What nghttp3 consumed itself (frame headers, QPACK); the body is counted in recv_data.
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, static_cast<uint64_t>(consumed));
    ngtcp2_conn_extend_max_offset(conn, static_cast<uint64_t>(consumed));
    return 0;
}

int Http3Callbacks::acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t datalen, void* user,
                                             void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (self->h3_ && nghttp3_conn_add_ack_offset(self->h3_, stream_id, datalen) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user,
                                 void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (!self->h3_) return 0;
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
    const int rv = nghttp3_conn_close_stream(self->h3_, stream_id, app_error_code);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (self->h3_ && nghttp3_conn_shutdown_stream_read(self->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (self->h3_ && nghttp3_conn_shutdown_stream_read(self->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (self->h3_ && nghttp3_conn_unblock_stream(self->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::extend_max_local_streams_bidi(ngtcp2_conn*, uint64_t, void* user) {
    static_cast<Http3Session*>(user)->open_streams();  // requests waiting for the server's MAX_STREAMS
    return 0;
}

ngtcp2_conn* Http3Callbacks::get_conn(ngtcp2_crypto_conn_ref* ref) {
    return static_cast<Http3Session*>(ref->user_data)->quic_;
}

// --- nghttp3 -----------------------------------------------------------------------------------

int Http3Callbacks::h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                                   uint8_t, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
    if (n.len != 7 || std::memcmp(n.base, ":status", 7) != 0) return 0;
    Http3Session::Slot* s = self->slot_of(stream_id);
    if (!s) return 0;
    const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
    int status = 0;
    for (size_t i = 0; i < v.len && i < 4; ++i) {
        if (v.base[i] < '0' || v.base[i] > '9') return 0;
        status = status * 10 + (v.base[i] - '0');
    }
    // An interim (1xx) response is followed by the final one: only the final status counts.
    s->status = status;
    s->answered = true;
    return 0;
}

int Http3Callbacks::h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t*, size_t datalen, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    // The body is consumed (counted as UDP bytes by the Connection) as it arrives.
    ngtcp2_conn_extend_max_stream_offset(self->quic_, stream_id, datalen);
    ngtcp2_conn_extend_max_offset(self->quic_, datalen);
    return 0;
}

int Http3Callbacks::h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    ngtcp2_conn_extend_max_stream_offset(self->quic_, stream_id, consumed);
    ngtcp2_conn_extend_max_offset(self->quic_, consumed);
    return 0;
}

int Http3Callbacks::h3_end_stream(nghttp3_conn*, int64_t stream_id, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (Http3Session::Slot* s = self->slot_of(stream_id)) self->complete(*s);
    return 0;
}

int Http3Callbacks::h3_stream_close(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    Http3Session::Slot* s = self->slot_of(stream_id);
    if (!s) return 0;  // completed at its end (or already settled)
    Request r = s->request;
    const bool answered = s->answered;
    self->release(*s);
    if (app_error_code == NGHTTP3_H3_REQUEST_REJECTED && !answered) {
        // Rejected unprocessed (RFC 9114 4.1.1): it may go out again on another connection.
        self->events_.on_refused(r, self->now_);
        return 0;
    }
    char code[32];
    std::snprintf(code, sizeof code, "0x%llx", static_cast<unsigned long long>(app_error_code));
    self->events_.on_stream_error(
        r, std::string("HTTP/3 stream closed with error ") + code + (answered ? " (after the response headers)" : ""),
        self->now_);
    return 0;
}

int Http3Callbacks::h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (ngtcp2_conn_shutdown_stream_read(self->quic_, stream_id, app_error_code) != 0)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (ngtcp2_conn_shutdown_stream_write(self->quic_, stream_id, app_error_code) != 0)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::h3_shutdown(nghttp3_conn*, int64_t id, void* user) {
    // GOAWAY: no new requests on this connection; those on streams >= id were not processed.
    auto* self = static_cast<Http3Session*>(user);
    if (!self->goaway_) {
        self->goaway_ = true;
        self->events_.on_goaway(self->now_);
    }
    for (Http3Session::Slot& s : self->slots_)
        if (s.used && !s.answered && (s.stream_id < 0 || s.stream_id >= id)) {
            Request r = s.request;
            if (s.stream_id >= 0) ngtcp2_conn_shutdown_stream(self->quic_, s.stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
            self->release(s);
            self->events_.on_refused(r, self->now_);
        }
    return 0;
}

nghttp3_ssize Http3Callbacks::h3_read_body(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt, uint32_t* pflags,
                                           void* user, void* stream_user) {
    auto* self = static_cast<Http3Session*>(user);
    auto* s = static_cast<Http3Session::Slot*>(stream_user);
    *pflags |= NGHTTP3_DATA_FLAG_EOF;
    if (!s || !s->used || veccnt == 0) return 0;
    // The whole body at once, from the plan (it lives for the run: nothing to copy or free).
    const std::string& body = self->requests_[s->request.template_index].body;
    vec[0].base = reinterpret_cast<uint8_t*>(const_cast<char*>(body.data()));
    vec[0].len = body.size();
    return 1;
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
