// Scheduler-only throughput in virtual time (Google Benchmark): how many
// requests per second of real time a scheduler handles, with its timers.
// No emulated GPUs or metrics: the listener only counts. Symphony reports
// millions of requests/s for its centralized scheduler (Figure 13 left:
// 12 M/s on 32 cores); Tutti's target is >= 1,000,000 requests/s with 100
// models and 1,000 GPUs on one core.
//
//   BM_Scheduler   one scheduler object on one thread; the last argument
//                  is the number of sub-clusters the models and GPUs are
//                  split into (1: one cluster of all of them)
//   BM_Sharded     ShardedScheduler (issue 19 item 3): the same cluster in
//                  as many sub-clusters as shards, each shard driven by its
//                  own thread and virtual clock — the multi-core figure;
//                  compare with BM_Scheduler at the same sub-clusters
//
//   build/bench/scheduler_benchmark --benchmark_filter='100/1000/400000'
#include <benchmark/benchmark.h>

#include <atomic>
#include <barrier>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "tutti/core/manual_clock.h"
#include "tutti/core/zoo_profiles.h"
#include "tutti/scheduler/scheduler.h"
#include "tutti/scheduler/sharded_scheduler.h"

namespace tutti {
namespace {

// Counts what it is told, per shard: shards call it concurrently, and one
// set of shared counters would bounce a cache line between the cores at
// every batch. Without a sharded scheduler everything is shard 0.
struct CountingListener : SchedulerListener {
  struct alignas(64) Counts {
    int64_t batches = 0, dispatched = 0, dropped = 0;
  };
  std::vector<Counts> shards{1};
  std::function<int(ModelId)> shard_of = [](ModelId) { return 0; };

  void OnDispatch(Batch b) override {
    Counts& c = shards[shard_of(b.model)];
    ++c.batches;
    c.dispatched += static_cast<int64_t>(b.requests.size());
  }
  void OnDrop(const Request& r, DropReason) override { ++shards[shard_of(r.model)].dropped; }
  Counts Total() const {
    Counts t;
    for (const Counts& c : shards) {
      t.batches += c.batches;
      t.dispatched += c.dispatched;
      t.dropped += c.dropped;
    }
    return t;
  }
};

// `models` models cycling through the A100 zoo's profiles and SLOs, in
// `subs` sub-clusters (model m in sub-cluster m mod subs; the GPUs split
// evenly).
ClusterSpec Cluster(int models, int gpus, int subs) {
  std::vector<ZooModel> zoo = *LoadZooCsv(TUTTI_SOURCE_DIR "/data/profiles/symphony_zoo_a100.csv", 64);
  ClusterSpec spec;
  for (int m = 0; m < models; ++m) {
    const ZooModel& z = zoo[m % zoo.size()];
    spec.models.push_back({z.name + "_" + std::to_string(m), z.profile, z.slo});
  }
  spec.gpus = gpus;
  if (subs > 1) {
    spec.sub_clusters.resize(subs);
    for (int m = 0; m < models; ++m) spec.sub_clusters[m % subs].models.push_back(m);
    for (int i = 0; i < subs; ++i) spec.sub_clusters[i].num_gpus = gpus / subs + (i < gpus % subs);
  }
  return spec;
}

// 2^20 Poisson arrivals at `rate` (requests/s, virtual), uniform over the
// models, generated before timing so that only the scheduler is measured.
std::vector<Request> Arrivals(const ClusterSpec& spec, double rate) {
  constexpr int kRequests = 1 << 20;
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(rate / 1e9);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(spec.models.size()) - 1);
  std::vector<Request> requests(kRequests);
  Time t = 0;
  for (int i = 0; i < kRequests; ++i) {
    t += static_cast<Time>(gap(rng)) + 1;
    const ModelId m = pick(rng);
    requests[i] = {static_cast<RequestId>(i), m, t, t + spec.models[m].slo};
  }
  return requests;
}

// Feeds `requests` in order on `clock`, then runs timers until `s` holds none.
void Drive(const std::vector<Request>& requests, ManualClock* clock, Scheduler* s,
           const std::function<int64_t()>& queued) {
  for (const Request& r : requests) {
    clock->AdvanceTo(r.arrival);
    s->Submit(r);
  }
  while (queued() > 0 && clock->RunNextTimer()) {
  }
}

void Report(benchmark::State& state, int64_t handled, const CountingListener& listener) {
  const CountingListener::Counts totals = listener.Total();
  state.SetItemsProcessed(handled);
  state.counters["dropped_%"] = 100.0 * static_cast<double>(totals.dropped) / static_cast<double>(std::max<int64_t>(1, handled));
  state.counters["mean_batch"] =
      static_cast<double>(totals.dispatched) / static_cast<double>(std::max<int64_t>(1, totals.batches));
}

// Args: models, GPUs, rate, sub-clusters.
void BM_Scheduler(benchmark::State& state, const std::string& policy) {
  const ClusterSpec spec = Cluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                   static_cast<int>(state.range(3)));
  const std::vector<Request> requests = Arrivals(spec, static_cast<double>(state.range(2)));
  int64_t handled = 0;
  CountingListener listener;
  for (auto _ : state) {
    ManualClock clock;
    std::unique_ptr<Scheduler> s = *CreateScheduler(policy, spec, {}, &clock, &listener);
    Drive(requests, &clock, s.get(), [&] { return s->queued(); });
    handled += static_cast<int64_t>(requests.size());
  }
  Report(state, handled, listener);
}

// Args: models, GPUs, rate, shards (= sub-clusters = threads).
void BM_Sharded(benchmark::State& state, const std::string& policy) {
  const int shards = static_cast<int>(state.range(3));
  const ClusterSpec spec = Cluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), shards);
  const std::vector<Request> requests = Arrivals(spec, static_cast<double>(state.range(2)));
  int64_t handled = 0;
  CountingListener listener;
  std::vector<std::vector<Request>> per_shard(shards);  // each shard's arrivals, in order
  // One long-lived thread per shard, as a server's would be (a thread made
  // per iteration pays for a fresh malloc arena's page faults each time).
  // Each clock on cache lines of its own: clocks side by side (in one array,
  // or in adjacent allocations) would share a line both cores write at
  // every event.
  struct alignas(64) OwnLineClock {
    ManualClock clock;
  };
  std::vector<std::unique_ptr<OwnLineClock>> clocks(shards);
  std::unique_ptr<ShardedScheduler> s;
  std::barrier start(shards + 1), done(shards + 1);
  std::atomic<bool> stop = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < shards; ++i) {
    threads.emplace_back([&, i] {
      while (true) {
        start.arrive_and_wait();
        if (stop) return;
        Drive(per_shard[i], &clocks[i]->clock, s.get(), [&] { return s->queued_in(i); });
        done.arrive_and_wait();
      }
    });
  }
  for (auto _ : state) {
    std::vector<SchedulerShard> where;  // no post: each shard is called on its own thread only
    for (auto& c : clocks) where.push_back({&(c = std::make_unique<OwnLineClock>())->clock});
    s = *ShardedScheduler::Create(policy, spec, {}, where, &listener);
    listener.shards.resize(shards);
    listener.shard_of = [&s](ModelId m) { return s->ShardOfModel(m); };
    if (per_shard[0].empty()) {
      for (const Request& r : requests) per_shard[s->ShardOfModel(r.model)].push_back(r);
    }
    start.arrive_and_wait();
    done.arrive_and_wait();
    s.reset();
    handled += static_cast<int64_t>(requests.size());
  }
  stop = true;
  start.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  Report(state, handled, listener);
}

BENCHMARK_CAPTURE(BM_Scheduler, deferred, std::string("deferred"))
    ->Args({100, 1000, 200000, 1})
    ->Args({100, 1000, 400000, 1})
    ->Args({100, 1000, 400000, 2})
    ->Args({10, 64, 50000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Sharded, deferred, std::string("deferred"))
    ->Args({100, 1000, 400000, 1})
    ->Args({100, 1000, 400000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scheduler, eager, std::string("eager"))
    ->Args({100, 1000, 400000, 1})
    ->Args({100, 1000, 400000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Sharded, eager, std::string("eager"))
    ->Args({100, 1000, 400000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Scheduler, timeout, std::string("timeout"))
    ->Args({100, 1000, 400000, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tutti

BENCHMARK_MAIN();
