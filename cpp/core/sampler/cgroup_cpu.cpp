#include "core/sampler/cgroup_cpu.hpp"

#include <fcntl.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace loadbench::sampler {
namespace {

bool parse_unsigned(std::string_view text, std::uint64_t& value) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    (void)end;
    return ec == std::errc();
}

std::optional<std::uint64_t> read_number(const FileDescriptor& file, std::vector<char>& buffer) {
    const ReadResult text = read_whole(file, buffer);
    std::uint64_t value = 0;
    if (!text.ok || !parse_unsigned(text.text, value)) return std::nullopt;
    return value;
}

}  // namespace

std::optional<CgroupCpuUsage> parse_cgroup_cpu_stat(std::string_view text) {
    CgroupCpuUsage usage;
    bool has_usage = false;
    while (!text.empty()) {
        const std::size_t newline = text.find('\n');
        const std::string_view line = text.substr(0, newline);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
        const std::size_t space = line.find(' ');
        if (space == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, space);
        std::uint64_t usec = 0;
        if (!parse_unsigned(line.substr(space + 1), usec)) continue;
        if (key == "usage_usec") {
            usage.usage_ns = usec * 1000;
            has_usage = true;
        } else if (key == "user_usec") {
            usage.user_ns = usec * 1000;
        } else if (key == "system_usec") {
            usage.system_ns = usec * 1000;
        }
    }
    if (!has_usage) return std::nullopt;
    return usage;
}

bool CgroupCpu::open(const std::string& dir, std::string& why) {
    dir_ = dir;
    version_ = 0;
    const FileDescriptor directory = open_directory(AT_FDCWD, dir.c_str());
    if (!directory.is_open()) {
        why = "cannot open cgroup " + dir + ": " + std::strerror(errno);
        return false;
    }
    stat_ = open_read_only(directory.get(), "cpu.stat");
    if (stat_.is_open()) {
        std::vector<char> buffer(1024);
        const ReadResult text = read_whole(stat_, buffer);
        if (text.ok && parse_cgroup_cpu_stat(text.text)) {
            version_ = 2;
            return true;
        }
        stat_.reset();  // a v1 "cpu" controller's cpu.stat (throttling only): not CPU usage
    }
    stat_ = open_read_only(directory.get(), "cpuacct.usage");
    if (stat_.is_open()) {
        user_ = open_read_only(directory.get(), "cpuacct.usage_user");
        system_ = open_read_only(directory.get(), "cpuacct.usage_sys");
        version_ = 1;
        return true;
    }
    why = "cgroup " + dir + " has neither cpu.stat (v2) nor cpuacct.usage (v1)";
    return false;
}

std::optional<CgroupCpuUsage> CgroupCpu::read(std::vector<char>& buffer) const {
    if (version_ == 2) {
        const ReadResult text = read_whole(stat_, buffer);
        if (!text.ok) return std::nullopt;
        return parse_cgroup_cpu_stat(text.text);
    }
    if (version_ == 1) {
        const auto usage = read_number(stat_, buffer);
        if (!usage) return std::nullopt;
        CgroupCpuUsage out;
        out.usage_ns = *usage;
        out.user_ns = read_number(user_, buffer).value_or(0);
        out.system_ns = read_number(system_, buffer).value_or(0);
        return out;
    }
    return std::nullopt;
}

}  // namespace loadbench::sampler
