// TLS through rustls (ring crypto), the opt-in `--tls-library rustls`, compiled where CMake found
// a Rust toolchain and built the loadbench_rustls crate (rustls/: Cargo.toml, src/lib.rs).
//
// Why: a full TLS 1.3 handshake through OpenSSL 3.0 spends most of its client CPU outside the
// cryptography (decoder and provider set-up for the server's certificate, method fetches,
// short-lived allocations), and Debian's wolfSSL has no assembly for X25519 or P-256. rustls
// with ring does the same handshake - X25519 key exchange, the server's CertificateVerify
// signature checked with the key from its certificate - with assembly crypto and little around
// it: see reports/generator-vs-peers.md for the measured cost per handshake of all three.
//
// What is checked is what the OpenSSL client checks: the key exchange and the server's
// signature always; with verification on (--verify or --cacert), also the chain against the CA
// file (or the system's CAs) and the host name or IP address (rustls checks IP SANs itself).
#ifdef LOADBENCH_HAVE_RUSTLS

#include <stdexcept>

#include "core/config_error.hpp"
#include "core/generator/transports/rustls/rustls_client.h"
#include "core/generator/transports/transport.hpp"

namespace loadbench::generator {
namespace {

IoStatus to_status(LbRustlsStatus s) noexcept { return static_cast<IoStatus>(s); }

class RustlsContext final : public TlsContext {
public:
    RustlsContext(bool verify, const std::string& cacert, bool session_resumption) {
        char error[512] = {};
        config_ = lb_rustls_config_new(verify, cacert.c_str(), session_resumption, error, sizeof error);
        if (!config_) {
            if (!cacert.empty()) throw ConfigError(error);
            throw std::runtime_error(std::string("rustls: ") + error);
        }
    }
    ~RustlsContext() override { lb_rustls_config_free(config_); }
    RustlsContext(const RustlsContext&) = delete;
    RustlsContext& operator=(const RustlsContext&) = delete;

    void offer_alpn(std::string_view protocols) override {
        lb_rustls_config_set_alpn(config_, reinterpret_cast<const unsigned char*>(protocols.data()), protocols.size());
    }
    std::unique_ptr<Transport> make_transport(const std::string& server_name, bool server_name_is_ip) const override;

    const LbConfig* native() const noexcept { return config_; }

private:
    LbConfig* config_ = nullptr;
};

class RustlsTransport final : public Transport {
public:
    RustlsTransport(const RustlsContext& context, const std::string& server_name)
        : context_(context), server_name_(server_name) {}
    ~RustlsTransport() override { release(); }

    void attach(int fd) override {
        // A fresh rustls connection per TCP connection (its state is the handshake's).
        release();
        fd_ = fd;
        char error[512] = {};
        conn_ = lb_rustls_conn_new(context_.native(), server_name_.c_str(), error, sizeof error);
        attach_error_ = conn_ ? std::string() : std::string(error);
    }
    IoStatus handshake() override { return conn_ ? to_status(lb_rustls_handshake(conn_, fd_)) : IoStatus::Error; }
    std::string_view alpn() const override {
        size_t len = 0;
        const unsigned char* p = conn_ ? lb_rustls_alpn(conn_, &len) : nullptr;
        return p ? std::string_view(reinterpret_cast<const char*>(p), len) : std::string_view();
    }
    IoStatus read(char* buffer, size_t capacity, size_t& n) override {
        n = 0;
        if (!conn_) return IoStatus::Error;
        return to_status(lb_rustls_read(conn_, fd_, reinterpret_cast<unsigned char*>(buffer), capacity, &n));
    }
    IoStatus write(const char* data, size_t len, size_t& n) override {
        n = 0;
        if (!conn_) return IoStatus::Error;
        return to_status(lb_rustls_write(conn_, fd_, reinterpret_cast<const unsigned char*>(data), len, &n));
    }
    // No close_notify (as the OpenSSL transport): the socket is closed right after.
    void detach() override { release(); }
    bool needs_handshake() const override { return true; }
    bool resumed() const override { return conn_ && lb_rustls_resumed(conn_); }
    std::string last_error() const override { return conn_ ? lb_rustls_last_error(conn_) : attach_error_; }

private:
    void release() noexcept {
        if (conn_) lb_rustls_conn_free(conn_);
        conn_ = nullptr;
        fd_ = -1;
    }

    const RustlsContext& context_;
    std::string server_name_;
    LbConn* conn_ = nullptr;
    int fd_ = -1;
    std::string attach_error_;
};

std::unique_ptr<Transport> RustlsContext::make_transport(const std::string& server_name, bool) const {
    // rustls tells an IP literal from a DNS name itself: no SNI for it, and an IP SAN check.
    return std::make_unique<RustlsTransport>(*this, server_name);
}

}  // namespace

std::unique_ptr<TlsContext> make_rustls_context(bool verify, const std::string& cacert, bool session_resumption) {
    return std::make_unique<RustlsContext>(verify, cacert, session_resumption);
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_RUSTLS
