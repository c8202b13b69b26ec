// Http3Session: nghttp3 on the QUIC transport's streams (control and QPACK streams, one request
// per bidirectional stream), the request slots and the Session interface the Connection and the
// Worker see, and the QuicStreams side the transport calls. nghttp3's C callbacks are in
// http3_callbacks.cpp.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include "core/generator/sessions/http3_session.hpp"

#include <algorithm>
#include <cstring>

#include "core/generator/sessions/http3_callbacks.hpp"
#include "core/generator/sessions/stream_slots.hpp"

namespace loadbench::generator {

Http3Session::Http3Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection,
                           QuicTransport& quic, SessionEvents& events)
    : requests_(requests),
      streams_(std::max(streams, 1)),
      one_per_connection_(one_per_connection),
      events_(events),
      quic_(quic) {
    // Header arrays built once; NO_COPY: names and values live in the plan for the whole run.
    for (const H2Request& r : requests_) {
        std::vector<nghttp3_nv> nv;
        for (const auto& [name, value] : r.fields)
            nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                          NGHTTP3_NV_FLAG_NO_COPY_NAME | NGHTTP3_NV_FLAG_NO_COPY_VALUE});
        nvs_.push_back(std::move(nv));
    }
    slots_.resize(static_cast<size_t>(one_per_connection_ ? 1 : streams_));
    quic_.bind(*this);
}

Http3Session::~Http3Session() { drop_http3(); }

void Http3Session::drop_http3() noexcept {
    if (h3_) nghttp3_conn_del(h3_);
    h3_ = nullptr;
}

void Http3Session::reset() noexcept {
    drop_http3();  // the Connection starts its QUIC transport afresh beside it
    for (Slot& s : slots_) s = Slot{};
    used_ = 0;
    started_ = 0;
    goaway_ = false;
}

bool Http3Session::setup_http3() noexcept {
    nghttp3_callbacks cb{};
    cb.recv_header = &Http3Callbacks::h3_recv_header;
    cb.recv_data = &Http3Callbacks::h3_recv_data;
    cb.deferred_consume = &Http3Callbacks::h3_deferred_consume;
    cb.end_stream = &Http3Callbacks::h3_end_stream;
    cb.stream_close = &Http3Callbacks::h3_stream_close;
    cb.stop_sending = &Http3Callbacks::h3_stop_sending;
    cb.reset_stream = &Http3Callbacks::h3_reset_stream;
    cb.shutdown = &Http3Callbacks::h3_shutdown;
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = 4096;
    settings.qpack_blocked_streams = 100;
    if (nghttp3_conn_client_new(&h3_, &cb, &settings, nullptr, this) != 0) {
        h3_ = nullptr;
        return fail("HTTP/3: cannot create a connection (out of memory)");
    }
    ngtcp2_conn* conn = quic_.conn();
    if (ngtcp2_conn_get_streams_uni_left(conn) < 3)
        return fail("HTTP/3: the server allows fewer than 3 unidirectional streams (control and QPACK need 3)");
    int64_t control = -1, encoder = -1, decoder = -1;
    if (ngtcp2_conn_open_uni_stream(conn, &control, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(conn, &encoder, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(conn, &decoder, nullptr) != 0 ||
        nghttp3_conn_bind_control_stream(h3_, control) != 0 ||
        nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) != 0)
        return fail("HTTP/3: cannot open the control and QPACK streams");
    return true;
}

void Http3Session::open_streams() noexcept {
    // No HTTP/3 yet: before the handshake (without 0-RTT) the requests wait in their slots.
    if (!h3_ || quic_.broken()) return;
    for (Slot& s : slots_) {
        if (!s.used || s.stream_id >= 0) continue;
        int64_t id = -1;
        const int rv = ngtcp2_conn_open_bidi_stream(quic_.conn(), &id, &s);
        if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) return;  // the server's MAX_STREAMS: wait for more
        if (rv != 0) {
            fail(std::string("QUIC: cannot open a stream: ") + ngtcp2_strerror(rv));
            return;
        }
        const H2Request& tpl = requests_[s.request.template_index];
        const std::vector<nghttp3_nv>& nv = nvs_[s.request.template_index];
        nghttp3_data_reader reader{&Http3Callbacks::h3_read_body};
        const int sv =
            nghttp3_conn_submit_request(h3_, id, nv.data(), nv.size(), tpl.body.empty() ? nullptr : &reader, &s);
        if (sv != 0) {
            fail(std::string("HTTP/3: cannot submit a request: ") + nghttp3_strerror(sv));
            return;
        }
        s.stream_id = id;
    }
}

// --- Session -----------------------------------------------------------------------------------

int Http3Session::free_slots() const noexcept {
    // Idle and no longer reusable: report what a fresh connection will have (as Http2Session).
    if (!reusable()) return used_ == 0 ? static_cast<int>(slots_.size()) : 0;
    if (one_per_connection_) return started_ == 0 && used_ == 0 ? 1 : 0;
    // Beyond the server's stream limit a request waits in its slot for MAX_STREAMS.
    return static_cast<int>(slots_.size()) - used_;
}

bool Http3Session::reusable() const noexcept {
    return !goaway_ && !quic_.finished() && !(one_per_connection_ && started_ > 0);
}

void Http3Session::submit(const Request& r) noexcept {
    auto it = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.used; });
    if (it == slots_.end()) return;  // the caller checks free_slots() first
    *it = Slot{};
    it->request = r;
    it->request.sent_ns = it->request.written_ns = it->request.first_byte_ns = 0;  // a re-sent request is timed anew
    it->used = true;
    ++used_;
    ++started_;
    open_streams();  // at once after the handshake, or as 0-RTT; before it, when it completes
}

int64_t Http3Session::oldest_assigned_ns() const noexcept { return stream_slots::oldest_assigned_ns(slots_); }

bool Http3Session::carries_counted() const noexcept { return stream_slots::carries_counted(slots_); }

size_t Http3Session::take_in_flight(Request* out, bool* answered, size_t capacity) noexcept {
    return stream_slots::take_in_flight(slots_, out, answered, capacity, [this](Slot& s) { release(s); });
}

size_t Http3Session::take_expired(int64_t assigned_before, Request* out, size_t capacity) noexcept {
    return stream_slots::take_expired(
        slots_, assigned_before, out, capacity,
        [this](Slot& s) {
            if (quic_.conn() && s.stream_id >= 0)
                ngtcp2_conn_shutdown_stream(quic_.conn(), s.stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
        },
        [this](Slot& s) { release(s); });
}

// --- QuicStreams -------------------------------------------------------------------------------

bool Http3Session::on_established() noexcept {
    if (!h3_ && !setup_http3()) return false;  // with accepted 0-RTT it was set up already
    open_streams();
    return !quic_.broken();
}

bool Http3Session::on_early_start() noexcept {
    // The control and QPACK streams, and the requests already submitted, go out in 0-RTT.
    if (!setup_http3()) return false;
    open_streams();
    return true;
}

void Http3Session::on_early_data_rejected() noexcept {
    // HTTP/3's state goes first, so closing the QUIC streams reports nothing to it. Each request
    // keeps its slot and its recorded send; open_streams() gives it a new stream after the
    // handshake (each still one request).
    drop_http3();
    for (Slot& s : slots_)
        if (s.used) s.stream_id = -1;
}

int64_t Http3Session::on_stream_data(int64_t stream_id, const uint8_t* data, size_t n, bool fin) noexcept {
    if (!h3_) return 0;
    const nghttp3_ssize consumed = nghttp3_conn_read_stream(h3_, stream_id, data, n, fin ? 1 : 0);
    if (consumed < 0) {
        fail(std::string("HTTP/3: ") + nghttp3_strerror(static_cast<int>(consumed)));
        return -1;
    }
    return consumed;  // what nghttp3 consumed itself (frame headers, QPACK); the body in h3_recv_data
}

bool Http3Session::on_stream_acked(int64_t stream_id, uint64_t n) noexcept {
    return !h3_ || nghttp3_conn_add_ack_offset(h3_, stream_id, n) == 0;
}

bool Http3Session::on_stream_close(int64_t stream_id, uint64_t app_error_code) noexcept {
    if (!h3_) return true;
    const int rv = nghttp3_conn_close_stream(h3_, stream_id, app_error_code);
    return rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND;
}

bool Http3Session::on_stream_reset(int64_t stream_id) noexcept {
    return !h3_ || nghttp3_conn_shutdown_stream_read(h3_, stream_id) == 0;
}

bool Http3Session::on_stream_unblocked(int64_t stream_id) noexcept {
    return !h3_ || nghttp3_conn_unblock_stream(h3_, stream_id) == 0;
}

int64_t Http3Session::next_stream_data(int64_t& stream_id, bool& fin, ngtcp2_vec* vec, size_t capacity) noexcept {
    if (!h3_) return 0;
    int f = 0;
    // nghttp3_vec and ngtcp2_vec are the same {base, len} pair (ngtcp2's own examples cast).
    const nghttp3_ssize count =
        nghttp3_conn_writev_stream(h3_, &stream_id, &f, reinterpret_cast<nghttp3_vec*>(vec), capacity);
    if (count < 0) {
        fail(std::string("HTTP/3: ") + nghttp3_strerror(static_cast<int>(count)));
        return -1;
    }
    fin = f != 0;
    return count;
}

void Http3Session::on_stream_data_packed(int64_t stream_id, size_t n, bool fin) noexcept {
    nghttp3_conn_add_write_offset(h3_, stream_id, n);
    // Its HEADERS (and maybe its FIN) are in the datagram being built: the request is sent (and
    // written) when the datagram leaves.
    Slot* s = slot_of(stream_id);
    if (!s) return;
    if (s->request.sent_ns == 0 && !s->headers_out) s->headers_out = true;
    if (fin) s->fin_out = true;
}

void Http3Session::on_stream_blocked(int64_t stream_id) noexcept { nghttp3_conn_block_stream(h3_, stream_id); }

void Http3Session::on_stream_shut_write(int64_t stream_id) noexcept {
    nghttp3_conn_shutdown_stream_write(h3_, stream_id);
}

void Http3Session::on_datagram_sent(int64_t now) noexcept {
    for (Slot& s : slots_) {
        if (!s.used) continue;
        if (s.headers_out) {
            s.headers_out = false;
            s.request.sent_ns = now;
            events_.on_request_sent(s.request, now);
        }
        if (s.fin_out) {
            s.fin_out = false;
            s.request.written_ns = now;
        }
    }
}

// --- the slots ---------------------------------------------------------------------------------

Http3Session::Slot* Http3Session::slot_of(int64_t stream_id) noexcept {
    if (stream_id < 0) return nullptr;
    for (Slot& s : slots_)
        if (s.used && s.stream_id == stream_id) return &s;
    return nullptr;
}

void Http3Session::release(Slot& s) noexcept {
    s.used = false;
    s.headers_out = false;
    s.fin_out = false;
    s.stream_id = -1;
    --used_;
}

void Http3Session::complete(Slot& s) noexcept {
    Request r = s.request;
    const int status = s.status;
    release(s);
    events_.on_response(r, status, quic_.now());
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
