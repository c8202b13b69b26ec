#include "core/http/response_parser.hpp"

#include <cstring>
#include <string_view>

namespace loadbench::http {

namespace {

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != b[i]) return false;
    return true;
}

// Does the comma-separated header value contain `token` (lower case) as one of its elements?
bool has_token(std::string_view value, std::string_view token) noexcept {
    size_t pos = 0;
    while (pos <= value.size()) {
        size_t end = value.find(',', pos);
        if (end == std::string_view::npos) end = value.size();
        std::string_view item = value.substr(pos, end - pos);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (iequals(item, token)) return true;
        pos = end + 1;
    }
    return false;
}

const char* find_crlf(const char* begin, const char* end) noexcept {
    const char* p = begin;
    while (p < end) {
        p = static_cast<const char*>(std::memchr(p, '\r', static_cast<size_t>(end - p)));
        if (!p || p + 1 >= end) return nullptr;
        if (p[1] == '\n') return p;
        ++p;
    }
    return nullptr;
}

}  // namespace

void ResponseParser::start(bool head_request) noexcept {
    state_ = State::Headers;
    head_request_ = head_request;
    started_ = false;
    keep_alive_ = true;
    status_code_ = 0;
    remaining_ = 0;
    header_scan_from_ = 0;
    chunk_end_seen_ = 0;
    error_ = nullptr;
}

ResponseParser::Status ResponseParser::on_header_block(const char* data, size_t len) noexcept {
    const char* end = data + len;
    const char* line_end = find_crlf(data, end);
    std::string_view status_line(data, static_cast<size_t>(line_end - data));
    // "HTTP/1.x SSS[ reason]"
    if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
        (status_line.size() > 12 && status_line[12] != ' '))
        return fail("malformed status line");
    const char minor = status_line[7];
    if (minor != '0' && minor != '1') return fail("unsupported HTTP version");
    int code = 0;
    for (int i = 9; i < 12; ++i) {
        const char c = status_line[static_cast<size_t>(i)];
        if (c < '0' || c > '9') return fail("malformed status code");
        code = code * 10 + (c - '0');
    }
    if (code < 100) return fail("malformed status code");
    status_code_ = code;

    bool keep_alive = minor == '1';
    bool chunked = false;
    bool have_length = false;
    uint64_t content_length = 0;
    const char* line = line_end + 2;
    while (line < end) {
        const char* eol = find_crlf(line, end);
        if (!eol || eol == line) break;  // the empty line that ends the block
        std::string_view header(line, static_cast<size_t>(eol - line));
        line = eol + 2;
        const auto colon = header.find(':');
        if (colon == std::string_view::npos || colon == 0) return fail("malformed header line");
        std::string_view name = header.substr(0, colon);
        std::string_view value = header.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        switch (name.size()) {
            case 14:
                if (iequals(name, "content-length")) {
                    if (value.empty()) return fail("empty Content-Length");
                    uint64_t n = 0;
                    for (char c : value) {
                        if (c < '0' || c > '9') return fail("malformed Content-Length");
                        if (n > (UINT64_MAX - 9) / 10) return fail("Content-Length overflows");
                        n = n * 10 + static_cast<uint64_t>(c - '0');
                    }
                    if (have_length && n != content_length) return fail("conflicting Content-Length headers");
                    have_length = true;
                    content_length = n;
                }
                break;
            case 17:
                if (iequals(name, "transfer-encoding")) chunked = has_token(value, "chunked");
                break;
            case 10:
                if (iequals(name, "connection")) {
                    if (has_token(value, "close"))
                        keep_alive = false;
                    else if (has_token(value, "keep-alive"))
                        keep_alive = true;
                }
                break;
            default:
                break;
        }
    }
    keep_alive_ = keep_alive;

    if (code < 200) {
        if (code == 101) return fail("unexpected 101 Switching Protocols");
        state_ = State::Headers;  // interim response: the real one follows
        return Status::NeedMore;
    }
    if (head_request_ || code == 204 || code == 304) {
        state_ = State::Done;
    } else if (chunked) {
        state_ = State::ChunkSize;
    } else if (have_length) {
        remaining_ = content_length;
        state_ = content_length ? State::Body : State::Done;
    } else {
        state_ = State::UntilClose;
        keep_alive_ = false;
    }
    return state_ == State::Done ? Status::Complete : Status::NeedMore;
}

ResponseParser::Status ResponseParser::parse(const char* data, size_t len, size_t& consumed) noexcept {
    consumed = 0;
    if (len) started_ = true;
    while (true) {
        const char* p = data + consumed;
        const size_t avail = len - consumed;
        switch (state_) {
            case State::Headers: {
                // Look for the blank line, resuming where the last look stopped.
                const size_t from = header_scan_from_ > 3 ? header_scan_from_ - 3 : 0;
                const char* found = nullptr;
                for (const char* q = p + from; avail >= 4 && q + 4 <= p + avail;) {
                    q = find_crlf(q, p + avail);
                    if (!q) break;
                    if (q + 4 <= p + avail && q[2] == '\r' && q[3] == '\n') {
                        found = q;
                        break;
                    }
                    q += 2;
                }
                if (!found) {
                    header_scan_from_ = avail;
                    if (avail > kMaxHeaderBytes) return fail("response header block larger than 64 KiB");
                    if (avail >= 5 && std::memcmp(p, "HTTP/", 5) != 0)
                        return fail("response does not start with HTTP/");
                    return Status::NeedMore;
                }
                const size_t block = static_cast<size_t>(found - p) + 4;
                header_scan_from_ = 0;
                const Status s = on_header_block(p, block);
                consumed += block;
                if (s != Status::NeedMore) return s;
                break;  // continue with the body (or the next header block after a 1xx)
            }
            case State::Body: {
                if (!avail) return Status::NeedMore;
                const uint64_t take = avail < remaining_ ? avail : remaining_;
                consumed += static_cast<size_t>(take);
                remaining_ -= take;
                if (remaining_ == 0) {
                    state_ = State::Done;
                    return Status::Complete;
                }
                return Status::NeedMore;
            }
            case State::UntilClose:
                consumed = len;
                return Status::NeedMore;
            case State::ChunkSize: {
                const char* eol = find_crlf(p, p + avail);
                if (!eol) {
                    if (avail > kMaxChunkLineBytes) return fail("chunk-size line too long");
                    return Status::NeedMore;
                }
                uint64_t size = 0;
                const char* q = p;
                if (q == eol) return fail("empty chunk-size line");
                for (; q < eol && *q != ';' && *q != ' ' && *q != '\t'; ++q) {
                    const char c = lower(*q);
                    int digit;
                    if (c >= '0' && c <= '9')
                        digit = c - '0';
                    else if (c >= 'a' && c <= 'f')
                        digit = c - 'a' + 10;
                    else
                        return fail("malformed chunk size");
                    if (size > (UINT64_MAX >> 4)) return fail("chunk size overflows");
                    size = (size << 4) | static_cast<uint64_t>(digit);
                }
                if (q == p) return fail("malformed chunk size");
                consumed += static_cast<size_t>(eol - p) + 2;
                if (size == 0) {
                    state_ = State::Trailers;
                } else {
                    remaining_ = size;
                    state_ = State::ChunkData;
                }
                break;
            }
            case State::ChunkData: {
                if (!avail) return Status::NeedMore;
                const uint64_t take = avail < remaining_ ? avail : remaining_;
                consumed += static_cast<size_t>(take);
                remaining_ -= take;
                if (remaining_ == 0) {
                    state_ = State::ChunkDataEnd;
                    chunk_end_seen_ = 0;
                }
                break;
            }
            case State::ChunkDataEnd: {
                if (!avail) return Status::NeedMore;
                const char expected = chunk_end_seen_ == 0 ? '\r' : '\n';
                if (*p != expected) return fail("chunk data not followed by CRLF");
                ++consumed;
                if (++chunk_end_seen_ == 2) state_ = State::ChunkSize;
                break;
            }
            case State::Trailers: {
                const char* eol = find_crlf(p, p + avail);
                if (!eol) {
                    if (avail > kMaxHeaderBytes) return fail("trailer section too large");
                    return Status::NeedMore;
                }
                consumed += static_cast<size_t>(eol - p) + 2;
                if (eol == p) {
                    state_ = State::Done;
                    return Status::Complete;
                }
                break;
            }
            case State::Done:
                return Status::Complete;
            case State::Failed:
                return Status::Error;
        }
    }
}

ResponseParser::Status ResponseParser::finish_at_eof() noexcept {
    if (state_ == State::UntilClose) {
        state_ = State::Done;
        return Status::Complete;
    }
    if (state_ == State::Done) return Status::Complete;
    return fail("connection closed before the response was complete");
}

}  // namespace loadbench::http
