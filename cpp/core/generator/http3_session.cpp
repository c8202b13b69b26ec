// The HTTP/3 half of Http3Session: nghttp3 (control and QPACK streams, one request per
// bidirectional stream), the request slots and the Session interface the Connection and the
// Worker see. The QUIC half is in http3_quic.cpp, the libraries' callbacks in http3_callbacks.cpp.
#ifdef LOADBENCH_HAVE_HTTP3  // the build found ngtcp2, GnuTLS and nghttp3 (CMakeLists.txt)
#include "core/generator/http3_session.hpp"

#include <algorithm>
#include <cstring>

#include "core/generator/http3_callbacks.hpp"
#include "core/generator/stream_slots.hpp"

namespace loadbench::generator {

Http3Session::Http3Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection,
                           const Http3Options& options, SessionEvents& events)
    : requests_(requests),
      streams_(std::max(streams, 1)),
      one_per_connection_(one_per_connection),
      options_(options),
      events_(events) {
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
}

Http3Session::~Http3Session() {
    teardown();
    if (credentials_) gnutls_certificate_free_credentials(credentials_);
}

void Http3Session::reset() noexcept {
    teardown();
    for (Slot& s : slots_) s = Slot{};
    used_ = 0;
    started_ = 0;
    failed_ = false;
    closed_by_peer_ = false;
    goaway_ = false;
    handshake_done_ = false;
    resumed_ = false;
    sending_early_ = false;
    counted_at_handshake_ = false;
    early_data_ = EarlyData::NotAttempted;
    packet_len_ = 0;
    last_error_ = {};
    error_.clear();
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
    if (ngtcp2_conn_get_streams_uni_left(quic_) < 3)
        return fail("HTTP/3: the server allows fewer than 3 unidirectional streams (control and QPACK need 3)");
    int64_t control = -1, encoder = -1, decoder = -1;
    if (ngtcp2_conn_open_uni_stream(quic_, &control, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(quic_, &encoder, nullptr) != 0 ||
        ngtcp2_conn_open_uni_stream(quic_, &decoder, nullptr) != 0 ||
        nghttp3_conn_bind_control_stream(h3_, control) != 0 ||
        nghttp3_conn_bind_qpack_streams(h3_, encoder, decoder) != 0)
        return fail("HTTP/3: cannot open the control and QPACK streams");
    return true;
}

void Http3Session::open_streams() noexcept {
    if (!h3_ || failed_) return;
    for (Slot& s : slots_) {
        if (!s.used || s.stream_id >= 0) continue;
        int64_t id = -1;
        const int rv = ngtcp2_conn_open_bidi_stream(quic_, &id, &s);
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

int Http3Session::free_slots() const noexcept {
    // Idle and no longer reusable: report what a fresh connection will have (as Http2Session).
    if (!reusable()) return used_ == 0 ? static_cast<int>(slots_.size()) : 0;
    if (one_per_connection_) return started_ == 0 && used_ == 0 ? 1 : 0;
    // Beyond the server's stream limit a request waits in its slot for MAX_STREAMS.
    return static_cast<int>(slots_.size()) - used_;
}

bool Http3Session::reusable() const noexcept {
    return !goaway_ && !failed_ && !closed_by_peer_ && !(one_per_connection_ && started_ > 0);
}

void Http3Session::submit(const Request& r) noexcept {
    auto it = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.used; });
    if (it == slots_.end()) return;  // the caller checks free_slots() first
    *it = Slot{};
    it->request = r;
    it->request.sent_ns = 0;
    it->used = true;
    ++used_;
    ++started_;
    // Before the handshake it waits for it - unless it can go out now as 0-RTT.
    if (handshake_done_ || sending_early_) open_streams();
}

std::string_view Http3Session::output() const noexcept {
    if (packet_len_ == 0 && !producing_) {
        producing_ = true;
        const_cast<Http3Session*>(this)->produce();
        producing_ = false;
    }
    return {reinterpret_cast<const char*>(packet_.data()), packet_len_};
}

void Http3Session::headers_written(int64_t stream_id) noexcept {
    Slot* s = slot_of(stream_id);
    if (s && s->request.sent_ns == 0 && !s->headers_out) s->headers_out = true;
}

void Http3Session::wrote(size_t n, int64_t now) noexcept {
    if (n == 0) return;
    packet_len_ = 0;  // a datagram goes whole or not at all
    for (Slot& s : slots_)
        if (s.used && s.headers_out) {
            s.headers_out = false;
            s.request.sent_ns = now;
            events_.on_request_sent(s.request, now);
        }
}

InputResult Http3Session::input_eof(int64_t) noexcept {
    closed_by_peer_ = true;  // UDP has no end of stream; the Connection reports errors instead
    return used_ == 0 ? InputResult::Ok : InputResult::Error;
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
            if (quic_ && s.stream_id >= 0)
                ngtcp2_conn_shutdown_stream(quic_, s.stream_id, NGHTTP3_H3_REQUEST_CANCELLED);
        },
        [this](Slot& s) { release(s); });
}

Http3Session::Slot* Http3Session::slot_of(int64_t stream_id) noexcept {
    if (stream_id < 0) return nullptr;
    for (Slot& s : slots_)
        if (s.used && s.stream_id == stream_id) return &s;
    return nullptr;
}

void Http3Session::release(Slot& s) noexcept {
    s.used = false;
    s.headers_out = false;
    s.stream_id = -1;
    --used_;
}

void Http3Session::complete(Slot& s) noexcept {
    Request r = s.request;
    const int status = s.status;
    release(s);
    events_.on_response(r, status, now_);
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_HTTP3
