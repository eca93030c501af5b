// INFaaS's per-query variant selection and the state machine it reads
// (INFaaS §4.1, Figure 4). Pure functions: the monitoring that feeds them
// and the dispatcher that acts on them live elsewhere.
//
// State of a variant instance (Figure 4): Inactive (not loaded), Active
// (loaded, serving below its peak), Overloaded (serving at its peak
// throughput), Interfered (not overloaded, but slower than its profile —
// co-located work contends for caches, memory bandwidth, threads).
// Selection never picks an Overloaded or Interfered variant while another
// meets the requirements.
#ifndef TUTTI_PLANNER_VARIANT_SELECTION_H_
#define TUTTI_PLANNER_VARIANT_SELECTION_H_

#include <string>
#include <vector>

#include "tutti/core/time.h"

namespace tutti {

enum class VariantState { kInactive, kActive, kOverloaded, kInterfered };
const char* VariantStateName(VariantState state);

// What the monitoring saw of a variant instance over its last window
// (INFaaS's daemons report every 2 s).
struct VariantObservation {
  bool loaded = false;
  double served_qps = 0;       // queries answered per second
  double saturation_qps = 0;   // its profile's peak within its latency
  Duration latency = 0;        // measured inference latency (0: nothing ran)
  Duration profiled = 0;       // the profile's latency at the batches it ran
};

struct VariantStateOptions {
  double overloaded_at = 1.0;   // served ≥ this × saturation: Overloaded
  double interfered_at = 1.2;   // latency ≥ this × profiled: Interfered
  // A state is left only once the measure is this fraction below its
  // threshold, so that a variant near one does not flap.
  double hysteresis = 0.1;
};

// The next state of an instance in `current` after `seen`.
VariantState NextVariantState(VariantState current, const VariantObservation& seen,
                              const VariantStateOptions& options = {});

// A variant of a task, as the selection sees it.
struct SelectableVariant {
  std::string name;
  double accuracy = 0;         // on the task's validation set, 0..1
  Duration latency = 0;        // profiled inference latency (batch 1)
  Duration load_latency = 0;   // to load it when inactive
  double cost = 0;             // per instance and second
  VariantState state = VariantState::kInactive;
  double utilisation = 0;      // served / saturation of its least loaded instance
  double queued = 0;           // what waits for it now (e.g. items in flight per max batch)
};

// A query's requirements (INFaaS's model-less interface).
struct VariantRequirements {
  double min_accuracy = 0;
  Duration latency_objective = 0;  // std::numeric_limits<Duration>::max(): none
  double max_cost = 0;         // ≤ 0: no ceiling
};

struct VariantChoice {
  int index = -1;              // into the variants; -1: there are none
  bool meets = false;          // it meets every requirement
  std::string note;            // why it was chosen when it does not (for the answer)
};

// INFaaS's getVariant. The variants that meet the requirements (accuracy,
// profiled latency within the objective, cost within the ceiling), in this
// order of preference: the least utilised Active one; the Inactive one that
// can serve soonest (lowest load plus inference latency; INFaaS then loads
// it); the least utilised Overloaded or Interfered one (with a note). When
// none meets them, the closest match, with a note saying what it misses:
// the most accurate of those within the objective, else the fastest of
// those accurate enough, else the fastest. Ties go to the less queued, then
// the cheaper variant.
// Cost: O(variants), no allocation unless a note is written.
VariantChoice SelectVariant(const std::vector<SelectableVariant>& variants, const VariantRequirements& req);

}  // namespace tutti

#endif  // TUTTI_PLANNER_VARIANT_SELECTION_H_
