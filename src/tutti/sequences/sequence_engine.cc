#include "tutti/sequences/sequence_engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tutti {
namespace {

// Expired sequences remembered for their clearer error.
constexpr size_t kRememberExpired = 4096;

absl::Status SequenceError(const ClusterSpec& spec, ModelId model, uint64_t id, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("sequence ", id, " of model '", spec.models[model].name, "' ", what));
}

}  // namespace

SequenceEngine::SequenceEngine(InferenceEngine* inner, ClusterSpec spec,
                               std::vector<std::optional<SequenceBatching>> batching, Clock* clock)
    : LayeredEngine(inner), spec_(std::move(spec)), batching_(std::move(batching)), clock_(clock) {
  for (const auto& b : batching_) {
    if (!b) continue;
    const Duration limit = b->max_sequence_idle_us * kMicrosecond;
    sweep_every_ = sweep_every_ == 0 ? limit : std::min(sweep_every_, limit);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ScheduleSweep();
}

SequenceEngine::~SequenceEngine() {
  {
    gate_->Close();  // a sweep under way ends first
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (sweep_ != kNoTimer) clock_->Cancel(sweep_);
}

void SequenceEngine::ScheduleSweep() {
  if (sweep_every_ == 0) return;
  sweep_ = clock_->ScheduleAfter(sweep_every_, [gate = gate_] {
    gate->Run([](SequenceEngine& e) {
      std::lock_guard<std::mutex> lock(e.mu_);
      e.ExpireIdle(e.clock_->Now());
      e.ScheduleSweep();
    });
  });
}

void SequenceEngine::ExpireIdle(Time now) {
  for (auto it = live_.begin(); it != live_.end();) {
    const Sequence& s = it->second;
    const Duration limit = batching_[it->first.first]->max_sequence_idle_us * kMicrosecond;
    if (s.running || !s.waiting.empty() || now - s.last <= limit) {
      ++it;
      continue;
    }
    if (expired_.insert(it->first).second) {
      expired_order_.push_back(it->first);
      if (expired_order_.size() > kRememberExpired) {
        expired_.erase(expired_order_.front());
        expired_order_.pop_front();
      }
    }
    live_.erase(it++);
  }
}

absl::Status SequenceEngine::Submit(ModelId model, std::vector<float> input, Duration objective,
                                    InferenceCallback done) {
  return SubmitWith(model, {}, std::move(input), objective, std::move(done));
}

absl::Status SequenceEngine::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                        Duration objective, InferenceCallback done) {
  if (model < 0 || model >= static_cast<ModelId>(batching_.size()) || !batching_[model]) {  // stateless: no sequence
    RequestContext stateless = context;
    stateless.sequence = {};
    return inner_->SubmitWith(model, stateless, std::move(input), objective, std::move(done));
  }
  const SequenceRef& ref = context.sequence;  // a sequence's requests are never withdrawn: its state must advance
  if (ref.id == 0) {
    return absl::InvalidArgumentError(absl::StrCat("model '", spec_.models[model].name,
                                                   "' is stateful: each request needs a sequence_id parameter, "
                                                   "and a sequence's first request sequence_start"));
  }
  const Key key{model, ref.id};
  Queued q{ref, context.level, std::move(input), objective, std::move(done)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Time now = clock_->Now();
    ExpireIdle(now);
    auto it = live_.find(key);
    if (ref.start) {
      if (it != live_.end()) {
        return SequenceError(spec_, model, ref.id, "is already in progress: end it (sequence_end) before starting it again");
      }
      expired_.erase(key);
      it = live_.emplace(key, Sequence{}).first;
    } else if (it == live_.end()) {
      if (expired_.contains(key)) {
        return SequenceError(spec_, model, ref.id,
                             absl::StrCat("expired: it was idle for more than max_sequence_idle_microseconds (",
                                          batching_[model]->max_sequence_idle_us, "); start it again"));
      }
      return SequenceError(spec_, model, ref.id, "is not in progress: its first request must set sequence_start");
    } else if (it->second.ended) {
      return SequenceError(spec_, model, ref.id, "has ended (sequence_end)");
    }
    Sequence& s = it->second;
    s.last = now;
    s.ended = ref.end;
    if (s.running || !s.waiting.empty()) {
      s.waiting.push_back(std::move(q));
      ++waiting_;
      return absl::OkStatus();
    }
    s.running = true;
    if (!ref.start && !s.started) q.ref.start = true;  // its start never ran
  }
  return Pass(model, std::move(q), /*refuse=*/true);
}

absl::Status SequenceEngine::Pass(ModelId model, Queued q, bool refuse) {
  absl::Status first;
  for (std::optional<Queued> cur = std::move(q); cur.has_value();) {
    const SequenceRef ref = cur->ref;
    InferenceCallback done = std::move(cur->done);
    absl::Status s = inner_->SubmitWith(
        model, {.sequence = ref, .level = cur->level}, std::move(cur->input), cur->objective,
        [this, model, ref, done](InferenceOutcome out) { OnAnswer(model, ref, done, std::move(out)); });
    if (s.ok()) return first;
    // Refused before it ran: the sequence's next request, if any, goes on.
    std::optional<Queued> next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      next = Settle(model, ref, /*ran=*/false, /*refused=*/true);
    }
    if (refuse) {
      first = s;  // the caller hears its own refusal
      refuse = false;
    } else {
      InferenceOutcome out;
      out.status = s;
      out.arrival = out.deadline = out.finished = clock_->Now();
      done(std::move(out));
    }
    cur = std::move(next);
  }
  return first;
}

std::optional<SequenceEngine::Queued> SequenceEngine::Settle(ModelId model, const SequenceRef& ref, bool ran,
                                                             bool refused) {
  auto it = live_.find({model, ref.id});
  if (it == live_.end()) return std::nullopt;
  Sequence& s = it->second;
  s.running = false;
  s.last = clock_->Now();
  if (ref.start && ran) s.started = true;
  // Refused at once, a start that never ran leaves nothing behind unless
  // requests wait behind it (the next carries the start).
  if (ref.end || (refused && !s.started && s.waiting.empty())) {
    live_.erase(it);
    return std::nullopt;
  }
  if (s.waiting.empty()) return std::nullopt;
  Queued next = std::move(s.waiting.front());
  s.waiting.pop_front();
  if (--waiting_ == 0) idle_.notify_all();
  s.running = true;
  if (!s.started) next.ref.start = true;  // its start never ran
  return next;
}

void SequenceEngine::OnAnswer(ModelId model, SequenceRef ref, InferenceCallback done, InferenceOutcome outcome) {
  std::optional<Queued> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Dropped before it ran: a start it carried did not happen.
    next = Settle(model, ref, outcome.status.code() != absl::StatusCode::kDeadlineExceeded, /*refused=*/false);
  }
  if (next) Pass(model, *std::move(next), /*refuse=*/false).IgnoreError();
  done(std::move(outcome));
}

void SequenceEngine::WaitIdle() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return waiting_ == 0; });
  }
  inner_->WaitIdle();
}

int64_t SequenceEngine::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inner_->in_flight() + waiting_;
}

int64_t SequenceEngine::live_sequences() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(live_.size());
}

}  // namespace tutti
