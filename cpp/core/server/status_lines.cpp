#include "core/server/status_lines.hpp"

#include <cstdio>

namespace loadbench::server {

std::string json_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
    return out;
}

namespace {
std::string port_or_null(std::optional<std::uint16_t> port) { return port ? std::to_string(*port) : "null"; }
}  // namespace

std::string ready_line(long pid, std::string_view host, std::optional<std::uint16_t> http_port,
                       std::optional<std::uint16_t> https_port, unsigned workers, std::string_view unix_path) {
    return R"({"event":"ready","pid":)" + std::to_string(pid) + R"(,"host":)" + json_escape(host) + R"(,"http_port":)" +
           port_or_null(http_port) + R"(,"https_port":)" + port_or_null(https_port) + R"(,"workers":)" +
           std::to_string(workers) + (unix_path.empty() ? "" : R"(,"unix":)" + json_escape(unix_path)) + "}";
}

std::string error_line(std::string_view message) { return R"({"event":"error","error":)" + json_escape(message) + "}"; }

std::string stopped_line(const CountersSnapshot& counters) {
    std::string line = R"({"event":"stopped","connections_accepted":)" + std::to_string(counters.connections_accepted) +
                       R"(,"connections_open":)" + std::to_string(counters.connections_open) + R"(,"requests":{)";
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        if (i) line += ',';
        line += json_escape(to_string(static_cast<RequestKind>(i)));
        line += ':';
        line += std::to_string(counters.requests[i]);
    }
    line += R"(},"requests_total":)" + std::to_string(counters.requests_total());
    line += R"(,"h1":{"connections":)" + std::to_string(counters.h1_connections()) + R"(,"requests":)" +
            std::to_string(counters.h1_requests()) + "}";
    const auto block = [&line](const char* protocol, const auto& counts) {
        line += R"(,")";
        line += protocol;
        line += R"(":{)";
        char sep = ' ';
        each_counter(counts, [&](const char* name, std::uint64_t value) {
            if (sep == ',') line += ',';
            sep = ',';
            line += '"';
            line += name;
            line += R"(":)";
            line += std::to_string(value);
        });
        line += '}';
    };
    block("h2", counters.h2);
    block("h3", counters.h3);
    line += '}';
    return line;
}

}  // namespace loadbench::server
