#pragma once
// Response bytes. The constant responses (plaintext, json) are serialised once per worker
// and rebuilt only when the Date second changes; every other response is appended straight
// into the connection's output buffer. No per-request allocation on either path.
#include <array>
#include <string>
#include <string_view>

namespace loadbench::server {

// The Connection header a response carries: HTTP/1.1 keep-alive needs none; an HTTP/1.0
// client that asked for keep-alive gets "keep-alive"; the last response on a connection "close".
enum class ConnectionHeader : std::uint8_t { none, keep_alive, close };
inline constexpr std::size_t connection_header_count = 3;

struct ResponseHead {
    unsigned status = 200;
    std::string_view date;
    std::string_view content_type;
    ConnectionHeader connection = ConnectionHeader::none;
    std::string_view allow;    // a 405's Allow value ("GET, HEAD"); empty: no Allow header
    std::string_view alt_svc;  // --h3: the Alt-Svc value (h3=":PORT"); empty: no Alt-Svc header
};

// Appends a complete HTTP/1.1 response (status line, headers, body) to `out`.
void append_response(std::string& out, const ResponseHead& head, std::string_view body);

// Only the head (for bodies appended separately, e.g. echo).
void append_response_head(std::string& out, const ResponseHead& head, std::size_t content_length);

class ResponseCache {
public:
    void rebuild(std::string_view date, std::string_view alt_svc);
    std::string_view plaintext(ConnectionHeader c) const { return plaintext_[index(c)]; }
    std::string_view json(ConnectionHeader c) const { return json_[index(c)]; }

private:
    static std::size_t index(ConnectionHeader c) { return static_cast<std::size_t>(c); }
    std::array<std::string, connection_header_count> plaintext_;
    std::array<std::string, connection_header_count> json_;
};

}  // namespace loadbench::server
