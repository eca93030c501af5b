#include "tutti/simulator/experiment.h"

#include <cmath>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tutti/config/adaptive_reader.h"
#include "tutti/config/autoscale_reader.h"
#include "tutti/config/delay_model_reader.h"
#include "tutti/config/scheduler_reader.h"
#include "tutti/config/network_delays_reader.h"
#include "tutti/core/yaml_map_reader.h"
#include "tutti/core/file_util.h"
#include "tutti/core/status_macros.h"
#include "tutti/core/zoo_profiles.h"
#include "tutti/planner/latency_split.h"

namespace tutti {
namespace {

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || path[0] == '/' || std::filesystem::exists(path)) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

absl::Status ReadModel(const YAML::Node& node, const std::string& where, const std::string& base_dir,
                       std::vector<ModelSpec>* out) {
  MapReader r(node, where);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto zoo, r.OptionalScalar<std::string>("zoo", "a path"));
  TUTTI_ASSIGN_OR_RETURN(auto max_batch, r.OptionalScalar<int>("max_batch", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto delay_ms, r.OptionalScalar<double>("max_queue_delay_ms", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto window, r.OptionalScalar<int>("early_drop_window", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto weights_mb, r.OptionalScalar<double>("weights_mb", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto copies, r.OptionalScalar<int>("copies", "an integer"));
  if (copies && *copies < 1) return Invalid(where + ".copies", "must be at least 1");
  if (weights_mb && !(*weights_mb > 0)) return Invalid(where + ".weights_mb", "must be positive");
  const int profile_max = max_batch.value_or(64);
  // `copies`: that many models alike, named name#1, name#2, … (versions
  // with their own weights: fine-tunes, seeds).
  auto finish = [&](ModelSpec m) {
    if (delay_ms) m.max_queue_delay = Millis(*delay_ms);
    m.early_drop_window = window.value_or(0);
    if (weights_mb) m.weights_bytes = static_cast<int64_t>(*weights_mb * 1e6);
    if (!copies) {
      out->push_back(std::move(m));
      return;
    }
    for (int i = 1; i <= *copies; ++i) {
      out->push_back(m);
      out->back().name = absl::StrCat(m.name, "#", i);
    }
  };
  if (zoo) {
    TUTTI_ASSIGN_OR_RETURN(auto scale, r.OptionalScalar<double>("slo_scale", "a number"));
    YAML::Node names = r.Get("names");
    TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
    TUTTI_ASSIGN_OR_RETURN(std::vector<ZooModel> models, LoadZooCsv(Resolve(*zoo, base_dir), profile_max));
    for (ZooModel& z : models) {
      if (names.IsSequence()) {
        bool wanted = false;
        for (const auto& n : names) wanted |= n.as<std::string>() == z.name;
        if (!wanted) continue;
      }
      finish(ModelSpec{z.name, std::move(z.profile),
                       static_cast<Duration>(static_cast<double>(z.slo) * scale.value_or(1.0))});
    }
    return absl::OkStatus();
  }
  TUTTI_ASSIGN_OR_RETURN(auto name, r.RequireScalar<std::string>("name", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto alpha, r.RequireScalar<double>("alpha_ms", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto beta, r.RequireScalar<double>("beta_ms", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto slo, r.RequireScalar<double>("slo_ms", "a number"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  absl::StatusOr<LatencyProfile> p = LatencyProfile::Linear(Millis(alpha), Millis(beta), profile_max);
  if (!p.ok()) return Invalid(where, p.status().message());
  finish(ModelSpec{name, *std::move(p), Millis(slo)});
  return absl::OkStatus();
}

absl::Status ReadWorkload(const YAML::Node& node, const std::string& base_dir, WorkloadSpec* w) {
  MapReader r(node, "workload");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto arrival, r.OptionalScalar<std::string>("arrival", "a string"));
  TUTTI_ASSIGN_OR_RETURN(auto rate, r.OptionalScalar<double>("rate", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto shape, r.OptionalScalar<double>("gamma_shape", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto zipf, r.OptionalScalar<double>("zipf", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto trace, r.OptionalScalar<std::string>("trace", "a path"));
  const std::string kind = arrival.value_or("poisson");
  if (kind == "constant") {
    w->arrival = ArrivalKind::kConstant;
  } else if (kind == "poisson") {
    w->arrival = ArrivalKind::kPoisson;
  } else if (kind == "gamma") {
    w->arrival = ArrivalKind::kGamma;
  } else if (kind == "trace") {
    w->arrival = ArrivalKind::kTrace;
    if (!trace) return Invalid("workload.trace", "required for arrival: trace");
    w->trace_path = Resolve(*trace, base_dir);
  } else {
    return Invalid("workload.arrival",
                   absl::StrCat("unknown arrival '", kind, "' (expected constant, poisson, gamma or trace)"));
  }
  w->rate = rate.value_or(0);
  w->gamma_shape = shape.value_or(1.0);
  w->zipf_s = zipf.value_or(0);
  if (YAML::Node weights = r.Get("weights"); weights.IsSequence()) {
    for (const auto& x : weights) w->weights.push_back(x.as<double>());
  }
  if (YAML::Node shares = r.Get("priorities"); shares.IsDefined()) {
    if (!shares.IsSequence() || shares.size() == 0) {
      return Invalid("workload.priorities", "expected a list of shares: priority 1's, 2's, …");
    }
    double sum = 0;
    for (const auto& x : shares) {
      const double share = x.as<double>();
      if (!(share >= 0)) return Invalid("workload.priorities", "shares must not be negative");
      w->priority_shares.push_back(share);
      sum += share;
    }
    if (!(sum > 0)) return Invalid("workload.priorities", "shares must not all be 0");
  }
  if (YAML::Node phases = r.Get("phases"); phases.IsSequence()) {
    for (size_t i = 0; i < phases.size(); ++i) {
      MapReader pr(phases[i], absl::StrCat("workload.phases[", i, "]"));
      TUTTI_ASSIGN_OR_RETURN(auto at, pr.RequireScalar<double>("at_s", "a number"));
      TUTTI_ASSIGN_OR_RETURN(auto prate, pr.RequireScalar<double>("rate", "a number"));
      TUTTI_RETURN_IF_ERROR(pr.CheckNoUnknownFields());
      w->phases.push_back({Seconds(at), prate});
    }
  }
  return r.CheckNoUnknownFields();
}

// The `graph` key: queries through the models in order, the objective split
// among them (planner/latency_split.h); the models' SLOs become their shares.
absl::StatusOr<SimGraph> ReadGraph(const YAML::Node& node, double rate, ClusterSpec* cluster) {
  MapReader r(node, "graph");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  TUTTI_ASSIGN_OR_RETURN(auto objective_ms, r.RequireScalar<double>("objective_ms", "a number"));
  // `split`: dp, even, or each model's budget in milliseconds.
  std::optional<std::string> split;
  std::vector<double> split_ms;
  if (YAML::Node s = r.Get("split"); s.IsSequence()) {
    for (const auto& b : s) split_ms.push_back(b.as<double>());
  } else if (s.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(split, r.OptionalScalar<std::string>("split", "dp, even or a list of budgets in ms"));
  }
  TUTTI_ASSIGN_OR_RETURN(auto duty_cycle, r.OptionalScalar<bool>("duty_cycle", "true or false"));
  TUTTI_ASSIGN_OR_RETURN(auto whole_gpus, r.OptionalScalar<bool>("whole_gpus", "true or false"));
  TUTTI_ASSIGN_OR_RETURN(YAML::Node gammas, r.Require("gamma"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  const size_t n = cluster->models.size();
  if (!gammas.IsSequence() || gammas.size() + 1 != n) {
    return Invalid("graph.gamma", absl::StrCat("expected ", n - 1, " numbers: one per model after the first"));
  }
  if (!(objective_ms > 0)) return Invalid("graph.objective_ms", "must be positive");
  if (split && *split != "dp" && *split != "even") {
    return Invalid("graph.split", "expected dp, even or a list of budgets in ms");
  }
  if (!split_ms.empty()) {
    if (split_ms.size() != n) return Invalid("graph.split", absl::StrCat("expected ", n, " budgets: one per model"));
    double sum = 0;
    for (double b : split_ms) {
      if (!(b > 0)) return Invalid("graph.split", "budgets must be positive");
      sum += b;
    }
    if (sum > objective_ms + 1e-9) return Invalid("graph.split", "the budgets add up to more than objective_ms");
  }
  SimGraph graph;
  graph.objective = Millis(objective_ms);
  graph.gamma = {1.0};
  for (const auto& g : gammas) graph.gamma.push_back(g.as<double>());
  std::vector<const LatencyProfile*> profiles;
  std::vector<int> parents;
  for (size_t k = 0; k < n; ++k) {
    if (!(graph.gamma[k] >= 0)) return Invalid("graph.gamma", "must not be negative");
    profiles.push_back(&cluster->models[k].profile);
    parents.push_back(static_cast<int>(k) - 1);
  }
  absl::StatusOr<LatencySplitResult> shares = LatencySplitResult{};
  for (double b : split_ms) shares->budgets.push_back(Millis(b));
  if (split_ms.empty()) {
    shares = SplitOverProfiles(profiles, parents, graph.gamma, std::max(rate, 1.0), graph.objective,
                               graph.objective / 200, split.value_or("dp") == "even", /*overhead=*/0,
                               duty_cycle.value_or(false), whole_gpus.value_or(false) ? cluster->num_gpus() : 0);
  }
  if (!shares.ok()) return Invalid("graph", shares.status().message());
  if (std::isinf(shares->gpus)) return Invalid("graph", "no split of the objective fits the models' profiles");
  Duration used = 0;
  for (size_t k = 0; k < n; ++k) {
    graph.shares.push_back(static_cast<double>(shares->budgets[k]) / static_cast<double>(graph.objective));
    cluster->models[k].slo = k + 1 < n ? shares->budgets[k] : graph.objective - used;
    used += shares->budgets[k];
  }
  return graph;
}

absl::StatusOr<Experiment> ParseRoot(const YAML::Node& root, const std::string& base_dir, const SimConfig* cluster) {
  MapReader r(root, "");
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  Experiment e;
  SimConfig& c = e.config;
  if (cluster != nullptr) c = *cluster;
  TUTTI_ASSIGN_OR_RETURN(auto seed, r.OptionalScalar<uint64_t>("seed", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto duration, r.OptionalScalar<double>("duration_s", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto warmup, r.OptionalScalar<double>("warmup_s", "a number"));
  std::optional<int> gpus;
  if (cluster == nullptr) {
    TUTTI_ASSIGN_OR_RETURN(gpus, r.RequireScalar<int>("gpus", "an integer"));
  } else {
    for (const char* key : {"gpus", "models"}) {
      if (r.Get(key).IsDefined()) return Invalid(key, "comes from the serve config (--config); leave it out");
    }
  }
  TUTTI_ASSIGN_OR_RETURN(SchedulerFields scheduler, ReadSchedulerFields(r, &c.options, /*variants=*/true));
  const std::optional<std::string>& policy = scheduler.policy;
  const std::optional<Deferral>& deferral = scheduler.deferral;
  TUTTI_ASSIGN_OR_RETURN(auto jitter, r.OptionalScalar<double>("jitter", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto epoch, r.OptionalScalar<double>("nexus_epoch_s", "a number"));
  c.seed = seed.value_or(1);
  c.duration = Seconds(duration.value_or(10));
  c.warmup = Seconds(warmup.value_or(1));
  if (gpus) c.cluster.gpus = *gpus;
  if (policy) c.policy = *policy;
  c.jitter = jitter.value_or(0);
  if (epoch) c.options.nexus_epoch = Seconds(*epoch);
  if (YAML::Node ps = r.Get("policies"); ps.IsSequence()) {
    for (const auto& p : ps) e.policies.push_back(p.as<std::string>());
  }
  e.policy_given = policy.has_value();
  e.policies_given = !e.policies.empty();
  if (!policy && e.policies.size() == 1) c.policy = e.policies[0];  // one entry: the experiment's policy
  if (YAML::Node ds = r.Get("timeout_delays_ms"); ds.IsSequence()) {
    for (const auto& d : ds) e.timeout_delays.push_back(Millis(d.as<double>()));
  }
  if (YAML::Node ws = r.Get("early_drop_windows"); ws.IsSequence()) {
    for (const auto& w : ws) e.early_drop_windows.push_back(w.as<int>());
  }
  if (YAML::Node paper = r.Get("paper_goodput"); paper.IsMap()) {
    for (const auto& kv : paper) e.paper_goodput.push_back({kv.first.as<std::string>(), kv.second.as<double>()});
  }
  if (YAML::Node net = r.Get("network_us"); net.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.cluster.delays, ReadNetworkDelays(net, "network_us"));
  }
  if (YAML::Node d = r.Get("delay_model"); d.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.delay_model, ReadDelayModelOptions(d, "delay_model"));
  }
  if (YAML::Node memory = r.Get("memory"); memory.IsDefined()) {
    MapReader mr(memory, "memory");
    TUTTI_RETURN_IF_ERROR(mr.CheckIsMap());
    TUTTI_ASSIGN_OR_RETURN(auto gpu_gb, mr.RequireScalar<double>("gpu_gb", "a number"));
    TUTTI_ASSIGN_OR_RETURN(auto gbps, mr.OptionalScalar<double>("load_gb_per_s", "a number"));
    TUTTI_ASSIGN_OR_RETURN(auto overhead, mr.OptionalScalar<double>("load_overhead_ms", "a number"));
    TUTTI_RETURN_IF_ERROR(mr.CheckNoUnknownFields());
    if (!(gpu_gb > 0)) return Invalid("memory.gpu_gb", "must be positive");
    c.cluster.memory.gpu_bytes = static_cast<int64_t>(gpu_gb * 1e9);
    if (gbps) c.cluster.memory.bytes_per_s = *gbps * 1e9;
    if (overhead) c.cluster.memory.overhead = Millis(*overhead);
  }
  if (YAML::Node inject = r.Get("inject"); inject.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.inject, ReadDelayInjection(inject, "inject"));
  }
  if (e.policies.empty()) {  // every policy that can serve the cluster: only `loads` plans loads
    for (const std::string& p : SchedulerPolicyNames()) {
      if ((p == "loads") == c.cluster.memory.limited()) e.policies.push_back(p);
    }
  }
  if (cluster == nullptr) {
    TUTTI_ASSIGN_OR_RETURN(YAML::Node models, r.Require("models"));
    if (!models.IsSequence()) return Invalid("models", "expected a list");
    for (size_t i = 0; i < models.size(); ++i) {
      TUTTI_RETURN_IF_ERROR(ReadModel(models[i], absl::StrCat("models[", i, "]"), base_dir, &c.cluster.models));
    }
  }
  for (const auto& [gpu, factor] : c.inject.compute_scale) {
    if (gpu >= c.cluster.num_gpus()) {
      return Invalid("inject.compute_scale", absl::StrCat("no GPU ", gpu, " (the cluster has ", c.cluster.num_gpus(), ")"));
    }
  }
  if (YAML::Node workload = r.Get("workload"); workload.IsDefined() || cluster == nullptr) {
    TUTTI_ASSIGN_OR_RETURN(workload, r.Require("workload"));
    TUTTI_RETURN_IF_ERROR(ReadWorkload(workload, base_dir, &c.workload));
  }
  if (YAML::Node graph = r.Get("graph"); graph.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.graph, ReadGraph(graph, c.workload.rate, &c.cluster));
  }
  if (YAML::Node autoscale = r.Get("autoscale"); autoscale.IsDefined()) {
    TUTTI_ASSIGN_OR_RETURN(c.autoscale, ReadAutoscaleOptions(autoscale, "autoscale"));
  }
  // A serve config's deferral stands unless this file autoscales or says otherwise.
  if (deferral || cluster == nullptr || r.Get("autoscale").IsDefined()) {
    c.options.deferral = deferral.value_or(DefaultDeferral(c.autoscale.has_value()));
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(c.cluster));
  return e;
}

}  // namespace

absl::StatusOr<Experiment> ParseExperiment(const std::string& yaml_text, const std::string& base_dir,
                                           const SimConfig* cluster) {
  TUTTI_ASSIGN_OR_RETURN(YAML::Node root, LoadYaml(yaml_text));
  try {
    return ParseRoot(root, base_dir, cluster);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed experiment: ", e.what()));
  }
}

absl::StatusOr<Experiment> LoadExperiment(const std::string& path, const SimConfig* cluster) {
  TUTTI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::StatusOr<Experiment> e = ParseExperiment(text, std::filesystem::path(path).parent_path().string(), cluster);
  if (!e.ok()) return absl::Status(e.status().code(), absl::StrCat(path, ": ", e.status().message()));
  return e;
}

std::vector<std::string> UnreadKeys(const Experiment& e, const std::string& action) {
  std::vector<std::string> unread;
  if (action == "compare") {
    if (e.policy_given) {
      unread.push_back(absl::StrCat("policy (compare runs every entry of `policies`",
                                    e.policies_given ? "" : ", here every policy", ")"));
    }
    return unread;
  }
  if (e.policies_given && e.policies.size() > 1) {
    unread.push_back(absl::StrCat("policies (", e.policies.size(), " entries; ", action, " runs one policy, ",
                                  e.config.policy, ": use compare, or --policy)"));
  }
  if (!e.timeout_delays.empty()) unread.push_back("timeout_delays_ms (read by compare)");
  if (!e.early_drop_windows.empty()) unread.push_back("early_drop_windows (read by compare)");
  return unread;
}

SimConfig ConfigForPolicy(const SimConfig& base, const std::string& entry) {
  SimConfig c = base;
  const std::vector<std::string> parts = absl::StrSplit(entry, '+');
  c.policy = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!ApplyPolicyVariant(parts[i], &c.options)) c.policy = entry;  // unknown: CreateScheduler names it
  }
  return c;
}

std::vector<std::pair<std::string, SimConfig>> PolicyVariants(const Experiment& e,
                                                              const std::string& entry) {
  SimConfig c = ConfigForPolicy(e.config, entry);
  const bool early = c.options.drop == DropPolicy::kEarly && absl::StrContains(entry, "+early");
  std::vector<std::pair<std::string, SimConfig>> out;
  if (c.policy == "timeout" && !e.timeout_delays.empty()) {
    for (Duration d : e.timeout_delays) {
      for (ModelSpec& m : c.cluster.models) m.max_queue_delay = d;
      out.push_back({absl::StrCat(entry, "(", ToMillis(d), "ms)"), c});
    }
  } else if (early && !e.early_drop_windows.empty()) {
    for (int w : e.early_drop_windows) {
      for (ModelSpec& m : c.cluster.models) m.early_drop_window = w;
      out.push_back({absl::StrCat(entry, "(w", w, ")"), c});
    }
  } else {
    out.push_back({entry, c});
  }
  return out;
}

}  // namespace tutti
