// ResponseTracker: the response delay of whole batches, from their answers.
//
// A batch is planned to end a response delay before its earliest deadline
// (the one its head was due at); its answers then leave one by one. An
// answer is on time if it leaves within the response delay plus the time
// its own deadline allows beyond the batch's earliest — so what a batch
// needed is the largest, over its answers, of
//     (written − batch end) − (deadline − batch's earliest deadline),
// and that (at least 0) is its sample of the response delay: one per
// batch, taken once its last answer is written. Planning at a quantile of
// these keeps that share of batches wholly on time; measuring each answer
// alone would count a batch's last answers (late to leave, but not late)
// and miss that a batch is late when any of its answers is.
//
// Answers that never get written (their client went away) would hold
// their batch back: a batch with no news for `timeout` gives its sample
// from the answers that came.
//
// Thread-safety: none; the owner serializes.
#ifndef TUTTI_DELAYS_RESPONSE_TRACKER_H_
#define TUTTI_DELAYS_RESPONSE_TRACKER_H_

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tutti/core/time.h"

namespace tutti {

// One written answer, as its engine handed it out (InferenceOutcome).
struct WrittenAnswer {
  uint64_t batch = 0;  // the engine's batch id; 0: not from a batch (no sample)
  int answers = 1;     // answers of that batch the engine hands out
  Time from = 0;       // batch end + (its deadline − the batch's earliest)
};

class ResponseTracker {
 public:
  struct Sample {
    Time at;
    Duration delay;
  };
  explicit ResponseTracker(Duration timeout = kSecond) : timeout_(timeout) {}

  // `answer` was written at `now`. Appends to `out` the samples of the
  // batches this completes, and of those with no news for the timeout.
  void Written(const WrittenAnswer& answer, Time now, std::vector<Sample>* out);
  // Batches waiting for answers.
  size_t pending() const { return batches_.size(); }

 private:
  struct Batch {
    int remaining = 0;
    Duration worst = 0;
    Time last = 0;  // when its latest answer was written
  };
  void Expire(Time now, std::vector<Sample>* out);

  const Duration timeout_;
  absl::flat_hash_map<uint64_t, Batch> batches_;
  std::deque<std::pair<Time, uint64_t>> started_;  // (first answer written, batch), oldest first
};

}  // namespace tutti

#endif  // TUTTI_DELAYS_RESPONSE_TRACKER_H_
