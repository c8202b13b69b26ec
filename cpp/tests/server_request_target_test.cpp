#include "core/server/h1/request_target.hpp"

#include <gtest/gtest.h>

using namespace loadbench::server;

TEST(ValidHost, AcceptsWhatTheGrammarAllows) {
    for (const char* host : {"localhost", "localhost:8080", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:443",
                             "[v1.fe80::a+en1]", "a-b.example_c~", "%41bc", "a,b", "", ":80", "host:"}) {
        EXPECT_TRUE(valid_host(host)) << host;
    }
}

TEST(ValidHost, RefusesUserinfoPathsListsAndSpaces) {
    for (const char* host : {"user@localhost", "localhost/path", "a, b", "a b", "localhost:80:80", "localhost:8x",
                             "[::1", "[]", "[::1]x", "[::1]:a", "%4", "%zz", "a\tb", "a?b", "a#b", "[g::1]"}) {
        EXPECT_FALSE(valid_host(host)) << host;
    }
}

TEST(AbsoluteForm, SplitsAuthorityAndPath) {
    auto form = parse_absolute_form("http://localhost:8080/plaintext?x=1");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->authority, "localhost:8080");
    EXPECT_EQ(form->path, "/plaintext?x=1");
    form = parse_absolute_form("HTTPS://[::1]");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->authority, "[::1]");
    EXPECT_EQ(form->path, "");
    form = parse_absolute_form("http://h?q");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->path, "?q");
}

TEST(AbsoluteForm, RefusesOtherSchemesEmptyHostsAndUserinfo) {
    for (const char* target : {"ftp://localhost/", "http://", "http:///path", "http://:80/", "http://user@localhost/",
                               "http://a b/", "localhost:80", "/plaintext", "http://h#frag", "http:/x"}) {
        EXPECT_FALSE(parse_absolute_form(target)) << target;
    }
}
