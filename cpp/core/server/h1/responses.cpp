#include "core/server/h1/responses.hpp"

#include "core/server/app/answer.hpp"

#include <ostream>  // boost/core string_view needs it complete

#include <boost/beast/http/status.hpp>

#include <charconv>

namespace loadbench::server {

namespace {

std::string_view connection_line(ConnectionHeader c) {
    switch (c) {
        case ConnectionHeader::keep_alive:
            return "Connection: keep-alive\r\n";
        case ConnectionHeader::close:
            return "Connection: close\r\n";
        case ConnectionHeader::none:
            break;
    }
    return {};
}

void append_number(std::string& out, std::size_t n) {
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    (void)ec;
    out.append(digits, end);
}

}  // namespace

void append_response_head(std::string& out, const ResponseHead& head, std::size_t content_length) {
    namespace http = boost::beast::http;
    out += "HTTP/1.1 ";
    append_number(out, head.status);
    out += ' ';
    out += http::obsolete_reason(static_cast<http::status>(head.status));
    out += "\r\nServer: ";
    out += server_name;
    out += "\r\nDate: ";
    out += head.date;
    out += "\r\n";
    if (!head.content_type.empty()) {
        out += "Content-Type: ";
        out += head.content_type;
        out += "\r\n";
    }
    out += "Content-Length: ";
    append_number(out, content_length);
    out += "\r\n";
    out += connection_line(head.connection);
    if (!head.allow.empty()) {
        out += "Allow: ";
        out += head.allow;
        out += "\r\n";
    }
    if (!head.alt_svc.empty()) {
        out += "Alt-Svc: ";
        out += head.alt_svc;
        out += "\r\n";
    }
    out += "\r\n";
}

void append_response(std::string& out, const ResponseHead& head, std::string_view body) {
    append_response_head(out, head, body.size());
    out += body;
}

void ResponseCache::rebuild(std::string_view date, std::string_view alt_svc) {
    for (std::size_t i = 0; i < connection_header_count; ++i) {
        const auto c = static_cast<ConnectionHeader>(i);
        plaintext_[i].clear();
        append_response(plaintext_[i], {200, date, "text/plain", c, {}, alt_svc}, plaintext_body);
        json_[i].clear();
        append_response(json_[i], {200, date, "application/json", c, {}, alt_svc}, json_body);
    }
}

}  // namespace loadbench::server
