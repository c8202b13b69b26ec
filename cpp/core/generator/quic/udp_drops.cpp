#include "core/generator/quic/udp_drops.hpp"

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace loadbench::generator {

namespace {

// /proc/net/snmp: a header line "Udp: InDatagrams NoPorts InErrors ..." then a values line
// "Udp: 1 2 3 ...": the fields are found by name, as their order differs between kernels.
bool add_snmp4(UdpDrops& out) {
    FILE* f = std::fopen("/proc/net/snmp", "re");
    if (f == nullptr) return false;
    std::vector<std::string> names;
    char line[1024];
    bool found = false;
    while (std::fgets(line, sizeof line, f) != nullptr) {
        if (std::strncmp(line, "Udp: ", 5) != 0) continue;
        std::istringstream words(line + 5);
        if (names.empty()) {
            for (std::string w; words >> w;) names.push_back(w);
            continue;
        }
        uint64_t v = 0;
        for (size_t i = 0; i < names.size() && (words >> v); ++i) {
            if (names[i] == "InErrors") out.in_errors += v;
            if (names[i] == "RcvbufErrors") out.rcvbuf_errors += v;
        }
        found = true;
        break;
    }
    std::fclose(f);
    return found;
}

// /proc/net/snmp6: "Udp6InErrors  0" one counter a line (absent without IPv6: nothing to add).
void add_snmp6(UdpDrops& out) {
    FILE* f = std::fopen("/proc/net/snmp6", "re");
    if (f == nullptr) return;
    char name[128];
    unsigned long long v = 0;
    while (std::fscanf(f, "%127s %llu", name, &v) == 2) {
        if (std::strcmp(name, "Udp6InErrors") == 0) out.in_errors += v;
        if (std::strcmp(name, "Udp6RcvbufErrors") == 0) out.rcvbuf_errors += v;
    }
    std::fclose(f);
}

}  // namespace

UdpDrops read_udp_drops() noexcept {
    UdpDrops out;
    try {
        out.read = add_snmp4(out);
        if (out.read) add_snmp6(out);
    } catch (...) {  // std::string / istringstream allocation: no figure rather than a wrong one
        out = UdpDrops{};
    }
    return out;
}

}  // namespace loadbench::generator
