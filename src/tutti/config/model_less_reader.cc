#include "tutti/config/model_less_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

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
