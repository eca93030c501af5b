#include "tutti/etcd/local_etcd.h"

#include <stdlib.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"
#include "tutti/etcd/etcd_client.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<LocalEtcd>> LocalEtcd::Start(const std::string& binary, const TlsOptions& tls) {
  if (!std::filesystem::exists(binary)) {
    return absl::NotFoundError(absl::StrCat(binary, " not found: install etcd (apt-get install etcd-server; "
                                            "scripts/setup.sh does)"));
  }
  std::unique_ptr<LocalEtcd> etcd(new LocalEtcd());
  std::string dir_template = (std::filesystem::temp_directory_path() / "tutti-etcd-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) return absl::InternalError("cannot create a temporary directory");
  etcd->data_dir_ = dir_template;
  TUTTI_ASSIGN_OR_RETURN(int client_port, PickFreePort());
  TUTTI_ASSIGN_OR_RETURN(int peer_port, PickFreePort());
  etcd->endpoint_ = absl::StrCat("127.0.0.1:", client_port);
  const std::string client_url = absl::StrCat(tls.enabled() ? "https://" : "http://", etcd->endpoint_);
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port);
  // One member: its election timeout matters only at start, and etcd
  // grants no lease shorter than 1.5 election timeouts — 600 ms keeps the
  // schedulers' 1-s leases. Raft ticks every heartbeat even alone: 100 ms
  // (etcd's default) costs half the CPU of 50. One Go processor
  // (GOMAXPROCS=1) is plenty for a single member on loopback and wakes less
  // often: idle, 16–26 CPU ticks per 20 s against 30–33.
  std::vector<std::string> argv = {"/usr/bin/env", "GOMAXPROCS=1", binary, "--name", "tutti", "--data-dir", etcd->data_dir_,
                                   "--listen-client-urls", client_url, "--advertise-client-urls",
                                   client_url, "--listen-peer-urls", peer_url,
                                   "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
                                   absl::StrCat("tutti=", peer_url), "--heartbeat-interval", "100",
                                   "--election-timeout", "600", "--log-level", "error"};
  if (tls.enabled()) {
    if (tls.client_ca_file.empty()) return absl::InvalidArgumentError("etcd with TLS needs the clients' CA");
    for (const char* a : {"--cert-file", tls.cert_file.c_str(), "--key-file", tls.key_file.c_str(),
                                 "--client-cert-auth", "--trusted-ca-file", tls.client_ca_file.c_str()}) {
      argv.push_back(a);
    }
  }
  TUTTI_ASSIGN_OR_RETURN(etcd->process_, ChildProcess::Start(argv));
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(etcd->endpoint_, 20 * kSecond, tls);
  if (!client.ok()) {
    return absl::UnavailableError(absl::StrCat("etcd did not come up: ", client.status().message(), "\n",
                                               etcd->process_->output()));
  }
  // The first write succeeds once the member has elected itself.
  for (int i = 0; i < 200; ++i) {
    if ((*client)->Put("/tutti-etcd-ready", "1").ok()) return etcd;
  }
  return absl::UnavailableError(absl::StrCat("etcd takes no writes:\n", etcd->process_->output()));
}

LocalEtcd::~LocalEtcd() {
  process_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(data_dir_, ignored);
}

}  // namespace tutti
