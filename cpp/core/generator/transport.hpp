#pragma once
// The byte stream under a Connection: plain TCP or TLS behind one small interface (the model
// is wrk's sock vtable), so the connection state machine is written once.
#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace loadbench::generator {

enum class IoStatus { Ok, WantRead, WantWrite, Eof, Error };

class Transport {
public:
    virtual ~Transport() = default;
    // Binds a freshly connected non-blocking socket (the fd stays owned by the Connection).
    virtual void attach(int fd) = 0;
    // Connection setup after TCP connect (the TLS handshake); Ok when the stream is ready.
    virtual IoStatus handshake() = 0;
    virtual IoStatus read(char* buffer, size_t capacity, size_t& n) = 0;
    virtual IoStatus write(const char* data, size_t len, size_t& n) = 0;
    // Forget the connection (before the fd is closed); the object is reused for the next one.
    virtual void detach() = 0;
    // Whether bytes already decrypted are waiting (the socket will not signal them again).
    virtual bool has_buffered_input() const = 0;
    virtual bool needs_handshake() const = 0;
    // The last handshake resumed an earlier session (abbreviated, no certificate exchange).
    virtual bool resumed() const { return false; }
    // Why the last call returned Error (empty for plain sockets: errno says it).
    virtual std::string last_error() const { return {}; }
    // The protocol the server selected with ALPN (empty: none, or not TLS).
    virtual std::string_view alpn() const { return {}; }
};

// One per engine: shared by every worker (SSL_CTX is thread safe for SSL_new).
class TlsContext {
public:
    TlsContext(bool verify, const std::string& cacert, bool session_resumption);
    ~TlsContext();
    TlsContext(const TlsContext&) = delete;
    TlsContext& operator=(const TlsContext&) = delete;
    SSL_CTX* native() const noexcept { return ctx_; }
    bool verify() const noexcept { return verify_; }
    bool session_resumption() const noexcept { return session_resumption_; }
    // Offer exactly these protocols with ALPN (wire format: length-prefixed names), e.g. "\x02h2".
    void offer_alpn(std::string_view protocols);

private:
    SSL_CTX* ctx_ = nullptr;
    bool verify_;
    bool session_resumption_;
};

std::unique_ptr<Transport> make_plain_transport();
// server_name: sent as SNI unless it is an IP literal (RFC 6066 forbids literals there) and, when
// verifying, checked against the certificate.
std::unique_ptr<Transport> make_tls_transport(const TlsContext& context, const std::string& server_name,
                                              bool server_name_is_ip);

}  // namespace loadbench::generator
