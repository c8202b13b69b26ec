#include "core/generator/sessions/http2_session.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/generator/sessions/stream_slots.hpp"

namespace loadbench::generator {

namespace {

constexpr size_t kOutputHighWater = 256 * 1024;  // frames serialised ahead of the transport, at most

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

H2Request make_h2_request(const http::RequestTemplate& request, const std::string& default_target,
                          const std::string& authority, bool tls) {
    const std::string& target = http::checked_target(request, default_target);
    H2Request out;
    std::string host = authority;
    bool has_agent = false, has_length = false;
    std::vector<std::pair<std::string, std::string>> regular;
    for (const auto& [name, value] : request.headers) {
        std::string n = lower(name);
        if (n == "host") {
            host = value;
            continue;
        }
        // Connection-specific fields are forbidden in HTTP/2 (RFC 9113 8.2.2).
        if (n == "connection" || n == "keep-alive" || n == "proxy-connection" || n == "transfer-encoding" ||
            n == "upgrade" || (n == "te" && value != "trailers"))
            continue;
        has_agent |= n == "user-agent";
        has_length |= n == "content-length";
        regular.emplace_back(std::move(n), value);
    }
    out.fields.emplace_back(":method", request.method);
    out.fields.emplace_back(":scheme", tls ? "https" : "http");
    out.fields.emplace_back(":authority", host);
    out.fields.emplace_back(":path", target);
    if (!has_agent) out.fields.emplace_back("user-agent", "loadbench");
    for (auto& field : regular) out.fields.push_back(std::move(field));
    if (!has_length &&
        (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH"))
        out.fields.emplace_back("content-length", std::to_string(request.body.size()));
    out.body = request.body;
    return out;
}

Http2Session::Http2Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection,
                           SessionEvents& events, int32_t window)
    : requests_(requests),
      streams_(std::max(streams, 1)),
      one_per_connection_(one_per_connection),
      window_(window),
      events_(events) {
    // The header arrays are built once; nghttp2 copies the array per request but not the
    // names and values (NO_COPY: they live in the plan for the whole run).
    for (const H2Request& r : requests_) {
        std::vector<nghttp2_nv> nv;
        for (const auto& [name, value] : r.fields)
            nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE});
        nvs_.push_back(std::move(nv));
    }
    slots_.resize(static_cast<size_t>(one_per_connection_ ? 1 : streams_));
    nghttp2_session_callbacks_new(&callbacks_);
    nghttp2_session_callbacks_set_on_header_callback(callbacks_, &Http2Session::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks_, &Http2Session::on_frame_recv);
    nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks_, &Http2Session::on_begin_frame);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks_, &Http2Session::on_frame_send);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks_, &Http2Session::on_frame_not_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks_, &Http2Session::on_stream_close);
    nghttp2_session_callbacks_set_error_callback2(
        callbacks_, [](nghttp2_session*, int, const char* msg, size_t len, void* user) -> int {
            auto* self = static_cast<Http2Session*>(user);
            if (self->error_.empty()) self->error_ = "HTTP/2: " + std::string(msg, len);
            return 0;
        });
    // Until the server's SETTINGS arrive, nghttp2 sends one stream and holds the others (the
    // owner may submit all `streams`): a server with a lower SETTINGS_MAX_CONCURRENT_STREAMS
    // would otherwise refuse the excess of the first round.
    nghttp2_option_new(&option_);
    nghttp2_option_set_peer_max_concurrent_streams(option_, 1);
    out_.reserve(16384);
}

Http2Session::~Http2Session() {
    if (session_) nghttp2_session_del(session_);
    if (callbacks_) nghttp2_session_callbacks_del(callbacks_);
    if (option_) nghttp2_option_del(option_);
}

void Http2Session::reset() noexcept {
    if (session_) nghttp2_session_del(session_);
    session_ = nullptr;
    for (Slot& s : slots_) s = Slot{};
    used_ = 0;
    started_ = 0;
    goaway_ = false;
    failed_ = false;
    eof_ = false;
    settings_received_ = false;
    continuations_ = 0;
    flooded_ = false;
    out_.clear();
    out_pos_ = 0;
    out_base_ = 0;
    error_.clear();
    if (nghttp2_session_client_new2(&session_, callbacks_, this, option_) != 0) {
        session_ = nullptr;
        failed_ = true;
        error_ = "HTTP/2: cannot create a session (out of memory)";
        return;
    }
    // The client preface goes out with the first write: SETTINGS (push off, the stream window)
    // and the connection window set the same way (a WINDOW_UPDATE when above 65 535).
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                               {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(window_)}};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, sizeof settings / sizeof settings[0]);
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, window_);
}

int Http2Session::free_slots() const noexcept {
    // An idle session that cannot carry more requests (GOAWAY, EOF, one per connection done)
    // reports what a fresh connection will have: the owner reopens it before submitting.
    if (!reusable()) return used_ == 0 ? static_cast<int>(slots_.size()) : 0;
    int limit = static_cast<int>(slots_.size());
    if (one_per_connection_) return started_ == 0 && used_ == 0 ? 1 : 0;
    if (session_ && settings_received_) {
        const uint32_t remote = nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
        if (remote < static_cast<uint32_t>(limit)) limit = static_cast<int>(remote);
    }
    return std::max(limit - used_, 0);
}

bool Http2Session::reusable() const noexcept {
    return !goaway_ && !failed_ && !eof_ && !(one_per_connection_ && started_ > 0);
}

void Http2Session::submit(const Request& r) noexcept {
    Slot* s = nullptr;
    for (Slot& candidate : slots_)
        if (!candidate.used) {
            s = &candidate;
            break;
        }
    if (!s) return;  // the caller checks free_slots() first
    *s = Slot{};
    s->request = r;
    s->request.sent_ns = s->request.written_ns = s->request.first_byte_ns = 0;  // a re-sent request is timed anew
    s->used = true;
    ++used_;
    ++started_;
    if (!session_) return;  // no session (out of memory in reset()): it times out like any unanswered request
    const H2Request& tpl = requests_[r.template_index];
    const std::vector<nghttp2_nv>& nv = nvs_[r.template_index];
    nghttp2_data_provider provider{};
    provider.source.ptr = s;
    provider.read_callback = &Http2Session::read_body;
    const int32_t id =
        nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), tpl.body.empty() ? nullptr : &provider, s);
    if (id < 0) {
        // Stream IDs exhausted (2^31 on one connection) or out of memory: this connection is
        // done; the request waits for its timeout like any other that got no answer.
        failed_ = true;
        if (error_.empty()) error_ = std::string("HTTP/2: cannot submit a request: ") + nghttp2_strerror(id);
        return;
    }
    s->stream_id = id;
}

void Http2Session::pump() const noexcept {
    if (!session_ || pumping_) return;
    pumping_ = true;
    if (out_pos_ == out_.size()) {
        out_base_ += out_.size();
        out_.clear();
        out_pos_ = 0;
    }
    while (out_.size() - out_pos_ < kOutputHighWater) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &data);
        if (n <= 0) break;  // < 0 only for out of memory / a callback failure: nothing to write
        out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
        // nghttp2 reports a frame sent inside the mem_send call that returned its last bytes,
        // before they are appended: those frames end here.
        if (frame_ends_pending_)
            for (Slot& s : const_cast<Http2Session*>(this)->slots_) {
                if (!s.used) continue;
                if (s.headers_out && s.headers_end == kPendingEnd) s.headers_end = out_base_ + out_.size();
                if (s.end_out && s.end_at == kPendingEnd) s.end_at = out_base_ + out_.size();
            }
        frame_ends_pending_ = false;
    }
    pumping_ = false;
}

std::string_view Http2Session::output() const noexcept {
    if (out_pos_ == out_.size()) pump();
    return std::string_view(out_).substr(out_pos_);
}

void Http2Session::wrote(size_t n, int64_t now) noexcept {
    if (n == 0) return;
    out_pos_ += n;
    const uint64_t taken = out_base_ + out_pos_;
    // Service time runs from the moment the transport took the end of a request's HEADERS.
    // Its write phase ends when the transport took the frame carrying its END_STREAM (the
    // HEADERS themselves for a request without a body).
    for (Slot& s : slots_) {
        if (!s.used) continue;
        if (s.headers_out && taken >= s.headers_end) {
            s.headers_out = false;
            s.request.sent_ns = now;
            events_.on_request_sent(s.request, now);
        }
        if (s.end_out && !s.headers_out && taken >= s.end_at) {
            s.end_out = false;
            s.request.written_ns = now;
        }
    }
}

InputResult Http2Session::input(const char* data, size_t n, int64_t now) noexcept {
    if (!session_) {
        error_ = "HTTP/2: bytes with no session";
        return InputResult::Error;
    }
    now_ = now;
    const ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data), n);
    if (rv < 0) {
        // A limit of ours (on_begin_frame) said why already; else nghttp2's reason.
        if (!flooded_) error_ = std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(rv));
        failed_ = true;
        return InputResult::Error;
    }
    // A connection error nghttp2 found ends the session once its GOAWAY is serialised: do
    // that now (the frames go out with the next write) so the end is seen here.
    pump();
    if (!goaway_ && nghttp2_session_want_read(session_) == 0) {
        // nghttp2 found a connection error in what the server sent and ends the session.
        failed_ = true;
        if (error_.empty()) error_ = "HTTP/2: protocol error from the server (the session was terminated)";
        if (used_ > 0) return InputResult::Error;
    }
    return InputResult::Ok;
}

InputResult Http2Session::input_eof(int64_t) noexcept {
    eof_ = true;
    if (used_ == 0) return InputResult::Ok;
    error_ = "read: the server closed the connection with " + std::to_string(used_) + " HTTP/2 stream" +
             (used_ == 1 ? "" : "s") + " in flight" + (goaway_ ? " (after GOAWAY)" : "");
    return InputResult::Error;
}

int64_t Http2Session::oldest_assigned_ns() const noexcept { return stream_slots::oldest_assigned_ns(slots_); }

bool Http2Session::carries_counted() const noexcept { return stream_slots::carries_counted(slots_); }

size_t Http2Session::take_in_flight(Request* out, bool* answered, size_t capacity) noexcept {
    return stream_slots::take_in_flight(slots_, out, answered, capacity, [this](Slot& s) { release(s); });
}

size_t Http2Session::take_expired(int64_t assigned_before, Request* out, size_t capacity) noexcept {
    return stream_slots::take_expired(
        slots_, assigned_before, out, capacity,
        [this](Slot& s) {
            if (session_ && s.stream_id > 0)
                nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.stream_id, NGHTTP2_CANCEL);
        },
        [this](Slot& s) { release(s); });
}

Http2Session::Slot* Http2Session::slot_of(int32_t stream_id) noexcept {
    if (stream_id <= 0) return nullptr;
    if (session_) {
        auto* s = static_cast<Slot*>(nghttp2_session_get_stream_user_data(session_, stream_id));
        if (s && s->used && s->stream_id == stream_id) return s;
    }
    for (Slot& s : slots_)
        if (s.used && s.stream_id == stream_id) return &s;
    return nullptr;
}

void Http2Session::release(Slot& s) noexcept {
    if (session_ && s.stream_id > 0) nghttp2_session_set_stream_user_data(session_, s.stream_id, nullptr);
    s.used = false;
    s.stream_id = -1;
    --used_;
}

void Http2Session::complete(Slot& s) noexcept {
    Request r = s.request;
    const int status = s.status;
    release(s);
    events_.on_response(r, status, now_);
}

int Http2Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                            const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7 || std::memcmp(name, ":status", 7) != 0) return 0;
    Slot* s = self->slot_of(frame->hd.stream_id);
    if (!s) return 0;
    int status = 0;
    for (size_t i = 0; i < valuelen && i < 4; ++i) {
        if (value[i] < '0' || value[i] > '9') return 0;
        status = status * 10 + (value[i] - '0');
    }
    s->status = status;
    return 0;
}

int Http2Session::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    switch (frame->hd.type) {
        case NGHTTP2_HEADERS:
        case NGHTTP2_DATA: {
            Slot* s = self->slot_of(frame->hd.stream_id);
            if (!s) return 0;
            if (frame->hd.type == NGHTTP2_HEADERS) s->answered = true;
            if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) self->complete(*s);
            return 0;
        }
        case NGHTTP2_GOAWAY:
            if (!self->goaway_) {
                self->goaway_ = true;
                self->events_.on_goaway(self->now_);
            }
            return 0;
        case NGHTTP2_SETTINGS:
            if (!(frame->hd.flags & NGHTTP2_FLAG_ACK)) self->settings_received_ = true;
            return 0;
        case NGHTTP2_RST_STREAM:
            self->events_.on_stream_reset(frame->rst_stream.error_code, self->now_);
            return 0;
        default:
            return 0;
    }
}

int Http2Session::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    Slot* s = self->slot_of(frame->hd.stream_id);
    if (!s) return 0;
    // Called inside the mem_send that returns the frame's last bytes: pump() sets where it ends.
    if (frame->hd.type == NGHTTP2_HEADERS) {
        s->headers_out = true;
        s->headers_end = kPendingEnd;
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        s->end_out = true;
        s->end_at = kPendingEnd;
    }
    self->frame_ends_pending_ = s->headers_out || s->end_out || self->frame_ends_pending_;
    return 0;
}

int Http2Session::on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Slot* s = self->slot_of(frame->hd.stream_id);
    if (!s) return 0;
    // Never sent (the server's GOAWAY came first): the request goes out again elsewhere.
    Request r = s->request;
    self->release(*s);
    self->events_.on_refused(r, self->now_);
    return 0;
}

int Http2Session::on_begin_frame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    if (hd->type == NGHTTP2_HEADERS) {
        // the response's first frame began arriving (its 1xx or final HEADERS)
        if (Slot* s = self->slot_of(hd->stream_id); s && s->request.first_byte_ns == 0)
            s->request.first_byte_ns = self->now_;
    }
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_PUSH_PROMISE) self->continuations_ = 0;
    if (hd->type != NGHTTP2_CONTINUATION || ++self->continuations_ <= kMaxContinuations) return 0;
    self->flooded_ = true;
    self->error_ = "HTTP/2: the server sent more than " + std::to_string(kMaxContinuations) +
                   " CONTINUATION frames in one header block (a CONTINUATION flood)";
    nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

int Http2Session::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    Slot* s = self->slot_of(stream_id);
    if (!s) return 0;  // completed at END_STREAM (or already settled)
    Request r = s->request;
    const bool answered = s->answered;
    self->release(*s);
    if (error_code == NGHTTP2_REFUSED_STREAM && !answered) {
        // RST_STREAM(REFUSED_STREAM) or a stream above a GOAWAY's last_stream_id: the server
        // did not process it (RFC 9113 8.7), so it is sent again.
        self->events_.on_refused(r, self->now_);
        return 0;
    }
    self->events_.on_stream_error(r,
                                  std::string("HTTP/2 stream reset: ") + nghttp2_http2_strerror(error_code) +
                                      (answered ? " (after the response headers)" : ""),
                                  self->now_);
    return 0;
}

ssize_t Http2Session::read_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags,
                                nghttp2_data_source* source, void* user) {
    auto* self = static_cast<Http2Session*>(user);
    auto* s = static_cast<Slot*>(source->ptr);
    // The slot may already hold another request (the response ended before the body was sent).
    if (!s->used || s->stream_id != stream_id) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    const std::string& body = self->requests_[s->request.template_index].body;
    const size_t n = std::min(length, body.size() - s->body_offset);
    std::memcpy(buf, body.data() + s->body_offset, n);
    s->body_offset += n;
    if (s->body_offset == body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

}  // namespace loadbench::generator
