#pragma once
// A request template is method + path + headers + body, serialised to wire bytes once before
// the run; the hot path only ever writes those bytes.
#include <string>
#include <utility>
#include <vector>

namespace loadbench::http {

struct RequestTemplate {
    std::string method = "GET";
    std::string target;  // empty: the URL's path + query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
};

// What every encoder (HTTP/1.1 bytes, HTTP/2 header blocks) checks before framing anything:
// the method and header names are tokens, the path and header values hold nothing that would
// split the message. Returns the target to send (the template's own, else default_target).
// Throws ConfigError.
const std::string& checked_target(const RequestTemplate& request, const std::string& default_target);

// host_header: the Host value; keepalive=false adds `Connection: close`. User headers win over
// the defaults (Host, User-Agent, Content-Length are only added when the user gave none).
// Throws ConfigError for a method or header that would corrupt the request line.
std::string serialize_request(const RequestTemplate& request, const std::string& default_target,
                              const std::string& host_header, bool keepalive);

}  // namespace loadbench::http
