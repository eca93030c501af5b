// TaskAutoscaler: INFaaS's model-less serving of one task (INFaaS §4): it
// picks a variant for every query (getVariant, planner/variant_selection.h)
// and scales the variants' instances every `interval` (the model-autoscaler,
// §4.2: horizontal — more instances of a variant — and vertical — moving
// the load to a cheaper or faster variant — in one ILP, planner/
// variant_scaling.h, solved by CBC, or the greedy heuristic). Driven by a
// clock: virtual time in the simulator, the real clock in a server.
//
// Each variant owns a pool of executor slots (GPU ids [first_gpu,
// first_gpu + max_instances)); the autoscaler brings slots up and takes
// them down through `set_up`, the lowest-numbered first up. An instance
// asked for comes up `load_latency` later and is paid for (instance-seconds
// × cost) from the request on; one released goes at once and costs nothing
// after.
//
// The scaling step, every interval:
//  - the load L is the queries routed in the interval, per second, plus,
//    when it rose, that rise carried on until an instance asked for now
//    would serve (one interval and the eligible variants' longest load
//    latency ahead);
//  - the ILP's variants are the allowed ones accurate enough for the task's
//    requirements, N_j their instances up or on their way, resources one
//    pool per hardware kind (`pools`); when no plan carries L, the plan
//    for the most the pools carry;
//  - instances the plan adds are asked for at once; instances it removes go
//    only once every instance asked for is up and the plan has wanted them
//    gone for the variant's T_v = max(load latency, min_down_wait)
//    (INFaaS's scale-down wait), so that a vertical switch never leaves the
//    load without capacity; a variant losing its last instance is first
//    drained — no longer routed to — and released at the next tick, so
//    that what it holds is answered;
//  - at least one instance stays (the cheapest that meets the objective
//    when the plan keeps none).
//
// Routing: the variants with an instance up are Active (Overloaded once
// the queries routed to them in the last second reach their saturation);
// those with none are Inactive, selectable only when their load latency
// fits the objective; SelectVariant picks, and an Inactive pick is asked
// to load while the query goes to the least utilised variant up (if any:
// only an instance up takes work). `allowed` restricts routing and scaling to some variants (the
// fixed-variant baselines: one variant, scaled horizontally only).
//
// Thread-safe: ticks run on the clock's timer thread, Route() anywhere.
#ifndef TUTTI_AUTOSCALE_TASK_AUTOSCALER_H_
#define TUTTI_AUTOSCALE_TASK_AUTOSCALER_H_

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tutti/core/clock.h"
#include "tutti/planner/variant_selection.h"

namespace tutti {

struct TaskVariant {
  std::string name;
  std::string hardware;         // its pool
  double accuracy = 0;
  Duration latency = 0;         // profiled ℓ(1)
  double saturation_qps = 0;    // what one instance answers within the objective
  double cost = 0;              // per instance and second
  Duration load_latency = 0;
  int first_gpu = 0;            // its slots: [first_gpu, first_gpu + max_instances)
  int max_instances = 1;
};

struct TaskAutoscaleOptions {
  Duration interval = kSecond;   // INFaaS's model-autoscaler polls every second
  double slack = 1.05;           // INFaaS's slack-threshold
  // The ILP's weight of loading time, per second: small by default, so that
  // among plans of equal cost the one that keeps what runs wins.
  double lambda = 0.01;
  bool ilp = true;               // false: INFaaS's greedy heuristic
  Duration solver_limit = 100 * kMillisecond;
  Duration min_down_wait = 0;    // floor of the scale-down wait T_v
  std::vector<int> allowed;      // variants it may use; empty: all
  std::vector<int> initial;      // instances up at Start(), per variant; empty: one of the cheapest eligible
  std::map<std::string, int> pools;  // instances per hardware kind at most; a kind not listed: no limit
  // An instance brought up (set_up(gpu, true)) serves only once its owner
  // calls Up(gpu) — a backend process has to come and take the slot —
  // instead of at once; until then it is on its way. The initial instances too.
  bool await_up = false;
};

// Per variant: whether `options.allowed` lets it be used (all when empty).
std::vector<bool> AllowedVariants(const TaskAutoscaleOptions& options, size_t variants);

// A model-less task as a TaskAutoscaler (and a TaskRouter) runs it: its
// variants on their slots, its requirements and the scaling options.
struct ModelLessTask {
  std::vector<TaskVariant> variants;
  VariantRequirements requirements;
  TaskAutoscaleOptions options;
};

// What routing reads of a task's variants, per variant: instances up; up
// or on their way; drained (routed no more); queries routed to it in the
// last second (an exponentially decayed count).
struct TaskRoutingState {
  std::vector<int> up, paid;
  std::vector<bool> draining;
  std::vector<double> recent;
};

// A query's route: the variant it goes to (choice.index; -1 when none is up
// or on its way), and the Inactive variant the selection picked, to be
// loaded (-1: none).
struct TaskRoute {
  VariantChoice choice;
  int load = -1;
};

// Storage RouteTask reuses between queries (no allocation per query).
struct RouteBuffers {
  std::vector<SelectableVariant> candidates;
  std::vector<int> index;
};

// TaskAutoscaler::Route's decision as a pure function of `state`, so that a
// router away from the autoscaler (a distributed frontend, on the leader's
// published state) decides as it does. `allowed`: per variant; `buffers`:
// the caller's, reused between queries.
TaskRoute RouteTask(const std::vector<TaskVariant>& variants, const std::vector<bool>& allowed,
                    const TaskRoutingState& state, const VariantRequirements& query, RouteBuffers& buffers);
// Inactive with no instance up, else Active or Overloaded by its
// utilisation: `recent` queries per second over what `up` instances carry.
std::pair<VariantState, double> VariantStatusOf(const TaskVariant& variant, int up, double recent);
// Decays routed counts kept at `from` to `to`.
void DecayRecent(Time from, Time to, std::vector<double>* recent);

class TaskAutoscaler {
 public:
  using SetUpFn = std::function<void(int gpu, bool up)>;

  // InvalidArgument naming the problem: no variants, a non-positive
  // saturation or negative cost, an interval ≤ 0, slack < 1, an allowed
  // index out of range, initial instances beyond a variant's slots, no
  // allowed variant accurate enough.
  static absl::Status Validate(const std::vector<TaskVariant>& variants, const VariantRequirements& task,
                               const TaskAutoscaleOptions& options);

  // REQUIRES: Validate(...).ok(); `clock` outlives this. Ticks stop at `end`.
  TaskAutoscaler(std::vector<TaskVariant> variants, VariantRequirements task, TaskAutoscaleOptions options,
                 Clock* clock, SetUpFn set_up, Time end = kInfiniteFuture);
  ~TaskAutoscaler();

  // Takes every slot but the initial instances down and starts ticking.
  void Start();
  // Stops ticking; instances on their way do not come. Idempotent.
  void Stop();

  // The variant for a query arriving now with the task's requirements (or
  // `query`'s: a query may ask for more or less than the application),
  // counted as routed to it.
  VariantChoice Route() { return Route(task_); }
  VariantChoice Route(const VariantRequirements& query);
  // TaskAutoscaleOptions::await_up: slot `gpu`, brought up, now serves.
  // Returns false (and does nothing) for a slot not awaited.
  bool Up(int gpu);
  // Routing done elsewhere (RouteTask on RoutingState()): a query routed to
  // `variant`, counted as Route() counts; and an Inactive `variant` a
  // router picked, loaded unless an instance is up or on its way.
  void Count(int variant);
  void Load(int variant);
  TaskRoutingState RoutingState();
  const std::vector<TaskVariant>& variants() const { return variants_; }

  int up(int variant) const;
  int paid(int variant) const;  // up or on their way
  // Its state as Route() sees it now (Inactive with no instance up, else
  // Active or Overloaded) and its utilisation: the queries routed to it in
  // the last second over what its instances up carry.
  std::pair<VariantState, double> Status(int variant);
  int scale_ups() const;    // ticks that asked for instances
  int scale_downs() const;  // ticks that released some
  // Instance-seconds paid per variant within [from, to), and their cost.
  std::vector<double> InstanceSeconds(Time from, Time to) const;
  double Cost(Time from, Time to) const;
  // (time, instances paid for per variant from then on), from Start().
  std::vector<std::pair<Time, std::vector<int>>> allocation() const;

 private:
  void Tick();
  void Arrive(int variant);  // an instance of it comes up
  void Record(Time now);  // appends the paid instances to allocation_
  std::vector<int> Plan(double load) const;  // instances per variant
  void Decay(Time now);  // the routed counts, to `now`
  void CountLocked(int variant);
  void LoadLocked(int variant, Time now);
  // The variant to keep one instance of when none is planned (and to start
  // with): the eligible one in time, running, cheapest, in that order.
  int KeepOne() const;

  const std::vector<TaskVariant> variants_;
  const VariantRequirements task_;
  const TaskAutoscaleOptions o_;
  Clock* const clock_;
  const SetUpFn set_up_;
  const Time end_;
  std::vector<bool> allowed_;  // per variant: TaskAutoscaleOptions::allowed
  std::vector<int> eligible_;  // allowed and accurate enough
  Duration horizon_ = 0;       // their longest load latency
  mutable std::mutex mu_;
  bool stopped_ = false;
  std::vector<int> up_, paid_;          // per variant: up; up or on their way
  std::vector<int> taken_;              // per variant: slots up or being brought up (the next arrival's)
  std::vector<int> awaited_;            // await_up: slots brought up, not yet Up()
  std::vector<Time> down_since_;        // per variant: since when the plan wants fewer (kInfiniteFuture: not)
  std::vector<bool> draining_;          // per variant: its last instances go at the next tick; not routed to
  std::vector<double> recent_;          // per variant: queries routed, decayed over one second
  Time recent_at_ = 0;
  int64_t routed_ = 0;                  // queries routed since the last tick
  double last_rate_ = -1;  // the interval before's (< 0: none yet)
  int on_the_way_ = 0;
  int scale_ups_ = 0, scale_downs_ = 0;
  std::vector<std::pair<Time, std::vector<int>>> allocation_;
  RouteBuffers buffers_;  // Route()'s
  TimerId tick_ = kNoTimer;
  std::vector<TimerId> arrivals_;
};

}  // namespace tutti

#endif  // TUTTI_AUTOSCALE_TASK_AUTOSCALER_H_
