#include "tutti/net/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>

#include "absl/strings/str_cat.h"
#include "tutti/core/file_util.h"

namespace tutti {
namespace {

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "not PEM";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
Bio MemoryBio(const std::string& text) { return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free); }

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat("TLS ", what, ": ", text.status().message()));
  return text;
}

}  // namespace

absl::StatusOr<TlsPem> ReadTlsFiles(const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate and its private key (cert and key)");
  }
  if (options.cert_file.empty() && !options.client_ca_file.empty()) {
    return absl::InvalidArgumentError("TLS client_ca needs the listener's own cert and key");
  }
  TlsPem pem;
  if (!options.enabled()) return pem;
  absl::StatusOr<std::string> cert = ReadPem(options.cert_file, "certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem(options.key_file, "private key");
  if (!key.ok()) return key.status();
  ERR_clear_error();
  std::unique_ptr<X509, decltype(&X509_free)> x509(PEM_read_bio_X509(MemoryBio(*cert).get(), nullptr, nullptr, nullptr),
                                                    &X509_free);
  if (!x509) return absl::InvalidArgumentError(absl::StrCat("TLS certificate ", options.cert_file, ": ", OpenSslError()));
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(
      PEM_read_bio_PrivateKey(MemoryBio(*key).get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  if (!pkey) return absl::InvalidArgumentError(absl::StrCat("TLS private key ", options.key_file, ": ", OpenSslError()));
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("TLS private key ", options.key_file, " does not belong to the certificate ", options.cert_file));
  }
  pem.cert_chain = *std::move(cert);
  pem.private_key = *std::move(key);
  if (!options.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(options.client_ca_file, "client CA");
    if (!ca.ok()) return ca.status();
    std::unique_ptr<X509, decltype(&X509_free)> first(
        PEM_read_bio_X509(MemoryBio(*ca).get(), nullptr, nullptr, nullptr), &X509_free);
    if (!first) {
      return absl::InvalidArgumentError(absl::StrCat("TLS client CA ", options.client_ca_file, ": ", OpenSslError()));
    }
    pem.client_ca = *std::move(ca);
  }
  return pem;
}

namespace {

// A TLS 1.2+ context of `method` presenting pem's certificate; with a CA in
// pem, it trusts that CA and checks peers with `verify`.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeTlsContext(boost::asio::ssl::context::method method,
                                                                         const TlsPem& pem, int verify) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(method);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                       ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                   ec);
  if (!ec) ctx->use_certificate_chain(boost::asio::buffer(pem.cert_chain), ec);
  if (!ec) ctx->use_private_key(boost::asio::buffer(pem.private_key), ssl::context::pem, ec);
  if (!ec && !pem.client_ca.empty()) {
    ctx->add_certificate_authority(boost::asio::buffer(pem.client_ca), ec);
    if (!ec) ctx->set_verify_mode(verify, ec);
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("TLS setup: ", ec.message()));
  return ctx;
}

}  // namespace

absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> ServerTlsContext(const TlsPem& pem) {
  namespace ssl = boost::asio::ssl;
  return MakeTlsContext(ssl::context::tls_server, pem, ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
}

absl::StatusOr<std::shared_ptr<PeerTls>> PeerTls::Create(const TlsOptions& options) {
  if (!options.enabled() || options.client_ca_file.empty()) {
    return absl::InvalidArgumentError("mutual TLS among peers needs a certificate, its key and the cluster's CA");
  }
  absl::StatusOr<TlsPem> pem = ReadTlsFiles(options);
  if (!pem.ok()) return pem.status();
  namespace ssl = boost::asio::ssl;
  absl::StatusOr<std::shared_ptr<ssl::context>> accepting = ServerTlsContext(*pem);
  if (!accepting.ok()) return accepting.status();
  absl::StatusOr<std::shared_ptr<ssl::context>> dialing = MakeTlsContext(ssl::context::tls_client, *pem,
                                                                         ssl::verify_peer);
  if (!dialing.ok()) return dialing.status();
  auto out = std::make_shared<PeerTls>();
  out->accepting_ = *std::move(accepting);
  out->dialing_ = *std::move(dialing);
  return out;
}

}  // namespace tutti
