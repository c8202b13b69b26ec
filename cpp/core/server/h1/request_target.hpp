#pragma once
// The Host field and the request target of an HTTP/1.1 request, checked as RFC 9112 §3.2 says.
//
// A request names its server twice: in the Host field (exactly once in every HTTP/1.1
// request) and, in absolute-form ("GET http://host/path HTTP/1.1"), in the target. A server
// that accepts what these grammars forbid ("Host: a@b", "Host: a/b", two Host fields) may
// read a different server out of the request than a proxy or cache in front of it did - the
// disagreement request smuggling and cache poisoning are built on. So anything outside the
// grammar is a 400. Pure functions with no I/O: unit-tested (server_request_target_test.cpp)
// and reached by the request fuzzer through RequestParser.
#include <optional>
#include <string_view>

namespace loadbench::server {

// Host = uri-host [ ":" port ] (RFC 9110 §7.2, RFC 3986 §3.2.2-3.2.3): an IP-literal in
// brackets, or a reg-name (unreserved, pct-encoded and sub-delims characters), then an optional
// ":" and digits. An empty value is valid (a target URI without authority, RFC 9110 §7.2).
// No userinfo ("@"), no path ("/"), no whitespace, no list.
bool valid_host(std::string_view value);

// An absolute-form target split into its authority and what origin-form would carry.
struct AbsoluteForm {
    std::string_view authority;  // "host[:port]", a valid_host with a non-empty host
    std::string_view path;       // "/path?query" as it followed the authority: may be empty or begin with "?"
};

// "http://authority/path?query" (scheme http or https, any case; RFC 9112 §3.2.2). nullopt for
// anything else, or when the authority is empty, carries userinfo or is not a valid host
// (RFC 9110 §4.2.1: a recipient MUST reject an http URI with an empty host).
std::optional<AbsoluteForm> parse_absolute_form(std::string_view target);

}  // namespace loadbench::server
