#include "tutti/config/model_less_reader.h"

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace {

absl::StatusOr<HardwareKind> ReadHardwareKind(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  HardwareKind k;
  TUTTI_ASSIGN_OR_RETURN(k.name, r.RequireScalar<std::string>("name", "a name"));
  TUTTI_ASSIGN_OR_RETURN(auto executor, r.OptionalScalar<std::string>("executor", "torch or emulated"));
  TUTTI_ASSIGN_OR_RETURN(auto latency, r.OptionalScalar<double>("latency_speedup", "a positive number"));
  TUTTI_ASSIGN_OR_RETURN(auto throughput, r.OptionalScalar<double>("throughput_speedup", "a positive number"));
  TUTTI_ASSIGN_OR_RETURN(auto cost, r.OptionalScalar<double>("cost", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto provision_s, r.OptionalScalar<double>("provision_s", "a number of seconds"));
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (k.name.empty() || k.name.find_first_of("@/ ") != std::string::npos) {
    return Invalid(r.FieldPath("name"), "expected a name without '@', '/' or spaces");
  }
  k.executor = executor.value_or("torch");
  if (k.executor != "torch" && k.executor != "emulated") return Invalid(r.FieldPath("executor"), "torch or emulated");
  k.latency_speedup = latency.value_or(1);
  k.throughput_speedup = throughput.value_or(1);
  if (!(k.latency_speedup > 0) || !(k.throughput_speedup > 0)) {
    return Invalid(r.FieldPath("latency_speedup"), "speed-ups must be positive");
  }
  if (k.executor == "torch" && (k.latency_speedup != 1 || k.throughput_speedup != 1)) {
    return Invalid(r.FieldPath("executor"), "a torch kind runs the weights as profiled: its speed-ups must be 1 "
                                            "(declare a faster or slower kind as emulated)");
  }
  k.cost = cost.value_or(1);
  if (!(k.cost >= 0)) return Invalid(r.FieldPath("cost"), "must not be negative");
  if (provision_s && !(*provision_s >= 0)) return Invalid(r.FieldPath("provision_s"), "must not be negative");
  k.provision = provision_s ? Seconds(*provision_s) : 0;
  return k;
}

}  // namespace

absl::StatusOr<ModelLessOptions> ReadModelLessOptions(const YAML::Node& node, const std::string& field) {
  MapReader r(node, field);
  TUTTI_RETURN_IF_ERROR(r.CheckIsMap());
  ModelLessOptions o;
  TUTTI_ASSIGN_OR_RETURN(o.task, r.RequireScalar<std::string>("task", "a task name"));
  TUTTI_ASSIGN_OR_RETURN(auto accuracy, r.OptionalScalar<double>("accuracy", "a number from 0 to 1"));
  TUTTI_ASSIGN_OR_RETURN(auto objective_ms, r.OptionalScalar<double>("objective_ms", "a number of milliseconds"));
  TUTTI_ASSIGN_OR_RETURN(auto interval_s, r.OptionalScalar<double>("interval_s", "a number of seconds"));
  TUTTI_ASSIGN_OR_RETURN(auto slack, r.OptionalScalar<double>("slack", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto solver, r.OptionalScalar<std::string>("solver", "ilp or greedy"));
  TUTTI_ASSIGN_OR_RETURN(auto down_s, r.OptionalScalar<double>("min_down_wait_s", "a number of seconds"));
  if (YAML::Node pools = r.Get("pools"); pools.IsDefined()) {
    if (!pools.IsMap()) return Invalid(r.FieldPath("pools"), "expected a mapping KIND: INSTANCES");
    for (const auto& kv : pools) {
      const std::string kind = kv.first.as<std::string>();
      int n = 0;
      try {
        n = kv.second.as<int>();
      } catch (const YAML::Exception&) {
        n = 0;
      }
      if (n < 1) return Invalid(r.FieldPath("pools." + kind), "expected a count of at least 1");
      o.autoscale.pools[kind] = n;
    }
  }
  if (YAML::Node variants = r.Get("variants"); variants.IsDefined()) {
    if (!variants.IsSequence() || variants.size() == 0) {
      return Invalid(r.FieldPath("variants"), "expected a list of variant names (MODEL@KIND)");
    }
    for (const auto& v : variants) o.variants.push_back(v.as<std::string>());
  }
  if (YAML::Node hardware = r.Get("hardware"); hardware.IsDefined()) {
    if (!hardware.IsSequence() || hardware.size() == 0) {
      return Invalid(r.FieldPath("hardware"), "expected a list of hardware kinds ({name: …, executor: …, …})");
    }
    for (size_t i = 0; i < hardware.size(); ++i) {
      TUTTI_ASSIGN_OR_RETURN(HardwareKind kind,
                             ReadHardwareKind(hardware[i], r.FieldPath(absl::StrCat("hardware[", i, "]"))));
      for (const HardwareKind& k : o.hardware) {
        if (k.name == kind.name) return Invalid(r.FieldPath("hardware"), "names '" + kind.name + "' twice");
      }
      o.hardware.push_back(std::move(kind));
    }
  }
  TUTTI_RETURN_IF_ERROR(r.CheckNoUnknownFields());
  if (o.task.empty()) return Invalid(r.FieldPath("task"), "must not be empty");
  if (accuracy && !(*accuracy >= 0 && *accuracy <= 1)) return Invalid(r.FieldPath("accuracy"), "must be in [0, 1]");
  if (objective_ms && !(*objective_ms > 0)) return Invalid(r.FieldPath("objective_ms"), "must be positive");
  if (interval_s && !(*interval_s > 0)) return Invalid(r.FieldPath("interval_s"), "must be positive");
  if (slack && !(*slack >= 1)) return Invalid(r.FieldPath("slack"), "must be at least 1");
  if (solver && *solver != "ilp" && *solver != "greedy") return Invalid(r.FieldPath("solver"), "ilp or greedy");
  if (down_s && !(*down_s >= 0)) return Invalid(r.FieldPath("min_down_wait_s"), "must not be negative");
  o.accuracy = accuracy.value_or(0);
  if (objective_ms) o.objective = Millis(*objective_ms);
  if (interval_s) o.autoscale.interval = Seconds(*interval_s);
  o.autoscale.slack = slack.value_or(o.autoscale.slack);
  o.autoscale.ilp = solver.value_or("ilp") == "ilp";
  if (down_s) o.autoscale.min_down_wait = Seconds(*down_s);
  return o;
}

}  // namespace tutti
