#include "core/server/tls/tls_context.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <gtest/gtest.h>

using namespace loadbench::server;

TEST(SelfSignedCertificate, IsEcP256ForTheCommonName) {
    const auto generated = generate_self_signed_certificate("localhost");
    BIO* bio = BIO_new_mem_buf(generated.certificate_pem.data(), static_cast<int>(generated.certificate_pem.size()));
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ASSERT_NE(cert, nullptr);
    EVP_PKEY* key = X509_get0_pubkey(cert);
    ASSERT_NE(key, nullptr);
    EXPECT_EQ(EVP_PKEY_base_id(key), EVP_PKEY_EC);
    EXPECT_EQ(EVP_PKEY_get_bits(key), 256);
    char name[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
    EXPECT_STREQ(name, "localhost");
    EXPECT_EQ(X509_verify(cert, key), 1);  // self-signed: its own key verifies it
    X509_free(cert);
    EXPECT_NE(generated.private_key_pem.find("PRIVATE KEY"), std::string::npos);
}
