// Waiting only while it pays (candidate_scheduler.h): the default policy on
// a manual clock, in a fixed pool (Deferral::kLatency) and under
// autoscaling (kConsolidate), against closed-loop clients and open-loop
// streams.
#include <algorithm>
#include <functional>
#include <random>

#include "gtest/gtest.h"
#include "tutti/core/manual_clock.h"
#include "tutti/scheduler/adaptive_scheduler.h"
#include "tutti/scheduler/candidate_scheduler.h"

namespace tutti {
namespace {

// ResNet50 on A100s (Symphony appendix C), objective 20 ms.
ClusterSpec ResNet50(int gpus) {
  ClusterSpec spec;
  ModelSpec m;
  m.name = "resnet50";
  m.profile = *LatencyProfile::Linear(Micros(268), Micros(5172), 32);
  m.slo = Millis(20);
  spec.models = {m};
  spec.gpus = gpus;
  return spec;
}

// A small CPU model (LeNet-5's profile on this kind of machine), objective 100 ms.
ClusterSpec SmallCpuModel() {
  ClusterSpec spec = ResNet50(1);
  spec.models[0].name = "lenet5";
  spec.models[0].profile = *LatencyProfile::Linear(Micros(27), Micros(63), 32);
  spec.models[0].slo = Millis(100);
  return spec;
}

SchedulerOptions Options(Deferral deferral) {
  SchedulerOptions o;
  o.drop = DropPolicy::kEarly;
  o.deferral = deferral;
  return o;
}

// What one run did: each request's wait from arrival to its batch's start,
// and the GPU time its batches took.
struct Served {
  std::vector<Duration> waits;
  std::vector<int> batch_sizes;
  Duration busy = 0;
  int64_t dropped = 0;

  Duration Median() const {
    std::vector<Duration> w = waits;
    std::nth_element(w.begin(), w.begin() + static_cast<ptrdiff_t>(w.size() / 2), w.end());
    return w.empty() ? 0 : w[w.size() / 2];
  }
  double MeanBatch() const {
    double sum = 0;
    for (int b : batch_sizes) sum += b;
    return batch_sizes.empty() ? 0 : sum / static_cast<double>(batch_sizes.size());
  }
};

// Runs `policy` (a policy's name, or one of adaptive's ways) over `spec` on
// a manual clock. Answers come at each batch's planned end — or, with
// `early`, when it would end had it started at its decision, as a torch
// executor's do (it starts a batch as soon as it has it, before the start
// the plan allows for the dispatch delay).
class Harness {
 public:
  Harness(const std::string& policy, const ClusterSpec& spec, const SchedulerOptions& options, bool early = false)
      : spec_(spec),
        early_(early),
        listener_([this](Batch b) { OnBatch(std::move(b)); }, [this](const Request&) { ++served_.dropped; }),
        scheduler_(Make(policy, spec, options, &clock_, &listener_)) {}

  // N clients that each send their next request `think` after their answer.
  Served ClosedLoop(int clients, Duration think, Duration duration) {
    on_answer_ = [this, think](const Request&) { clock_.ScheduleAt(clock_.Now() + think, [this] { Send(); }); };
    for (int c = 0; c < clients; ++c) Send();
    clock_.AdvanceTo(duration);
    on_answer_ = nullptr;
    clock_.AdvanceBy(Seconds(1));
    return served_;
  }

  // Poisson arrivals at `rate` for `duration` (seed fixed).
  Served OpenLoop(double rate, Duration duration) {
    std::mt19937_64 rng(11);
    std::exponential_distribution<double> gap(rate);
    for (double t = gap(rng); t < ToSeconds(duration); t += gap(rng)) {
      clock_.AdvanceTo(Seconds(t));
      Send();
    }
    clock_.AdvanceBy(Seconds(1));
    return served_;
  }

  ManualClock& clock() { return clock_; }
  Scheduler& scheduler() { return *scheduler_; }
  const Served& served() const { return served_; }

 private:
  static std::unique_ptr<Scheduler> Make(const std::string& policy, const ClusterSpec& spec,
                                         const SchedulerOptions& options, Clock* clock, SchedulerListener* listener) {
    if (const AdaptiveChoice* way = FindAdaptiveChoice(policy)) {
      return std::make_unique<CandidateScheduler>(spec, options, clock, listener, way->policy);
    }
    return *CreateScheduler(policy, spec, options, clock, listener);
  }
  void Send() {
    const Time now = clock_.Now();
    scheduler_->Submit(Request{++next_id_, 0, now, now + spec_.models[0].slo});
  }
  void OnBatch(Batch b) {
    served_.busy += b.latency;
    served_.batch_sizes.push_back(static_cast<int>(b.requests.size()));
    for (const Request& r : b.requests) served_.waits.push_back(b.exec_at - r.arrival);
    if (!on_answer_) return;
    const Time end = (early_ ? clock_.Now() : b.exec_at) + b.latency;
    for (const Request& r : b.requests) {
      clock_.ScheduleAt(end, [this, r] {
        if (on_answer_) on_answer_(r);
      });
    }
  }

  const ClusterSpec spec_;
  const bool early_;
  ManualClock clock_;
  CallbackListener listener_;
  std::unique_ptr<Scheduler> scheduler_;
  std::function<void(const Request&)> on_answer_;
  Served served_;
  RequestId next_id_ = 0;
};

TEST(PromptDispatchTest, ALoneRequestOnAnIdleExecutorOfAFixedPoolIsDispatchedAtOnce) {
  for (const ClusterSpec& spec : {SmallCpuModel(), ResNet50(8)}) {
    Harness h("adaptive", spec, Options(Deferral::kLatency));
    h.clock().AdvanceTo(Millis(5));
    const Served& s = h.served();
    h.scheduler().Submit(Request{1, 0, Millis(5), Millis(5) + spec.models[0].slo});
    ASSERT_EQ(s.waits.size(), 1u) << spec.models[0].name << ": dispatched within Submit";
    EXPECT_EQ(s.waits[0], 0);
  }
  // Even with a light open-loop stream seen before it (batch-mates do come,
  // but an idle GPU's time costs nothing in a fixed pool).
  Harness h("adaptive", ResNet50(8), Options(Deferral::kLatency));
  const Served s = h.OpenLoop(200, Seconds(2));
  EXPECT_EQ(s.Median(), 0);
}

// Closed-loop clients: waiting for batch-mates only throttles them. At one
// client every request starts on arrival; at more, the clients are served
// as fast as by eager, in either mode.
TEST(PromptDispatchTest, AClosedLoopClientIsNeverHeldForBatchMates) {
  for (Deferral deferral : {Deferral::kLatency, Deferral::kConsolidate}) {
    for (const ClusterSpec& spec : {SmallCpuModel(), ResNet50(1)}) {
      const std::string what = spec.models[0].name + (deferral == Deferral::kLatency ? ", latency" : ", consolidate");
      for (int clients : {1, 4, 16}) {
        const Duration think = Micros(20);
        const Served adaptive = Harness("adaptive", spec, Options(deferral)).ClosedLoop(clients, think, Seconds(3));
        const Served eager = Harness("eager", spec, Options(deferral)).ClosedLoop(clients, think, Seconds(3));
        EXPECT_EQ(adaptive.dropped, 0) << what;
        EXPECT_GE(adaptive.waits.size(), 0.9 * static_cast<double>(eager.waits.size()))
            << what << ", " << clients << " clients: throughput against eager's";
        if (clients == 1) {
          EXPECT_EQ(*std::max_element(adaptive.waits.begin(), adaptive.waits.end()), 0) << what;
        }
        // Deferral would hold each round for most of the objective.
        EXPECT_LE(adaptive.Median(), eager.Median() + think + spec.models[0].profile.Latency(1) / 5)
            << what << ", " << clients << " clients";
      }
    }
  }
}

// The same when answers come before the plan says (a torch executor starts
// at once, while the plan allows a dispatch delay and a response delay):
// a client answered early and sending again must not look like a client
// that sends while it waits. Every deferred way, in either mode.
TEST(PromptDispatchTest, ClosedLoopClientsAnsweredBeforeThePlanSaysAreNotHeldEither) {
  for (Deferral deferral : {Deferral::kLatency, Deferral::kConsolidate}) {
    for (ClusterSpec spec : {SmallCpuModel(), ResNet50(1)}) {
      spec.delays = {.ctrl = Micros(200), .resp = Millis(1)};
      for (const std::string way : {"adaptive", "prompt", "scarce"}) {
        const std::string what = spec.models[0].name + ", " + way +
                                 (deferral == Deferral::kLatency ? ", latency" : ", consolidate");
        // Clients that take a while to send again: gathering all of them
        // before each batch would cost a round trip a batch.
        for (const auto& [clients, think] : {std::pair{1, Micros(20)}, {4, Micros(20)}, {16, Micros(300)}}) {
          const Served s = Harness(way, spec, Options(deferral), /*early=*/true).ClosedLoop(clients, think, Seconds(3));
          const Served eager = Harness("eager", spec, Options(deferral), true).ClosedLoop(clients, think, Seconds(3));
          EXPECT_GE(s.waits.size(), 0.9 * static_cast<double>(eager.waits.size())) << what << ", " << clients << " clients";
          // Held for batch-mates, a request would wait most of the objective;
          // waiting for a busy GPU, at most about a batch of all clients.
          EXPECT_LT(*std::max_element(s.waits.begin(), s.waits.end()),
                    spec.models[0].profile.Latency(clients) + spec.models[0].slo / 10)
              << what << ", " << clients << " clients";
        }
      }
    }
  }
}

// Open loop on 8 GPUs at 1% and 10% of their goodput: in a fixed pool the
// answers come about as soon as eager's; under autoscaling the batches are
// deferred's, and so is the GPU time.
TEST(PromptDispatchTest, LightOpenLoopLoadIsAnsweredSoonInAFixedPoolAndConsolidatedWhenAutoscaling) {
  const ClusterSpec spec = ResNet50(8);
  for (double rate : {200.0, 2000.0}) {
    const Served eager = Harness("eager", spec, Options(Deferral::kLatency)).OpenLoop(rate, Seconds(3));
    const Served deferred = Harness("deferred", spec, Options(Deferral::kLatency)).OpenLoop(rate, Seconds(3));
    const Served fixed = Harness("adaptive", spec, Options(Deferral::kLatency)).OpenLoop(rate, Seconds(3));
    const Served consolidate = Harness("adaptive", spec, Options(Deferral::kConsolidate)).OpenLoop(rate, Seconds(3));
    EXPECT_LE(fixed.Median(), eager.Median() + spec.models[0].profile.Latency(1) / 5) << rate << " r/s";
    EXPECT_LT(fixed.Median(), deferred.Median() / 2) << rate << " r/s";
    EXPECT_GE(consolidate.MeanBatch(), 0.9 * deferred.MeanBatch()) << rate << " r/s";
    EXPECT_LE(consolidate.busy, deferred.busy * 105 / 100) << rate << " r/s";
    EXPECT_LE(consolidate.Median(), deferred.Median()) << rate << " r/s";
    EXPECT_EQ(fixed.dropped + consolidate.dropped, 0) << rate << " r/s";
  }
}

}  // namespace
}  // namespace tutti
