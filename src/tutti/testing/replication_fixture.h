// What the replication tests share: a stateful model in its stateless
// form, a collector of answers, sequence steps, and a slot on a manual clock.
#ifndef TUTTI_TESTING_REPLICATION_FIXTURE_H_
#define TUTTI_TESTING_REPLICATION_FIXTURE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tutti/core/manual_clock.h"
#include "tutti/replication/replicated_executor.h"
#include "tutti/testing/wait.h"

namespace tutti {

// A stateful model in its stateless form, run at once on the caller's
// thread: input [x | h0, h1] → output [y | h0 + x, h1 + 1] with y the new
// h0 — a running sum and a step count. With `noise`, each new h0 gets a
// random offset of at most 1e-3 (bits that vary run to run).
class SumExecutor final : public Executor {
 public:
  explicit SumExecutor(Clock* clock, bool noise = false) : clock_(clock), noise_(noise) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    r.received = r.ready = r.started = r.finished = clock_->Now();
    ++runs;
    for (int i = 0; i < batch.size; ++i) {
      const float* in = batch.input.data() + i * 3;
      float h0 = in[1] + in[0];
      if (noise_) h0 += std::uniform_real_distribution<float>(0, 1e-3f)(rng_);
      r.output.insert(r.output.end(), {h0, h0, in[2] + 1});
    }
    done(std::move(r));
  }
  std::string kind() const override { return "sum"; }
  std::atomic<int> runs{0};

 private:
  Clock* const clock_;
  const bool noise_;
  std::mt19937 rng_{std::random_device{}()};
};

inline const SlotModel kSum{.state_elements = 2, .input_elements = 1, .output_elements = 1, .max_idle = kSecond};

struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ExecResult> results;
  Executor::DoneFn Collect() {
    return [this](ExecResult r) {
      std::lock_guard<std::mutex> lock(mu);
      results.push_back(std::move(r));
      cv.notify_all();
    };
  }
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    AwaitOrFail(cv, lock, [&] { return results.size() >= n; }, "the slot's answers");
  }
};

inline ExecBatch Step(std::vector<uint64_t> ids, std::vector<float> xs, bool start = false, bool end = false) {
  ExecBatch b;
  b.size = static_cast<int>(ids.size());
  b.input = std::move(xs);
  for (uint64_t id : ids) b.sequences.push_back({id, start, end});
  return b;
}

struct Slot {
  ManualClock clock;
  SumExecutor* primary;
  SumExecutor* backup;
  std::unique_ptr<ReplicatedExecutor> slot;
  Slot(ReplicationMode mode, bool noise = false, int checkpoint_every = 100) {
    auto p = std::make_unique<SumExecutor>(&clock, noise);
    auto b = std::make_unique<SumExecutor>(&clock, noise);
    primary = p.get();
    backup = b.get();
    slot = std::make_unique<ReplicatedExecutor>(&clock, std::move(p), std::move(b), std::vector<SlotModel>{kSum},
                                                ReplicationOptions{mode, checkpoint_every});
  }
};

}  // namespace tutti

#endif  // TUTTI_TESTING_REPLICATION_FIXTURE_H_
