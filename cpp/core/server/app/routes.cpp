#include "core/server/app/routes.hpp"

#include <charconv>

namespace loadbench::server {

namespace http = boost::beast::http;

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

std::string_view target_query(std::string_view target) {
    const auto q = target.find('?');
    return q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
}

std::optional<std::string_view> query_parameter(std::string_view query, std::string_view name) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name) {
            return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        }
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
    return std::nullopt;
}

std::optional<std::uint32_t> parse_delay_ms(std::string_view text) {
    std::uint32_t value = 0;
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end || value > max_delay_ms) return std::nullopt;
    return value;
}

namespace {
constexpr std::string_view get_allow = "GET, HEAD";
}  // namespace

RouteMatch match_route(http::verb method, std::string_view target) {
    const std::string_view path = target_path(target);
    // HEAD is GET without the content (RFC 9110 §9.3.2): every GET route answers it too.
    auto only = [&](http::verb wanted, Route route, std::string_view allow) {
        RouteMatch m;
        if (method == wanted || (method == http::verb::head && wanted == http::verb::get)) {
            m.route = route;
        } else {
            m.route = Route::method_not_allowed;
            m.allowed_method = allow;
        }
        return m;
    };
    if (path == "/plaintext" || path == "/") return only(http::verb::get, Route::plaintext, get_allow);
    if (path == "/json") return only(http::verb::get, Route::json, get_allow);
    if (path == "/echo") return only(http::verb::post, Route::echo, "POST");
    if (path == "/delay") {
        RouteMatch m = only(http::verb::get, Route::delay, get_allow);
        if (m.route != Route::delay) return m;
        const auto ms = query_parameter(target_query(target), "ms");
        const auto parsed = ms ? parse_delay_ms(*ms) : std::nullopt;
        if (!parsed) {
            m.route = Route::bad_request;
            return m;
        }
        m.delay_ms = *parsed;
        return m;
    }
    return RouteMatch{};
}

}  // namespace loadbench::server
