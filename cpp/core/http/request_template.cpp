#include "core/http/request_template.hpp"

#include <cctype>

#include "core/http/url.hpp"

namespace loadbench::http {

namespace {

bool iequals(const std::string& a, const char* b) {
    size_t i = 0;
    for (; i < a.size() && b[i]; ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return i == a.size() && b[i] == '\0';
}

bool is_token(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || std::string_view("()<>@,;:\\\"/[]?={}").find(c) != std::string_view::npos)
            return false;
    }
    return true;
}

}  // namespace

const std::string& checked_target(const RequestTemplate& request, const std::string& default_target) {
    if (!is_token(request.method)) throw ConfigError("bad HTTP method '" + request.method + "'");
    const std::string& target = request.target.empty() ? default_target : request.target;
    for (char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
            throw ConfigError("bad request path '" + target + "': spaces or control characters");
    for (const auto& [name, value] : request.headers) {
        if (!is_token(name)) throw ConfigError("bad header name '" + name + "'");
        if (value.find_first_of("\r\n") != std::string::npos)
            throw ConfigError("header '" + name + "' has a line break in its value");
    }
    return target;
}

std::string serialize_request(const RequestTemplate& request, const std::string& default_target,
                              const std::string& host_header, bool keepalive) {
    const std::string& target = checked_target(request, default_target);

    bool has_host = false, has_agent = false, has_length = false, has_connection = false, chunked = false;
    std::string out;
    out.reserve(128 + request.body.size());
    out += request.method;
    out += ' ';
    out += target;
    out += " HTTP/1.1\r\n";
    for (const auto& [name, value] : request.headers) {
        has_host |= iequals(name, "host");
        has_agent |= iequals(name, "user-agent");
        has_length |= iequals(name, "content-length");
        has_connection |= iequals(name, "connection");
        chunked |= iequals(name, "transfer-encoding");
    }
    if (!has_host) out += "Host: " + host_header + "\r\n";
    if (!has_agent) out += "User-Agent: loadbench\r\n";
    for (const auto& [name, value] : request.headers) {
        out += name;
        out += ": ";
        out += value;
        out += "\r\n";
    }
    if (!has_length && !chunked &&
        (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH"))
        out += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
    if (!keepalive && !has_connection) out += "Connection: close\r\n";
    out += "\r\n";
    out += request.body;
    return out;
}

}  // namespace loadbench::http
