// How requests ended, in the one vocabulary that serving, the metrics, the
// load generator, the simulator and the autoscalers share. Bad is every
// end but good: late, dropped (its deadline could not be met, so it never
// ran), or an error (an executor's failure, a refusal, no answer).
#ifndef TUTTI_CORE_OUTCOME_COUNTS_H_
#define TUTTI_CORE_OUTCOME_COUNTS_H_

#include <cstdint>

namespace tutti {

struct OutcomeCounts {
  int64_t good = 0;     // answered by its deadline
  int64_t late = 0;     // answered after it
  int64_t dropped = 0;  // not run: its deadline could not be met
  int64_t error = 0;    // failed
  // Withdrawn before it ran because no one waited for it any more: neither
  // good nor bad, and not counted in ended().
  int64_t cancelled = 0;

  int64_t bad() const { return late + dropped + error; }
  int64_t ended() const { return good + bad(); }
  // Bad over ended; 0 while none ended.
  double rate() const { return ended() > 0 ? static_cast<double>(bad()) / static_cast<double>(ended()) : 0; }

  OutcomeCounts& operator+=(const OutcomeCounts& o) {
    good += o.good;
    late += o.late;
    dropped += o.dropped;
    error += o.error;
    cancelled += o.cancelled;
    return *this;
  }
  // What `o` had not counted yet (counts since it was taken).
  OutcomeCounts Since(const OutcomeCounts& o) const {
    return {good - o.good, late - o.late, dropped - o.dropped, error - o.error, cancelled - o.cancelled};
  }
};

}  // namespace tutti

#endif  // TUTTI_CORE_OUTCOME_COUNTS_H_
