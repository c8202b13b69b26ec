#pragma once
// The byte stream under a Connection: plain TCP or TLS behind one small interface (the model
// is wrk's sock vtable), so the connection state machine is written once.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
    // From now on, time each read's bytes by their arrival in the kernel (arrival_ns()). False:
    // this transport cannot (TLS reads through its library; a unix socket has no timestamps).
    virtual bool time_arrivals() { return false; }
    // When the last byte of the last read arrived (monotonic ns); 0: not known.
    virtual int64_t arrival_ns() const noexcept { return 0; }
    virtual IoStatus write(const char* data, size_t len, size_t& n) = 0;
    // Forget the connection (before the fd is closed); the object is reused for the next one.
    virtual void detach() = 0;
    virtual bool needs_handshake() const = 0;
    // The last handshake resumed an earlier session (abbreviated, no certificate exchange).
    virtual bool resumed() const { return false; }
    // Why the last call returned Error (empty for plain sockets: errno says it).
    virtual std::string last_error() const { return {}; }
    // The protocol the server selected with ALPN (empty: none, or not TLS).
    virtual std::string_view alpn() const { return {}; }
};

// One per engine, shared by every worker (each library's context is thread safe for creating
// per-connection objects). The TLS library behind it is chosen per run: OpenSSL (the default)
// or, where the build found them, wolfSSL (wolfssl_transport.cpp) or rustls (rustls_transport.cpp),
// both cheaper per full handshake.
class TlsContext {
public:
    virtual ~TlsContext() = default;
    // Offer exactly these protocols with ALPN (wire format: length-prefixed names), e.g. "\x02h2".
    virtual void offer_alpn(std::string_view protocols) = 0;
    // server_name: sent as SNI unless it is an IP literal (RFC 6066 forbids literals there) and,
    // when verifying, checked against the certificate.
    virtual std::unique_ptr<Transport> make_transport(const std::string& server_name, bool server_name_is_ip) const = 0;
};

// library: "openssl", "wolfssl" or "rustls"; verify is implied by a cacert file. ConfigError when the
// library is unknown or not in this build, or the CA file cannot be loaded.
std::unique_ptr<TlsContext> make_tls_context(const std::string& library, bool verify, const std::string& cacert,
                                             bool session_resumption);
// The TLS libraries this build can use, the default first.
std::vector<std::string> tls_libraries();

std::unique_ptr<Transport> make_plain_transport();

}  // namespace loadbench::generator
