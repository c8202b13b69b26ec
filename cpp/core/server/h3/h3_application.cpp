#include "core/server/h3/h3_application.hpp"

#ifndef LOADBENCH_HAVE_HTTP3  // the build did not find nghttp3: Http3Session refuses before any of this

namespace loadbench::server {

struct Http3Application::Stream {};
Http3Application::Http3Application(HandlerContext& context, QuicStreams& quic) : ctx_(context), quic_(quic) {}
Http3Application::~Http3Application() = default;
bool Http3Application::start(std::uint64_t) { return false; }
bool Http3Application::read_stream(std::int64_t, const std::uint8_t*, std::size_t, bool) { return false; }
bool Http3Application::next_stream_data(StreamData&) { return false; }
void Http3Application::add_write_offset(std::int64_t, std::size_t) {}
void Http3Application::block_stream(std::int64_t) {}
bool Http3Application::unblock_stream(std::int64_t) { return false; }
void Http3Application::shutdown_stream_write(std::int64_t) {}
bool Http3Application::add_ack_offset(std::int64_t, std::uint64_t) { return false; }
bool Http3Application::shutdown_stream_read(std::int64_t) { return false; }
bool Http3Application::reset_by_client(std::int64_t) { return false; }
bool Http3Application::close_stream(std::int64_t, std::uint64_t) { return false; }
void Http3Application::set_max_client_streams_bidi(std::uint64_t) {}
std::uint64_t Http3Application::next_wakeup() const { return never; }
void Http3Application::on_timer(std::uint64_t) {}
void Http3Application::begin_shutdown(std::uint64_t) {}

}  // namespace loadbench::server

#else

#include "core/server/app/multiplexed_request.hpp"
#include "core/server/app/response_fields.hpp"
#include "core/server/app/routes.hpp"

#include <nghttp3/nghttp3.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace loadbench::server {

namespace {

constexpr std::uint64_t nanoseconds_per_ms = 1'000'000;

nghttp3_nv header(std::string_view name, std::string_view value) {
    // NO_COPY: names are constants and values live in the Stream until it closes.
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP3_NV_FLAG_NO_COPY_NAME | NGHTTP3_NV_FLAG_NO_COPY_VALUE};
}

}  // namespace

// One request/response exchange (a client bidirectional stream).
struct Http3Application::Stream : MultiplexedRequest {
    std::int64_t id = -1;
    bool abandoned = false;              // reset by us (late headers, a request the client reset)
    std::uint64_t headers_deadline = 0;  // --header-timeout-ms after the stream's first header
    std::uint64_t delay_until = 0;
    // The response: referenced by nghttp3 until the stream closes.
    std::string response_body;
    std::string_view response_view;
};

// nghttp3's callbacks, routed to the application (user_data) and its Stream (stream_user_data).
struct Http3Application::Callbacks {
    static Http3Application& self(void* user) { return *static_cast<Http3Application*>(user); }

    static int begin_headers(nghttp3_conn* conn, std::int64_t stream_id, void* user, void* stream_user) {
        if (stream_user) return 0;  // trailers' begin is its own callback; this is the request's
        Http3Application& s = self(user);
        auto* st = new Stream();
        st->id = stream_id;
        st->headers_deadline = s.quic_.now() + std::uint64_t{s.ctx_.config.header_timeout_ms} * nanoseconds_per_ms;
        s.live_.push_back(st);
        nghttp3_conn_set_stream_user_data(conn, stream_id, st);
        return 0;
    }

    // A trailer section is a header section too, under the same deadline: one whose QPACK
    // references never arrive would otherwise hold the stream, its FIN unread, until the
    // connection ended.
    static int begin_trailers(nghttp3_conn*, std::int64_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (!st) return 0;
        Http3Application& s = self(user);
        st->headers_done = false;
        st->headers_deadline = s.quic_.now() + std::uint64_t{s.ctx_.config.header_timeout_ms} * nanoseconds_per_ms;
        return 0;
    }

    static int end_trailers(nghttp3_conn*, std::int64_t, int, void*, void* stream_user) {
        if (auto* st = static_cast<Stream*>(stream_user)) st->headers_done = true;
        return 0;
    }

    static int recv_header(nghttp3_conn*, std::int64_t, std::int32_t token, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                           std::uint8_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (!st || st->answered) return 0;
        const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
        const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
        using Field = MultiplexedRequest::Field;
        const Field field = token == NGHTTP3_QPACK_TOKEN__METHOD          ? Field::method
                            : token == NGHTTP3_QPACK_TOKEN__PATH          ? Field::path
                            : token == NGHTTP3_QPACK_TOKEN_CONTENT_TYPE   ? Field::content_type
                            : token == NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH ? Field::content_length
                                                                          : Field::other;
        st->add_header(field, {reinterpret_cast<const char*>(n.base), n.len},
                       {reinterpret_cast<const char*>(v.base), v.len}, self(user).ctx_.config.max_header_bytes);
        return 0;
    }

    static int end_headers(nghttp3_conn*, std::int64_t, int fin, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (st) st->headers_done = true;
        if (!st || st->answered) return 0;
        Http3Application& s = self(user);
        if (st->header_too_large) {
            s.respond(*st, limit_answer(RequestKind::header_too_large));
        } else if (!fin && st->content_length && *st->content_length > s.ctx_.config.max_body_bytes) {
            s.respond(*st, limit_answer(RequestKind::body_too_large));  // before any DATA
        }
        return 0;
    }

    static int recv_data(nghttp3_conn*, std::int64_t stream_id, const std::uint8_t* data, std::size_t size, void* user,
                         void* stream_user) {
        Http3Application& s = self(user);
        // Consumed as it arrives: the client's windows open again at once.
        s.quic_.extend_max_offsets(stream_id, size);
        auto* st = static_cast<Stream*>(stream_user);
        if (!st || st->answered) return 0;  // answered early (413, 431): the rest is discarded
        if (st->body.size() + size > s.ctx_.config.max_body_bytes) {
            std::string().swap(st->body);
            s.respond(*st, limit_answer(RequestKind::body_too_large));
            return 0;
        }
        st->body.append(reinterpret_cast<const char*>(data), size);
        return 0;
    }

    static int deferred_consume(nghttp3_conn*, std::int64_t stream_id, std::size_t consumed, void* user, void*) {
        self(user).quic_.extend_max_offsets(stream_id, consumed);
        return 0;
    }

    static int end_stream(nghttp3_conn*, std::int64_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (st && !st->answered && !st->delayed) self(user).on_request(*st);
        return 0;
    }

    static int stream_close(nghttp3_conn*, std::int64_t, std::uint64_t, void* user, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        if (!st) return 0;
        Http3Application& s = self(user);
        s.live_.erase(std::find(s.live_.begin(), s.live_.end(), st));
        delete st;
        return 0;
    }

    static int stop_sending(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code, void* user, void*) {
        return self(user).quic_.shutdown_stream_read(stream_id, app_error_code) ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
    }

    static int reset_stream(nghttp3_conn*, std::int64_t stream_id, std::uint64_t app_error_code, void* user, void*) {
        return self(user).quic_.shutdown_stream_write(stream_id, app_error_code) ? 0 : NGHTTP3_ERR_CALLBACK_FAILURE;
    }

    static nghttp3_ssize read_body(nghttp3_conn*, std::int64_t, nghttp3_vec* vec, std::size_t veccnt,
                                   std::uint32_t* flags, void*, void* stream_user) {
        auto* st = static_cast<Stream*>(stream_user);
        *flags |= NGHTTP3_DATA_FLAG_EOF;
        if (!st || veccnt == 0 || st->response_view.empty()) return 0;
        // The whole body at once: it stays in the Stream (or is a constant) until the stream closes.
        vec[0].base = reinterpret_cast<std::uint8_t*>(const_cast<char*>(st->response_view.data()));
        vec[0].len = st->response_view.size();
        return 1;
    }
};

Http3Application::Http3Application(HandlerContext& context, QuicStreams& quic) : ctx_(context), quic_(quic) {}

Http3Application::~Http3Application() {
    if (conn_) nghttp3_conn_del(conn_);
    for (Stream* st : live_) delete st;
}

bool Http3Application::start(std::uint64_t max_client_streams_bidi) {
    nghttp3_callbacks cb{};
    cb.stream_close = &Callbacks::stream_close;
    cb.recv_data = &Callbacks::recv_data;
    cb.deferred_consume = &Callbacks::deferred_consume;
    cb.begin_headers = &Callbacks::begin_headers;
    cb.recv_header = &Callbacks::recv_header;
    cb.end_headers = &Callbacks::end_headers;
    cb.begin_trailers = &Callbacks::begin_trailers;
    cb.end_trailers = &Callbacks::end_trailers;
    cb.stop_sending = &Callbacks::stop_sending;
    cb.end_stream = &Callbacks::end_stream;
    cb.reset_stream = &Callbacks::reset_stream;
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = 4096;
    settings.qpack_blocked_streams = 100;
    settings.max_field_section_size = ctx_.config.max_header_bytes;
    if (nghttp3_conn_server_new(&conn_, &cb, &settings, nullptr, this) != 0) {
        conn_ = nullptr;
        return false;
    }
    nghttp3_conn_set_max_client_streams_bidi(conn_, max_client_streams_bidi);
    std::int64_t control = -1, encoder = -1, decoder = -1;
    return quic_.open_uni_stream(control) && nghttp3_conn_bind_control_stream(conn_, control) == 0 &&
           quic_.open_uni_stream(encoder) && quic_.open_uni_stream(decoder) &&
           nghttp3_conn_bind_qpack_streams(conn_, encoder, decoder) == 0;
}

bool Http3Application::failed(int nghttp3_error) {
    error_code_ = nghttp3_err_infer_quic_app_error_code(nghttp3_error);
    return false;
}

bool Http3Application::read_stream(std::int64_t stream_id, const std::uint8_t* data, std::size_t size, bool fin) {
    const nghttp3_ssize consumed = nghttp3_conn_read_stream(conn_, stream_id, data, size, fin ? 1 : 0);
    if (consumed < 0) return failed(static_cast<int>(consumed));
    // What nghttp3 consumed itself (frame headers, QPACK); request bodies count in recv_data.
    quic_.extend_max_offsets(stream_id, static_cast<std::uint64_t>(consumed));
    return true;
}

bool Http3Application::next_stream_data(StreamData& out) {
    std::array<nghttp3_vec, StreamData::max_pieces> vec;
    std::int64_t stream_id = -1;
    int fin = 0;
    const nghttp3_ssize count = nghttp3_conn_writev_stream(conn_, &stream_id, &fin, vec.data(), vec.size());
    if (count < 0) return failed(static_cast<int>(count));
    out.stream_id = stream_id;
    out.fin = fin != 0;
    out.count = static_cast<std::size_t>(count);
    for (std::size_t i = 0; i < out.count; ++i) out.pieces[i] = {vec[i].base, vec[i].len};
    return true;
}

void Http3Application::add_write_offset(std::int64_t stream_id, std::size_t size) {
    nghttp3_conn_add_write_offset(conn_, stream_id, size);
}

void Http3Application::block_stream(std::int64_t stream_id) { nghttp3_conn_block_stream(conn_, stream_id); }

bool Http3Application::unblock_stream(std::int64_t stream_id) {
    return nghttp3_conn_unblock_stream(conn_, stream_id) == 0;
}

void Http3Application::shutdown_stream_write(std::int64_t stream_id) {
    nghttp3_conn_shutdown_stream_write(conn_, stream_id);
}

bool Http3Application::add_ack_offset(std::int64_t stream_id, std::uint64_t size) {
    return nghttp3_conn_add_ack_offset(conn_, stream_id, size) == 0;
}

bool Http3Application::shutdown_stream_read(std::int64_t stream_id) {
    return nghttp3_conn_shutdown_stream_read(conn_, stream_id) == 0;
}

bool Http3Application::reset_by_client(std::int64_t stream_id) {
    if (nghttp3_conn_shutdown_stream_read(conn_, stream_id) != 0) return false;
    if ((stream_id & 0x3) != 0) return true;  // not a request stream (a client-initiated bidirectional one)
    const auto it =
        std::find_if(live_.begin(), live_.end(), [stream_id](const Stream* st) { return st->id == stream_id; });
    if (it != live_.end()) {
        if ((*it)->answered || (*it)->delayed) return true;  // the request was whole: its response goes out
        (*it)->abandoned = true;
    }
    // Best effort: the stream is QUIC's, and a failure here has nothing left to undo.
    quic_.shutdown_stream_write(stream_id, NGHTTP3_H3_REQUEST_INCOMPLETE);
    return true;
}

bool Http3Application::close_stream(std::int64_t stream_id, std::uint64_t app_error_code) {
    const int rv = nghttp3_conn_close_stream(conn_, stream_id, app_error_code);
    return rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND;
}

void Http3Application::set_max_client_streams_bidi(std::uint64_t max_streams) {
    nghttp3_conn_set_max_client_streams_bidi(conn_, max_streams);
}

std::uint64_t Http3Application::next_wakeup() const {
    std::uint64_t at = final_goaway_at_;
    for (const Stream* st : live_) {
        if (st->delayed) at = std::min(at, st->delay_until);
        if (!st->headers_done && !st->abandoned) at = std::min(at, st->headers_deadline);
    }
    return at;
}

void Http3Application::on_timer(std::uint64_t now) {
    for (Stream* st : std::vector<Stream*>(live_)) {
        if (st->delayed && st->delay_until <= now) respond(*st, delay_answer());
        if (!st->headers_done && !st->abandoned && st->headers_deadline <= now) {
            // Slowloris over HTTP/3: a header section still incomplete after --header-timeout-ms
            // ends its stream (RESET_STREAM + STOP_SENDING), not the connection.
            st->abandoned = true;
            quic_.shutdown_stream(st->id, NGHTTP3_H3_REQUEST_INCOMPLETE);
        }
    }
    if (final_goaway_at_ <= now) {
        final_goaway_at_ = never;
        // The last stream id accepted; streams above it were not processed (RFC 9114 5.2).
        if (nghttp3_conn_shutdown(conn_) == 0) ctx_.counters.h3_goaway();
        goaway_final_ = true;
    }
}

void Http3Application::begin_shutdown(std::uint64_t final_goaway_at) {
    // A GOAWAY with the largest id first (no new requests), the final one later - requests the
    // client sent meanwhile are still taken.
    nghttp3_conn_submit_shutdown_notice(conn_);
    final_goaway_at_ = final_goaway_at;
}

void Http3Application::on_request(Stream& st) {
    const Answer answer = st.route();
    if (answer.delayed) {
        st.delayed = true;
        st.delay_until = quic_.now() + std::uint64_t{answer.delay_ms} * nanoseconds_per_ms;
        return;
    }
    respond(st, answer);
}

// The HTTP/3 encoder: HEADERS (the ResponseFields; no alt-svc, this is HTTP/3 already) and the
// body as DATA.
void Http3Application::respond(Stream& st, const Answer& answer) {
    st.answered = true;
    st.delayed = false;
    if (answer.echo) {
        st.response_body.swap(st.body);
        st.response_view = st.response_body;
    } else {
        st.response_view = answer.body;
    }
    st.fields.set(answer.status, ctx_.date_value(), st.response_type(answer), st.response_view.size(), answer.allow,
                  {});
    std::array<nghttp3_nv, ResponseFields::max_fields> nv;
    std::size_t n = 0;
    for (const ResponseFields::Field& field : st.fields) nv[n++] = header(field.name, field.value);
    // A HEAD gets the GET's header block, content-length included, and no DATA.
    const nghttp3_data_reader reader{&Callbacks::read_body};
    if (nghttp3_conn_submit_response(conn_, st.id, nv.data(), n, st.head() ? nullptr : &reader) != 0) return;
    ctx_.counters.request(answer.kind);
    ctx_.counters.h3_request();
}

}  // namespace loadbench::server

#endif  // LOADBENCH_HAVE_HTTP3
