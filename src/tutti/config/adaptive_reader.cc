#include "tutti/config/adaptive_reader.h"

#include "tutti/core/status_macros.h"

namespace tutti {

absl::Status ReadAdaptiveOptions(MapReader& r, SchedulerOptions* options) {
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
  return absl::OkStatus();
}

}  // namespace tutti
