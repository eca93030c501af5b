// EtcdClient: Tutti's client of etcd's v3 gRPC API (proto/etcd_rpc.proto) —
// keys, leases with keep-alive heartbeats, watches and a leader election.
// The distributed processes coordinate through it: backends register under a
// lease, schedulers campaign for leadership, and the scheduler and frontends
// learn membership and the leader from watches.
//
// Thread-safety: every method may be called from any thread. Watch and
// keep-alive callbacks run on their own threads.
#ifndef TUTTI_ETCD_ETCD_CLIENT_H_
#define TUTTI_ETCD_ETCD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/time.h"
#include "tutti/net/tls.h"

namespace tutti {

class EtcdClient {
 public:
  struct KeyValue {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t lease = 0;
  };
  struct Event {
    bool deleted = false;  // else a put
    KeyValue kv;           // a deleted key's value is empty
  };
  // Keys under a prefix, as of `revision`.
  struct Snapshot {
    std::vector<KeyValue> kvs;
    int64_t revision = 0;
  };

  // Runs until destroyed (the destructor stops it and joins its thread).
  class Background {
   public:
    virtual ~Background() = default;
  };

  // `endpoint` is host:port of etcd's client URL — or the members of an
  // etcd cluster, IP:port,IP:port,…, of which the client uses one that
  // answers and moves to another when it fails: plain HTTP/2, or, when
  // `tls` is enabled, TLS with its certificate as the client's (etcd's
  // --client-cert-auth) and its client_ca_file as the CA of etcd's server
  // certificate. Waits up to `timeout` for a first answer; Unavailable if
  // none comes; InvalidArgument for TLS files that are missing or wrong.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(const std::string& endpoint,
                                                            Duration timeout = 5 * kSecond,
                                                            const TlsOptions& tls = {});
  ~EtcdClient();

  const std::string& endpoint() const { return endpoint_; }

  absl::Status Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // Creates `key` only if it does not exist (a transaction); true if created.
  absl::StatusOr<bool> PutIfAbsent(const std::string& key, const std::string& value, int64_t lease = 0);
  absl::StatusOr<std::optional<KeyValue>> Get(const std::string& key);
  absl::StatusOr<Snapshot> GetPrefix(const std::string& prefix);
  absl::Status Delete(const std::string& key);

  // A lease of `ttl_seconds` (etcd's granularity); its id.
  absl::StatusOr<int64_t> GrantLease(int64_t ttl_seconds);
  absl::Status RevokeLease(int64_t lease);
  // Heartbeats: keeps `lease` alive every ttl/4 until the result is
  // destroyed. `lost` is called once if the lease is gone (etcd answers TTL
  // 0), or may be: no heartbeat answered since one sent a TTL ago (etcd may
  // expire it from then on). The holder must stop acting on it. If given,
  // `valid_until` holds the SteadyNanos() until which the lease surely
  // lives, for holders that check before each act (a thread that was
  // stopped may act before `lost` runs); at the call, the caller sets it
  // (the grant's sending + its TTL). Without it, the lease is taken to
  // live a TTL from the call.
  std::unique_ptr<Background> KeepAlive(int64_t lease, Duration ttl, std::function<void()> lost,
                                        std::shared_ptr<std::atomic<int64_t>> valid_until = nullptr);
  // The steady clock KeepAlive's `valid_until` is on, in ns.
  static int64_t SteadyNanos();
  // Calls `on_events` with the changes to keys under `prefix` made after
  // `after_revision` (a Snapshot's revision), in order, reconnecting if the
  // stream breaks.
  std::unique_ptr<Background> Watch(const std::string& prefix, int64_t after_revision,
                                    std::function<void(const std::vector<Event>&)> on_events);

  // Leader election on `key`: blocks until this caller holds it — `key`
  // created with `value` under `lease`, so it disappears with the lease — or
  // `*stop` turns true (Cancelled). The holder leads until its lease is lost.
  // `on_wait`, if set, hears each time the caller finds `holder` leading
  // and starts waiting for it to go.
  absl::Status Campaign(const std::string& key, const std::string& value, int64_t lease,
                        const std::atomic<bool>* stop,
                        const std::function<void(const KeyValue& holder)>& on_wait = nullptr);

 private:
  struct Stubs;
  explicit EtcdClient(std::string endpoint);

  const std::string endpoint_;
  std::unique_ptr<Stubs> stubs_;
};

// The smallest key above every key starting with `prefix` (etcd range_end).
std::string PrefixRangeEnd(const std::string& prefix);

}  // namespace tutti

#endif  // TUTTI_ETCD_ETCD_CLIENT_H_
