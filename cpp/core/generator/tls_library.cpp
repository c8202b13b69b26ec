#include "core/generator/tls_library.hpp"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/provider.h>

#include <cstring>
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
// the decoder list is shorter. (Filtering the key managers too would save ~7 us more, but TLS
// needs the HMAC, HKDF and TLS1-PRF pseudo-keys - the resumption binder broke without HMAC.)
//
// How: the default provider is loaded into a private library context A; a wrapper provider in
// context B hands out A's algorithm tables (the decoders filtered) and A's provider context,
// so the implementations run exactly as they would in A. Both contexts live for the whole
// process (the SSL_CTX of every run uses B).

namespace loadbench::generator {
namespace {

OSSL_PROVIDER* g_default = nullptr;      // the default provider, in context A
std::vector<OSSL_ALGORITHM> g_decoders;  // filtered, terminated by a zero entry

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
    return OSSL_PROVIDER_query_operation(g_default, operation, no_cache);
}

int capabilities(void*, const char* capability, OSSL_CALLBACK* callback, void* arg) {
    return OSSL_PROVIDER_get_capabilities(g_default, capability, callback, arg);  // TLS-GROUP
}

void teardown(void*) {}  // the default provider belongs to context A

const OSSL_DISPATCH dispatch[] = {
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, reinterpret_cast<void (*)(void)>(query)},
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
    g_decoders = filtered(OSSL_PROVIDER_query_operation(g_default, OSSL_OP_DECODER, &no_cache),
                          [](const OSSL_ALGORITHM& d) {
                              return d.property_definition &&
                                     std::strstr(d.property_definition, "structure=SubjectPublicKeyInfo");
                          });
    if (g_decoders.size() < 2) return nullptr;
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
