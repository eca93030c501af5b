// Scheduler-only throughput in virtual time (Google Benchmark): how many
// requests per second of real CPU time one scheduler object handles, with
// its timers, on one core. No emulated GPUs or metrics: the listener only
// counts. Symphony reports millions of requests/s for its centralized
// scheduler; Tutti's target is >= 1,000,000 requests/s with 100 models and
// 1,000 GPUs.
//
//   build/bench/scheduler_benchmark
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "tutti/core/manual_clock.h"
#include "tutti/core/zoo_profiles.h"
#include "tutti/scheduler/scheduler.h"

namespace tutti {
namespace {

struct CountingListener : SchedulerListener {
  int64_t batches = 0, dispatched = 0, dropped = 0;
  void OnDispatch(Batch b) override {
    ++batches;
    dispatched += static_cast<int64_t>(b.requests.size());
  }
  void OnDrop(const Request&, DropReason) override { ++dropped; }
};

// `models` models cycling through the A100 zoo's profiles and SLOs.
ClusterSpec Cluster(int models, int gpus) {
  std::vector<ZooModel> zoo = *LoadZooCsv(TUTTI_SOURCE_DIR "/data/profiles/symphony_zoo_a100.csv", 64);
  ClusterSpec spec;
  for (int m = 0; m < models; ++m) {
    const ZooModel& z = zoo[m % zoo.size()];
    spec.models.push_back({z.name + "_" + std::to_string(m), z.profile, z.slo});
  }
  spec.gpus = gpus;
  return spec;
}

void BM_Scheduler(benchmark::State& state, const std::string& policy) {
  const int models = static_cast<int>(state.range(0)), gpus = static_cast<int>(state.range(1));
  const double rate = static_cast<double>(state.range(2));  // requests/s, virtual
  const ClusterSpec spec = Cluster(models, gpus);
  // Pre-generate arrivals so that only the scheduler is measured.
  constexpr int kRequests = 1 << 20;
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(rate / 1e9);
  std::uniform_int_distribution<int> pick(0, models - 1);
  std::vector<Request> requests(kRequests);
  Time t = 0;
  for (int i = 0; i < kRequests; ++i) {
    t += static_cast<Time>(gap(rng)) + 1;
    const ModelId m = pick(rng);
    requests[i] = {static_cast<RequestId>(i), m, t, t + spec.models[m].slo};
  }
  int64_t handled = 0, dispatched = 0, dropped = 0, batches = 0;
  for (auto _ : state) {
    ManualClock clock;
    CountingListener listener;
    std::unique_ptr<Scheduler> s = *CreateScheduler(policy, spec, {}, &clock, &listener);
    for (const Request& r : requests) {
      clock.AdvanceTo(r.arrival);
      s->Submit(r);
    }
    while (s->queued() > 0 && clock.RunNextTimer()) {
    }
    handled += kRequests;
    dispatched += listener.dispatched;
    dropped += listener.dropped;
    batches += listener.batches;
  }
  state.SetItemsProcessed(handled);
  state.counters["dropped_%"] = 100.0 * dropped / std::max<int64_t>(1, handled);
  state.counters["mean_batch"] = static_cast<double>(dispatched) / std::max<int64_t>(1, batches);
}

BENCHMARK_CAPTURE(BM_Scheduler, deferred, std::string("deferred"))
    ->Args({100, 1000, 200000})
    ->Args({100, 1000, 400000})
    ->Args({10, 64, 50000})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Scheduler, eager, std::string("eager"))
    ->Args({100, 1000, 400000})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Scheduler, timeout, std::string("timeout"))
    ->Args({100, 1000, 400000})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tutti

BENCHMARK_MAIN();
