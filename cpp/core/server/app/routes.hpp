#pragma once
// Which handler a request goes to: a pure function of method and target, so it is
// unit-tested without sockets.
#include <ostream>  // Boost 1.81 verb.hpp streams a string_view without including it

#include <boost/beast/http/verb.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace loadbench::server {

enum class Route : std::uint8_t {
    plaintext,           // GET / and GET /plaintext (and HEAD for every GET route)
    json,                // GET /json
    echo,                // POST /echo
    delay,               // GET /delay?ms=N
    not_found,           // no such path
    method_not_allowed,  // known path, other method
    bad_request,         // a target we cannot make sense of (e.g. /delay without a valid ms)
};

struct RouteMatch {
    Route route = Route::not_found;
    std::uint32_t delay_ms = 0;       // for Route::delay
    std::string_view allowed_method;  // for Route::method_not_allowed: the Allow header value ("GET, HEAD" or "POST")
};

// The longest /delay the server accepts: a timer, not a way to hold connections forever.
inline constexpr std::uint32_t max_delay_ms = 600'000;

RouteMatch match_route(boost::beast::http::verb method, std::string_view target);

// Splits "path?query" (the query without '?'; empty when absent).
std::string_view target_path(std::string_view target);
std::string_view target_query(std::string_view target);

// The value of `name` in an application/x-www-form-urlencoded query, e.g. ms in "a=1&ms=20".
std::optional<std::string_view> query_parameter(std::string_view query, std::string_view name);

// "20" -> 20; anything that is not a whole number in [0, max_delay_ms] -> nullopt.
std::optional<std::uint32_t> parse_delay_ms(std::string_view text);

}  // namespace loadbench::server
