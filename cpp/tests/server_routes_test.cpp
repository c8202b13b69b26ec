#include "core/server/app/routes.hpp"

#include <gtest/gtest.h>

using namespace loadbench::server;
using boost::beast::http::verb;

TEST(ServerRoutes, PlaintextOnRootAndPlaintext) {
    EXPECT_EQ(match_route(verb::get, "/").route, Route::plaintext);
    EXPECT_EQ(match_route(verb::get, "/plaintext").route, Route::plaintext);
    EXPECT_EQ(match_route(verb::get, "/plaintext?cache=no").route, Route::plaintext);
}

TEST(ServerRoutes, JsonEchoAndUnknown) {
    EXPECT_EQ(match_route(verb::get, "/json").route, Route::json);
    EXPECT_EQ(match_route(verb::post, "/echo").route, Route::echo);
    EXPECT_EQ(match_route(verb::get, "/json/").route, Route::not_found);
    EXPECT_EQ(match_route(verb::get, "/plaintextx").route, Route::not_found);
    EXPECT_EQ(match_route(verb::get, "").route, Route::not_found);
    EXPECT_EQ(match_route(verb::get, "http://host/").route, Route::not_found);
}

TEST(ServerRoutes, WrongMethodNamesTheAllowedOne) {
    const auto post_json = match_route(verb::post, "/json");
    EXPECT_EQ(post_json.route, Route::method_not_allowed);
    EXPECT_EQ(post_json.allowed_method, "GET, HEAD");  // HEAD is served wherever GET is
    const auto get_echo = match_route(verb::get, "/echo");
    EXPECT_EQ(get_echo.route, Route::method_not_allowed);
    EXPECT_EQ(get_echo.allowed_method, "POST");
    EXPECT_EQ(match_route(verb::put, "/delay?ms=1").route, Route::method_not_allowed);
}

TEST(ServerRoutes, DelayParsesMs) {
    const auto m = match_route(verb::get, "/delay?ms=250");
    EXPECT_EQ(m.route, Route::delay);
    EXPECT_EQ(m.delay_ms, 250u);
    EXPECT_EQ(match_route(verb::get, "/delay?x=1&ms=7&y=2").delay_ms, 7u);
    EXPECT_EQ(match_route(verb::get, "/delay?ms=0").route, Route::delay);
}

TEST(ServerRoutes, DelayWithoutValidMsIsBadRequest) {
    for (const char* target : {"/delay", "/delay?", "/delay?ms", "/delay?ms=", "/delay?ms=abc", "/delay?ms=-5",
                               "/delay?ms=12x", "/delay?ms=600001", "/delay?ms=99999999999999"}) {
        EXPECT_EQ(match_route(verb::get, target).route, Route::bad_request) << target;
    }
}

TEST(ServerRoutes, QueryHelpers) {
    EXPECT_EQ(target_path("/a?b=c"), "/a");
    EXPECT_EQ(target_query("/a?b=c"), "b=c");
    EXPECT_EQ(target_query("/a"), "");
    EXPECT_EQ(query_parameter("a=1&b=2", "b"), std::optional<std::string_view>("2"));
    EXPECT_EQ(query_parameter("a=1&bb=2", "b"), std::nullopt);
    EXPECT_EQ(query_parameter("flag&b=", "flag"), std::optional<std::string_view>(""));
    EXPECT_EQ(parse_delay_ms("600000"), std::optional<std::uint32_t>(600000));
    EXPECT_EQ(parse_delay_ms(""), std::nullopt);
}
