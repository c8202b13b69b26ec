#include "core/server/base/options.hpp"

#include <gtest/gtest.h>

using namespace loadbench::server;

namespace {
ServerConfig parse(std::vector<std::string> args) { return parse_server_args(args).config; }

std::string error_of(std::vector<std::string> args) {
    try {
        parse_server_args(args);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST(ServerConfig, Defaults) {
    const auto c = parse({});
    EXPECT_EQ(c.host, "127.0.0.1");
    EXPECT_TRUE(c.serve_http);
    EXPECT_EQ(c.http_port, 0);
    EXPECT_FALSE(c.serve_https);
    EXPECT_EQ(c.workers, 1u);
    EXPECT_EQ(c.max_body_bytes, 1024u * 1024u);
    EXPECT_EQ(c.max_header_bytes, 8u * 1024u);
    EXPECT_EQ(c.accept, AcceptStrategy::reuseport);
}

TEST(ServerConfig, EveryFlag) {
    const auto c = parse({"--host",
                          "::1",
                          "--port",
                          "8080",
                          "--tls",
                          "--tls-port=8443",
                          "--cert",
                          "c.pem",
                          "--key",
                          "k.pem",
                          "--workers",
                          "4",
                          "--max-body",
                          "10",
                          "--header-timeout-ms",
                          "500",
                          "--idle-timeout-ms",
                          "700",
                          "--accept",
                          "shared"});
    EXPECT_EQ(c.host, "::1");
    EXPECT_EQ(c.http_port, 8080);
    EXPECT_TRUE(c.serve_https);
    EXPECT_EQ(c.https_port, 8443);
    EXPECT_EQ(c.cert_file, "c.pem");
    EXPECT_EQ(c.key_file, "k.pem");
    EXPECT_EQ(c.workers, 4u);
    EXPECT_EQ(c.max_body_bytes, 10u);
    EXPECT_EQ(c.header_timeout_ms, 500u);
    EXPECT_EQ(c.idle_timeout_ms, 700u);
    EXPECT_EQ(c.accept, AcceptStrategy::shared);
    EXPECT_FALSE(parse({"--no-http", "--tls"}).serve_http);
    EXPECT_EQ(parse({"--unix", "/tmp/s.sock"}).unix_path, "/tmp/s.sock");
    EXPECT_EQ(parse({"--unix=/tmp/s.sock", "--tls"}).unix_path, "/tmp/s.sock");
    EXPECT_TRUE(parse({}).unix_path.empty());
}

TEST(ServerConfig, ErrorsNameTheFlag) {
    EXPECT_NE(error_of({"--port", "65536"}).find("--port"), std::string::npos);
    EXPECT_NE(error_of({"--port"}).find("--port needs a value"), std::string::npos);
    EXPECT_NE(error_of({"--workers", "0"}).find("--workers"), std::string::npos);
    EXPECT_NE(error_of({"--workers", "2x"}).find("'2x'"), std::string::npos);
    EXPECT_NE(error_of({"--accept", "x"}).find("--accept"), std::string::npos);
    EXPECT_NE(error_of({"--frobnicate"}).find("unknown flag '--frobnicate'"), std::string::npos);
    EXPECT_NE(error_of({"--no-http"}).find("nothing to serve"), std::string::npos);
    EXPECT_NE(error_of({"--tls", "--cert", "c"}).find("--cert and --key"), std::string::npos);
    EXPECT_NE(error_of({"--cert", "c", "--key", "k"}).find("need --tls"), std::string::npos);
    EXPECT_NE(error_of({"--tls=yes"}).find("takes no value"), std::string::npos);
    EXPECT_NE(error_of({"--unix", ""}).find("--unix needs a socket path"), std::string::npos);
    EXPECT_NE(error_of({"--unix", "/s", "--no-http", "--tls"}).find("--unix serves plain HTTP"), std::string::npos);
    EXPECT_NE(error_of({"--unix", "/" + std::string(200, 'x')}).find("--unix: the path is longer"), std::string::npos);
}

TEST(ServerConfig, HelpSkipsValidation) {
    EXPECT_TRUE(parse_server_args({"--no-http", "--help"}).help_requested);
    EXPECT_NE(server_usage().find("--header-timeout-ms"), std::string::npos);
}
