// nghttp3's C callbacks of Http3Session: response headers and body, stream ends and resets,
// GOAWAY, the request body. Each reaches the session through its user data; the QUIC
// transport's own callbacks (ngtcp2's) are in quic_transport.cpp.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include "core/generator/sessions/http3_callbacks.hpp"

#include <cstdio>
#include <cstring>

#include "core/generator/sessions/http3_session.hpp"

namespace loadbench::generator {

// --- nghttp3 -----------------------------------------------------------------------------------

int Http3Callbacks::h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                                   uint8_t, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
    if (n.len != 7 || std::memcmp(n.base, ":status", 7) != 0) return 0;
    Http3Session::Slot* s = self->slot_of(stream_id);
    if (!s) return 0;
    // :status comes first in a response's (or a 1xx's) headers: the response's first byte
    if (s->request.first_byte_ns == 0) s->request.first_byte_ns = self->quic_.now();
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
    ngtcp2_conn_extend_max_stream_offset(self->quic_.conn(), stream_id, datalen);
    ngtcp2_conn_extend_max_offset(self->quic_.conn(), datalen);
    return 0;
}

int Http3Callbacks::h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    ngtcp2_conn_extend_max_stream_offset(self->quic_.conn(), stream_id, consumed);
    ngtcp2_conn_extend_max_offset(self->quic_.conn(), consumed);
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
        self->events_.on_refused(r, self->quic_.now());
        return 0;
    }
    char code[32];
    std::snprintf(code, sizeof code, "0x%llx", static_cast<unsigned long long>(app_error_code));
    self->events_.on_stream_error(
        r, std::string("HTTP/3 stream closed with error ") + code + (answered ? " (after the response headers)" : ""),
        self->quic_.now());
    return 0;
}

int Http3Callbacks::h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (ngtcp2_conn_shutdown_stream_read(self->quic_.conn(), stream_id, app_error_code) != 0)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    auto* self = static_cast<Http3Session*>(user);
    if (ngtcp2_conn_shutdown_stream_write(self->quic_.conn(), stream_id, app_error_code) != 0)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    return 0;
}

int Http3Callbacks::h3_shutdown(nghttp3_conn*, int64_t id, void* user) {
    // GOAWAY: no new requests on this connection; those on streams >= id were not processed.
    auto* self = static_cast<Http3Session*>(user);
    if (!self->goaway_) {
        self->goaway_ = true;
        self->events_.on_goaway(self->quic_.now());
    }
    for (Http3Session::Slot& s : self->slots_)
        if (s.used && !s.answered && (s.stream_id < 0 || s.stream_id >= id)) {
            Request r = s.request;
            if (s.stream_id >= 0)
                ngtcp2_conn_shutdown_stream(self->quic_.conn(), s.stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
            self->release(s);
            self->events_.on_refused(r, self->quic_.now());
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
