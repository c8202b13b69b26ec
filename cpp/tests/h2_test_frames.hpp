#pragma once
// Raw HTTP/2 frames for the unit tests that feed a session bytes (server and generator alike).
#include <cstdint>
#include <string>

namespace loadbench::testing {

// A frame: 9-byte header (24-bit length, type, flags, 31-bit stream id) and the payload.
inline std::string h2_frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream,
                            const std::string& payload = "") {
    std::string f;
    f += static_cast<char>((payload.size() >> 16) & 0xff);
    f += static_cast<char>((payload.size() >> 8) & 0xff);
    f += static_cast<char>(payload.size() & 0xff);
    f += static_cast<char>(type);
    f += static_cast<char>(flags);
    for (int shift = 24; shift >= 0; shift -= 8) f += static_cast<char>((stream >> shift) & 0xff);
    return f + payload;
}

}  // namespace loadbench::testing
