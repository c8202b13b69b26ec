#pragma once
// The server side TLS context: TLS 1.2 and 1.3, with either the user's PEM files or a
// self-signed EC P-256 certificate (CN=localhost) generated in memory at start.
#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

namespace loadbench::server {

struct ServerConfig;

// A self-signed EC P-256 certificate and its key, PEM encoded (exposed for tests and tools).
struct SelfSignedCertificate {
    std::string certificate_pem;
    std::string private_key_pem;
};

// Throws std::runtime_error with one clear message (names the file and OpenSSL's reason).
// Without --cert/--key: `generated` when given (HTTP/3 serves the same one), else a new one.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const ServerConfig& config,
                                                            const SelfSignedCertificate* generated = nullptr);
SelfSignedCertificate generate_self_signed_certificate(const std::string& common_name = "localhost");

}  // namespace loadbench::server
