#include "core/server/app/http_date.hpp"

#include <cstring>

namespace loadbench::server {

void format_http_date(std::time_t seconds_since_epoch, char (&out)[http_date_length + 1]) {
    static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm utc{};
    gmtime_r(&seconds_since_epoch, &utc);
    // Fixed-width fields written by hand: no locale, and the length is 29 by construction.
    auto two = [](char* at, int v) {
        at[0] = static_cast<char>('0' + v / 10);
        at[1] = static_cast<char>('0' + v % 10);
    };
    const int year = (utc.tm_year + 1900) % 10000;
    std::memcpy(out, days[utc.tm_wday], 3);
    std::memcpy(out + 3, ", ", 2);
    two(out + 5, utc.tm_mday);
    out[7] = ' ';
    std::memcpy(out + 8, months[utc.tm_mon], 3);
    out[11] = ' ';
    two(out + 12, year / 100);
    two(out + 14, year % 100);
    out[16] = ' ';
    two(out + 17, utc.tm_hour);
    out[19] = ':';
    two(out + 20, utc.tm_min);
    out[22] = ':';
    two(out + 23, utc.tm_sec);
    std::memcpy(out + 25, " GMT", 4);
    out[http_date_length] = '\0';
}

DateCache::DateCache() { refresh(); }

bool DateCache::refresh(std::time_t now) {
    if (now == second_) return false;
    second_ = now;
    format_http_date(now, text_);
    return true;
}

bool DateCache::refresh() { return refresh(std::time(nullptr)); }

}  // namespace loadbench::server
