#include "core/server/h2_frame_scanner.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace loadbench::server;

namespace {
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string& payload) {
    std::string f;
    f += static_cast<char>(payload.size() >> 16);
    f += static_cast<char>(payload.size() >> 8);
    f += static_cast<char>(payload.size());
    f += static_cast<char>(type);
    f += static_cast<char>(flags);
    for (int i = 3; i >= 0; --i) f += static_cast<char>(stream >> (8 * i));
    return f + payload;
}

// Every header the scanner finds when `input` arrives in pieces of `piece` bytes.
std::vector<FrameHeader> scan(const std::string& input, std::size_t piece) {
    Http2FrameScanner scanner;
    std::vector<FrameHeader> found;
    for (std::size_t at = 0; at < input.size(); at += piece) {
        const std::string_view read = std::string_view(input).substr(at, piece);
        std::size_t pos = 0;
        while (const auto f = scanner.next(read, pos)) {
            pos = f->end;
            found.push_back(f->header);
        }
    }
    return found;
}
}  // namespace

TEST(Http2FrameScanner, FindsEveryHeaderAfterThePrefaceWhateverTheReadSizes) {
    const std::string input = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, "") + frame(1, 5, 1, "abc") +
                              frame(0, 1, 1, std::string(20000, 'x')) + frame(3, 0, 0x7fffffff, "1234");
    for (std::size_t piece : {1u, 2u, 7u, 9u, 24u, 100u, 16384u, 100000u}) {
        const auto found = scan(input, piece);
        ASSERT_EQ(found.size(), 4u) << piece;
        EXPECT_EQ(found[0].type, 4);
        EXPECT_EQ(found[1].type, 1);
        EXPECT_EQ(found[1].flags, 5);
        EXPECT_EQ(found[1].length, 3u);
        EXPECT_EQ(found[2].length, 20000u);
        EXPECT_EQ(found[3].stream_id, 0x7fffffff);
    }
}

TEST(Http2FrameScanner, ReportsWhereEachHeaderEnds) {
    const std::string input = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(6, 0, 0, "12345678");
    Http2FrameScanner scanner;
    const auto f = scanner.next(input, 0);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->end, 24u + 9u);
    EXPECT_FALSE(scanner.next(input, f->end));
}
