// TLS for Tutti's listeners (the KServe HTTP and gRPC frontends): the PEM
// files a listener serves with, checked once at startup so that a missing
// or mismatched file is a clear error rather than a failed handshake later.
#ifndef TUTTI_NET_TLS_H_
#define TUTTI_NET_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace tutti {

struct TlsOptions {
  std::string cert_file;       // PEM certificate chain the listener presents ("": no TLS)
  std::string key_file;        // PEM private key of cert_file
  std::string client_ca_file;  // PEM CA certificates; set: clients must present a certificate
                               // signed by one of them (mutual TLS)

  bool enabled() const { return !cert_file.empty(); }
};

// The PEM texts of a listener's TLS files.
struct TlsPem {
  std::string cert_chain, private_key, client_ca;  // client_ca "" when not required
};

// Reads and checks `options`: both cert_file and key_file or neither
// (client_ca_file only with them), each file readable and PEM, the key the
// certificate's. InvalidArgument / NotFound naming the file otherwise.
absl::StatusOr<TlsPem> ReadTlsFiles(const TlsOptions& options);

// A server-side Boost.Asio TLS context (TLS 1.2 or later) from checked files.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> ServerTlsContext(const TlsPem& pem);

// Mutual TLS among peers — the processes of a distributed cluster on Tutti's
// wire: each presents its certificate (cert_file, key_file) and accepts
// only peers whose certificate the cluster's CA (client_ca_file) signed, in
// both directions. Peers are known by their CA, not by host name.
class PeerTls {
 public:
  // Errors: as ReadTlsFiles; InvalidArgument without all three files.
  static absl::StatusOr<std::shared_ptr<PeerTls>> Create(const TlsOptions& options);

  boost::asio::ssl::context& accepting() const { return *accepting_; }
  boost::asio::ssl::context& dialing() const { return *dialing_; }

 private:
  std::shared_ptr<boost::asio::ssl::context> accepting_, dialing_;
};

}  // namespace tutti

#endif  // TUTTI_NET_TLS_H_
