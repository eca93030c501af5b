// What replicating a stateful model's states costs per state size
// (replication/replicated_executor.h): one batch of 16 sequences' steps
// through a ReplicatedExecutor whose executor computes nothing (it copies
// each item's state, plus its input into the first element), so that the
// time is the proxies' own — taking states out and putting them back,
// digests, the messages to the backup and applying them there. The
// backup's channel thread shares this machine's cores.
//
// Counters: bytes to the backup per batch; the proxies' time per batch
// (all threads: states into and out of the batch, their digests, encoding
// and applying the messages); the states both replicas hold; and the most
// the link held, posted and not yet applied (ReplicationStats::link_peak_bytes).
#include <condition_variable>
#include <mutex>

#include "benchmark/benchmark.h"
#include "tutti/core/real_clock.h"
#include "tutti/replication/replicated_executor.h"

namespace tutti {
namespace {

constexpr int kBatch = 16;

class CopyExecutor final : public Executor {
 public:
  explicit CopyExecutor(int64_t state) : state_(state) {}
  void Run(ExecBatch batch, DoneFn done) override {
    ExecResult r;
    const int64_t width = 1 + state_;
    r.output.resize(batch.size * width);
    for (int i = 0; i < batch.size; ++i) {
      const float* in = batch.input.data() + i * width;
      float* out = r.output.data() + i * width;
      std::copy(in, in + width, out);
      out[1] += in[0];
    }
    done(std::move(r));
  }
  std::string kind() const override { return "copy"; }

 private:
  const int64_t state_;
};

void BM_StatefulBatch(benchmark::State& st) {
  const auto mode = static_cast<ReplicationMode>(st.range(0));
  const int64_t state = st.range(1);
  RealClock clock;
  ReplicatedExecutor slot(&clock, std::make_unique<CopyExecutor>(state), std::make_unique<CopyExecutor>(state),
                          {SlotModel{state, 1, 1, 3600 * kSecond}}, ReplicationOptions{mode, 100});
  std::mutex mu;
  std::condition_variable cv;
  int64_t answered = 0, sent = 0;
  bool first = true;
  for (auto _ : st) {
    ExecBatch b;
    b.size = kBatch;
    b.input.assign(kBatch, 1.0f);
    for (int i = 0; i < kBatch; ++i) b.sequences.push_back({static_cast<uint64_t>(i + 1), first, false});
    first = false;
    ++sent;
    slot.Run(std::move(b), [&](ExecResult) {
      std::lock_guard<std::mutex> lock(mu);
      ++answered;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return answered == sent; });
  }
  const ReplicationStats s = slot.stats();
  const double batches = static_cast<double>(std::max<int64_t>(1, s.stateful_batches));
  st.counters["bytes/batch"] = static_cast<double>(s.state_bytes + s.log_bytes) / batches;
  st.counters["proxy_us/batch"] = ToMillis(s.proxy_time) * 1000 / batches;
  st.counters["held_MB"] = static_cast<double>((s.live_states + s.backup_states) * state * 4) / (1 << 20);
  st.counters["link_peak_MB"] = static_cast<double>(s.link_peak_bytes) / (1 << 20);
  st.SetLabel(std::string(ReplicationModeName(mode)));
}

BENCHMARK(BM_StatefulBatch)
    ->ArgsProduct({{static_cast<int>(ReplicationMode::kNone), static_cast<int>(ReplicationMode::kNspb),
                    static_cast<int>(ReplicationMode::kRemus), static_cast<int>(ReplicationMode::kCheckpoint)},
                   {64, 1024, 16384, 262144}})
    ->ArgNames({"mode", "state_floats"})
    ->UseRealTime();

}  // namespace
}  // namespace tutti

BENCHMARK_MAIN();
