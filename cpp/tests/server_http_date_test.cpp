#include "core/server/app/http_date.hpp"

#include <gtest/gtest.h>

using namespace loadbench::server;

TEST(HttpDate, FormatsImfFixdate) {
    char text[http_date_length + 1];
    format_http_date(784111777, text);  // RFC 9110's example instant
    EXPECT_STREQ(text, "Sun, 06 Nov 1994 08:49:37 GMT");
    format_http_date(0, text);
    EXPECT_STREQ(text, "Thu, 01 Jan 1970 00:00:00 GMT");
    format_http_date(1709251199, text);  // leap day, last second
    EXPECT_STREQ(text, "Thu, 29 Feb 2024 23:59:59 GMT");
}

TEST(HttpDate, CacheChangesOnlyWhenTheSecondDoes) {
    DateCache cache;
    EXPECT_TRUE(cache.refresh(784111777));
    EXPECT_EQ(cache.value(), "Sun, 06 Nov 1994 08:49:37 GMT");
    EXPECT_FALSE(cache.refresh(784111777));
    EXPECT_TRUE(cache.refresh(784111778));
    EXPECT_EQ(cache.value(), "Sun, 06 Nov 1994 08:49:38 GMT");
    EXPECT_EQ(cache.value().size(), http_date_length);
}
