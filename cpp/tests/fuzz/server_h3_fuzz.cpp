// libFuzzer target: arbitrary client bytes on the client's streams through the server's HTTP/3
// half (Http3Application: nghttp3's frame and QPACK parsing, our header handling, routing, body
// limits, responses, GOAWAY, header timeouts). QUIC is a fake (FakeQuic below) that records what
// the application asks of it and delivers the bytes as ngtcp2 would after decryption - random
// datagrams would almost all die at QUIC's packet protection.
//
// Input: byte 0 - bits 0-5 the read size (0: 16 KiB), bit 7 prepends the client's control
// stream (type 0x00 and a SETTINGS frame) so most inputs get past it, bit 6 makes that SETTINGS
// allow a 4 KiB QPACK dynamic table (the server's encoder then uses it). Then chunks, each a
// header byte h: h & 0x0f selects the stream - 0..11 the request streams 0, 4, ..., 44 (one the
// client may not open yet is not delivered), 12 the control stream 2, 13 the QPACK encoder
// stream 6, 14 the decoder stream 10, 15 an action (below); bit 4 is FIN on the chunk's last
// piece; bits 5-7 and the next byte the chunk's length (up to 2047). A chunk goes in read-sized
// pieces; after each, what the application writes is drained (and acknowledged at once), /delay
// answers complete, and request streams done both ways are closed (as ngtcp2 does).
// Actions (h >> 4): 0 graceful stop (begin_shutdown), 1 / 2 the client resets / stops sending
// the request stream named by the next byte, 3 the clock jumps past every header deadline.
// At the end every timer fires and the streams settle. Besides the sanitizers, it asserts:
//  - a request stream whose FIN (or reset) arrived ends - a whole response, a reset of ours, or
//    the connection's end (an error, or a graceful stop's close) - never stuck;
//  - a complete response is one HEADERS with a status our handler produces, then DATA frames
//    holding exactly content-length bytes (none for a HEAD), nothing else;
//  - the server's control stream starts with its SETTINGS; a connection error carries an HTTP/3
//    or QPACK error code; flow-control credit given back never exceeds the bytes received, and
//    equals them on a stream that ended cleanly (else the client's window would shrink for good);
//  - one drain writes a bounded amount, and next_stream_data() runs dry (never spins).
#include "core/server/base/config.hpp"
#include "core/server/h3/h3_application.hpp"
#include "core/server/app/handler_context.hpp"
#include "core/server/app/routes.hpp"

#ifdef LOADBENCH_HAVE_HTTP3
#include <nghttp3/nghttp3.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace loadbench::server;

constexpr std::size_t read_buffer_size = 16 * 1024;
constexpr std::size_t request_streams = 12;
constexpr std::uint32_t max_streams = 4;
constexpr std::size_t max_body = 4096;
constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t header_timeout = 3'600'000 * ms;  // an hour: only action 3 or the end fires it
constexpr std::uint64_t past_every_delay = std::uint64_t{max_delay_ms} * ms + 1;
constexpr std::int64_t control_stream = 2, encoder_stream = 6, decoder_stream = 10;
constexpr std::int64_t server_control = 3, server_encoder = 7;

void check(bool ok, const char* what, std::int64_t stream_id = -1) {
    if (ok) return;
    if (stream_id >= 0) {
        std::fprintf(stderr, "server_h3_fuzz: invariant broken on stream %lld: %s\n", static_cast<long long>(stream_id),
                     what);
    } else {
        std::fprintf(stderr, "server_h3_fuzz: invariant broken: %s\n", what);
    }
    std::abort();
}

HandlerContext& context() {
    static const ServerConfig config = [] {
        ServerConfig c;
        c.max_body_bytes = max_body;     // small enough that 413 is reachable
        c.max_header_bytes = 1024;       // and 431
        c.h2_max_streams = max_streams;  // QUIC's initial_max_streams_bidi: few
        c.header_timeout_ms = static_cast<unsigned>(header_timeout / ms);
        return c;
    }();
    static HandlerContext instance(config);
    return instance;
}

// One stream as the fake QUIC connection sees it.
struct StreamState {
    std::uint64_t received = 0;  // bytes delivered to the application
    std::uint64_t credited = 0;  // flow-control credit it gave back
    bool fin_received = false;
    bool reset_by_client = false;
    bool stop_sending_by_client = false;  // its writes now fail (ngtcp2 resets the stream itself)
    bool read_shut = false;               // STOP_SENDING from us
    bool write_reset = false;             // RESET_STREAM from us
    bool fin_sent = false;
    bool closed = false;
    std::string out;  // what the application wrote on it
    bool read_done() const { return fin_received || reset_by_client || read_shut; }
    bool write_done() const { return fin_sent || write_reset; }
};

class FakeQuic final : public QuicStreams {
public:
    std::uint64_t clock = 1'000'000'000;
    std::map<std::int64_t, StreamState> streams;
    std::int64_t next_uni = server_control;

    std::uint64_t now() override { return clock; }
    bool open_uni_stream(std::int64_t& stream_id) override {
        stream_id = next_uni;
        next_uni += 4;
        return true;
    }
    void extend_max_offsets(std::int64_t stream_id, std::uint64_t size) override {
        StreamState& st = streams[stream_id];
        st.credited += size;
        check(st.credited <= st.received, "more flow-control credit given back than bytes received", stream_id);
    }
    bool shutdown_stream_read(std::int64_t stream_id, std::uint64_t) override {
        streams[stream_id].read_shut = true;
        return true;
    }
    bool shutdown_stream_write(std::int64_t stream_id, std::uint64_t) override {
        streams[stream_id].write_reset = true;
        return true;
    }
    void shutdown_stream(std::int64_t stream_id, std::uint64_t code) override {
        shutdown_stream_read(stream_id, code);
        shutdown_stream_write(stream_id, code);
    }
};

bool is_http3_error(std::uint64_t code) { return (code >= 0x100 && code <= 0x110) || (code >= 0x200 && code <= 0x202); }

// One connection's run.
class Run {
public:
    explicit Run(bool qpack_dynamic_table) : dynamic_table_(qpack_dynamic_table), app_(context(), quic_) {}

    bool start() { return app_.start(max_streams); }
    bool over() const { return error_ || closed_gracefully_; }

    void deliver(std::int64_t stream_id, const std::uint8_t* data, std::size_t size, bool fin) {
        StreamState& st = quic_.streams[stream_id];
        // QUIC delivers nothing after these (after our STOP_SENDING ngtcp2 discards what comes).
        if (st.fin_received || st.reset_by_client || st.read_shut || st.closed) return;
        st.received += size;
        st.fin_received = fin;
        if (!app_.read_stream(stream_id, data, size, fin)) fail(app_.error_code());
    }

    // The client may open request stream `index` (QUIC's stream limit, one more as each closes).
    bool may_open(std::size_t index) const { return index < allowed_streams_; }

    // Only on a stream the client has sent on (else QUIC would open it by the reset alone).
    void client_resets(std::int64_t stream_id) {
        const auto it = quic_.streams.find(stream_id);
        if (it == quic_.streams.end()) return;
        StreamState& st = it->second;
        if (st.closed || st.fin_received || st.reset_by_client) return;
        st.reset_by_client = true;
        if (!app_.reset_by_client(stream_id)) fail(0x102);
    }
    void client_stops_sending(std::int64_t stream_id) {
        const auto it = quic_.streams.find(stream_id);
        if (it == quic_.streams.end()) return;
        StreamState& st = it->second;
        if (st.closed || st.stop_sending_by_client) return;
        st.stop_sending_by_client = true;
        st.write_reset = true;  // ngtcp2 answers STOP_SENDING with RESET_STREAM itself
        if (!app_.shutdown_stream_read(stream_id)) fail(0x102);
    }
    void begin_shutdown() {
        if (shutdown_begun_) return;
        shutdown_begun_ = true;
        app_.begin_shutdown(quic_.clock + 10 * ms);
    }
    void jump_past_header_deadlines() { quic_.clock += header_timeout + 1; }

    // After each piece: /delay answers complete at once (header deadlines are an hour away).
    void after_piece() { settle(quic_.clock + past_every_delay); }
    // At the end: every timer fires.
    void finish() { settle(quic_.clock + header_timeout + past_every_delay); }

    void check_outcome() {
        const auto& streams = quic_.streams;
        if (const auto control = streams.find(server_control); control != streams.end()) {
            const std::string& out = control->second.out;
            check(out.size() >= 2 && out[0] == 0x00 && out[1] == 0x04,
                  "the server's control stream does not start with its SETTINGS");
        }
        for (const auto& [id, st] : streams) {
            if (id % 4 != 0) continue;  // request streams only
            if (!over() && (st.fin_received || st.reset_by_client)) {
                check(st.write_done(), "a request stream whose FIN or reset arrived never ended", id);
            }
            if (st.fin_sent && !st.write_reset) check_response(id, st.out);
            if (st.closed && st.fin_sent && st.fin_received && !st.write_reset && !st.read_shut) {
                check(st.credited == st.received, "a stream that ended cleanly kept flow-control credit", id);
            }
        }
    }

private:
    void fail(std::uint64_t code) {
        check(is_http3_error(code), "a connection error without an HTTP/3 error code");
        error_ = true;
    }

    void settle(std::uint64_t timers_at) {
        for (int rounds = 0; rounds < 8 && !over(); ++rounds) {
            app_.on_timer(timers_at);
            if (!drain() || over()) return;
            if (!close_finished_streams()) return;
            if (app_.drained()) closed_gracefully_ = true;  // the QUIC half sends CONNECTION_CLOSE
        }
    }

    // What the application writes, as ngtcp2_conn_writev_stream takes it; the client
    // acknowledges everything at once.
    bool drain() {
        std::size_t bytes = 0;
        std::vector<std::pair<std::int64_t, std::size_t>> acks;
        for (int round = 0;; ++round) {
            check(round < 100'000, "next_stream_data() never runs dry");
            StreamData data;
            if (!app_.next_stream_data(data)) {
                fail(app_.error_code());
                return false;
            }
            if (data.stream_id < 0) break;
            StreamState& st = quic_.streams[data.stream_id];
            check(!st.fin_sent && !st.closed, "data after the stream's FIN", data.stream_id);
            if (st.write_reset || st.stop_sending_by_client) {
                app_.shutdown_stream_write(data.stream_id);  // NGTCP2_ERR_STREAM_SHUT_WR
                st.write_reset = true;
                continue;
            }
            std::size_t size = 0;
            for (std::size_t i = 0; i < data.count; ++i) {
                st.out.append(reinterpret_cast<const char*>(data.pieces[i].data), data.pieces[i].size);
                size += data.pieces[i].size;
            }
            bytes += size;
            app_.add_write_offset(data.stream_id, size);
            if (data.fin) st.fin_sent = true;
            if (size > 0) acks.emplace_back(data.stream_id, size);
        }
        // Every response at once (each at most the body limit plus its frames), and our
        // control and QPACK streams' few KiB: nothing grows with the input itself.
        check(bytes <= request_streams * (max_body + 2048) + 64 * 1024, "one drain wrote too much");
        for (const auto& [id, size] : acks) {
            if (!app_.add_ack_offset(id, size)) {
                fail(0x102);
                return false;
            }
        }
        return true;
    }

    // ngtcp2 closes a stream once both ways are done; the client may then open one more.
    bool close_finished_streams() {
        for (auto& [id, st] : quic_.streams) {
            if (id % 4 != 0 || st.closed || !st.read_done() || !st.write_done()) continue;
            st.closed = true;
            const std::uint64_t code = (st.write_reset || st.reset_by_client || st.read_shut) ? 0x10c : 0x100;
            if (!app_.close_stream(id, code)) {
                fail(0x102);
                return false;
            }
            app_.set_max_client_streams_bidi(++allowed_streams_);
        }
        return true;
    }

    // A complete response: HEADERS with our status and content-length, then exactly that much
    // DATA (or none: a HEAD), nothing else.
    void check_response(std::int64_t id, const std::string& out) {
        std::size_t at = 0;
        bool headers = false;
        std::uint64_t content_length = 0, data_bytes = 0;
        bool decoded = false;
        while (at < out.size()) {
            std::uint64_t type = 0, length = 0;
            check(read_varint(out, at, type) && read_varint(out, at, length) && length <= out.size() - at,
                  "a response ends inside a frame", id);
            const std::string_view payload(out.data() + at, length);
            at += length;
            if (type == 0x01) {
                check(!headers, "two HEADERS frames in one response", id);
                headers = true;
                decoded = decode_headers(id, payload, content_length);
            } else {
                check(type == 0x00 && headers, "a response frame other than HEADERS then DATA", id);
                data_bytes += length;
            }
        }
        check(headers, "a response without HEADERS", id);
        if (decoded) {
            check(data_bytes == content_length || data_bytes == 0, "DATA does not hold content-length bytes", id);
        }
    }

    static bool read_varint(const std::string& s, std::size_t& at, std::uint64_t& value) {
        if (at >= s.size()) return false;
        const std::size_t n = std::size_t{1} << (static_cast<std::uint8_t>(s[at]) >> 6);
        if (s.size() - at < n) return false;
        value = static_cast<std::uint8_t>(s[at]) & 0x3f;
        for (std::size_t i = 1; i < n; ++i) value = (value << 8) | static_cast<std::uint8_t>(s[at + i]);
        at += n;
        return true;
    }

    // Decodes our field section (false: it cannot be decoded here - it uses a dynamic table
    // whose size the input's own SETTINGS chose).
    bool decode_headers(std::int64_t id, std::string_view block, std::uint64_t& content_length) {
#ifdef LOADBENCH_HAVE_HTTP3
        const bool static_only = !block.empty() && block[0] == 0;  // Required Insert Count 0
        if (!settings_known_ && !static_only) return false;
        nghttp3_qpack_decoder* decoder = nullptr;
        check(nghttp3_qpack_decoder_new(&decoder, settings_known_ && dynamic_table_ ? 4096 : 0, 16,
                                        nghttp3_mem_default()) == 0,
              "out of memory");
        if (settings_known_) {
            const std::string& enc = quic_.streams[server_encoder].out;
            if (enc.size() > 1) {
                check(nghttp3_qpack_decoder_read_encoder(decoder, reinterpret_cast<const std::uint8_t*>(enc.data()) + 1,
                                                         enc.size() - 1) == static_cast<nghttp3_ssize>(enc.size() - 1),
                      "our QPACK encoder stream does not decode");
            }
        }
        nghttp3_qpack_stream_context* stream = nullptr;
        check(nghttp3_qpack_stream_context_new(&stream, id, nghttp3_mem_default()) == 0, "out of memory");
        const auto* p = reinterpret_cast<const std::uint8_t*>(block.data());
        std::size_t left = block.size();
        unsigned status = 0;
        bool has_length = false;
        for (;;) {
            nghttp3_qpack_nv nv{};
            std::uint8_t flags = 0;
            const nghttp3_ssize n = nghttp3_qpack_decoder_read_request(decoder, stream, &nv, &flags, p, left, 1);
            check(n >= 0, "our HEADERS do not decode", id);
            check(!(flags & NGHTTP3_QPACK_DECODE_FLAG_BLOCKED), "our HEADERS are blocked after the encoder stream");
            p += n;
            left -= static_cast<std::size_t>(n);
            if (flags & NGHTTP3_QPACK_DECODE_FLAG_EMIT) {
                const nghttp3_vec name = nghttp3_rcbuf_get_buf(nv.name);
                const nghttp3_vec value = nghttp3_rcbuf_get_buf(nv.value);
                const std::string_view n_(reinterpret_cast<const char*>(name.base), name.len);
                const std::string v(reinterpret_cast<const char*>(value.base), value.len);
                if (n_ == ":status") status = static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10));
                if (n_ == "content-length") {
                    has_length = true;
                    content_length = std::strtoull(v.c_str(), nullptr, 10);
                }
                nghttp3_rcbuf_decref(nv.name);
                nghttp3_rcbuf_decref(nv.value);
            }
            if (flags & NGHTTP3_QPACK_DECODE_FLAG_FINAL) break;
            check(n > 0 || (flags & NGHTTP3_QPACK_DECODE_FLAG_EMIT), "our HEADERS end early");
        }
        nghttp3_qpack_stream_context_del(stream);
        nghttp3_qpack_decoder_del(decoder);
        static constexpr unsigned ours[] = {200, 400, 404, 405, 413, 431, 501};
        check(std::find(std::begin(ours), std::end(ours), status) != std::end(ours),
              "a status our handler does not produce", id);
        check(has_length, "a response without content-length", id);
        return true;
#else
        (void)id, (void)block, (void)content_length;
        return false;
#endif
    }

public:
    bool settings_known_ = false;  // the client's SETTINGS are the prepended ones

private:
    bool dynamic_table_;
    FakeQuic quic_;
    Http3Application app_;
    std::uint32_t allowed_streams_ = max_streams;
    bool error_ = false;
    bool closed_gracefully_ = false;
    bool shutdown_begun_ = false;
};

std::int64_t request_stream(std::size_t index) { return static_cast<std::int64_t>(4 * index); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = (data[0] % 64 == 0) ? read_buffer_size : data[0] % 64;
    const bool preamble = data[0] & 0x80;
    const bool dynamic_table = data[0] & 0x40;
    ++data;
    --size;

    Run run(dynamic_table);
    if (!run.start()) return 0;  // a build without HTTP/3
    run.after_piece();           // our control and QPACK streams go out first
    if (preamble) {
        // Control stream type, SETTINGS {QPACK_MAX_TABLE_CAPACITY 4096, QPACK_BLOCKED_STREAMS 16}
        // or an empty SETTINGS (the default: no dynamic table).
        static constexpr std::uint8_t with_table[] = {0x00, 0x04, 0x05, 0x01, 0x50, 0x00, 0x07, 0x10};
        static constexpr std::uint8_t without[] = {0x00, 0x04, 0x00};
        if (dynamic_table) {
            run.deliver(control_stream, with_table, sizeof with_table, false);
        } else {
            run.deliver(control_stream, without, sizeof without, false);
        }
        run.settings_known_ = true;
        run.after_piece();
    }
    std::size_t at = 0;
    while (at < size && !run.over()) {
        const std::uint8_t h = data[at++];
        const unsigned target = h & 0x0f;
        if (target == 15) {
            const unsigned action = h >> 4;
            const std::size_t index = at < size ? data[at] % request_streams : 0;
            if (action == 0) {
                run.begin_shutdown();
            } else if (action == 1 || action == 2) {
                ++at;
                if (action == 1) run.client_resets(request_stream(index));
                if (action == 2) run.client_stops_sending(request_stream(index));
            } else if (action == 3) {
                run.jump_past_header_deadlines();
            }
            run.after_piece();
            continue;
        }
        if (at >= size) break;
        const bool fin = h & 0x10;
        const std::size_t wanted = (static_cast<std::size_t>(h >> 5) << 8) | data[at];
        ++at;
        const std::size_t length = std::min(wanted, size - at);
        std::int64_t stream_id = -1;
        if (target < request_streams) {
            if (run.may_open(target)) stream_id = request_stream(target);
        } else {
            stream_id = target == 12 ? control_stream : target == 13 ? encoder_stream : decoder_stream;
        }
        for (std::size_t offset = 0; offset < length && !run.over();) {
            const std::size_t n = std::min(piece, length - offset);
            if (stream_id >= 0) run.deliver(stream_id, data + at + offset, n, fin && offset + n == length);
            offset += n;
            run.after_piece();
        }
        if (length == 0 && fin && stream_id >= 0 && !run.over()) {
            run.deliver(stream_id, nullptr, 0, true);
            run.after_piece();
        }
        at += length;
    }
    run.finish();
    run.check_outcome();
    return 0;
}
