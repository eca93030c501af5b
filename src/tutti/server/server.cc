#include "tutti/server/server.h"

#include <iostream>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/prometheus.h"
#include "tutti/core/status_macros.h"
#include "tutti/executors/torch_executor.h"
#include "tutti/server/layout_runtime.h"

namespace tutti {

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ModelRepository& repo, const ServerConfig& config,
                                                      Clock* clock,
                                                      std::function<void()> on_shutdown_request) {
  std::unique_ptr<Server> server(new Server());
  if (clock == nullptr) {
    server->loop_ = std::make_unique<EventLoop>(config.http.threads, "tutti-loop");
    clock = server->loop_.get();
  }
  SetTorchThreads(config.torch_threads);
  SetInjectedNondeterminism(config.inject_nondeterminism);
  TUTTI_ASSIGN_OR_RETURN(ClusterLayout layout, LayOutCluster(repo, config));
  ClusterSpec& spec = layout.spec;
  std::string& d = server->description_;
  d = layout.description;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<const ReplicatedExecutor*> replicated;  // owned by the core, which outlives the frontends
  for (size_t g = 0; g < config.executors.size(); ++g) {
    for (int i = 0; i < config.executors[g].count; ++i) {
      TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<Executor> e,
                             MakeGroupExecutor(layout, config, g, clock, i == 0 ? &d : nullptr));
      if (const auto* r = dynamic_cast<const ReplicatedExecutor*>(e.get())) replicated.push_back(r);
      executors.push_back(std::move(e));
    }
  }
  if (config.tracing) {
    TUTTI_ASSIGN_OR_RETURN(server->tracer_, Tracer::Create(*config.tracing, clock));
    std::vector<std::string> to;
    for (const std::string& where : {config.tracing->file, config.tracing->otlp_endpoint}) {
      if (!where.empty()) to.push_back(where);
    }
    absl::StrAppendFormat(&d, "tracing: %g of requests without a traceparent (and those their caller samples), "
                          "spans to %s\n", config.tracing->sampling_ratio, absl::StrJoin(to, " and "));
  }
  Tracer* tracer = server->tracer_.get();
  InferenceCore::Options options{config.policy, config.scheduler, config.delays, {}};
  TUTTI_ASSIGN_OR_RETURN(options.stages, MakeStages(layout, config, &d));
  TUTTI_ASSIGN_OR_RETURN(server->core_, ShardedCore::Create(spec, std::move(layout.shapes), std::move(executors),
                                                            options, clock, config.scheduler_shards));
  if (config.autoscale) StartAutoscaler(*config.autoscale, clock, server.get());
  InferenceEngine* engine = server->core_.get();
  server->sequences_ = ServeSequences(engine, spec, layout, clock);
  if (server->sequences_) engine = server->sequences_.get();
  TUTTI_ASSIGN_OR_RETURN(server->graphs_, ServeGraphs(engine, spec, &layout, tracer));
  if (server->graphs_) engine = server->graphs_.get();
  TUTTI_ASSIGN_OR_RETURN(FrontendOptions frontend, ReadFrontendOptions(config));
  frontend.frontend.tracer = tracer;
  frontend.frontend.shutdown = std::move(on_shutdown_request);
  if (layout.model_less) {
    StartTaskAutoscaler(*layout.model_less, config, clock, server.get(), &frontend.frontend);
  }
  frontend.frontend.extra_metrics = [replicated, scaler = server->autoscaler_.get(),
                                     task = server->task_scaler_.get(), clock] {
    std::string text = replicated.empty() ? "" : ReplicationPrometheusText(replicated);
    if (task != nullptr) text += ModelLessPrometheusText(task->variants(), task->RoutingState(), task->Cost(0, clock->Now()));
    if (scaler != nullptr) {
      text += PromFamily("tutti_autoscale_executors", "gauge",
                         "Executors serving (up) and requested (up or coming), under closed-loop autoscaling.");
      absl::StrAppendFormat(&text,
                            "tutti_autoscale_executors{state=\"up\"} %d\ntutti_autoscale_executors{state=\"requested\"} %d\n",
                            scaler->up(), scaler->requested());
    }
    return text;
  };
  frontend.console.cluster = [json = absl::StrFormat(R"({"mode":"embedded","policy":"%s"})", config.policy)] {
    return json;
  };
  TUTTI_ASSIGN_OR_RETURN(server->listeners_,
                         FrontendServer::Start(engine, std::move(layout.served), frontend, server->loop_.get()));
  const std::string deferral =
      config.policy != "adaptive" ? ""
      : config.scheduler.deferral == Deferral::kLatency
          ? " (a fixed pool: idle executors answer at once)"
          : absl::StrFormat(" (consolidating: a batch waits while the GPU time saved pays, at %g ms per GPU-ms)",
                            config.scheduler.gpu_ms_price);
  const std::string shards =
      config.scheduler_shards > 1 ? absl::StrCat(", ", config.scheduler_shards, " scheduler shards") : "";
  d = absl::StrCat("policy ", config.policy, deferral, ", ", server->core_->spec().num_gpus(), " executors", shards,
                   "\n", d);
  return server;
}

void Server::StartAutoscaler(const AutoscaleOptions& options, Clock* clock, Server* server) {
  ShardedCore* core = server->core_.get();
  // What the interval did, from the core's running totals.
  auto last = std::make_shared<Autoscaler::Window>();
  auto read = [core, last] {
    Autoscaler::Window now;
    for (const ModelCounters& c : core->Counters()) now.outcomes += c;
    for (Duration b : core->BusyTimes()) now.busy += b;
    const Autoscaler::Window delta{now.outcomes.Since(last->outcomes), now.busy - last->busy};
    *last = now;
    return delta;
  };
  auto set_up = [core](int executor, bool up) {
    if (absl::Status s = core->SetExecutorUp(executor, up); !s.ok()) {
      std::cerr << "autoscale: executor " << executor << ": " << s.message() << "\n";
    }
  };
  server->autoscaler_ =
      std::make_unique<Autoscaler>(options, core->spec().num_gpus(), clock, std::move(read), std::move(set_up));
  server->autoscaler_->Start();
  absl::StrAppendFormat(&server->description_,
                        "autoscale: %d of %d executors up, every %g s: more at a bad rate above %g%% or busy above "
                        "%.0f%% (they serve %g s later), fewer below %.0f%%\n",
                        server->autoscaler_->up(), core->spec().num_gpus(), ToSeconds(options.interval),
                        100 * options.bad_rate_threshold, 100 * (1 - options.headroom / 2),
                        ToSeconds(options.provision_delay), 100 * (1 - 1.5 * options.headroom));
}

void Server::StartTaskAutoscaler(const ModelLessTask& made, const ServerConfig& config, Clock* clock, Server* server,
                                 InferenceFrontendOptions* frontend) {
  const ModelLessOptions& ml = *config.model_less;
  const Duration objective = made.requirements.latency_objective;
  const std::vector<TaskVariant>& variants = made.variants;
  const VariantRequirements task = made.requirements;
  ShardedCore* core = server->core_.get();
  auto set_up = [core](int executor, bool up) {
    if (absl::Status s = core->SetExecutorUp(executor, up); !s.ok()) {
      std::cerr << "model_less: executor " << executor << ": " << s.message() << "\n";
    }
  };
  server->task_scaler_ = std::make_unique<TaskAutoscaler>(variants, task, made.options, clock, std::move(set_up));
  server->task_scaler_->Start();
  TaskAutoscaler* scaler = server->task_scaler_.get();
  RouteModelLess(
      ml.task, made, [scaler](const VariantRequirements& q) -> std::optional<VariantChoice> { return scaler->Route(q); },
      [scaler](int j) -> std::optional<std::pair<VariantState, double>> { return scaler->Status(j); }, frontend);
  std::vector<std::string> names;
  for (const TaskVariant& v : variants) names.push_back(absl::StrFormat("%s (%d)", v.name, v.max_instances));
  absl::StrAppendFormat(&server->description_,
                        "model_less: task %s (accuracy >= %g within %g ms): every %g s, %s picks the instances of "
                        "%s; %d up at start\n",
                        ml.task, ml.accuracy, ToMillis(objective), ToSeconds(ml.autoscale.interval),
                        ml.autoscale.ilp ? "the ILP (CBC)" : "the greedy heuristic", absl::StrJoin(names, ", "),
                        [&] {
                          int up = 0;
                          for (size_t j = 0; j < variants.size(); ++j) up += server->task_scaler_->up(j);
                          return up;
                        }());
}

std::string Server::Describe() const { return description_; }

void Server::Shutdown(Duration write_timeout) {
  if (shut_down_) return;
  shut_down_ = true;
  if (autoscaler_) autoscaler_->Stop();
  if (task_scaler_) task_scaler_->Stop();
  if (listeners_) listeners_->Shutdown(write_timeout);
  if (loop_) loop_->Stop();
}

Server::~Server() { Shutdown(); }

}  // namespace tutti
