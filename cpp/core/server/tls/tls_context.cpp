#include "core/server/tls/tls_context.hpp"

#include "core/server/base/config.hpp"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace loadbench::server {

namespace {

std::string openssl_reason() {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return "unknown OpenSSL error";
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    return text;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + openssl_reason()); }

struct PkeyDeleter {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxDeleter {
    void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct X509Deleter {
    void operator()(X509* p) const { X509_free(p); }
};
struct BioDeleter {
    void operator()(BIO* p) const { BIO_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

Pkey generate_p256_key() {
    std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr));
    if (!ctx || EVP_PKEY_keygen_init(ctx.get()) <= 0 ||
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx.get(), NID_X9_62_prime256v1) <= 0) {
        fail("cannot set up EC P-256 key generation");
    }
    EVP_PKEY* raw = nullptr;
    if (EVP_PKEY_keygen(ctx.get(), &raw) <= 0) fail("cannot generate an EC P-256 key");
    return Pkey(raw);
}

void add_extension(X509* cert, int nid, const char* value) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    if (!ext) fail("cannot build a certificate extension");
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

X509Ptr self_sign(EVP_PKEY* key, const std::string& common_name) {
    X509Ptr cert(X509_new());
    if (!cert) fail("cannot allocate a certificate");
    X509_set_version(cert.get(), 2);  // v3
    unsigned char serial_bytes[16];
    if (RAND_bytes(serial_bytes, sizeof serial_bytes) != 1) fail("cannot draw a certificate serial");
    serial_bytes[0] &= 0x7f;  // positive
    BIGNUM* serial_bn = BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr);
    BN_to_ASN1_INTEGER(serial_bn, X509_get_serialNumber(cert.get()));
    BN_free(serial_bn);
    // Valid from a day ago (clock skew) for a year.
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    X509_set_pubkey(cert.get(), key);
    const std::string san = "DNS:" + common_name + ",IP:127.0.0.1,IP:::1";
    add_extension(cert.get(), NID_subject_alt_name, san.c_str());
    add_extension(cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert.get(), NID_key_usage, "critical,digitalSignature");
    add_extension(cert.get(), NID_ext_key_usage, "serverAuth");
    if (X509_sign(cert.get(), key, EVP_sha256()) <= 0) fail("cannot sign the self-signed certificate");
    return cert;
}

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

// ALPN: h2 when the client offers it (and HTTP/2 is on), else http/1.1. A client that offers
// neither gets no ALPN answer and HTTP/1.1 (RFC 7301 allows the server to carry on).
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
                unsigned int in_length, void* h2_enabled) {
    static const unsigned char with_h2[] = "\x02h2\x08http/1.1";
    static const unsigned char only_h1[] = "\x08http/1.1";
    const bool h2 = h2_enabled != nullptr;
    unsigned char* selected = nullptr;
    unsigned char selected_length = 0;
    const int rv = SSL_select_next_proto(&selected, &selected_length, h2 ? with_h2 : only_h1,
                                         h2 ? sizeof with_h2 - 1 : sizeof only_h1 - 1, in, in_length);
    if (rv != OPENSSL_NPN_NEGOTIATED) return SSL_TLSEXT_ERR_NOACK;
    *out = selected;
    *out_length = selected_length;
    return SSL_TLSEXT_ERR_OK;
}

}  // namespace

SelfSignedCertificate generate_self_signed_certificate(const std::string& common_name) {
    const Pkey key = generate_p256_key();
    const X509Ptr cert = self_sign(key.get(), common_name);
    std::unique_ptr<BIO, BioDeleter> cert_bio(BIO_new(BIO_s_mem()));
    std::unique_ptr<BIO, BioDeleter> key_bio(BIO_new(BIO_s_mem()));
    if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
        PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        fail("cannot PEM-encode the self-signed certificate");
    }
    return {bio_text(cert_bio.get()), bio_text(key_bio.get())};
}

std::unique_ptr<boost::asio::ssl::context> make_tls_context(const ServerConfig& config,
                                                            const SelfSignedCertificate* generated) {
    namespace ssl = boost::asio::ssl;
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
    SSL_CTX* native = ctx->native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
    if (config.cert_file.empty() && generated) {
        ctx->use_certificate_chain(boost::asio::buffer(generated->certificate_pem));
        ctx->use_private_key(boost::asio::buffer(generated->private_key_pem), ssl::context::pem);
    } else if (config.cert_file.empty()) {
        const Pkey key = generate_p256_key();
        const X509Ptr cert = self_sign(key.get(), "localhost");
        if (SSL_CTX_use_certificate(native, cert.get()) != 1 || SSL_CTX_use_PrivateKey(native, key.get()) != 1) {
            fail("cannot install the self-signed certificate");
        }
    } else {
        if (SSL_CTX_use_certificate_chain_file(native, config.cert_file.c_str()) != 1) {
            fail("cannot load certificate '" + config.cert_file + "'");
        }
        if (SSL_CTX_use_PrivateKey_file(native, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
            fail("cannot load private key '" + config.key_file + "'");
        }
        if (SSL_CTX_check_private_key(native) != 1) {
            fail("private key '" + config.key_file + "' does not match certificate '" + config.cert_file + "'");
        }
    }
    if (!config.tls_resumption) {
        // No session cache insert and no NewSessionTicket (two by default in TLS 1.3, each
        // a session serialised and encrypted) per full handshake.
        SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(native, 0);
    }
    SSL_CTX_set_alpn_select_cb(native, &select_alpn, config.h2 ? native : nullptr);
    return ctx;
}

}  // namespace loadbench::server
