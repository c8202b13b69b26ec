#pragma once
// Target URLs: http:// and https://, host names, IPv4 and [IPv6] literals, explicit ports,
// path + query; and unix:PATH, short for http://localhost/ over the AF_UNIX socket PATH (the
// form stays simple: any other Host, path or scheme is the http(s) URL plus a separate socket
// path, EngineConfig::unix_socket). Bad input throws ConfigError with one message a user can act on.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/config_error.hpp"

namespace loadbench::http {

struct Url {
    bool tls = false;
    std::string host;  // without brackets for IPv6
    bool host_is_ip_literal = false;
    uint16_t port = 0;
    std::string target = "/";  // path + query, what goes on the request line
    std::string unix_path;     // unix:PATH: the socket to connect to (empty: TCP to host:port)
    // The Host header value: host (bracketed if IPv6) plus ":port" unless it is the default.
    std::string host_header() const;
};

Url parse_url(std::string_view text);

}  // namespace loadbench::http
