#include "tutti/experiments/prefix_batching.h"

#include <atomic>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/serving/inference_core.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/server/layout_runtime.h"
#include "tutti/workload/workload.h"

namespace tutti {
namespace {

// One engine serving setup.models by name (engine model ids in `ids`).
struct Served {
  std::unique_ptr<InferenceCore> core;
  std::unique_ptr<GraphEngine> graphs;
  InferenceEngine* engine = nullptr;
  std::vector<ModelId> ids;
  int64_t parameters = 0;
};

absl::StatusOr<Served> Serve(const ModelRepository& repo, const PrefixBatchingSetup& setup, Clock* clock) {
  ServerConfig config;
  config.prefix_batching = setup.prefix_batching;
  config.policy = setup.policy;
  config.executors = {{"torch", 1, "cpu", setup.models}};
  TUTTI_ASSIGN_OR_RETURN(config, ResolveServerConfig(config, repo));
  TUTTI_ASSIGN_OR_RETURN(ClusterLayout layout, LayOutCluster(repo, config));
  Served s;
  std::vector<std::unique_ptr<Executor>> executors;
  TUTTI_ASSIGN_OR_RETURN(executors.emplace_back(),
                         MakeGroupExecutor(layout, config, 0, clock, nullptr, &s.parameters));
  InferenceCore::Options options{config.policy, config.scheduler, config.delays, {}};
  const ClusterSpec spec = layout.spec;
  TUTTI_ASSIGN_OR_RETURN(s.core, InferenceCore::Create(spec, layout.shapes, std::move(executors), options, clock));
  s.engine = s.core.get();
  TUTTI_ASSIGN_OR_RETURN(s.graphs, ServeGraphs(s.engine, spec, &layout));
  if (s.graphs) s.engine = s.graphs.get();
  for (const std::string& name : setup.models) {
    for (size_t id = 0; id < layout.served.size(); ++id) {
      if (layout.served[id].config.name == name) s.ids.push_back(static_cast<ModelId>(id));
    }
  }
  return s;
}

// The share of requests at `rate` that end late, dropped or failed.
double Probe(Served& s, const PrefixBatchingSetup& setup, const ImageSet& images, const std::vector<float>& pixels,
             double rate, Clock& clock) {
  WorkloadSpec w;
  w.arrival = ArrivalKind::kPoisson;
  w.rate = rate;
  const Time start = clock.Now();
  std::unique_ptr<ArrivalSource> arrivals =
      *MakeArrivalSource(w, static_cast<int>(s.ids.size()), setup.probe, setup.seed);
  const Time judged_from = start + kSecond / 2;
  std::atomic<int64_t> judged{0}, bad{0};
  Arrival a;
  int64_t image = 0;
  while (arrivals->Next(&a)) {
    const Time at = start + a.time;
    if (at > clock.Now() + 50 * kMicrosecond) std::this_thread::sleep_for(std::chrono::nanoseconds(at - clock.Now()));
    const int64_t i = image++ % images.size();
    std::vector<float> input(pixels.begin() + i * 784, pixels.begin() + (i + 1) * 784);
    const bool count = at >= judged_from;
    absl::Status st = s.engine->Submit(s.ids[a.model], std::move(input), setup.objective,
                                       [&, count](InferenceOutcome o) {
                                         if (!count) return;
                                         ++judged;
                                         if (!o.status.ok() || o.late) ++bad;
                                       });
    if (!st.ok() && count) {
      ++judged;
      ++bad;
    }
  }
  while (s.engine->in_flight() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return judged == 0 ? 1.0 : static_cast<double>(bad) / static_cast<double>(judged);
}

}  // namespace

absl::StatusOr<PrefixBatchingResult> MeasurePrefixBatching(const ModelRepository& repo,
                                                           const PrefixBatchingSetup& setup, const ImageSet& images,
                                                           std::ostream* progress) {
  RealClock clock;
  TUTTI_ASSIGN_OR_RETURN(Served s, Serve(repo, setup, &clock));
  const std::vector<float> pixels = images.ToFloat(0, images.size());
  PrefixBatchingResult r;
  r.parameters = s.parameters;
  auto ok = [&](double rate) {
    double bad = Probe(s, setup, images, pixels, rate, clock);
    ++r.probes;
    if (bad > setup.max_bad) {  // a rate fails when a second probe fails too: one noisy probe does not end the search
      bad = Probe(s, setup, images, pixels, rate, clock);
      ++r.probes;
    }
    if (progress != nullptr) *progress << absl::StrFormat("  %.0f r/s: %.2f%% bad\n", rate, 100 * bad);
    if (bad <= setup.max_bad && rate > r.goodput) {
      r.goodput = rate;
      r.bad_at_goodput = bad;
    }
    return bad <= setup.max_bad;
  };
  double lo = 0, hi = setup.start_rate;
  while (ok(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > setup.tolerance * hi) {
    const double mid = (lo + hi) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  s.engine->StopAccepting();
  s.engine->WaitIdle();
  return r;
}

}  // namespace tutti
