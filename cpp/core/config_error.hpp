#pragma once
#include <stdexcept>

namespace loadbench {

// A mistake in what the user asked for (never a runtime failure of the target). The bindings
// turn it into loadbench.errors.ConfigError; the message must stand on its own.
struct ConfigError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

}  // namespace loadbench
