#include "core/generator/transports/tls_library.hpp"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include <cstring>
#include <string_view>
#include <mutex>
#include <vector>

// Why: a full TLS 1.3 handshake parses the server's certificate, and OpenSSL 3.0 decodes its
// public key through OSSL_DECODER_CTX_new_for_pkey, which on every call enumerates (and
// constructs method objects for) every key manager and every decoder of the library context:
// ~70 us of a ~350 us client handshake for an EC P-256 certificate (perf: OSSL_DECODER_CTX_new_
// for_pkey under 20 % of the samples of a handshake-only run; the same key through the legacy
// d2i_EC_PUBKEY takes 9 us). Offering only the SubjectPublicKeyInfo decoders cuts the
// certificate parse from 72 to 41 us (measured in isolation, OpenSSL 3.0.19). Nothing
// cryptographic changes: every algorithm is the default provider's own implementation, only
// the decoder list is shorter.
//
// The key managers are filtered too, by exclusion: OSSL_DECODER_CTX_new_for_pkey also walks
// (and constructs a method object for) every key manager on each call (EVP_KEYMGMT_do_all_
// provided: 9.4 % of a handshake-only run's samples). Dropped are the 7 that no TLS client
// handshake uses: DSA and DHX (no DSS suite is in OpenSSL's DEFAULT list; TLS's finite-field
// groups use "DH", which stays), SM2, and the legacy EVP_PKEY wrappers of SCRYPT, SIPHASH,
// POLY1305 and CMAC. Kept: RSA, RSA-PSS, EC, X25519, X448, ED25519, ED448, DH and the HMAC,
// HKDF and TLS1-PRF pseudo-keys (resumption's binder needs HMAC). Parsing the server's P-256
// certificate: 44 -> 36 us (isolated, 3 x 20000, OpenSSL 3.0.19). A DSA certificate now fails
// the handshake loudly (its key cannot be decoded); nothing is accepted that was refused.
//
// How: the default provider is loaded into a private library context A; a wrapper provider in
// context B hands out A's algorithm tables (the decoders filtered) and A's provider context,
// so the implementations run exactly as they would in A. Both contexts live for the whole
// process (the SSL_CTX of every run uses B).

namespace loadbench::generator {
namespace {

OSSL_PROVIDER* g_default = nullptr;      // the default provider, in context A
std::vector<OSSL_ALGORITHM> g_decoders;  // filtered, terminated by a zero entry
std::vector<OSSL_ALGORITHM> g_keymgmt;   // filtered, terminated by a zero entry

bool tls_needs_key_manager(const OSSL_ALGORITHM& k) {
    static const char* const unused[] = {"DSA", "DHX", "SM2", "SCRYPT", "SIPHASH", "POLY1305", "CMAC"};
    if (!k.algorithm_names) return false;
    const std::string_view first(k.algorithm_names, std::strcspn(k.algorithm_names, ":"));
    for (const char* name : unused)
        if (first == name) return false;
    return true;
}

std::vector<OSSL_ALGORITHM> filtered(const OSSL_ALGORITHM* all, bool (*keep)(const OSSL_ALGORITHM&)) {
    std::vector<OSSL_ALGORITHM> out;
    for (const OSSL_ALGORITHM* a = all; a && a->algorithm_names; ++a)
        if (keep(*a)) out.push_back(*a);
    out.push_back(OSSL_ALGORITHM{nullptr, nullptr, nullptr, nullptr});
    return out;
}

const OSSL_ALGORITHM* query(void*, int operation, int* no_cache) {
    if (operation == OSSL_OP_DECODER) {
        *no_cache = 0;
        return g_decoders.data();
    }
    if (operation == OSSL_OP_KEYMGMT) {
        *no_cache = 0;
        return g_keymgmt.data();
    }
    return OSSL_PROVIDER_query_operation(g_default, operation, no_cache);
}

int capabilities(void*, const char* capability, OSSL_CALLBACK* callback, void* arg) {
    return OSSL_PROVIDER_get_capabilities(g_default, capability, callback, arg);  // TLS-GROUP
}

void teardown(void*) {}  // the default provider belongs to context A

const OSSL_DISPATCH dispatch[] = {{OSSL_FUNC_PROVIDER_QUERY_OPERATION, reinterpret_cast<void (*)(void)>(query)},
                                  {OSSL_FUNC_PROVIDER_GET_CAPABILITIES, reinterpret_cast<void (*)(void)>(capabilities)},
                                  {OSSL_FUNC_PROVIDER_TEARDOWN, reinterpret_cast<void (*)(void)>(teardown)},
                                  {0, nullptr}};

int init(const OSSL_CORE_HANDLE*, const OSSL_DISPATCH*, const OSSL_DISPATCH** out, void** provider_context) {
    *provider_context = OSSL_PROVIDER_get0_provider_ctx(g_default);
    *out = dispatch;
    return 1;
}

OSSL_LIB_CTX* build() noexcept {
    OSSL_LIB_CTX* a = OSSL_LIB_CTX_new();
    if (!a) return nullptr;
    g_default = OSSL_PROVIDER_load(a, "default");
    if (!g_default) return nullptr;
    int no_cache = 0;
    g_decoders =
        filtered(OSSL_PROVIDER_query_operation(g_default, OSSL_OP_DECODER, &no_cache), [](const OSSL_ALGORITHM& d) {
            return d.property_definition && std::strstr(d.property_definition, "structure=SubjectPublicKeyInfo");
        });
    if (g_decoders.size() < 2) return nullptr;
    g_keymgmt = filtered(OSSL_PROVIDER_query_operation(g_default, OSSL_OP_KEYMGMT, &no_cache), tls_needs_key_manager);
    if (g_keymgmt.size() < 2) return nullptr;
    OSSL_LIB_CTX* b = OSSL_LIB_CTX_new();
    if (!b || OSSL_PROVIDER_add_builtin(b, "loadbench-tls-client", init) != 1 ||
        !OSSL_PROVIDER_load(b, "loadbench-tls-client")) {
        return nullptr;
    }
    return b;
}

}  // namespace

OSSL_LIB_CTX* tls_client_library() noexcept {
    static OSSL_LIB_CTX* library = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        library = build();
        ERR_clear_error();  // a failed build falls back to the default context, silently
    });
    return library;
}

}  // namespace loadbench::generator
