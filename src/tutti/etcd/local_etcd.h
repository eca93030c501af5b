// LocalEtcd: a single-member etcd (Debian's etcd-server, /usr/bin/etcd) on
// loopback with a temporary data directory, for tests, benchmarks and
// `tutti cluster`. Its heartbeat and election timeouts are short (50 ms /
// 500 ms), so that etcd honours leases of one second.
#ifndef TUTTI_ETCD_LOCAL_ETCD_H_
#define TUTTI_ETCD_LOCAL_ETCD_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tutti/core/child_process.h"
#include "tutti/net/tls.h"

namespace tutti {

class LocalEtcd {
 public:
  // Starts etcd on free loopback ports and waits until it answers. With
  // `tls` enabled, its client URL is HTTPS with tls's certificate and it
  // takes only clients with a certificate from tls.client_ca_file
  // (--client-cert-auth); connect with the same options.
  // Errors: no etcd binary (install etcd-server; scripts/setup.sh does), or
  // it does not come up within 20 s (its output is in the message).
  static absl::StatusOr<std::unique_ptr<LocalEtcd>> Start(const std::string& binary = "/usr/bin/etcd",
                                                         const TlsOptions& tls = {});
  ~LocalEtcd();  // stops etcd and removes its data directory

  // host:port of its client URL.
  const std::string& endpoint() const { return endpoint_; }

 private:
  LocalEtcd() = default;
  std::string data_dir_;
  std::string endpoint_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace tutti

#endif  // TUTTI_ETCD_LOCAL_ETCD_H_
