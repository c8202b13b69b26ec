#pragma once
// The Date header value, formatted once per second rather than once per request.
#include <array>
#include <ctime>
#include <string_view>

namespace loadbench::server {

// IMF-fixdate (RFC 9110 5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT": always 29 characters.
inline constexpr std::size_t http_date_length = 29;
void format_http_date(std::time_t seconds_since_epoch, char (&out)[http_date_length + 1]);

// One per worker (no sharing between threads). refresh() is cheap when the second is unchanged.
class DateCache {
public:
    DateCache();
    // Returns true when the formatted value changed (a new second began).
    bool refresh(std::time_t now);
    bool refresh();  // uses the wall clock
    std::string_view value() const { return {text_, http_date_length}; }
    std::time_t second() const { return second_; }

private:
    std::time_t second_ = -1;
    char text_[http_date_length + 1] = {};
};

}  // namespace loadbench::server
