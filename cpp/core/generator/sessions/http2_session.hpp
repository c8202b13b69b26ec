#pragma once
// HTTP/2 over one connection on libnghttp2 (the 1.52 API: mem_recv/mem_send, submit_request with
// an nghttp2_data_provider): one request per stream, up to min(streams, the server's
// SETTINGS_MAX_CONCURRENT_STREAMS) in flight, a stream slot free again the moment its response
// ends. The model is h2load's Http2Session.
//  - Windows are large (2^30-1 for the connection and every stream, as h2load), push is off.
//  - Header name/value arrays are built once per template (NO_COPY: they point into the plan).
//  - GOAWAY: no new streams; streams <= last_stream_id finish, the refused ones go back to the
//    owner (SessionEvents::on_refused) to be sent again on another connection.
//  - A header block in more than 8 CONTINUATION frames (a CONTINUATION flood, as nghttp2 1.61
//    limits it) ends the connection with its own error; nghttp2 1.52 would read it forever.
//  - RST_STREAM: counted per error code; the stream's request is an error unless it was refused
//    before any response byte (REFUSED_STREAM), which is re-sent.
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/generator/base/plan.hpp"
#include "core/generator/sessions/session.hpp"
#include "core/http/request_template.hpp"

namespace loadbench::generator {

// Throws ConfigError for what cannot be sent (as serialize_request does). Connection-specific
// HTTP/1.1 headers (Connection, Keep-Alive, Transfer-Encoding, Upgrade, ...) are dropped; a Host
// header becomes :authority.
H2Request make_h2_request(const http::RequestTemplate& request, const std::string& default_target,
                          const std::string& authority, bool tls);

class Http2Session final : public StreamSession {
public:
    // streams: the most streams in flight (the server's limit may be lower); one_per_connection:
    // connection-per-request mode (one stream, then the connection is done); window: the
    // flow-control window offered for each stream and for the connection, in bytes.
    static constexpr int32_t kLargeWindow = (int32_t{1} << kDefaultH2WindowBits) - 1;
    Http2Session(const std::vector<H2Request>& requests, int streams, bool one_per_connection, SessionEvents& events,
                 int32_t window = kLargeWindow);
    ~Http2Session() override;
    Http2Session(const Http2Session&) = delete;
    Http2Session& operator=(const Http2Session&) = delete;

    void reset() noexcept override;
    int free_slots() const noexcept override;
    int in_flight() const noexcept override { return used_; }
    void submit(const Request& r) noexcept override;
    std::string_view output() const noexcept override;
    void wrote(size_t n, int64_t now) noexcept override;
    InputResult input(const char* data, size_t n, int64_t now) noexcept override;
    InputResult input_eof(int64_t now) noexcept override;
    bool reusable() const noexcept override;
    int64_t oldest_assigned_ns() const noexcept override;
    bool carries_counted() const noexcept override;
    size_t take_in_flight(Request* out, bool* answered, size_t capacity) noexcept override;
    const std::string& error() const noexcept override { return error_; }
    bool reads_when_idle() const noexcept override { return true; }
    bool gathers_writes() const noexcept override { return true; }
    size_t take_expired(int64_t assigned_before, Request* out, size_t capacity) noexcept override;

    // For tests: the server's GOAWAY arrived.
    bool goaway_received() const noexcept { return goaway_; }

    struct Slot {
        Request request;
        int32_t stream_id = -1;
        size_t body_offset = 0;
        int status = 0;
        bool used = false;
        bool answered = false;     // a response HEADERS frame arrived
        bool headers_out = false;  // its HEADERS frame was serialised (waiting to be written)
        uint64_t headers_end = 0;  // output offset where its HEADERS frame ends
        bool end_out = false;      // the frame with its END_STREAM was serialised (waiting to be written)
        uint64_t end_at = 0;       // output offset where that frame ends
    };

private:
    static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                         const uint8_t* value, size_t valuelen, uint8_t flags, void* user);
    static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user);
    // Every frame header from the server: ends a CONTINUATION flood (nghttp2 1.52 has no limit).
    static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user);
    static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user);
    static int on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user);
    static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user);
    static ssize_t read_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags,
                             nghttp2_data_source* source, void* user);

    Slot* slot_of(int32_t stream_id) noexcept;
    void release(Slot& s) noexcept;
    void complete(Slot& s) noexcept;
    void pump() const noexcept;

    const std::vector<H2Request>& requests_;
    std::vector<std::vector<nghttp2_nv>> nvs_;  // per template, pointing into requests_
    int streams_;
    bool one_per_connection_;
    int32_t window_;
    SessionEvents& events_;
    nghttp2_session_callbacks* callbacks_ = nullptr;
    mutable nghttp2_session* session_ = nullptr;
    std::vector<Slot> slots_;
    int used_ = 0;
    int started_ = 0;  // requests submitted on this connection
    bool goaway_ = false;
    bool failed_ = false;
    mutable std::string out_;  // serialised frames not yet taken by the transport
    mutable size_t out_pos_ = 0;
    mutable uint64_t out_base_ = 0;  // total bytes ever taken before out_[0]
    mutable bool pumping_ = false;
    mutable bool frame_ends_pending_ = false;
    static constexpr uint64_t kPendingEnd = UINT64_MAX;
    bool eof_ = false;
    bool settings_received_ = false;
    uint32_t continuations_ = 0;  // CONTINUATION frames in the header block being received
    bool flooded_ = false;        // on_begin_frame ended the session (error_ says why)
    static constexpr uint32_t kMaxContinuations = 8;
    nghttp2_option* option_ = nullptr;
    int64_t now_ = 0;
    std::string error_;
};

}  // namespace loadbench::generator
