// TLS through wolfSSL, the opt-in alternative to OpenSSL (`--tls-library wolfssl`), compiled
// where CMake found libwolfssl (Debian: libwolfssl-dev).
//
// Why: a full TLS 1.3 handshake through OpenSSL 3.0 spends most of its CPU outside the crypto
// (decoder and provider set-up for the certificate, method fetches under read-write locks,
// malloc/free of short-lived objects). wolfSSL does the same handshake - the same X25519 key
// exchange, the same check of the server's CertificateVerify signature over the transcript -
// with far less around it: a standalone loop of full handshakes against loadbench-server
// (ECDSA P-256 certificate, X25519) measured ~400 us of client CPU per handshake with wolfSSL
// 5.5.4 vs ~540 us with OpenSSL 3.0.19, interleaved, on a busy 2-core machine.
//
// What is checked is what OpenSSL checks: the key exchange and the server's signature always;
// with verification on (--verify or --cacert), also the chain against the CA file (or the
// system's CAs) and the host name or IP address.
#ifdef LOADBENCH_HAVE_WOLFSSL

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/error-ssl.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "core/generator/transports/transport.hpp"
#include "core/config_error.hpp"

namespace loadbench::generator {

// In transport.cpp (OpenSSL): whether a DER certificate names this IP address.
bool certificate_names_ip(const unsigned char* der, size_t size, const std::string& ip);

namespace {

std::string wolf_error_string(int code) {
    char buf[WOLFSSL_MAX_ERROR_SZ];
    wolfSSL_ERR_error_string_n(static_cast<unsigned long>(code), buf, sizeof buf);
    return buf;
}

// Errors that mean "the server's certificate was not accepted" (named so the user sees why).
bool is_certificate_error(int code) {
    switch (code) {
        case ASN_NO_SIGNER_E:
        case ASN_SIG_CONFIRM_E:
        case ASN_SIG_OID_E:
        case ASN_SIG_KEY_E:
        case ASN_SIG_HASH_E:
        case ASN_AFTER_DATE_E:
        case ASN_BEFORE_DATE_E:
        case DOMAIN_NAME_MISMATCH:
        case IPADDR_MISMATCH:
        case ASN_PARSE_E:
        case ASN_SELF_SIGNED_E:
        case VERIFY_CERT_ERROR:
            return true;
        default:
            return false;
    }
}

class WolfContext final : public TlsContext {
public:
    WolfContext(bool verify, const std::string& cacert) : verify_(verify || !cacert.empty()) {
        static std::once_flag once;
        std::call_once(once, [] { wolfSSL_Init(); });
        ctx_ = wolfSSL_CTX_new(wolfSSLv23_client_method());
        if (!ctx_) throw std::runtime_error("wolfSSL_CTX_new failed");
        wolfSSL_CTX_SetMinVersion(ctx_, WOLFSSL_TLSV1_2);
        // One key share (X25519), as the OpenSSL context: P-256 stays offered for servers that
        // want it (they ask with a HelloRetryRequest).
        int groups[] = {WOLFSSL_ECC_X25519, WOLFSSL_ECC_SECP256R1};
        wolfSSL_CTX_set_groups(ctx_, groups, 2);
        if (verify_) {
            wolfSSL_CTX_set_verify(ctx_, WOLFSSL_VERIFY_PEER, nullptr);
            const int loaded = cacert.empty() ? wolfSSL_CTX_load_system_CA_certs(ctx_)
                                              : wolfSSL_CTX_load_verify_locations(ctx_, cacert.c_str(), nullptr);
            if (loaded != WOLFSSL_SUCCESS) {
                wolfSSL_CTX_free(ctx_);
                ctx_ = nullptr;
                if (!cacert.empty())
                    throw ConfigError("cannot load CA certificates from '" + cacert +
                                      "' (wolfSSL: " + wolf_error_string(loaded) + ")");
                // No system CA store: every certificate is refused at the handshake, as OpenSSL does.
                ctx_ = wolfSSL_CTX_new(wolfSSLv23_client_method());
                if (!ctx_) throw std::runtime_error("wolfSSL_CTX_new failed");
                wolfSSL_CTX_SetMinVersion(ctx_, WOLFSSL_TLSV1_2);
                wolfSSL_CTX_set_groups(ctx_, groups, 2);
                wolfSSL_CTX_set_verify(ctx_, WOLFSSL_VERIFY_PEER, nullptr);
            }
        } else {
            // The chain is not checked; the server's CertificateVerify signature (TLS 1.3) or its
            // signed key exchange (TLS 1.2) still is, with the key from its certificate.
            wolfSSL_CTX_set_verify(ctx_, WOLFSSL_VERIFY_NONE, nullptr);
        }
    }
    ~WolfContext() override {
        if (ctx_) wolfSSL_CTX_free(ctx_);
    }
    WolfContext(const WolfContext&) = delete;
    WolfContext& operator=(const WolfContext&) = delete;

    void offer_alpn(std::string_view protocols) override {
        // wolfSSL takes a comma-separated list, not the wire format.
        alpn_.clear();
        for (size_t i = 0; i < protocols.size();) {
            const size_t len = static_cast<unsigned char>(protocols[i]);
            if (!alpn_.empty()) alpn_ += ',';
            alpn_.append(protocols.substr(i + 1, len));
            i += 1 + len;
        }
    }
    std::unique_ptr<Transport> make_transport(const std::string& server_name, bool server_name_is_ip) const override;

    WOLFSSL_CTX* native() const noexcept { return ctx_; }
    bool verify() const noexcept { return verify_; }
    const std::string& alpn() const noexcept { return alpn_; }

private:
    WOLFSSL_CTX* ctx_ = nullptr;
    bool verify_;
    std::string alpn_;
};

class WolfTransport final : public Transport {
public:
    WolfTransport(const WolfContext& context, const std::string& server_name, bool server_name_is_ip)
        : context_(context), server_name_(server_name), server_name_is_ip_(server_name_is_ip) {}
    ~WolfTransport() override { release(); }

    void attach(int fd) override {
        // A fresh WOLFSSL per connection: wolfSSL has no cheap reset for a client object, and
        // its allocation is small next to the handshake.
        release();
        error_.clear();
        ssl_ = wolfSSL_new(context_.native());
        if (!ssl_) {
            error_ = "wolfSSL_new failed";
            return;
        }
        wolfSSL_set_fd(ssl_, fd);
        if (!server_name_is_ip_)
            wolfSSL_UseSNI(ssl_, WOLFSSL_SNI_HOST_NAME, server_name_.data(),
                           static_cast<unsigned short>(server_name_.size()));
        if (context_.verify() && !server_name_is_ip_) wolfSSL_check_domain_name(ssl_, server_name_.c_str());
        if (!context_.alpn().empty()) {
            std::string list = context_.alpn();  // wolfSSL_UseALPN takes a mutable buffer
            wolfSSL_UseALPN(ssl_, list.data(), static_cast<unsigned int>(list.size()), WOLFSSL_ALPN_FAILED_ON_MISMATCH);
        }
    }
    IoStatus handshake() override {
        if (!ssl_) return IoStatus::Error;
        errno = 0;
        const int r = wolfSSL_connect(ssl_);
        if (r != WOLFSSL_SUCCESS) return classify(r);
        if (context_.verify() && server_name_is_ip_ && !ip_matches()) {
            error_ = "certificate: IP address mismatch (the certificate does not name " + server_name_ + ")";
            return IoStatus::Error;
        }
        return IoStatus::Ok;
    }
    std::string_view alpn() const override {
        char* name = nullptr;
        unsigned short size = 0;
        if (!ssl_ || wolfSSL_ALPN_GetProtocol(ssl_, &name, &size) != WOLFSSL_SUCCESS || !name) return {};
        return std::string_view(name, size);
    }
    IoStatus read(char* buffer, size_t capacity, size_t& n) override {
        n = 0;
        errno = 0;
        const int r = wolfSSL_read(ssl_, buffer, static_cast<int>(capacity > INT32_MAX ? INT32_MAX : capacity));
        if (r > 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        return classify(r);
    }
    IoStatus write(const char* data, size_t len, size_t& n) override {
        n = 0;
        errno = 0;
        const int r = wolfSSL_write(ssl_, data, static_cast<int>(len > INT32_MAX ? INT32_MAX : len));
        if (r > 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        return classify(r);
    }
    // No close_notify (as the OpenSSL transport): the socket is closed right after.
    void detach() override { release(); }
    bool needs_handshake() const override { return true; }
    bool resumed() const override { return false; }
    std::string last_error() const override { return error_; }

private:
    void release() {
        if (ssl_) wolfSSL_free(ssl_);
        ssl_ = nullptr;
    }

    // wolfSSL 5.5 (as Debian builds it) does not match IP-address subjectAltNames, so an IP
    // literal target is checked here, after the chain was verified inside the handshake and
    // before any request is sent: OpenSSL's X509_check_ip_asc on the peer's certificate.
    bool ip_matches() const {
        WOLFSSL_X509* peer = wolfSSL_get_peer_certificate(ssl_);
        if (!peer) return false;
        int size = 0;
        const unsigned char* der = wolfSSL_X509_get_der(peer, &size);
        const bool ok = der && size > 0 && certificate_names_ip(der, static_cast<size_t>(size), server_name_);
        wolfSSL_X509_free(peer);
        return ok;
    }

    IoStatus classify(int r) {
        const int e = wolfSSL_get_error(ssl_, r);
        switch (e) {
            case WOLFSSL_ERROR_WANT_READ:
                return IoStatus::WantRead;
            case WOLFSSL_ERROR_WANT_WRITE:
                return IoStatus::WantWrite;
            case WOLFSSL_ERROR_ZERO_RETURN:
            case SOCKET_PEER_CLOSED_E:
                return IoStatus::Eof;  // close_notify, or the peer closed without one
            case SOCKET_ERROR_E:
                if (errno == 0 || errno == ECONNRESET) {
                    error_ = errno ? std::string("socket error: ") + std::strerror(errno) : "connection closed";
                    return errno ? IoStatus::Error : IoStatus::Eof;
                }
                error_ = std::string("socket error: ") + std::strerror(errno);
                return IoStatus::Error;
            default:
                error_ = (is_certificate_error(e) ? "certificate: " : "") + wolf_error_string(e) + " (wolfSSL " +
                         std::to_string(e) + ")";
                return IoStatus::Error;
        }
    }

    const WolfContext& context_;
    std::string server_name_;
    bool server_name_is_ip_;
    WOLFSSL* ssl_ = nullptr;
    std::string error_;
};

std::unique_ptr<Transport> WolfContext::make_transport(const std::string& server_name, bool server_name_is_ip) const {
    return std::make_unique<WolfTransport>(*this, server_name, server_name_is_ip);
}

}  // namespace

std::unique_ptr<TlsContext> make_wolfssl_context(bool verify, const std::string& cacert, bool session_resumption) {
    if (session_resumption)
        throw ConfigError("TLS session resumption is implemented for --tls-library openssl and rustls, not wolfssl");
    return std::make_unique<WolfContext>(verify, cacert);
}

}  // namespace loadbench::generator

#endif  // LOADBENCH_HAVE_WOLFSSL
