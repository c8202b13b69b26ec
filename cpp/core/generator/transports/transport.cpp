#include "core/generator/transports/transport.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "core/generator/transports/tls_library.hpp"
#include "core/http/url.hpp"

namespace loadbench::generator {

namespace {

class PlainTransport final : public Transport {
public:
    void attach(int fd) override { fd_ = fd; }
    IoStatus handshake() override { return IoStatus::Ok; }
    IoStatus read(char* buffer, size_t capacity, size_t& n) override {
        const ssize_t r = timed_ ? timed_recv(buffer, capacity) : ::recv(fd_, buffer, capacity, 0);
        if (r > 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        n = 0;
        if (r == 0) return IoStatus::Eof;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return IoStatus::WantRead;
        if (errno == EINTR) return IoStatus::WantRead;
        return IoStatus::Error;
    }
    IoStatus write(const char* data, size_t len, size_t& n) override {
        const ssize_t r = ::send(fd_, data, len, MSG_NOSIGNAL);
        if (r >= 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        n = 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return IoStatus::WantWrite;
        return IoStatus::Error;
    }
    void detach() override {
        fd_ = -1;
        timed_ = false;
    }
    bool needs_handshake() const override { return false; }

    bool time_arrivals() override {
        const int on = 1;
        timed_ = ::setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
        return timed_;
    }
    int64_t arrival_ns() const noexcept override { return arrival_ns_; }

private:
    // recvmsg with the kernel's receive time of the last segment read (TCP: tcp_recv_timestamp),
    // on CLOCK_REALTIME; moved to CLOCK_MONOTONIC by the two clocks' offset read now (their
    // rates differ by NTP's slew at most, 500 ppm: under 1 us over the 1 ms a read may wait).
    ssize_t timed_recv(char* buffer, size_t capacity) noexcept {
        iovec iov{buffer, capacity};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t r = ::recvmsg(fd_, &msg, 0);
        arrival_ns_ = 0;
        if (r <= 0) return r;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
            timespec at;
            std::memcpy(&at, CMSG_DATA(c), sizeof at);
            timespec real, mono;
            clock_gettime(CLOCK_REALTIME, &real);
            clock_gettime(CLOCK_MONOTONIC, &mono);
            const int64_t offset = (real.tv_sec - mono.tv_sec) * 1'000'000'000LL + (real.tv_nsec - mono.tv_nsec);
            arrival_ns_ = at.tv_sec * 1'000'000'000LL + at.tv_nsec - offset;
        }
        return r;
    }

    int fd_ = -1;
    bool timed_ = false;
    int64_t arrival_ns_ = 0;
};

std::string take_openssl_errors() {
    std::string out;
    unsigned long code;
    char buf[256];
    while ((code = ERR_get_error()) != 0) {
        ERR_error_string_n(code, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out;
}

// OpenSSL 3.0, the default library.
class OpenSslContext final : public TlsContext {
public:
    OpenSslContext(bool verify, const std::string& cacert, bool session_resumption);
    ~OpenSslContext() override;
    OpenSslContext(const OpenSslContext&) = delete;
    OpenSslContext& operator=(const OpenSslContext&) = delete;
    SSL_CTX* native() const noexcept { return ctx_; }
    bool verify() const noexcept { return verify_; }
    bool session_resumption() const noexcept { return session_resumption_; }
    void offer_alpn(std::string_view protocols) override;
    std::unique_ptr<Transport> make_transport(const std::string& server_name, bool server_name_is_ip) const override;

private:
    SSL_CTX* ctx_ = nullptr;
    bool verify_;
    bool session_resumption_;
};

class TlsTransport final : public Transport {
public:
    TlsTransport(const OpenSslContext& context, const std::string& server_name, bool server_name_is_ip)
        : context_(context), server_name_(server_name), server_name_is_ip_(server_name_is_ip) {
        ssl_ = SSL_new(context.native());
        if (!ssl_) throw std::runtime_error("SSL_new failed: " + take_openssl_errors());
    }
    ~TlsTransport() override {
        if (session_) SSL_SESSION_free(session_);
        if (ssl_) SSL_free(ssl_);
    }

    void attach(int fd) override {
        // One SSL object per connection slot, cleared and reused: nothing is allocated per
        // handshake that can be kept.
        SSL_clear(ssl_);
        if (context_.session_resumption() && session_) {
            SSL_set_session(ssl_, session_);
        } else {
            SSL_set_session(ssl_, nullptr);
        }
        SSL_set_app_data(ssl_, this);  // for the new-session callback
        SSL_set_fd(ssl_, fd);
        SSL_set_connect_state(ssl_);
        if (!server_name_is_ip_) SSL_set_tlsext_host_name(ssl_, server_name_.c_str());
        if (context_.verify()) {
            if (server_name_is_ip_) {
                X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), server_name_.c_str());
            } else {
                SSL_set1_host(ssl_, server_name_.c_str());
            }
        }
        error_.clear();
    }
    IoStatus handshake() override {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_do_handshake(ssl_);
        // The session to resume next time is not taken here: a TLS 1.3 ticket arrives after
        // the handshake, and the session at this point is not resumable. keep_session() gets
        // it from the context's new-session callback.
        if (r == 1) return IoStatus::Ok;
        return classify(r);
    }
    std::string_view alpn() const override {
        const unsigned char* data = nullptr;
        unsigned int len = 0;
        SSL_get0_alpn_selected(ssl_, &data, &len);
        return data ? std::string_view(reinterpret_cast<const char*>(data), len) : std::string_view();
    }
    IoStatus read(char* buffer, size_t capacity, size_t& n) override {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_read(ssl_, buffer, static_cast<int>(capacity > INT32_MAX ? INT32_MAX : capacity));
        if (r > 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        n = 0;
        return classify(r);
    }
    IoStatus write(const char* data, size_t len, size_t& n) override {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_write(ssl_, data, static_cast<int>(len > INT32_MAX ? INT32_MAX : len));
        if (r > 0) {
            n = static_cast<size_t>(r);
            return IoStatus::Ok;
        }
        n = 0;
        return classify(r);
    }
    void detach() override {
        // No close_notify: the benchmark closes the socket right after; a shutdown exchange
        // would only add a write per connection.
        SSL_set_quiet_shutdown(ssl_, 1);
        SSL_shutdown(ssl_);
    }
    bool needs_handshake() const override { return true; }
    bool resumed() const override { return SSL_session_reused(ssl_) == 1; }
    std::string last_error() const override { return error_; }

    // From the new-session callback (TLS 1.2: at the handshake's end; TLS 1.3: when a ticket
    // arrives): keep the newest resumable session, taking over the caller's reference.
    bool keep_session(SSL_SESSION* session) {
        if (!SSL_SESSION_is_resumable(session)) return false;
        if (session_) SSL_SESSION_free(session_);
        session_ = session;
        return true;
    }

private:
    IoStatus classify(int r) {
        switch (SSL_get_error(ssl_, r)) {
            case SSL_ERROR_WANT_READ:
                return IoStatus::WantRead;
            case SSL_ERROR_WANT_WRITE:
                return IoStatus::WantWrite;
            case SSL_ERROR_ZERO_RETURN:
                return IoStatus::Eof;
            case SSL_ERROR_SYSCALL:
                error_ = take_openssl_errors();
                if (error_.empty() && errno == 0) return IoStatus::Eof;  // peer closed without close_notify
                if (error_.empty()) error_ = std::string("socket error: ") + std::strerror(errno);
                return IoStatus::Error;
            default: {
                error_ = take_openssl_errors();
                const long verify = SSL_get_verify_result(ssl_);
                if (verify != X509_V_OK) error_ = std::string("certificate: ") + X509_verify_cert_error_string(verify);
                return IoStatus::Error;
            }
        }
    }

    const OpenSslContext& context_;
    std::string server_name_;
    bool server_name_is_ip_;
    SSL* ssl_ = nullptr;
    SSL_SESSION* session_ = nullptr;
    std::string error_;
};

// Without --verify nothing is checked against a trust store, yet OpenSSL would still build and
// walk the chain on every handshake (X509_STORE_CTX set-up, issuer search, the certificate's
// extensions parsed and hashed) only to ignore the verdict (~1.2 % of a handshake-only run's
// samples). This replaces exactly that step; the server's key exchange and its
// CertificateVerify signature over the transcript are checked as before.
int accept_unverified_chain(X509_STORE_CTX*, void*) { return 1; }

int on_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* transport = static_cast<TlsTransport*>(SSL_get_app_data(ssl));
    // 1: we keep the reference; 0: OpenSSL frees it.
    return transport && transport->keep_session(session) ? 1 : 0;
}

OpenSslContext::OpenSslContext(bool verify, const std::string& cacert, bool session_resumption)
    : verify_(verify || !cacert.empty()), session_resumption_(session_resumption) {
    ctx_ = SSL_CTX_new_ex(tls_client_library(), nullptr, TLS_client_method());
    if (!ctx_) throw std::runtime_error("SSL_CTX_new failed: " + take_openssl_errors());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read whole records (and more) per read() call instead of header + body separately.
    // (No SSL_MODE_RELEASE_BUFFERS: it frees and reallocates the record buffers around
    // every idle moment of a keep-alive connection.)
    SSL_CTX_set_read_ahead(ctx_, 1);
    // One key share the server accepts at once (X25519, the common default): no second
    // round trip and no P-256 key generation per handshake.
    SSL_CTX_set1_groups_list(ctx_, "X25519:P-256");
    if (!session_resumption_) {
        SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
    } else {
        SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx_, on_new_session);
    }
    if (verify_) {
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
        if (!cacert.empty()) {
            if (SSL_CTX_load_verify_locations(ctx_, cacert.c_str(), nullptr) != 1) {
                const std::string why = take_openssl_errors();
                SSL_CTX_free(ctx_);
                ctx_ = nullptr;
                throw ConfigError("cannot load CA certificates from '" + cacert + "': " + why);
            }
        } else {
            SSL_CTX_set_default_verify_paths(ctx_);
        }
    } else {
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
        SSL_CTX_set_cert_verify_callback(ctx_, accept_unverified_chain, nullptr);
    }
}

void OpenSslContext::offer_alpn(std::string_view protocols) {
    if (SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(protocols.data()),
                                static_cast<unsigned int>(protocols.size())) != 0)
        throw std::runtime_error("SSL_CTX_set_alpn_protos failed: " + take_openssl_errors());
}

OpenSslContext::~OpenSslContext() {
    if (ctx_) SSL_CTX_free(ctx_);
}

std::unique_ptr<Transport> OpenSslContext::make_transport(const std::string& server_name,
                                                          bool server_name_is_ip) const {
    return std::make_unique<TlsTransport>(*this, server_name, server_name_is_ip);
}

}  // namespace

bool certificate_names_ip(const unsigned char* der, size_t size, const std::string& ip) {
    const unsigned char* p = der;
    X509* cert = d2i_X509(nullptr, &p, static_cast<long>(size));
    if (!cert) return false;
    const bool ok = X509_check_ip_asc(cert, ip.c_str(), 0) == 1;
    X509_free(cert);
    return ok;
}

#ifdef LOADBENCH_HAVE_WOLFSSL
std::unique_ptr<TlsContext> make_wolfssl_context(bool verify, const std::string& cacert, bool session_resumption);
#endif
#ifdef LOADBENCH_HAVE_RUSTLS
std::unique_ptr<TlsContext> make_rustls_context(bool verify, const std::string& cacert, bool session_resumption);
#endif

std::vector<std::string> tls_libraries() {
    std::vector<std::string> libraries{"openssl"};
#ifdef LOADBENCH_HAVE_WOLFSSL
    libraries.push_back("wolfssl");
#endif
#ifdef LOADBENCH_HAVE_RUSTLS
    libraries.push_back("rustls");
#endif
    return libraries;
}

std::unique_ptr<TlsContext> make_tls_context(const std::string& library, bool verify, const std::string& cacert,
                                             bool session_resumption) {
    if (library.empty() || library == "openssl")
        return std::make_unique<OpenSslContext>(verify, cacert, session_resumption);
    if (library == "wolfssl") {
#ifdef LOADBENCH_HAVE_WOLFSSL
        return make_wolfssl_context(verify, cacert, session_resumption);
#else
        throw ConfigError(
            "this loadbench was built without wolfSSL: install libwolfssl-dev (apt-get install libwolfssl-dev) "
            "and reinstall loadbench");
#endif
    }
    if (library == "rustls") {
#ifdef LOADBENCH_HAVE_RUSTLS
        return make_rustls_context(verify, cacert, session_resumption);
#else
        throw ConfigError(
            "this loadbench was built without rustls: it needs a Rust toolchain (cargo, rustc >= 1.79, e.g. from "
            "rustup) when loadbench is installed; reinstall loadbench with cargo on PATH");
#endif
    }
    throw ConfigError("tls library must be 'openssl', 'wolfssl' or 'rustls', not '" + library + "'");
}

std::unique_ptr<Transport> make_plain_transport() { return std::make_unique<PlainTransport>(); }

}  // namespace loadbench::generator
