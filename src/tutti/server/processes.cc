#include "tutti/server/processes.h"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tutti/core/prometheus.h"
#include "tutti/core/status_macros.h"

namespace tutti {
namespace {

// The cluster's mutual TLS for this process's streams; null without.
absl::StatusOr<std::shared_ptr<PeerTls>> ClusterTls(const ProcessOptions& options) {
  if (!options.tls.enabled()) return std::shared_ptr<PeerTls>();
  return PeerTls::Create(options.tls);
}

// Listens on the process's internal address (under `tls` unless null);
// `address` is what peers use.
absl::StatusOr<std::unique_ptr<WireListener>> Listen(EventLoop& loop, const ProcessOptions& options,
                                                     std::shared_ptr<PeerTls> tls, Acceptors acceptors,
                                                     std::string* address) {
  const std::string where =
      absl::StartsWith(options.address, "unix:") ? options.address : absl::StrCat(options.address, ":", options.port);
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<WireListener> listener,
                         ServeWire(loop.context(), where, std::move(acceptors), std::move(tls)));
  *address = listener->address();
  return listener;
}

std::string WallTime() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return absl::StrFormat("%.3f", std::chrono::duration<double>(now).count());
}

[[noreturn]] void LeaseLost(const std::string& who) {
  std::cerr << who << ": lost its etcd lease at unix time " << WallTime()
            << "; exiting so that the cluster goes on without it" << std::endl;
  _exit(3);
}

// A lease kept alive by heartbeats; losing it ends the process (see
// header): it exits once the lease is or may be gone (LeaseLost), and
// `valid_until` says until when it surely lives.
absl::Status HoldLease(EtcdClient& etcd, const ProcessOptions& options, const std::string& who, int64_t* lease,
                       std::unique_ptr<EtcdClient::Background>* keep_alive,
                       std::shared_ptr<std::atomic<int64_t>> valid_until = nullptr) {
  const int64_t asked = EtcdClient::SteadyNanos();
  TUTTI_ASSIGN_OR_RETURN(*lease, etcd.GrantLease(options.lease_ttl_s));
  if (valid_until == nullptr) valid_until = std::make_shared<std::atomic<int64_t>>();
  valid_until->store(asked + Seconds(options.lease_ttl_s));
  *keep_alive = etcd.KeepAlive(*lease, Seconds(options.lease_ttl_s), [who] { LeaseLost(who); }, valid_until);
  return absl::OkStatus();
}

// Calls `set` with `key`'s value now and whenever it changes ("" once deleted).
absl::StatusOr<std::unique_ptr<EtcdClient::Background>> FollowKey(EtcdClient& etcd, const std::string& key,
                                                                  std::function<void(const std::string&)> set) {
  TUTTI_ASSIGN_OR_RETURN(std::optional<EtcdClient::KeyValue> now, etcd.Get(key));
  int64_t revision = 0;
  if (now.has_value()) {
    set(now->value);
    revision = now->mod_revision;
  }
  return etcd.Watch(key, revision, [set, key](const std::vector<EtcdClient::Event>& es) {
    for (const EtcdClient::Event& e : es) {
      if (e.kv.key == key) set(e.deleted ? "" : e.kv.value);
    }
  });
}

std::string HostPid() {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  return absl::StrCat(host, "-", getpid());
}

}  // namespace

std::string FormatAutoscale(const SchedulerNode::AutoscaleState& state) {
  std::string text =
      absl::StrCat("wanted ", state.wanted, "\nup ", state.up, "\nspares ", absl::StrJoin(state.spares, " "), "\n");
  if (!state.groups.empty()) absl::StrAppend(&text, "groups ", absl::StrJoin(state.groups, " "), "\n");
  return text;
}

absl::StatusOr<SchedulerNode::AutoscaleState> ParseAutoscale(const std::string& text) {
  SchedulerNode::AutoscaleState state;
  int seen = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (words.empty()) continue;
    const std::string key = words[0];
    words.erase(words.begin());
    if (key == "spares") {
      state.spares = std::move(words);
      seen |= 4;
      continue;
    }
    if (key == "groups") {
      state.groups.resize(words.size());
      for (size_t g = 0; g < words.size(); ++g) {
        if (!absl::SimpleAtoi(words[g], &state.groups[g]) || state.groups[g] < -1) {
          return absl::InvalidArgumentError(absl::StrCat("autoscale state: cannot read the line '", line, "'"));
        }
      }
      continue;
    }
    int* field = key == "wanted" ? &state.wanted : key == "up" ? &state.up : nullptr;
    if (field == nullptr || words.size() != 1 || !absl::SimpleAtoi(words[0], field) || *field < 0) {
      return absl::InvalidArgumentError(absl::StrCat("autoscale state: cannot read the line '", line, "'"));
    }
    seen |= key == "wanted" ? 1 : 2;
  }
  if (seen != 7) return absl::InvalidArgumentError("autoscale state: needs the lines wanted, up and spares");
  return state;
}

// ---- scheduler ---------------------------------------------------------------

absl::StatusOr<std::unique_ptr<SchedulerProcess>> SchedulerProcess::Start(const ClusterLayout& layout,
                                                                          const ServerConfig& config,
                                                                          const ProcessOptions& options) {
  if (config.policy == "nexus") {
    return absl::InvalidArgumentError("distributed mode needs a policy that adds and removes GPUs as backends come "
                                      "and go: deferred, eager or timeout (nexus plans its GPUs ahead)");
  }
  std::unique_ptr<SchedulerProcess> p(new SchedulerProcess());
  p->loop_ = std::make_unique<EventLoop>(1, "tutti-sched");
  TUTTI_ASSIGN_OR_RETURN(p->etcd_, EtcdClient::Connect(options.etcd, options.etcd_timeout, options.tls));
  TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<PeerTls> tls, ClusterTls(options));
  SchedulerNode::Options node_options{config.policy, config.scheduler, config.delays};
  if (config.tracing) {
    TUTTI_ASSIGN_OR_RETURN(p->tracer_, Tracer::Create(*config.tracing, p->loop_.get()));
    node_options.tracer = p->tracer_.get();
  }
  // Stateful groups: roles for HAMS's primary-backup, and a primary that
  // stops answering replaced after replication.detect_after, not only when
  // its lease expires.
  node_options.stateful_groups = StatefulGroups(layout);
  node_options.detect_after = config.replication.detect_after;
  node_options.autoscale = config.autoscale;
  if (layout.model_less) {
    node_options.model_less = SchedulerNode::Options::ModelLess{*layout.model_less, layout.variant_models};
  }
  // Fenced: no plan leaves once the lease may have expired, even from a
  // thread that ran before the heartbeat's own (a process resumed after a
  // stop), so that two leaders never plan at once.
  auto valid_until = std::make_shared<std::atomic<int64_t>>(0);
  node_options.holds_lease = [valid_until, proc = p.get()] {  // plans leave once Listen set address_
    if (EtcdClient::SteadyNanos() >= valid_until->load()) LeaseLost("scheduler " + proc->address_);
  };
  p->node_ = std::make_unique<SchedulerNode>(layout.spec, std::move(node_options), p->loop_.get());
  SchedulerNode* node = p->node_.get();
  TUTTI_ASSIGN_OR_RETURN(
      p->listener_,
      Listen(*p->loop_, options, std::move(tls),
             Acceptors{[node](std::shared_ptr<FrontendPeer> l) { return node->AcceptFrontend(std::move(l)); },
                       [node](std::shared_ptr<BackendPeer> l) { return node->AcceptBackend(std::move(l)); },
                       {}},
             &p->address_));
  TUTTI_RETURN_IF_ERROR(
      HoldLease(*p->etcd_, options, absl::StrCat("scheduler ", p->address_), &p->lease_, &p->keep_alive_,
                valid_until));
  // Listed while it lives (the console shows the leader's spares).
  TUTTI_RETURN_IF_ERROR(p->etcd_->Put(ClusterKeys(options.cluster).scheduler(p->address_), "", p->lease_));
  p->campaign_ = std::thread([proc = p.get(), keys = ClusterKeys(options.cluster)] { proc->Campaign(keys); });
  return p;
}

void SchedulerProcess::Campaign(ClusterKeys keys) {
  absl::StatusOr<std::optional<EtcdClient::KeyValue>> holder = etcd_->Get(keys.leader());
  if (holder.ok() && holder->has_value()) {
    std::cout << absl::StrFormat("tutti scheduler %s: standing by as a hot spare (leader: %s)\n", address_,
                                 (*holder)->value)
              << std::flush;
  }
  absl::Status s = etcd_->Campaign(keys.leader(), address_, lease_, &stop_);
  if (!s.ok()) {
    if (!stop_) std::cerr << "scheduler " << address_ << ": campaign failed: " << s.message() << std::endl;
    return;
  }
  if (absl::Status led = node_->Lead(); !led.ok()) {
    std::cerr << "scheduler " << address_ << ": " << led.message() << std::endl;
    _exit(1);
  }
  // Backends join on their streams; one whose lease expires is gone even if
  // its stream lingers (a hung process).
  absl::StatusOr<EtcdClient::Snapshot> snap = etcd_->GetPrefix(keys.backends());
  watch_ = etcd_->Watch(keys.backends(), snap.ok() ? snap->revision : 0,
                        [this, prefix = keys.backends()](const std::vector<EtcdClient::Event>& events) {
                          for (const EtcdClient::Event& e : events) {
                            if (e.deleted) node_->RemoveBackend(e.kv.key.substr(prefix.size()));
                          }
                        });
  std::cout << absl::StrFormat("tutti scheduler %s: leading at unix time %s; backends and frontends join on "
                               "their streams\n",
                               address_, WallTime())
            << std::flush;
  PublishAutoscaling(keys);
}

void SchedulerProcess::PublishAutoscaling(const ClusterKeys& keys) {
  std::optional<SchedulerNode::AutoscaleState> published;
  for (int tick = 0; !stop_; ++tick) {
    if (tick % 5 == 0) {
      const std::optional<SchedulerNode::AutoscaleState> now = node_->Autoscaling();
      if (!now) return;  // not autoscaling
      if (now != published) {
        if (!published || now->wanted != published->wanted || now->up != published->up) {
          std::cout << absl::StrFormat("tutti scheduler %s: autoscale: %d backends wanted, %d slots up, %d spares\n",
                                       address_, now->wanted, now->up, now->spares.size())
                    << std::flush;
        }
        if (absl::Status s = etcd_->Put(keys.autoscale(), FormatAutoscale(*now), lease_); s.ok()) {
          published = now;
        } else {
          std::cerr << "scheduler " << address_ << ": cannot publish the autoscale state: " << s.message() << "\n";
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

SchedulerProcess::~SchedulerProcess() {
  stop_ = true;
  if (campaign_.joinable()) campaign_.join();
  watch_.reset();
  keep_alive_.reset();
  if (lease_ != 0) (void)etcd_->RevokeLease(lease_);  // a spare takes over at once
  if (listener_) listener_->Stop();
  node_.reset();  // closes its streams while the loop runs
  loop_->Stop();
}

// ---- frontend ----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<FrontendProcess>> FrontendProcess::Start(ClusterLayout layout,
                                                                        const ServerConfig& config,
                                                                        const ProcessOptions& options) {
  std::unique_ptr<FrontendProcess> p(new FrontendProcess());
  p->loop_ = std::make_unique<EventLoop>(config.http.threads, "tutti-front");
  TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<PeerTls> tls, ClusterTls(options));
  p->connector_ = std::make_unique<WireConnector>(p->loop_->context(), std::move(tls));
  p->name_ = HostPid();
  TUTTI_ASSIGN_OR_RETURN(p->etcd_, EtcdClient::Connect(options.etcd, options.etcd_timeout, options.tls));
  RemoteEngine::Options engine{p->name_};
  engine.metadata_hold = config.metadata_hold;
  TUTTI_ASSIGN_OR_RETURN(engine.stages, MakeStages(layout, config));  // ParM's coding, on this frontend's parts
  if (layout.model_less) {
    // Routed here on the leader's state; Inactive picks are asked for there.
    p->router_ = std::make_unique<TaskRouter>(*layout.model_less, p->loop_.get(),
                                              [p = p.get()](int j) { p->engine_->AskToLoad(j); });
    engine.on_task_state = [p = p.get()](TaskRoutingState state, double cost) {
      {
        std::lock_guard<std::mutex> lock(p->autoscale_mu_);
        p->task_state_ = state;
        p->task_cost_ = cost;
      }
      p->router_->Update(std::move(state));
    };
  }
  p->engine_ = std::make_unique<RemoteEngine>(layout.spec, layout.shapes, std::move(engine), p->loop_.get(),
                                              p->connector_.get());
  TUTTI_ASSIGN_OR_RETURN(p->watch_, FollowKey(*p->etcd_, ClusterKeys(options.cluster).leader(),
                                              [engine = p->engine_.get()](const std::string& a) {
                                                engine->SetLeader(a);
                                              }));
  // The leader's autoscaling state, for /metrics: what an outside
  // autoscaler (a Kubernetes HPA through Prometheus) scales backends by.
  TUTTI_ASSIGN_OR_RETURN(p->autoscale_watch_,
                         FollowKey(*p->etcd_, ClusterKeys(options.cluster).autoscale(), [p = p.get()](const std::string& v) {
                           std::lock_guard<std::mutex> lock(p->autoscale_mu_);
                           p->autoscale_ = v;
                         }));
  if (config.tracing) {
    TUTTI_ASSIGN_OR_RETURN(p->tracer_, Tracer::Create(*config.tracing, p->loop_.get()));
  }
  InferenceEngine* served = p->engine_.get();
  p->sequences_ = ServeSequences(served, layout.spec, layout, p->loop_.get());  // a sequence's order is kept here
  if (p->sequences_) served = p->sequences_.get();
  TUTTI_ASSIGN_OR_RETURN(p->graphs_, ServeGraphs(served, layout.spec, &layout, p->tracer_.get()));  // graphs run here
  if (p->graphs_) served = p->graphs_.get();
  TUTTI_ASSIGN_OR_RETURN(FrontendOptions frontend, ReadFrontendOptions(config));
  frontend.frontend.tracer = p->tracer_.get();
  frontend.frontend.shutdown = options.on_shutdown_request;
  frontend.frontend.extra_metrics = [p = p.get()] { return p->AutoscaleMetrics(); };
  if (p->router_) {
    TaskRouter* router = p->router_.get();
    RouteModelLess(
        config.model_less->task, *layout.model_less,
        [router](const VariantRequirements& q) { return router->Route(q); },
        [router](int j) { return router->Status(j); }, &frontend.frontend);
  }
  frontend.console.cluster = [p = p.get(), keys = ClusterKeys(options.cluster)] { return p->ConsoleJson(keys); };
  TUTTI_ASSIGN_OR_RETURN(p->listeners_,
                         FrontendServer::Start(served, std::move(layout.served), frontend, p->loop_.get()));
  return p;
}

std::string FrontendProcess::ConsoleJson(const ClusterKeys& keys) const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("mode");
  w.String("distributed frontend");
  w.Key("frontend");
  w.String(name_.c_str());
  w.Key("scheduler_leader");
  w.String(engine_->leader().c_str());
  // Live members, from their keys (which die with their leases):
  // "<id> <group> <address>" for backends, the address for schedulers.
  auto members = [&](const char* name, const std::string& prefix, bool leader_too) {
    w.Key(name);
    w.StartArray();
    absl::StatusOr<EtcdClient::Snapshot> snap = etcd_->GetPrefix(prefix);
    for (const EtcdClient::KeyValue& kv : snap.ok() ? snap->kvs : std::vector<EtcdClient::KeyValue>{}) {
      const std::string id = kv.key.substr(prefix.size());
      if (!leader_too && id == engine_->leader()) continue;
      w.String(absl::StrCat(id, kv.value.empty() ? "" : " ", kv.value).c_str());
    }
    if (!snap.ok()) w.String(absl::StrCat("etcd: ", snap.status().message()).c_str());
    w.EndArray();
  };
  members("scheduler_spares", keys.schedulers(), /*leader_too=*/false);
  members("backends", keys.backends(), /*leader_too=*/true);
  w.EndObject();
  return buffer.GetString();
}

void FrontendProcess::Shutdown() {
  if (listeners_) listeners_->Shutdown();
}

std::string FrontendProcess::AutoscaleMetrics() const {
  std::string value, text;
  {
    std::lock_guard<std::mutex> lock(autoscale_mu_);
    value = autoscale_;
    if (router_ && !task_state_.up.empty()) text = ModelLessPrometheusText(router_->variants(), task_state_, task_cost_);
  }
  absl::StatusOr<SchedulerNode::AutoscaleState> state = ParseAutoscale(value);
  if (!state.ok()) return text;  // not autoscaling, or no leader
  text += PromFamily("tutti_autoscale_backends", "gauge",
                     "Backends the leading scheduler's autoscaler wants (up or coming), slots up, and spares "
                     "(holding none: the ones to stop).");
  absl::StrAppendFormat(
      &text, "tutti_autoscale_backends{state=\"wanted\"} %d\ntutti_autoscale_backends{state=\"up\"} %d\n"
             "tutti_autoscale_backends{state=\"spare\"} %d\n",
      state->wanted, state->up, state->spares.size());
  if (state->groups.empty()) return text;
  // Model-less: what each scaled group (config.executors[g]) wants, for a
  // provider that scales one Deployment per group through Prometheus.
  text += PromFamily("tutti_autoscale_group_backends", "gauge",
                     "Backends the leading scheduler wants per scaled executor group (model-less: one group per "
                     "variant).");
  for (size_t g = 0; g < state->groups.size(); ++g) {
    if (state->groups[g] < 0) continue;
    absl::StrAppendFormat(&text, "tutti_autoscale_group_backends{group=\"%d\"} %d\n", g, state->groups[g]);
  }
  return text;
}

FrontendProcess::~FrontendProcess() {
  Shutdown();
  watch_.reset();
  autoscale_watch_.reset();
  listeners_.reset();
  graphs_.reset();
  sequences_.reset();
  engine_.reset();  // closes its streams while the loop runs
  loop_->Stop();
}

// ---- backend -----------------------------------------------------------------

namespace {

// GET /metrics, and nothing else.
class MetricsHandler final : public HttpHandler {
 public:
  explicit MetricsHandler(std::function<std::string()> text) : text_(std::move(text)) {}
  void Handle(HttpRequest request, Respond respond) override {
    HttpResponse r;
    if (request.target != "/metrics") {
      r.status = 404;
      r.body = R"({"error":"a backend serves GET /metrics only"})";
    } else if (request.method != "GET") {
      r.status = 405;
      r.body = R"({"error":"use GET"})";
    } else {
      r.content_type = "text/plain; version=0.0.4";
      r.body = text_();
    }
    respond(std::move(r));
  }

 private:
  const std::function<std::string()> text_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BackendProcess>> BackendProcess::Start(const ClusterLayout& layout,
                                                                      const ServerConfig& config, int group,
                                                                      std::string id,
                                                                      const ProcessOptions& options) {
  if (group < 0 || group >= static_cast<int>(config.executors.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no executor group ", group, " (the config has ",
                                                   config.executors.size(), ")"));
  }
  std::unique_ptr<BackendProcess> p(new BackendProcess());
  p->id_ = id.empty() ? absl::StrCat(absl::StrFormat("%d", getpid()), "-g", group) : std::move(id);
  p->loop_ = std::make_unique<EventLoop>(1, "tutti-backend");
  TUTTI_ASSIGN_OR_RETURN(std::shared_ptr<PeerTls> tls, ClusterTls(options));
  p->connector_ = std::make_unique<WireConnector>(p->loop_->context(), tls);
  TUTTI_ASSIGN_OR_RETURN(p->etcd_, EtcdClient::Connect(options.etcd, options.etcd_timeout, options.tls));
  ServerConfig backend_config = config;
  backend_config.replication.distributed = true;  // a stateful group's backup is another backend
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                         MakeGroupExecutor(layout, backend_config, group, p->loop_.get()));
  std::vector<ModelShape> shapes;
  for (ModelId m : layout.spec.sub_clusters[group].models) shapes.push_back(layout.shapes[m]);
  BackendNode::Options node_options{p->id_, group};
  if (config.tracing) {
    TUTTI_ASSIGN_OR_RETURN(p->tracer_, Tracer::Create(*config.tracing, p->loop_.get()));
    node_options.tracer = p->tracer_.get();
  }
  if (auto* slot = dynamic_cast<ReplicatedExecutor*>(executor.get())) {
    p->slot_ = slot;
    p->replica_ = std::make_unique<ReplicaNode>(slot, p->connector_.get(), p->loop_.get());
    node_options.is_primary = [slot] { return slot->serving(); };
    node_options.on_role = [replica = p->replica_.get(), id = p->id_](const internal::Role& role) {
      replica->OnRole(role);
      std::cout << absl::StrFormat("tutti backend %s: %s\n", id,
                                   !role.holds_slot()     ? "standing by (a backup, or a spare)"
                                   : role.backup().empty() ? "the primary of its slot; no backup"
                                                           : absl::StrCat("the primary of its slot; backup ", role.backup()))
                << std::flush;
    };
  }
  p->node_ = std::make_unique<BackendNode>(node_options, std::move(executor), std::move(shapes), p->loop_.get(),
                                           p->connector_.get());
  BackendNode* node = p->node_.get();
  TUTTI_ASSIGN_OR_RETURN(
      p->listener_,
      Listen(*p->loop_, options, std::move(tls),
             Acceptors{{},
                       {},
                       [node](std::shared_ptr<FeedPeer> l) { return node->AcceptFeed(std::move(l)); },
                       [replica = p->replica_.get()](std::shared_ptr<ReplicaPeer> l) {
                         return replica ? replica->AcceptReplica(std::move(l)) : std::nullopt;
                       }},
             &p->address_));
  p->node_->SetAddress(p->address_);
  TUTTI_RETURN_IF_ERROR(
      HoldLease(*p->etcd_, options, absl::StrCat("backend ", p->id_), &p->lease_, &p->keep_alive_));
  const ClusterKeys keys(options.cluster);
  TUTTI_RETURN_IF_ERROR(p->etcd_->Put(keys.backend(p->id_), absl::StrCat(group, " ", p->address_), p->lease_));
  TUTTI_ASSIGN_OR_RETURN(p->watch_, FollowKey(*p->etcd_, keys.leader(), [node = p->node_.get()](const std::string& a) {
                           node->SetLeader(a);
                         }));
  p->group_ = group;
  if (options.metrics_port >= 0) {
    p->metrics_handler_ = std::make_unique<MetricsHandler>([process = p.get()] { return process->MetricsText(); });
    HttpServerOptions http;
    http.address = absl::StartsWith(options.address, "unix:") ? "127.0.0.1" : options.address;
    http.port = options.metrics_port;
    http.threads = 1;
    http.tls = options.tls;
    TUTTI_ASSIGN_OR_RETURN(p->metrics_, HttpServer::Start(http, p->metrics_handler_.get()));
  }
  return p;
}

std::string BackendProcess::MetricsText() const {
  std::string out = PromFamily("tutti_backend_info", "gauge", "This backend: its id and executor group.") +
                    absl::StrFormat("tutti_backend_info{id=\"%s\",group=\"%d\"} 1\n", id_, group_);
  if (slot_ != nullptr) out += ReplicationPrometheusText({slot_});
  return out;
}

std::string BackendProcess::ReplicationSummary() const {
  if (slot_ == nullptr) return "";
  const ReplicationStats s = slot_->stats();
  return absl::StrFormat(
      "replication %s: %d failovers (the last %.2f ms to its first answer), %d batches run again, %d answers "
      "audited, %d inconsistent, %d lost states, %.1f MB sent to its backup",
      ReplicationModeName(slot_->mode()), s.failovers, ToMillis(s.failover_time), s.rerun_batches, s.audited,
      s.inconsistent, s.lost_states, (s.state_bytes + s.log_bytes) / 1e6);
}

BackendProcess::~BackendProcess() {
  if (metrics_) metrics_->Stop();
  watch_.reset();
  keep_alive_.reset();
  if (lease_ != 0) (void)etcd_->RevokeLease(lease_);
  if (node_) node_->WaitIdle();  // the batches it holds answer on the frontends' streams
  if (listener_) listener_->Stop();
  replica_.reset();  // its streams first: they reach the executor node_ holds
  node_.reset();  // leaves the leader's stream, closes the feeds, while the loop runs
  loop_->Stop();
}

}  // namespace tutti
