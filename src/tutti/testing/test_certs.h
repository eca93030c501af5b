// Certificates made at run time for TLS tests (OpenSSL, P-256 keys): a CA,
// a server certificate from it for localhost / 127.0.0.1, a client (or
// cluster peer) certificate from it, and a certificate from another CA
// (which the first does not trust). Files are written as PEM under a directory.
#ifndef TUTTI_TESTING_TEST_CERTS_H_
#define TUTTI_TESTING_TEST_CERTS_H_

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace tutti::testing {

struct TestPki {
  std::string ca_cert;                                    // the CA the server and clients trust
  std::string server_cert, server_key;                    // from the CA: DNS localhost, IP 127.0.0.1
  std::string client_cert, client_key;                    // from the CA: a client, or a peer of a cluster
                                                          // (server and client; localhost, 127.0.0.1)
  std::string stranger_ca_cert, stranger_cert, stranger_key;  // from another CA
};

namespace test_certs_internal {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

inline void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("making test certificates: ") + what);
}

inline Key NewKey() {
  Key key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

inline void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, signed by (issuer, issuer_key), or
// self-signed when issuer is null.
inline Cert NewCert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long serial, bool ca,
                    const char* alt_names, const char* usage) {
  Cert cert(X509_new(), &X509_free);
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7 * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  AddExtension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  AddExtension(cert.get(), signer, NID_key_usage,
               ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment");
  if (usage) AddExtension(cert.get(), signer, NID_ext_key_usage, usage);
  if (alt_names) AddExtension(cert.get(), signer, NID_subject_alt_name, alt_names);
  Check(X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

inline std::string WriteCert(const std::string& path, X509* cert) {
  FILE* f = std::fopen(path.c_str(), "w");
  Check(f != nullptr && PEM_write_X509(f, cert) == 1, "writing a certificate");
  std::fclose(f);
  return path;
}

inline std::string WriteKey(const std::string& path, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  Check(f != nullptr && PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1, "writing a key");
  std::fclose(f);
  return path;
}

}  // namespace test_certs_internal

inline TestPki MakeTestPki(const std::string& dir) {
  using namespace test_certs_internal;
  TestPki pki;
  Key ca_key = NewKey(), server_key = NewKey(), client_key = NewKey(), stranger_ca_key = NewKey(),
      stranger_key = NewKey();
  Cert ca = NewCert("tutti test CA", ca_key.get(), nullptr, nullptr, 1, true, nullptr, nullptr);
  Cert server = NewCert("localhost", server_key.get(), ca.get(), ca_key.get(), 2, false,
                        "DNS:localhost,IP:127.0.0.1", "serverAuth");
  Cert client = NewCert("tutti test client", client_key.get(), ca.get(), ca_key.get(), 3, false,
                        "DNS:localhost,IP:127.0.0.1", "clientAuth,serverAuth");
  Cert stranger_ca = NewCert("stranger CA", stranger_ca_key.get(), nullptr, nullptr, 4, true, nullptr, nullptr);
  Cert stranger = NewCert("stranger", stranger_key.get(), stranger_ca.get(), stranger_ca_key.get(), 5, false,
                          "DNS:localhost,IP:127.0.0.1", "clientAuth,serverAuth");
  pki.ca_cert = WriteCert(dir + "/ca.pem", ca.get());
  pki.server_cert = WriteCert(dir + "/server.pem", server.get());
  pki.server_key = WriteKey(dir + "/server.key", server_key.get());
  pki.client_cert = WriteCert(dir + "/client.pem", client.get());
  pki.client_key = WriteKey(dir + "/client.key", client_key.get());
  pki.stranger_ca_cert = WriteCert(dir + "/stranger_ca.pem", stranger_ca.get());
  pki.stranger_cert = WriteCert(dir + "/stranger.pem", stranger.get());
  pki.stranger_key = WriteKey(dir + "/stranger.key", stranger_key.get());
  return pki;
}

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_TEST_CERTS_H_
