#include "core/http/url.hpp"

#include <arpa/inet.h>

#include <cctype>

namespace loadbench::http {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

[[noreturn]] void fail(std::string_view url, const std::string& why) {
    throw ConfigError("bad URL '" + std::string(url) + "': " + why);
}

}  // namespace

std::string Url::host_header() const {
    std::string h;
    if (host.find(':') != std::string::npos) {
        h.append(1, '[').append(host).append(1, ']');
    } else {
        h = host;
    }
    if ((tls && port != 443) || (!tls && port != 80)) {
        h.push_back(':');
        h.append(std::to_string(port));
    }
    return h;
}

Url parse_url(std::string_view text) {
    Url url;
    if (lower(text.substr(0, 5)) == "unix:") {
        url.unix_path = std::string(text.substr(5));
        if (url.unix_path.empty()) fail(text, "no socket path after unix: (e.g. unix:/run/app.sock)");
        url.host = "localhost";
        url.port = 80;
        return url;
    }
    const auto scheme_end = text.find("://");
    if (scheme_end == std::string_view::npos) fail(text, "it must start with http:// or https://");
    const std::string scheme = lower(text.substr(0, scheme_end));
    if (scheme == "http") {
        url.tls = false;
    } else if (scheme == "https") {
        url.tls = true;
    } else {
        fail(text, "unknown scheme '" + scheme + "' (use http or https)");
    }
    std::string_view rest = text.substr(scheme_end + 3);
    const auto authority_end = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, authority_end);
    std::string_view tail = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
    if (authority.find('@') != std::string_view::npos) fail(text, "user:password@ in URLs is not supported");
    if (authority.empty()) fail(text, "no host");

    std::string_view port_text;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) fail(text, "unterminated IPv6 literal");
        url.host = std::string(authority.substr(1, close - 1));
        in6_addr addr6{};
        if (inet_pton(AF_INET6, url.host.c_str(), &addr6) != 1) fail(text, "'" + url.host + "' is not an IPv6 address");
        url.host_is_ip_literal = true;
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') fail(text, "unexpected text after the IPv6 literal");
            port_text = after.substr(1);
            if (port_text.empty()) fail(text, "empty port");
        }
    } else {
        const auto colon = authority.rfind(':');
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
            authority = authority.substr(0, colon);
            if (port_text.empty()) fail(text, "empty port");
        }
        url.host = std::string(authority);
        if (url.host.empty()) fail(text, "no host");
        for (char c : url.host)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'))
                fail(text, "invalid character in host '" + url.host + "'");
        in_addr addr4{};
        url.host_is_ip_literal = inet_pton(AF_INET, url.host.c_str(), &addr4) == 1;
    }
    if (!port_text.empty()) {
        unsigned long port = 0;
        for (char c : port_text) {
            if (!std::isdigit(static_cast<unsigned char>(c)))
                fail(text, "port '" + std::string(port_text) + "' is not a number");
            port = port * 10 + static_cast<unsigned long>(c - '0');
            if (port > 65535) break;
        }
        if (port < 1 || port > 65535) fail(text, "port " + std::string(port_text) + " is out of range 1..65535");
        url.port = static_cast<uint16_t>(port);
    } else {
        url.port = url.tls ? 443 : 80;
    }
    const auto fragment = tail.find('#');
    if (fragment != std::string_view::npos) tail = tail.substr(0, fragment);
    if (tail.empty()) {
        url.target.assign(1, '/');
    } else if (tail.front() == '?') {
        url.target.assign(1, '/');
        url.target.append(tail);
    } else {
        url.target = std::string(tail);
    }
    for (char c : url.target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) fail(text, "spaces or control characters in the path");
    return url;
}

}  // namespace loadbench::http
