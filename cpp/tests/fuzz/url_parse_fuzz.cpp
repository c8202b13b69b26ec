// libFuzzer target: arbitrary text through the generator's URL parser.
//
// A bad URL must end in ConfigError (one message for the user), never in another exception,
// a crash or UB; a URL that parses must be usable: a host, a port, a target starting with '/'.
#include "core/http/url.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const loadbench::http::Url url = loadbench::http::parse_url(text);
        if (url.host.empty() || url.port == 0 || url.target.empty() || url.target.front() != '/') {
            std::fprintf(stderr, "url_parse_fuzz: accepted an unusable URL\n");
            std::abort();
        }
        (void)url.host_header();
    } catch (const loadbench::ConfigError&) {
        // the expected outcome for bad input
    }
    return 0;
}
