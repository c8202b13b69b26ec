// libFuzzer target: arbitrary server bytes through the generator's incremental HTTP/1.1
// response parser, the way Http1Session::input feeds it (reads of varying size, unconsumed
// bytes carried to the next read).
//
// Besides the sanitizers' memory and UB checks it asserts what the worker relies on:
//  - consumed never exceeds what was offered;
//  - the answer does not depend on how the bytes were split: one big read and reads of the
//    size drawn from the first input byte give the same outcome, status code and keep-alive,
//    and a completed response ends at the same byte;
//  - what is carried between reads stays bounded (header block / chunk line limits), so a
//    hostile server cannot make a connection buffer grow without end.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/http/response_parser.hpp"

namespace {

using loadbench::http::ResponseParser;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "response_parser_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

struct Outcome {
    ResponseParser::Status status = ResponseParser::Status::NeedMore;
    int code = 0;
    bool keep_alive = false;
    size_t end = 0;  // offset just past the response when complete
};

Outcome feed(const uint8_t* data, size_t size, size_t step, bool head) {
    ResponseParser parser;
    parser.start(head);
    std::string carry;
    size_t base = 0;  // input offset of carry[0]
    size_t pos = 0;
    Outcome out;
    while (pos < size) {
        const size_t n = std::min(step, size - pos);
        carry.append(reinterpret_cast<const char*>(data) + pos, n);
        pos += n;
        size_t consumed = 0;
        out.status = parser.parse(carry.data(), carry.size(), consumed);
        check(consumed <= carry.size(), "consumed more than offered");
        if (out.status != ResponseParser::Status::NeedMore) {
            out.code = parser.status_code();
            out.keep_alive = parser.keep_alive();
            out.end = base + consumed;
            return out;
        }
        carry.erase(0, consumed);
        base += consumed;
        check(carry.size() <= ResponseParser::kMaxHeaderBytes + 4096 + step, "carried bytes grow without bound");
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const size_t step = static_cast<size_t>(data[0] & 0x3f) + 1;
    const bool head = data[0] & 0x40;
    ++data;
    --size;
    const Outcome whole = feed(data, size, size ? size : 1, head);
    const Outcome pieces = feed(data, size, step, head);
    // A parse error found early in pieces may be found later (or as an oversized block) in
    // one read; every other outcome must match exactly.
    if (whole.status == ResponseParser::Status::Complete || pieces.status == ResponseParser::Status::Complete) {
        check(whole.status == pieces.status, "complete in one split, not in the other");
        check(whole.code == pieces.code, "status code depends on the split");
        check(whole.keep_alive == pieces.keep_alive, "keep-alive depends on the split");
        check(whole.end == pieces.end, "response end depends on the split");
    }
    return 0;
}
