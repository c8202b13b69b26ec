#pragma once
// What this binary was built with: the environment block of a report names it.
#include <string>

namespace loadbench {

struct BuildInfo {
    std::string version;   // loadbench version
    std::string compiler;  // e.g. "GNU 12.2.0"
    std::string boost;     // e.g. "1.81.0"
    std::string openssl;   // runtime OpenSSL version string
    std::string build_type;
};

BuildInfo build_info();

}  // namespace loadbench
