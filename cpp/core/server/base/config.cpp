#include "core/server/base/config.hpp"

#include <sys/un.h>

namespace loadbench::server {

std::string_view to_string(AcceptStrategy strategy) {
    return strategy == AcceptStrategy::reuseport ? "reuseport" : "shared";
}

void validate(const ServerConfig& config) {
    if (!config.serve_http && !config.serve_https) {
        throw ConfigError("nothing to serve: --no-http needs --tls");
    }
    if (config.workers == 0) throw ConfigError("--workers must be at least 1");
    if (config.cert_file.empty() != config.key_file.empty()) {
        throw ConfigError("--cert and --key go together: give both or neither");
    }
    if (!config.cert_file.empty() && !config.serve_https) {
        throw ConfigError("--cert/--key need --tls");
    }
    if (config.host.empty()) throw ConfigError("--host must not be empty");
    // (Whether this build has HTTP/3 at all is the server's check: server.cpp.)
    if (config.h3 && !config.serve_https) {
        throw ConfigError("--h3 serves HTTP/3 on the TLS port's number over UDP: it needs --tls");
    }
    if (config.h3_early_data) {
        if (!config.h3) throw ConfigError("--h3-0rtt accepts HTTP/3 early data: it needs --h3");
        if (!config.tls_resumption)
            throw ConfigError("--h3-0rtt rides on resumed sessions: it cannot go with --no-tls-resumption");
    }
    if (!config.unix_path.empty()) {
        if (!config.serve_http) throw ConfigError("--unix serves plain HTTP: it cannot go with --no-http");
        if (config.unix_path.size() >= sizeof(sockaddr_un::sun_path))
            throw ConfigError("--unix: the path is longer than the " +
                              std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes an AF_UNIX address holds");
    }
}

}  // namespace loadbench::server
