#pragma once
// The OpenSSL library context the generator's TLS clients run in (see tls_library.cpp).
#include <openssl/types.h>

namespace loadbench::generator {

// A process-wide library context that offers every algorithm of OpenSSL's default provider
// but, of its ~80 decoders, only the SubjectPublicKeyInfo ones (all a TLS client decodes: the
// certificates' public keys), so that OpenSSL 3.0's decoder set-up for each certificate,
// which walks every registered decoder on each handshake, walks a short list. nullptr (the default context) when it
// cannot be built.
OSSL_LIB_CTX* tls_client_library() noexcept;

}  // namespace loadbench::generator
