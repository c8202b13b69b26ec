// libFuzzer target: a whole keep-alive connection's worth of server bytes through the
// generator's ResponseParser (response_parser_fuzz checks one response's split-independence).
//
// The input is delivered the way the generator's Worker delivers socket reads: in pieces
// (sizes drawn from the first byte), with the unconsumed tail carried over into the next
// parse call, responses back to back on one connection (keep-alive), and the peer's close
// (finish_at_eof) at the end. Besides the sanitizers' checks it asserts what the Worker
// relies on:
//  - consumed never exceeds what was offered;
//  - the carried tail stays far below the Worker's 256 KiB read buffer (a parser that keeps
//    asking for more without consuming would otherwise leave the Worker reading into a
//    zero-size buffer, a spin);
//  - a complete response has a status code in 100..999 and an error has a reason.
#include "core/http/response_parser.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using loadbench::http::ResponseParser;

constexpr std::size_t worker_read_capacity = 256 * 1024;  // as generator::Worker::kReadCapacity

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "response_sequence_fuzz: invariant broken: %s\n", what);
        std::abort();
    }
}

void check_outcome(const ResponseParser& parser, ResponseParser::Status status) {
    if (status == ResponseParser::Status::Complete) {
        check(parser.status_code() >= 100 && parser.status_code() <= 999, "complete response without a valid status");
    } else if (status == ResponseParser::Status::Error) {
        check(parser.error() != nullptr && *parser.error() != '\0', "error without a reason");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool head_request = data[0] & 0x80;
    const std::size_t piece = (data[0] & 0x3f) == 0 ? 65536 : (data[0] & 0x3f);
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    --size;

    ResponseParser parser;
    parser.start(head_request);
    std::string carry;
    std::size_t offset = 0;
    ResponseParser::Status status = ResponseParser::Status::NeedMore;
    while (offset < size && status != ResponseParser::Status::Error) {
        const std::size_t n = std::min(piece, size - offset);
        carry.append(bytes + offset, n);
        offset += n;
        // Parse what is buffered; a completed response makes room for the next one.
        while (true) {
            std::size_t consumed = 0;
            status = parser.parse(carry.data(), carry.size(), consumed);
            check(consumed <= carry.size(), "consumed more than offered");
            check_outcome(parser, status);
            carry.erase(0, consumed);
            if (status != ResponseParser::Status::Complete) break;
            parser.start(head_request);
            if (carry.empty()) break;
        }
        if (status == ResponseParser::Status::NeedMore) {
            check(carry.size() + piece < worker_read_capacity / 2, "unconsumed bytes keep growing");
        }
    }
    if (status == ResponseParser::Status::NeedMore) check_outcome(parser, parser.finish_at_eof());
    return 0;
}
