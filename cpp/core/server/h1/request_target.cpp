#include "core/server/h1/request_target.hpp"

#include <cstddef>

namespace loadbench::server {

namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// unreserved / sub-delims (RFC 3986 §2.2-2.3): what a reg-name holds besides "%HH".
bool is_reg_name_char(char c) {
    switch (c) {
        case '-':
        case '.':
        case '_':
        case '~':
        case '!':
        case '$':
        case '&':
        case '\'':
        case '(':
        case ')':
        case '*':
        case '+':
        case ',':
        case ';':
        case '=':
            return true;
        default:
            return is_alpha(c) || is_digit(c);
    }
}

bool valid_reg_name(std::string_view name) {
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == '%') {
            if (i + 2 >= name.size() || !is_hex(name[i + 1]) || !is_hex(name[i + 2])) return false;
            i += 2;
        } else if (!is_reg_name_char(name[i])) {
            return false;
        }
    }
    return true;
}

// IP-literal without its brackets: IPv6address (hex digits, ':' and a dotted IPv4 tail) or
// IPvFuture ("v" HEXDIG+ "." then unreserved / sub-delims / ":").
bool valid_ip_literal(std::string_view literal) {
    if (literal.empty()) return false;
    if (literal[0] == 'v' || literal[0] == 'V') {
        const auto dot = literal.find('.');
        if (dot == std::string_view::npos || dot < 2 || dot + 1 == literal.size()) return false;
        for (std::size_t i = 1; i < dot; ++i) {
            if (!is_hex(literal[i])) return false;
        }
        for (std::size_t i = dot + 1; i < literal.size(); ++i) {
            if (literal[i] != ':' && !is_reg_name_char(literal[i])) return false;
        }
        return true;
    }
    bool colon = false;
    for (const char c : literal) {
        if (c == ':') {
            colon = true;
        } else if (!is_hex(c) && c != '.') {
            return false;
        }
    }
    return colon;
}

bool valid_port(std::string_view port) {
    for (const char c : port) {
        if (!is_digit(c)) return false;
    }
    return true;
}

bool iequals_ascii(std::string_view a, std::string_view lower) {
    if (a.size() != lower.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != lower[i]) return false;
    }
    return true;
}

}  // namespace

bool valid_host(std::string_view value) {
    std::string_view rest;
    if (!value.empty() && value.front() == '[') {
        const auto close = value.find(']');
        if (close == std::string_view::npos || !valid_ip_literal(value.substr(1, close - 1))) return false;
        rest = value.substr(close + 1);
    } else {
        const auto colon = value.find(':');
        if (!valid_reg_name(value.substr(0, colon))) return false;
        if (colon != std::string_view::npos) rest = value.substr(colon);
    }
    if (rest.empty()) return true;
    return rest.front() == ':' && valid_port(rest.substr(1));
}

std::optional<AbsoluteForm> parse_absolute_form(std::string_view target) {
    const auto separator = target.find("://");
    if (separator == std::string_view::npos) return std::nullopt;
    const std::string_view scheme = target.substr(0, separator);
    if (!iequals_ascii(scheme, "http") && !iequals_ascii(scheme, "https")) return std::nullopt;
    const std::string_view rest = target.substr(separator + 3);
    const auto end = rest.find_first_of("/?#");
    AbsoluteForm form;
    form.authority = rest.substr(0, end);
    if (end != std::string_view::npos) form.path = rest.substr(end);
    if (form.authority.empty() || form.authority.front() == ':' || !valid_host(form.authority)) return std::nullopt;
    if (!form.path.empty() && form.path.front() == '#') return std::nullopt;  // a fragment is never sent
    return form;
}

}  // namespace loadbench::server
