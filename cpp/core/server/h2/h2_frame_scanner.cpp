#include "core/server/h2/h2_frame_scanner.hpp"

#include <algorithm>
#include <cstring>

namespace loadbench::server {

std::optional<Http2FrameScanner::Found> Http2FrameScanner::next(std::string_view data, std::size_t from) {
    std::size_t pos = from;
    while (pos < data.size()) {
        const std::size_t available = data.size() - pos;
        if (preface_left_ > 0) {
            const std::size_t n = std::min(preface_left_, available);
            preface_left_ -= n;
            pos += n;
        } else if (payload_left_ > 0) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, available));
            payload_left_ -= n;
            pos += n;
        } else {
            const std::size_t n = std::min(header_size - header_have_, available);
            std::memcpy(header_.data() + header_have_, data.data() + pos, n);
            header_have_ += n;
            pos += n;
            if (header_have_ < header_size) break;
            header_have_ = 0;
            FrameHeader h;
            h.length = (std::uint32_t{header_[0]} << 16) | (std::uint32_t{header_[1]} << 8) | header_[2];
            h.type = header_[3];
            h.flags = header_[4];
            h.stream_id = static_cast<std::int32_t>(((std::uint32_t{header_[5]} & 0x7f) << 24) |
                                                    (std::uint32_t{header_[6]} << 16) |
                                                    (std::uint32_t{header_[7]} << 8) | header_[8]);
            payload_left_ = h.length;
            return Found{pos, h};
        }
    }
    return std::nullopt;
}

}  // namespace loadbench::server
