#include "core/server/h2/h2_session.hpp"

#include "core/server/app/multiplexed_request.hpp"
#include "core/server/app/response_fields.hpp"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace loadbench::server {

namespace {
// A stream keeps what it buffered of an echo body between requests up to this size.
constexpr std::size_t kept_body_capacity = 64 * 1024;

nghttp2_nv header(std::string_view name, std::string_view value) {
    // NO_COPY: both live in the Stream (or are constants) until the frame has been sent.
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}
}  // namespace

// One request/response exchange. Reused (free list): no allocation per request once warm.
struct Http2Session::Stream : MultiplexedRequest {
    std::int32_t id = 0;
    // The response (referenced by the HEADERS and DATA frames until they are sent).
    std::string_view response_body;
    std::size_t body_sent = 0;
    std::size_t live_index = 0;  // its place in Http2Session::live_

    void reset(std::int32_t stream_id) {
        id = stream_id;
        clear(kept_body_capacity);
        response_body = {};
        body_sent = 0;
    }
};

// nghttp2's callbacks, routed to the session (user_data).
struct Http2Session::Callbacks {
    static Http2Session& self(void* user_data) { return *static_cast<Http2Session*>(user_data); }
    static Stream* stream(nghttp2_session* session, std::int32_t id) {
        return static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
    }

    static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
        Http2Session& s = self(user_data);
        s.header_block_bytes_ = 0;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
        s.closed_streams_.opened(frame->hd.stream_id);
        const std::uint64_t max_requests = s.ctx_.config.h2_max_requests;
        if (max_requests != 0 && s.streams_begun_ >= max_requests) {
            // Past --h2-max-requests (the GOAWAY may still be on its way): not processed, retry elsewhere.
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
            return 0;
        }
        if (s.open_streams_ >= s.ctx_.config.h2_max_streams) {
            // Beyond SETTINGS_MAX_CONCURRENT_STREAMS: a stream error, the connection goes on.
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
            return 0;
        }
        Stream* st = s.begin_stream(frame->hd.stream_id);
        nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, st);
        s.streams_begun_ += 1;
        if (max_requests != 0 && s.streams_begun_ == max_requests && !s.goaway_submitted_) {
            s.goaway_submitted_ = true;  // like nginx's keepalive_requests: this stream is the last
            nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR, nullptr, 0);
        }
        return 0;
    }

    static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name_bytes,
                         std::size_t name_size, const std::uint8_t* value_bytes, std::size_t value_size, std::uint8_t,
                         void* user_data) {
        if (frame->hd.type != NGHTTP2_HEADERS) return 0;
        // An HPACK bomb: a small block that decodes to a huge header list (one stored field
        // referenced thousands of times), each field costing nghttp2 a validation pass. Past
        // hpack_bomb_factor x --max-header the connection ends (any stream, refused or trailers).
        Http2Session& s = self(user_data);
        s.header_block_bytes_ += name_size + value_size + 32;
        if (s.header_block_bytes_ > hpack_bomb_factor * s.ctx_.config.max_header_bytes) {
            s.enhance_your_calm_ = true;
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        Stream* st = stream(session, frame->hd.stream_id);
        if (!st || st->headers_done) return 0;  // refused stream, or trailers (ignored)
        const std::string_view name(reinterpret_cast<const char*>(name_bytes), name_size);
        const std::string_view value(reinterpret_cast<const char*>(value_bytes), value_size);
        using Field = MultiplexedRequest::Field;
        const Field field = name == ":method"          ? Field::method
                            : name == ":path"          ? Field::path
                            : name == "content-type"   ? Field::content_type
                            : name == "content-length" ? Field::content_length
                                                       : Field::other;
        st->add_header(field, name, value, s.ctx_.config.max_header_bytes);
        return 0;
    }

    static int on_frame_recv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
        Http2Session& s = self(user_data);
        if (frame->hd.type == NGHTTP2_RST_STREAM) s.ctx_.counters.h2_reset_received();
        Stream* st = stream(session, frame->hd.stream_id);
        if (!st) return 0;
        const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
        if (frame->hd.type == NGHTTP2_HEADERS) {
            if (!st->headers_done) s.header_block_done(*st);
            if (st->answered) return 0;
            if (st->header_too_large) {
                s.respond(*st, limit_answer(RequestKind::header_too_large));
            } else if (end_stream) {
                s.on_request(*st);
            } else if (st->content_length && *st->content_length > s.ctx_.config.max_body_bytes) {
                s.respond(*st, limit_answer(RequestKind::body_too_large));  // before any DATA
            }
        } else if (frame->hd.type == NGHTTP2_DATA && end_stream && !st->answered) {
            s.on_request(*st);
        }
        return 0;
    }

    // Flow control is nghttp2's (automatic WINDOW_UPDATE as DATA is consumed here). A stream
    // keeps at most --max-body (413 beyond, the rest is discarded), so a connection holds at
    // most --h2-max-streams x --max-body of request bodies. (Withholding the connection window
    // over a smaller budget deadlocks: a client that spreads it over many streams leaves every
    // body partial - h2load -d with -m 20 did exactly that.)
    static int on_data_chunk_recv(nghttp2_session* session, std::uint8_t, std::int32_t stream_id,
                                  const std::uint8_t* data, std::size_t size, void* user_data) {
        Stream* st = stream(session, stream_id);
        if (!st || st->answered || st->header_too_large) return 0;  // discarded (still flow-controlled)
        Http2Session& s = self(user_data);
        if (st->body.size() + size > s.ctx_.config.max_body_bytes) {
            std::string().swap(st->body);
            s.respond(*st, limit_answer(RequestKind::body_too_large));
            return 0;
        }
        st->body.append(reinterpret_cast<const char*>(data), size);
        return 0;
    }

    static int on_stream_close(nghttp2_session* session, std::int32_t stream_id, std::uint32_t, void* user_data) {
        if (Stream* st = stream(session, stream_id)) {
            nghttp2_session_set_stream_user_data(session, stream_id, nullptr);
            self(user_data).release(st);
        }
        return 0;
    }

    static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
        WorkerCounters& counters = self(user_data).ctx_.counters;
        if (frame->hd.type == NGHTTP2_RST_STREAM) self(user_data).closed_streams_.reset_by_us(frame->hd.stream_id);
        if (frame->hd.type == NGHTTP2_GOAWAY) {
            counters.h2_goaway();
        } else if (frame->hd.type == NGHTTP2_RST_STREAM && frame->rst_stream.error_code == NGHTTP2_REFUSED_STREAM) {
            counters.h2_stream_refused();
        }
        return 0;
    }

    static ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* data_flags, nghttp2_data_source* source, void*) {
        auto* st = static_cast<Stream*>(source->ptr);
        const std::size_t n = std::min(length, st->response_body.size() - st->body_sent);
        std::memcpy(buf, st->response_body.data() + st->body_sent, n);
        st->body_sent += n;
        if (st->body_sent == st->response_body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
    }
};

Http2Session::Http2Session(HandlerContext& context) : ctx_(context) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, &Callbacks::on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &Callbacks::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &Callbacks::on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &Callbacks::on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &Callbacks::on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, &Callbacks::on_frame_send);
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    // Closed streams are not kept for the (deprecated) priority tree: less memory per connection.
    nghttp2_option_set_no_closed_streams(option, 1);
    nghttp2_session_server_new2(&session_, callbacks, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);

    // MAX_CONCURRENT_STREAMS goes first and is submitted as "unlimited": nghttp2 treats a
    // stream beyond an acknowledged limit as a connection error (GOAWAY PROTOCOL_ERROR) and
    // only refuses streams before the client's ACK. We want RST_STREAM REFUSED_STREAM always,
    // so the limit is enforced in on_begin_headers and written into the frame by send().
    const std::array<nghttp2_settings_entry, 2> settings{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, unlimited_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(ctx_.config.max_header_bytes)},
    }};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    ctx_.counters.h2_connection();
}

Http2Session::~Http2Session() {
    nghttp2_session_del(session_);  // frees its streams without calling on_stream_close
    for (Stream* st : live_) delete st;
}

// Most frames go to nghttp2 in one piece with the rest of the read. The input is cut just
// before the last byte of a frame header only when that frame must be judged against what
// nghttp2 made of the frames before it (a DATA or HEADERS on a stream already seen: the
// closed-stream rules), or when it breaks a flood limit. An upload costs one cut per request;
// GET requests (HEADERS on new streams) none.
bool Http2Session::receive(const char* data, std::size_t size) {
    const std::string_view input(data, size);
    std::size_t fed = 0;
    std::size_t pos = 0;
    while (const auto found = scanner_.next(input, pos)) {
        pos = found->end;
        const FrameHeader& frame = found->header;
        const bool stream_frame = frame.type == NGHTTP2_DATA || frame.type == NGHTTP2_HEADERS;
        const bool seen_stream = frame.stream_id > 0 && frame.stream_id <= scanned_highest_;
        if (frame.type == NGHTTP2_HEADERS && frame.stream_id > scanned_highest_ && frame.stream_id % 2 == 1) {
            scanned_highest_ = frame.stream_id;
        }
        const bool flooding = flood_guard_.admit(frame.type, frame.flags, frame.length, ctx_.now) != nullptr;
        if (!flooding && !(stream_frame && seen_stream)) continue;
        if (!feed(data + fed, pos - 1 - fed)) return false;
        fed = pos - 1;
        if (flooding) {
            nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
            return false;
        }
        if (!admit(frame)) return false;
    }
    return feed(data + fed, size - fed);
}

bool Http2Session::feed(const char* data, std::size_t size) {
    if (size == 0) return true;
    const auto rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(data), size);
    if (rv < 0) {
        // Bad preface, flood, out of memory: say why (GOAWAY) and end the connection.
        nghttp2_session_terminate_session(session_, rv == NGHTTP2_ERR_FLOODED || enhance_your_calm_
                                                        ? NGHTTP2_ENHANCE_YOUR_CALM
                                                        : NGHTTP2_PROTOCOL_ERROR);
        return false;
    }
    return true;
}

bool Http2Session::send(std::string& out, std::size_t limit) {
    const std::size_t start = out.size();
    while (out.size() < limit) {
        const std::uint8_t* data = nullptr;
        const auto n = nghttp2_session_mem_send(session_, &data);
        if (n < 0) return false;
        if (n == 0) break;
        out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    if (!settings_sent_ && out.size() > start) {
        settings_sent_ = true;
        advertise_stream_limit(out, start);
    }
    return true;
}

// The server's first frame is the SETTINGS submitted in the constructor: 9-byte frame
// header (length, type 0x4, flags, stream 0), then 6-byte entries in the order submitted.
void Http2Session::advertise_stream_limit(std::string& out, std::size_t at) {
    constexpr std::size_t frame_header = 9;
    if (out.size() < at + frame_header + 6) return;
    auto* p = reinterpret_cast<unsigned char*>(out.data() + at);
    if (p[3] != NGHTTP2_SETTINGS || p[frame_header] != 0 ||
        p[frame_header + 1] != NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) {
        return;
    }
    const std::uint32_t limit = ctx_.config.h2_max_streams;
    for (int i = 0; i < 4; ++i) p[frame_header + 2 + i] = static_cast<unsigned char>(limit >> (24 - 8 * i));
}

bool Http2Session::want_read() const { return nghttp2_session_want_read(session_) != 0; }
bool Http2Session::backlogged() const {
    return nghttp2_session_get_outbound_queue_size(session_) > 2 * std::size_t{ctx_.config.h2_max_streams} + 64;
}

bool Http2Session::want_write() const { return nghttp2_session_want_write(session_) != 0; }

void Http2Session::shutdown() {
    if (goaway_submitted_) return;
    goaway_submitted_ = true;
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                          NGHTTP2_NO_ERROR, nullptr, 0);
}

void Http2Session::ClosedStreams::opened(std::int32_t id) {
    if (id <= highest_) return;  // not a new id: nghttp2 has already refused it
    if (id - highest_ >= window) {
        opened_.reset();
        reset_.reset();
    } else {
        for (std::int32_t skipped = highest_ + 2; skipped < id; skipped += 2) {
            opened_.reset(slot(skipped));
            reset_.reset(slot(skipped));
        }
    }
    highest_ = id;
    opened_.set(slot(id));
    reset_.reset(slot(id));
}

void Http2Session::ClosedStreams::reset_by_us(std::int32_t id) {
    if (id > 0 && id <= highest_ && in_window(id)) reset_.set(slot(id));
}

bool Http2Session::admit(const FrameHeader& frame) {
    const std::int32_t id = frame.stream_id;
    // Only DATA and HEADERS are judged here (PRIORITY, RST_STREAM and WINDOW_UPDATE may follow
    // a close, §5.1). Stream 0, our own (even) ids, idle ids and open streams: nghttp2's rules.
    if (frame.type != NGHTTP2_DATA && frame.type != NGHTTP2_HEADERS) return true;
    if (id <= 0 || id % 2 == 0 || id > closed_streams_.highest()) return true;
    if (nghttp2_session_find_stream(session_, id) != nullptr) return true;
    // We reset it: the client may have sent this before our RST_STREAM reached it (§5.1 closed).
    if (closed_streams_.was_reset_by_us(id)) return true;
    const bool unopened = frame.type == NGHTTP2_HEADERS && !closed_streams_.was_opened(id);
    nghttp2_session_terminate_session(session_, unopened ? NGHTTP2_PROTOCOL_ERROR : NGHTTP2_STREAM_CLOSED);
    return false;
}

Http2Session::Stream* Http2Session::begin_stream(std::int32_t id) {
    std::unique_ptr<Stream> st;
    if (free_streams_.empty()) {
        st = std::make_unique<Stream>();
    } else {
        st = std::move(free_streams_.back());
        free_streams_.pop_back();
    }
    st->reset(id);
    st->live_index = live_.size();
    live_.push_back(st.get());
    if (awaiting_headers_++ == 0) headers_since_ = ctx_.now;
    open_streams_ += 1;
    ctx_.counters.h2_stream();
    return st.release();
}

void Http2Session::release(Stream* st) {
    live_[st->live_index] = live_.back();
    live_[st->live_index]->live_index = st->live_index;
    live_.pop_back();
    if (!st->headers_done) awaiting_headers_ -= 1;
    if (st->delayed) delayed_ -= 1;
    open_streams_ -= 1;
    st->delayed = false;
    // Keep a few for reuse (as many as may be open at once), free the rest.
    if (free_streams_.size() < ctx_.config.h2_max_streams && free_streams_.size() < 128) {
        free_streams_.emplace_back(st);
    } else {
        delete st;
    }
}

void Http2Session::header_block_done(Stream& st) {
    st.headers_done = true;
    if (--awaiting_headers_ > 0) headers_since_ = ctx_.now;  // approximate: the next-oldest began by now
}

void Http2Session::on_request(Stream& st) {
    const Answer answer = st.route();
    if (answer.delayed) {
        st.delayed = true;
        delayed_ += 1;
        new_delays_.push_back({st.id, answer.delay_ms});
        return;
    }
    respond(st, answer);
}

void Http2Session::finish_delay(std::int32_t stream_id) {
    Stream* st = Callbacks::stream(session_, stream_id);
    if (!st || !st->delayed) return;  // reset by the client meanwhile
    st->delayed = false;
    delayed_ -= 1;
    respond(*st, delay_answer());
}

// The HTTP/2 encoder: HEADERS (the ResponseFields, alt-svc included under --h3) and the body as
// DATA frames, read as the flow-control windows open.
void Http2Session::respond(Stream& st, const Answer& answer) {
    st.answered = true;
    st.response_body = answer.echo ? std::string_view(st.body) : answer.body;
    st.body_sent = 0;
    st.fields.set(answer.status, ctx_.date_value(), st.response_type(answer), st.response_body.size(), answer.allow,
                  ctx_.alt_svc);
    std::array<nghttp2_nv, ResponseFields::max_fields> nv;
    std::size_t n = 0;
    for (const ResponseFields::Field& field : st.fields) nv[n++] = header(field.name, field.value);

    // A HEAD gets the GET's header block, content-length included, and no DATA (RFC 9110 §9.3.2).
    nghttp2_data_provider provider;
    provider.source.ptr = &st;
    provider.read_callback = &Callbacks::read_body;
    nghttp2_submit_response(session_, st.id, nv.data(), n, st.head() ? nullptr : &provider);
    ctx_.counters.request(answer.kind);
    ctx_.counters.h2_request();
}

}  // namespace loadbench::server
