#pragma once
// Incremental HTTP/1.1 response parser for the load generator.
//
// It keeps only what it must: status code, keep-alive and how the body is delimited
// (Content-Length, chunked, until close, or none for 1xx/204/304/HEAD). Body bytes are
// counted and skipped, never copied. The caller owns the bytes: parse() reports how many it
// consumed, and anything not consumed (a partial header block or chunk-size line, always
// small) must be presented again, followed by new data, on the next call.
#include <cstddef>
#include <cstdint>

namespace loadbench::http {

class ResponseParser {
public:
    enum class Status { NeedMore, Complete, Error };

    static constexpr size_t kMaxHeaderBytes = 64 * 1024;
    static constexpr size_t kMaxChunkLineBytes = 4096;

    // Prepare for the next response. A HEAD response never has a body.
    void start(bool head_request) noexcept;
    Status parse(const char* data, size_t len, size_t& consumed) noexcept;
    // The peer closed: a body delimited by the close is now complete, anything else is cut off.
    Status finish_at_eof() noexcept;

    int status_code() const noexcept { return status_code_; }
    bool keep_alive() const noexcept { return keep_alive_; }
    // True once any byte of this response arrived (a close before that is "no response").
    bool started() const noexcept { return started_; }
    const char* error() const noexcept { return error_; }

private:
    enum class State { Headers, Body, UntilClose, ChunkSize, ChunkData, ChunkDataEnd, Trailers, Done, Failed };

    Status fail(const char* why) noexcept {
        state_ = State::Failed;
        error_ = why;
        return Status::Error;
    }
    // Parses a complete header block of `len` bytes (ending in CRLFCRLF).
    Status on_header_block(const char* data, size_t len) noexcept;

    State state_ = State::Headers;
    bool head_request_ = false;
    bool started_ = false;
    bool keep_alive_ = true;
    int status_code_ = 0;
    uint64_t remaining_ = 0;
    size_t header_scan_from_ = 0;
    uint8_t chunk_end_seen_ = 0;
    const char* error_ = nullptr;
};

}  // namespace loadbench::http
