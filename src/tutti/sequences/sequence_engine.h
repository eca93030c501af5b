// SequenceEngine: Triton's sequence batcher in front of an engine: it keeps
// the sequences of stateful models (model_config.h SequenceBatching) and
// passes their requests on in order, one at a time per sequence, so that
// each reads the state its predecessor left (the state itself is kept by
// the executor that runs the model: replication/replicated_executor.h).
// Requests of different sequences are batched together like any others:
// one slot per live sequence.
//
// A request of a stateful model must name its sequence (SequenceRef::id,
// the `sequence_id` parameter); the first sets `start`, the last may set
// `end`. Refused with InvalidArgument naming the sequence and model: no
// sequence; a start for a sequence in progress; a request for a sequence
// never started, already ended, or expired — idle (nothing waiting or
// running) for longer than the model's max_sequence_idle_microseconds. A
// sequence is forgotten at its end or on expiry, checked on each request
// and by a timer, so that idle sequences leak nothing (triton #7117).
// Requests of stateless models pass through; their sequence is ignored.
//
// When a request that started its sequence fails before it ran (dropped,
// refused), the sequence's next request starts it instead, from zeros.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_SEQUENCES_SEQUENCE_ENGINE_H_
#define TUTTI_SEQUENCES_SEQUENCE_ENGINE_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "tutti/core/clock.h"
#include "tutti/core/timer_gate.h"
#include "tutti/repository/model_config.h"
#include "tutti/scheduler/cluster_spec.h"
#include "tutti/serving/layered_engine.h"

namespace tutti {

class SequenceEngine final : public LayeredEngine {
 public:
  // `inner` serves `spec`'s models; `batching[m]` is set for each stateful
  // model m (size: the spec's models). `inner` and `clock` must outlive
  // the engine.
  SequenceEngine(InferenceEngine* inner, ClusterSpec spec, std::vector<std::optional<SequenceBatching>> batching,
                 Clock* clock);
  ~SequenceEngine() override;

  // A stateful model's request without a sequence is refused.
  absl::Status Submit(ModelId model, std::vector<float> input, Duration objective, InferenceCallback done) override;
  absl::Status SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input, Duration objective,
                                InferenceCallback done) override;
  void WaitIdle() override;
  int64_t in_flight() const override;  // the inner engine's, plus requests waiting for their sequence

  // Sequences in progress, over all models.
  int64_t live_sequences() const;

 private:
  struct Queued {
    SequenceRef ref;
    int level = 0;  // its priority level (RequestContext::level)
    std::vector<float> input;
    Duration objective;
    InferenceCallback done;
  };
  struct Sequence {
    Time last = 0;          // its last request arrived or was answered
    bool running = false;   // a request is with the inner engine
    bool ended = false;     // its end request was accepted
    bool started = false;   // a start request of it ran (or may have)
    std::deque<Queued> waiting;
  };
  using Key = std::pair<ModelId, uint64_t>;

  // Hands `q` to the inner engine; on a refusal answers it (and the
  // requests waiting behind it) with the error unless `refuse` is set,
  // in which case the error is returned instead. Call without mu_.
  absl::Status Pass(ModelId model, Queued q, bool refuse);
  void OnAnswer(ModelId model, SequenceRef ref, InferenceCallback done, InferenceOutcome outcome);
  // Under mu_: the sequence's request `ref` is over — answered (`ran`
  // unless dropped before it ran) or refused by the inner engine — and the
  // sequence ends with it or goes on: its next waiting request, now
  // running (a start added if its start never ran); none if nothing waits.
  std::optional<Queued> Settle(ModelId model, const SequenceRef& ref, bool ran, bool refused)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under mu_: forgets sequences idle beyond their model's limit.
  void ExpireIdle(Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleSweep();

  const ClusterSpec spec_;
  const std::vector<std::optional<SequenceBatching>> batching_;
  Clock* const clock_;
  Duration sweep_every_ = 0;  // the smallest idle limit; 0: no stateful model

  mutable std::mutex mu_;
  std::condition_variable idle_;
  absl::flat_hash_map<Key, Sequence> live_ ABSL_GUARDED_BY(mu_);
  std::deque<Key> expired_order_ ABSL_GUARDED_BY(mu_);  // the last kRememberExpired, for clear errors
  absl::flat_hash_set<Key> expired_ ABSL_GUARDED_BY(mu_);
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  TimerId sweep_ ABSL_GUARDED_BY(mu_) = kNoTimer;
  // The sweep timer reaches the engine through this, closed before the engine goes.
  const std::shared_ptr<TimerGate<SequenceEngine>> gate_ = std::make_shared<TimerGate<SequenceEngine>>(this);
};

}  // namespace tutti

#endif  // TUTTI_SEQUENCES_SEQUENCE_ENGINE_H_
