#include "tutti/executors/slowdown_executor.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>

namespace tutti {

std::vector<std::vector<SlowdownEpisode>> PlanSlowdowns(int instances, const SlowdownOptions& options, Time start,
                                                        Time end) {
  std::vector<std::vector<SlowdownEpisode>> plan(instances);
  const int per = std::min(options.instances_per_episode, instances);
  if (options.concurrent <= 0 || per <= 0) return plan;
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<Duration> duration(options.min_duration, std::max(options.min_duration,
                                                                                  options.max_duration));
  std::vector<int> order(instances);
  for (int lane = 0; lane < options.concurrent; ++lane) {
    for (Time t = start; t < end;) {
      const Time until = t + duration(rng);
      for (int i = 0; i < instances; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      for (int i = 0; i < per; ++i) plan[order[i]].push_back({t, until, options.factor, options.random});
      t = until;
    }
  }
  for (auto& episodes : plan) {
    std::sort(episodes.begin(), episodes.end(),
              [](const SlowdownEpisode& a, const SlowdownEpisode& b) { return a.start < b.start; });
  }
  return plan;
}

SlowdownExecutor::SlowdownExecutor(Clock* clock, std::unique_ptr<Executor> inner,
                                   std::vector<SlowdownEpisode> episodes, uint64_t seed, Duration pace)
    : clock_(clock), inner_(std::move(inner)), episodes_(std::move(episodes)), pace_(pace), rng_(seed) {}

const SlowdownEpisode* SlowdownExecutor::EpisodeAt(Time t) const {
  const SlowdownEpisode* worst = nullptr;
  // Overlapping episodes on one instance do not compound: the worst applies.
  for (const SlowdownEpisode& e : episodes_) {
    if (e.start > t) break;
    if (t < e.end && (worst == nullptr || e.factor > worst->factor)) worst = &e;
  }
  return worst;
}

void SlowdownExecutor::Run(ExecBatch batch, DoneFn done) {
  // Held back here, a batch was still received now.
  done = [received = clock_->Now(), done = std::move(done)](ExecResult r) {
    r.received = received;
    r.ready = std::max(r.ready, received);
    done(std::move(r));
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) {
      queue_.emplace_back(std::move(batch), std::move(done));
      return;
    }
    running_ = true;
  }
  Start(std::move(batch), std::move(done));
}

void SlowdownExecutor::Start(ExecBatch batch, DoneFn done) {
  inner_->Run(std::move(batch), [this, done = std::move(done)](ExecResult result) mutable {
    Finish(std::move(result), std::move(done));
  });
}

void SlowdownExecutor::Finish(ExecResult result, DoneFn done) {
  double multiplier = 1;
  if (const SlowdownEpisode* e = EpisodeAt(result.started)) {
    multiplier = e->factor;
    if (e->random) {
      std::lock_guard<std::mutex> lock(mu_);
      multiplier = 1 + (e->factor - 1) * std::exponential_distribution<double>(1.0)(rng_);
    }
  }
  const Duration extra =
      std::max(static_cast<Duration>((multiplier - 1) * static_cast<double>(result.finished - result.started)),
               result.started + pace_ - result.finished);
  // Starts the next batch, then reports this one: after `done` returns the
  // owner may destroy this executor, so nothing touches it afterwards.
  auto deliver = [this](ExecResult r, DoneFn d) {
    std::optional<std::pair<ExecBatch, DoneFn>> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) {
        running_ = false;
      } else {
        next = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (next) Start(std::move(next->first), std::move(next->second));
    d(std::move(r));
  };
  if (extra <= 0) return deliver(std::move(result), std::move(done));
  result.finished += extra;
  const Time at = result.finished;
  clock_->ScheduleAt(at, [deliver, result = std::move(result), done = std::move(done)]() mutable {
    deliver(std::move(result), std::move(done));
  });
}

}  // namespace tutti
