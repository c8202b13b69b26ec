// libFuzzer target: a keep-alive connection's worth of server bytes through the generator's
// Http1Session, exactly as a Connection delivers them: read-sized pieces (the size drawn from
// the first byte), every free slot refilled after each read (one, or a pipeline of 4 when bit 6
// of the first byte is set), a connection the server ended taken back and reset as the Worker
// does, the peer's close (input_eof) at the end. Besides the sanitizers' checks it asserts what
// the load logic relies on:
//  - at most one response per request (never more than were in flight), and every response
//    has a status 100..999;
//  - an Error always has a reason;
//  - the bytes carried between reads stay bounded (header block + chunk line limits), so a
//    hostile server cannot make a connection's buffer grow without end;
//  - the slot accounting holds: in_flight() + free_slots() == depth, and every request ends
//    answered or taken back, once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/generator/sessions/http1_session.hpp"
#include "core/http/response_parser.hpp"

namespace {

using namespace loadbench::generator;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "http1_session_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

struct Events final : SessionEvents {
    int responses = 0;
    int sends = 0;
    void on_request_sent(Request&, int64_t) noexcept override { ++sends; }
    void on_response(Request&, int status, int64_t) noexcept override {
        check(status >= 100 && status <= 999, "response without a valid status");
        ++responses;
    }
};

constexpr std::size_t kCarryBound =
    loadbench::http::ResponseParser::kMaxHeaderBytes + loadbench::http::ResponseParser::kMaxChunkLineBytes + 65536;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    static const std::vector<std::string> wire = {"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                                                  "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"};
    static const std::vector<bool> head = {false, true};
    const uint32_t which = (data[0] & 0x80) ? 1 : 0;
    const int depth = (data[0] & 0x40) ? 4 : 1;
    const std::size_t piece = (data[0] & 0x3f) == 0 ? 65536 : (data[0] & 0x3f);
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    --size;

    Events events;
    Http1Session session(wire, head, events, depth);
    int submitted = 0;
    int taken = 0;
    std::size_t offset = 0;
    bool failed = false;
    while (offset < size && !failed) {
        if (!session.reusable()) {
            // The Connection closes here; the Worker takes what was never answered to send again.
            Request out[4];
            bool answered[4];
            taken += static_cast<int>(session.take_in_flight(out, answered, 4));
            check(session.in_flight() == 0, "requests left behind after take_in_flight");
            session.reset();
        }
        while (session.free_slots() > 0) {
            Request r;
            r.template_index = which;
            r.counted = true;
            session.submit(r);
            ++submitted;
        }
        session.wrote(session.output().size(), 1);
        check(session.output().empty(), "bytes left to write after writing them all");
        check(session.in_flight() + session.free_slots() == depth, "slot accounting");
        const std::size_t n = std::min(piece, size - offset);
        const int before = events.responses;
        const int in_flight = session.in_flight();
        failed = session.input(bytes + offset, n, 2) == InputResult::Error;
        offset += n;
        check(events.responses - before <= in_flight, "more responses than requests in flight");
        check(session.carried_bytes() <= kCarryBound, "carried bytes keep growing");
        if (failed) check(!session.error().empty(), "error without a reason");
    }
    if (!failed && session.in_flight() > 0 && session.input_eof(3) == InputResult::Error)
        check(!session.error().empty(), "error without a reason at the close");
    check(events.responses + taken <= submitted && events.sends == submitted, "outcomes and sends add up");
    return 0;
}
