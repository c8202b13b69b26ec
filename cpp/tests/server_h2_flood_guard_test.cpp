#include "core/server/h2/h2_flood_guard.hpp"

#include <nghttp2/nghttp2.h>

#include <gtest/gtest.h>

using namespace loadbench::server;
using clock_type = Http2FloodGuard::clock;

TEST(Http2FloodGuard, RapidResetIsStoppedAtTheBurstAndRefillsWithTime) {
    Http2FloodGuard guard;
    const auto t0 = clock_type::now();
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(guard.admit(NGHTTP2_RST_STREAM, 0, 4, t0), nullptr) << i;
    EXPECT_NE(guard.admit(NGHTTP2_RST_STREAM, 0, 4, t0), nullptr);
    // One second later: 33 more.
    const auto t1 = t0 + std::chrono::seconds(1);
    for (int i = 0; i < 33; ++i) ASSERT_EQ(guard.admit(NGHTTP2_RST_STREAM, 0, 4, t1), nullptr) << i;
    EXPECT_NE(guard.admit(NGHTTP2_RST_STREAM, 0, 4, t1), nullptr);
}

TEST(Http2FloodGuard, ContinuationsPerHeaderBlock) {
    Http2FloodGuard guard;
    const auto t = clock_type::now();
    for (int block = 0; block < 3; ++block) {
        ASSERT_EQ(guard.admit(NGHTTP2_HEADERS, 0, 10, t), nullptr);
        for (int i = 0; i < 8; ++i) ASSERT_EQ(guard.admit(NGHTTP2_CONTINUATION, 0, 10, t), nullptr);
    }
    EXPECT_NE(guard.admit(NGHTTP2_CONTINUATION, 0, 10, t), nullptr);
}

TEST(Http2FloodGuard, EmptyFramesAndAcksShareABudgetAcksAndEndingDataDoNot) {
    Http2FloodGuard guard;
    const auto t = clock_type::now();
    for (int i = 0; i < 5000; ++i) {
        ASSERT_EQ(guard.admit(NGHTTP2_PING, NGHTTP2_FLAG_ACK, 8, t), nullptr);
        ASSERT_EQ(guard.admit(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 0, t), nullptr);
        ASSERT_EQ(guard.admit(NGHTTP2_DATA, 0, 100, t), nullptr);
    }
    for (int i = 0; i < 500; ++i) {
        ASSERT_EQ(guard.admit(NGHTTP2_PING, 0, 8, t), nullptr);
        ASSERT_EQ(guard.admit(NGHTTP2_SETTINGS, 0, 6, t), nullptr);
    }
    EXPECT_NE(guard.admit(NGHTTP2_DATA, 0, 0, t), nullptr);
}
