#include "core/build_info.hpp"

#include <openssl/crypto.h>

#include <boost/version.hpp>

namespace loadbench {

BuildInfo build_info() {
    BuildInfo info;
    info.version = LOADBENCH_VERSION;
    info.compiler = LOADBENCH_COMPILER;
    info.boost = std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) + "." +
                 std::to_string(BOOST_VERSION % 100);
    info.openssl = OpenSSL_version(OPENSSL_VERSION);
#ifdef NDEBUG
    info.build_type = "release";
#else
    info.build_type = "debug";
#endif
    return info;
}

}  // namespace loadbench
