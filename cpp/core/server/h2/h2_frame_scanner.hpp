#pragma once
// Finds the frame headers in the bytes a client sends on an HTTP/2 connection, as they arrive.
//
// Http2Session judges some frames before nghttp2 acts on them (the flood limits, and the
// closed-stream rules nghttp2 1.52 cannot apply): nghttp2 drops a DATA frame on a stream it
// has forgotten without any callback, so the session must see the frame in the byte stream.
// The scanner skips the 24-byte client preface, then walks header (9 bytes) + payload, across
// reads, copying nothing but a header split between two reads.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace loadbench::server {

struct FrameHeader {
    std::uint32_t length = 0;
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::int32_t stream_id = 0;
};

class Http2FrameScanner {
public:
    struct Found {
        std::size_t end;  // offset just past the header's last byte in this read
        FrameHeader header;
    };
    // The next frame header that completes in data[from, size), or nullopt (the scanner keeps
    // its place: call again with the next read from offset 0).
    std::optional<Found> next(std::string_view data, std::size_t from);

private:
    static constexpr std::size_t header_size = 9;
    std::size_t preface_left_ = 24;
    std::uint64_t payload_left_ = 0;
    std::array<unsigned char, header_size> header_{};
    std::size_t header_have_ = 0;
};

}  // namespace loadbench::server
