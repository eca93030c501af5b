#include "tutti/etcd/etcd_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/grpc/grpc_util.h"
#include "tutti/proto/etcd_rpc.grpc.pb.h"

namespace tutti {
namespace {

namespace pb = ::etcdserverpb;
constexpr Duration kRpcTimeout = 3 * kSecond;
constexpr Duration kRetryDelay = 100 * kMillisecond;

// One unary call under `timeout`; errors say what was asked.
template <typename Stub, typename Request, typename Response>
absl::StatusOr<Response> Unary(Stub* stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                               const Request& request, absl::string_view what, Duration timeout) {
  grpc::ClientContext ctx;
  ctx.set_deadline(GrpcDeadline(timeout));
  Response response;
  grpc::Status s = (stub->*method)(&ctx, request, &response);
  if (!s.ok()) return absl::Status(FromGrpcStatus(s).code(), absl::StrCat("etcd ", what, ": ", s.error_message()));
  return response;
}

EtcdClient::KeyValue FromProto(const pb::KeyValue& kv) {
  return {kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.lease()};
}

// A thread that runs `body(stopping)` and is stopped and joined on
// destruction; `wake` interrupts its sleeps and cancels its stream.
class Worker final : public EtcdClient::Background {
 public:
  template <typename Body>
  explicit Worker(Body body) : thread_([this, body = std::move(body)]() mutable { body(*this); }) {}
  ~Worker() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    cv_.notify_all();
    thread_.join();
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  // Sleeps up to `d`; false if stopped meanwhile.
  bool Sleep(Duration d) {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_for(lock, std::chrono::nanoseconds(d), [this] { return stopping_; });
  }
  // The stream context the destructor cancels; false if already stopping.
  bool SetContext(grpc::ClientContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = context;
    return !stopping_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  grpc::ClientContext* context_ = nullptr;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace

// One channel per member of the etcd cluster; calls go to the current
// member and move to the next when it fails (it is down, or cut off).
struct EtcdClient::Stubs {
  struct Member {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::KV::Stub> kv;
    std::unique_ptr<pb::Lease::Stub> lease;
    std::unique_ptr<pb::Watch::Stub> watch;
  };
  std::vector<Member> members;
  std::atomic<size_t> current{0};

  size_t Current() const { return current.load() % members.size(); }
  // After a failure on member `which`: the next one, unless another caller
  // moved on already.
  void Failed(size_t which) {
    size_t expected = which;
    current.compare_exchange_strong(expected, (which + 1) % members.size());
  }
  // A call that fails as a member does (unreachable, or no answer in time)
  // is tried on the next, each member once. With one member, the client's
  // deadline; with several, a shorter one per member.
  template <typename Pick, typename Stub, typename Request, typename Response>
  absl::StatusOr<Response> Call(Pick stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                                const Request& request, absl::string_view what) {
    const Duration timeout = members.size() == 1 ? kRpcTimeout : kRpcTimeout / 3;
    absl::StatusOr<Response> r;
    for (size_t tries = 0; tries < members.size(); ++tries) {
      const size_t m = Current();
      r = Unary(stub(members[m]), method, request, what, timeout);
      if (r.ok() || (r.status().code() != absl::StatusCode::kUnavailable &&
                     r.status().code() != absl::StatusCode::kDeadlineExceeded)) {
        return r;
      }
      Failed(m);
    }
    return r;
  }
};

namespace {
constexpr auto kKv = [](auto& m) { return m.kv.get(); };
constexpr auto kLease = [](auto& m) { return m.lease.get(); };
}  // namespace

std::string PrefixRangeEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(std::string endpoint) : endpoint_(std::move(endpoint)), stubs_(std::make_unique<Stubs>()) {}
EtcdClient::~EtcdClient() = default;

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(const std::string& endpoint, Duration timeout,
                                                                const TlsOptions& tls) {
  std::unique_ptr<EtcdClient> client(new EtcdClient(endpoint));
  Stubs& s = *client->stubs_;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls.enabled()) {
    absl::StatusOr<TlsPem> pem = ReadTlsFiles(tls);
    if (!pem.ok()) return pem.status();
    credentials = grpc::SslCredentials({pem->client_ca, pem->private_key, pem->cert_chain});
  }
  // No bandwidth-delay probes: etcd's messages are small, and each probe is
  // a ping etcd answers — idle, they doubled its context switches.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  const std::vector<std::string> members = absl::StrSplit(endpoint, ',', absl::SkipEmpty());
  if (members.size() > 1) {
    // A member cut off sends no reset: pings notice it, at the pace etcd
    // accepts (its --grpc-keepalive-min-time, 5 s by default).
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  for (const std::string& member : members) {
    Stubs::Member& m = s.members.emplace_back();
    m.channel = grpc::CreateCustomChannel(member, credentials, args);
    m.kv = pb::KV::NewStub(m.channel);
    m.lease = pb::Lease::NewStub(m.channel);
    m.watch = pb::Watch::NewStub(m.channel);
  }
  if (s.members.empty()) return absl::InvalidArgumentError("no etcd endpoint given");
  // The first member found connected is the one used first.
  const Time deadline = RealClock().Now() + timeout;
  for (Time now = RealClock().Now(); now < deadline; now = RealClock().Now()) {
    for (size_t i = 0; i < s.members.size(); ++i) {
      const Duration wait = s.members.size() == 1 ? deadline - now : 100 * kMillisecond;
      if (s.members[i].channel->WaitForConnected(GrpcDeadline(wait))) {
        s.current = i;
        return client;
      }
    }
  }
  return absl::UnavailableError(absl::StrCat("cannot reach etcd at ", endpoint, " (is it running? "
                                             "start one with `etcd --listen-client-urls http://", members[0],
                                             " --advertise-client-urls http://", members[0], "`)"));
}

absl::Status EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  pb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  req.set_lease(lease);
  return stubs_->Call(kKv, &pb::KV::Stub::Put, req, absl::StrCat("put ", key)).status();
}

absl::StatusOr<bool> EtcdClient::PutIfAbsent(const std::string& key, const std::string& value, int64_t lease) {
  pb::TxnRequest req;
  pb::Compare* cmp = req.add_compare();
  cmp->set_key(key);
  cmp->set_target(pb::Compare::CREATE);
  cmp->set_result(pb::Compare::EQUAL);
  cmp->set_create_revision(0);  // the key does not exist
  pb::PutRequest* put = req.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
  TUTTI_ASSIGN_OR_RETURN(pb::TxnResponse resp, stubs_->Call(kKv, &pb::KV::Stub::Txn, req,
                                                     absl::StrCat("txn on ", key)));
  return resp.succeeded();
}

absl::StatusOr<std::optional<EtcdClient::KeyValue>> EtcdClient::Get(const std::string& key) {
  pb::RangeRequest req;
  req.set_key(key);
  TUTTI_ASSIGN_OR_RETURN(pb::RangeResponse resp,
                         stubs_->Call(kKv, &pb::KV::Stub::Range, req, absl::StrCat("get ", key)));
  if (resp.kvs_size() == 0) return std::optional<KeyValue>();
  return std::optional<KeyValue>(FromProto(resp.kvs(0)));
}

absl::StatusOr<EtcdClient::Snapshot> EtcdClient::GetPrefix(const std::string& prefix) {
  pb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(PrefixRangeEnd(prefix));
  TUTTI_ASSIGN_OR_RETURN(pb::RangeResponse resp,
                         stubs_->Call(kKv, &pb::KV::Stub::Range, req, absl::StrCat("get ", prefix, "*")));
  Snapshot snap;
  snap.revision = resp.header().revision();
  for (const pb::KeyValue& kv : resp.kvs()) snap.kvs.push_back(FromProto(kv));
  return snap;
}

absl::Status EtcdClient::Delete(const std::string& key) {
  pb::DeleteRangeRequest req;
  req.set_key(key);
  return stubs_->Call(kKv, &pb::KV::Stub::DeleteRange, req, absl::StrCat("delete ", key)).status();
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
  pb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  TUTTI_ASSIGN_OR_RETURN(pb::LeaseGrantResponse resp,
                         stubs_->Call(kLease, &pb::Lease::Stub::LeaseGrant, req, "lease grant"));
  if (!resp.error().empty()) return absl::InternalError(absl::StrCat("etcd lease grant: ", resp.error()));
  return resp.id();
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  pb::LeaseRevokeRequest req;
  req.set_id(lease);
  return stubs_->Call(kLease, &pb::Lease::Stub::LeaseRevoke, req, "lease revoke").status();
}

int64_t EtcdClient::SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<EtcdClient::Background> EtcdClient::KeepAlive(int64_t lease, Duration ttl,
                                                              std::function<void()> lost,
                                                              std::shared_ptr<std::atomic<int64_t>> valid_until) {
  // A heartbeat every ttl/4, each on a short stream with a deadline of at
  // most half a second, so that a member that stops answering (cut off,
  // or waiting for an election) is left for the next well within the TTL.
  //
  // The lease is held until `sent + TTL` of the last heartbeat answered,
  // `sent` being when it left here: etcd renewed it on receipt, later, so
  // it cannot expire there before that. `lost` is called at that instant
  // at the latest (no wait outlasts it), so that a holder cut off from
  // etcd stops before etcd lets another take its place.
  const int64_t held_until = valid_until != nullptr ? valid_until->load() : SteadyNanos() + ttl;
  return std::make_unique<Worker>([this, lease, ttl, lost = std::move(lost), valid_until, held_until](Worker& w) {
    int64_t until = held_until;
    const Duration patience = std::min<Duration>(ttl / 4, 500 * kMillisecond);
    while (!w.stopping()) {
      const int64_t sent = SteadyNanos();
      if (sent >= until) {
        lost();
        return;
      }
      const size_t m = stubs_->Current();
      grpc::ClientContext ctx;
      ctx.set_deadline(GrpcDeadline(std::min<Duration>(patience, until - sent)));
      if (!w.SetContext(&ctx)) return;
      auto stream = stubs_->members[m].lease->LeaseKeepAlive(&ctx);
      pb::LeaseKeepAliveRequest req;
      req.set_id(lease);
      pb::LeaseKeepAliveResponse resp;
      const bool answered = stream->Write(req) && stream->Read(&resp);
      w.SetContext(nullptr);
      ctx.TryCancel();
      if (w.stopping()) return;
      if (answered && resp.ttl() <= 0) {  // expired or revoked
        lost();
        return;
      }
      if (answered) {
        until = sent + std::min<Duration>(ttl, resp.ttl() * kSecond);
        if (valid_until != nullptr) valid_until->store(until);
        w.Sleep(ttl / 4);
        continue;
      }
      stubs_->Failed(m);
      if (stubs_->members.size() == 1) w.Sleep(std::min<Duration>(kRetryDelay, until - SteadyNanos()));
    }
  });
}

std::unique_ptr<EtcdClient::Background> EtcdClient::Watch(
    const std::string& prefix, int64_t after_revision, std::function<void(const std::vector<Event>&)> on_events) {
  return std::make_unique<Worker>([this, prefix, after_revision, on_events = std::move(on_events)](Worker& w) {
    int64_t seen = after_revision;
    while (!w.stopping()) {
      const size_t m = stubs_->Current();
      grpc::ClientContext ctx;
      if (!w.SetContext(&ctx)) return;
      auto stream = stubs_->members[m].watch->Watch(&ctx);
      pb::WatchRequest req;
      pb::WatchCreateRequest* create = req.mutable_create_request();
      create->set_key(prefix);
      create->set_range_end(PrefixRangeEnd(prefix));
      create->set_start_revision(seen + 1);
      pb::WatchResponse resp;
      if (stream->Write(req)) {
        while (stream->Read(&resp)) {
          if (resp.canceled()) break;  // e.g. compacted: reconnect from what we saw
          if (resp.events_size() == 0) continue;
          std::vector<Event> events;
          for (const pb::Event& e : resp.events()) {
            events.push_back({e.type() == pb::Event::DELETE, FromProto(e.kv())});
            seen = std::max(seen, e.kv().mod_revision());
          }
          on_events(events);
        }
      }
      w.SetContext(nullptr);
      ctx.TryCancel();
      stubs_->Failed(m);  // broken: watch again, from the next member
      w.Sleep(kRetryDelay);
    }
  });
}

absl::Status EtcdClient::Campaign(const std::string& key, const std::string& value, int64_t lease,
                                  const std::atomic<bool>* stop,
                                  const std::function<void(const KeyValue& holder)>& on_wait) {
  while (!stop->load()) {
    absl::StatusOr<bool> won = PutIfAbsent(key, value, lease);
    if (!won.ok()) return won.status();
    if (*won) return absl::OkStatus();
    // Someone leads: wait for the key to go (its lease expired or revoked).
    absl::StatusOr<std::optional<KeyValue>> holder = Get(key);
    if (!holder.ok()) return holder.status();
    if (!holder->has_value()) continue;
    std::mutex mu;
    std::condition_variable cv;
    bool gone = false;
    auto watch = Watch(key, (*holder)->mod_revision, [&](const std::vector<Event>& events) {
      for (const Event& e : events) {
        if (e.kv.key != key || !e.deleted) continue;
        std::lock_guard<std::mutex> lock(mu);
        gone = true;
        cv.notify_all();
      }
    });
    if (on_wait) on_wait(**holder);
    std::unique_lock<std::mutex> lock(mu);
    while (!gone && !stop->load()) cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  return absl::CancelledError("stopped campaigning");
}

}  // namespace tutti
