#pragma once
// The machine-readable lines the native server prints on stdout (one JSON object per line):
// ready (listening), error (could not start), stopped (graceful exit, with counters).
#include "core/server/base/counters.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loadbench::server {

std::string json_escape(std::string_view text);
std::string ready_line(long pid, std::string_view host, std::optional<std::uint16_t> http_port,
                       std::optional<std::uint16_t> https_port, unsigned workers,
                       std::string_view unix_path = {});  // "unix": only when it serves one
std::string error_line(std::string_view message);
std::string stopped_line(const CountersSnapshot& counters);

}  // namespace loadbench::server
