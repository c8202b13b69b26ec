// libFuzzer target: arbitrary client bytes through the server's parse-and-answer path.
//
// The input is delivered the way a Connection delivers socket reads: in pieces (sizes drawn
// from the input's first byte), into a read buffer of the same 16 KiB, through the same
// RequestProcessor, with /delay timers completed at once. Besides the sanitizers'
// memory and UB checks, it asserts the invariants a session relies on:
//  - consumed bytes never exceed what was offered;
//  - a full read buffer is always made progress on (otherwise the session would read zero
//    bytes forever: a spinning connection);
//  - every output starts with a status line.
#include "core/server/base/config.hpp"
#include "core/server/h1/request_processor.hpp"
#include "core/server/app/handler_context.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace loadbench::server;

constexpr std::size_t read_buffer_size = RequestProcessor::max_buffered_bytes;  // as Connection

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "server_request_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

ServerConfig fuzz_config() {
    ServerConfig config;
    config.max_body_bytes = 64 * 1024;  // small enough that 413 is reachable
    return config;
}

HandlerContext& context() {
    static const ServerConfig config = fuzz_config();
    static HandlerContext instance(config);
    return instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = (data[0] % 32 == 0) ? read_buffer_size : data[0] % 32;
    ++data;
    --size;

    RequestProcessor requests;
    std::string in;
    std::string out;
    std::size_t offset = 0;
    while (true) {
        const std::size_t room = read_buffer_size - in.size();
        const std::size_t n = std::min({piece, room, size - offset});
        in.append(reinterpret_cast<const char*>(data) + offset, n);
        offset += n;

        const std::size_t consumed = requests.process(context(), in.data(), in.size(), out);
        check(consumed <= in.size(), "consumed more than offered");
        in.erase(0, consumed);
        while (requests.awaiting_delay() && !requests.close_after_write()) {
            requests.finish_delay(context(), out);
            const std::size_t more = requests.process(context(), in.data(), in.size(), out);
            check(more <= in.size(), "consumed more than offered after /delay");
            in.erase(0, more);
        }
        if (!out.empty()) {
            check(out.compare(0, 9, "HTTP/1.1 ") == 0, "output does not start with a status line");
            out.clear();
        }
        if (requests.close_after_write()) break;
        check(in.size() < read_buffer_size, "read buffer full and no progress (the session would spin)");
        if (offset == size) break;
    }
    return 0;
}
