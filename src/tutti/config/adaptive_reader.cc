#include "tutti/config/adaptive_reader.h"

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

absl::StatusOr<std::optional<Deferral>> ReadAdaptiveOptions(MapReader& r, SchedulerOptions* options) {
  TUTTI_ASSIGN_OR_RETURN(auto epoch, r.OptionalScalar<double>("adaptive_epoch_s", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto window, r.OptionalScalar<double>("adaptive_window_s", "a number"));
  TUTTI_ASSIGN_OR_RETURN(auto memory, r.OptionalScalar<int>("adaptive_memory", "an integer"));
  TUTTI_ASSIGN_OR_RETURN(auto stress, r.OptionalScalar<double>("adaptive_stress", "a number"));
  if (epoch && !(*epoch > 0)) return Invalid(r.FieldPath("adaptive_epoch_s"), "must be positive");
  if (window && !(*window > 0)) return Invalid(r.FieldPath("adaptive_window_s"), "must be positive");
  if (memory && *memory < 1) return Invalid(r.FieldPath("adaptive_memory"), "must be at least 1");
  if (stress && !(*stress >= 1)) return Invalid(r.FieldPath("adaptive_stress"), "must be at least 1 (1: no stressed replays)");
  if (epoch) options->adaptive_epoch = Seconds(*epoch);
  if (window) options->adaptive_window = Seconds(*window);
  if (memory) options->adaptive_memory = *memory;
  if (stress) options->adaptive_stress = *stress;
  TUTTI_ASSIGN_OR_RETURN(auto price, r.OptionalScalar<double>("gpu_ms_price", "a number"));
  if (price && !(*price >= 0)) return Invalid(r.FieldPath("gpu_ms_price"), "must not be negative (0: never wait)");
  if (price) options->gpu_ms_price = *price;
  TUTTI_ASSIGN_OR_RETURN(auto deferral, r.OptionalScalar<std::string>("deferral", "auto, latency or consolidate"));
  if (!deferral || *deferral == "auto") return std::optional<Deferral>();
  if (*deferral == "latency") return std::optional<Deferral>(Deferral::kLatency);
  if (*deferral == "consolidate") return std::optional<Deferral>(Deferral::kConsolidate);
  return Invalid(r.FieldPath("deferral"), absl::StrCat("unknown deferral '", *deferral,
                                                       "' (expected auto, latency or consolidate)"));
}

}  // namespace tutti
