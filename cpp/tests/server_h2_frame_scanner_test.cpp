#include "core/server/h2/h2_frame_scanner.hpp"

#include "h2_test_frames.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace loadbench::server;

namespace {
using loadbench::testing::h2_frame;

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
    const std::string input = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(4, 0, 0, "") + h2_frame(1, 5, 1, "abc") +
                              h2_frame(0, 1, 1, std::string(20000, 'x')) + h2_frame(3, 0, 0x7fffffff, "1234");
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
    const std::string input = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2_frame(6, 0, 0, "12345678");
    Http2FrameScanner scanner;
    const auto f = scanner.next(input, 0);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->end, 24u + 9u);
    EXPECT_FALSE(scanner.next(input, f->end));
}
