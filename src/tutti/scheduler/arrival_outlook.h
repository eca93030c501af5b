// ArrivalOutlook: how many more requests for one model are expected within
// a wait, given how many of its requests are outstanding now (arrived and
// not yet answered). The deferred scheduler asks it whether holding a batch
// can still grow it (candidate_scheduler.h, "Waiting only while it pays").
//
// Why it conditions on the outstanding count: a client that waits for its
// answer sends nothing while it waits, so N closed-loop clients never send
// while N of their requests are outstanding, however fast they send
// otherwise — holding their requests for batch-mates only throttles them.
// An open-loop (Poisson) source is indifferent to the count, so the
// condition costs it nothing.
//
// At each count n it keeps the arrivals that came while at least n
// requests were outstanding, A(≥n), and the time spent so, T(≥n), over the
// current and the previous epoch. For a wait w at count n it expects
// A(≥n)·w / T(≥n) arrivals once it has watched count n for at least w.
// Before that it expects the A(≥n) it saw there, plus, for the rest of w,
// the rate λ at the highest count it has watched that long — an open-loop
// stream that reaches a count for the first time still comes at its rate —
// weighted, while no arrival has come at count n, by the chance that the
// source is open rather than at its ceiling: even at first, falling as
// e^(−λ·T(≥n)) as the arrivals λ predicts fail to come. So closed-loop
// clients show their ceiling within a few of their own round trips. With
// nothing watched that long: no evidence, no wait.
//
// Requests leave when their batch is reported done (Answered), else at
// the time Dispatch predicted, or when dropped. Times passed in must not
// decrease. Not thread-safe.
#ifndef TUTTI_SCHEDULER_ARRIVAL_OUTLOOK_H_
#define TUTTI_SCHEDULER_ARRIVAL_OUTLOOK_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tutti/core/time.h"

namespace tutti {

class ArrivalOutlook {
 public:
  // Counts above `max_count` are pooled with it. REQUIRES: max_count >= 1,
  // epoch > 0.
  ArrivalOutlook(int max_count, Duration epoch, Time now);

  // A request arrived at `now`.
  void Arrive(Time now);
  // `n` requests were dispatched at `now`; their answers are due at
  // `answered_at`, when they stop being outstanding unless Answered says
  // so sooner. Returns the batch's handle for Answered.
  uint64_t Dispatch(Time now, int n, Time answered_at);
  // The batch `handle` was answered at `now` (no-op if it already left).
  void Answered(Time now, uint64_t handle);
  // A request was answered at `now` without running (dropped).
  void Drop(Time now);

  // Requests outstanding at the last call.
  int64_t outstanding() const { return outstanding_; }
  // Arrivals expected within `wait` from `now` at the current count, and
  // how long until that forecast would move without any event (another
  // look then may find the source at its ceiling; kNever: it will not).
  static constexpr Duration kNever = kInfiniteFuture;
  struct Forecast {
    double arrivals = 0;
    Duration recheck = kNever;
  };
  Forecast Expected(Time now, Duration wait);

  // Whether the requests come from clients that each wait for their answer
  // (a closed loop): there is a count at which nothing has arrived though
  // the rate while fewer were outstanding predicted ten arrivals in the time
  // spent there. Their batch-mates come only as answers free them, so
  // holding a batch for them throttles the clients by as much as it holds.
  // Once found, a ceiling stands until a request arrives at it (more
  // clients, or an open source) or the model is idle for an epoch: not
  // holding, the clients reach it less often than holding made them.
  bool Closed(Time now);

 private:
  // Sums over counts with suffix queries in O(log counts).
  class Counts {
   public:
    explicit Counts(int size) : tree_(size + 1, 0) {}
    void Add(int count, double v);
    double AtLeast(int count) const;  // the sum over counts >= count
    void Clear() {
      std::fill(tree_.begin(), tree_.end(), 0);
      total_ = 0;
    }

   private:
    double Prefix(int count) const;  // the sum over counts < count
    std::vector<double> tree_;       // a Fenwick tree over counts 0 … size − 1
    double total_ = 0;
  };
  struct Epoch {
    Counts arrivals, time;
    explicit Epoch(int size) : arrivals(size), time(size) {}
  };

  // Brings the counts up to `now`: departures due by then, time at each
  // count, epochs turned over.
  void AdvanceTo(Time now);
  void Accumulate(Time until);
  int Slot() const { return static_cast<int>(std::min<int64_t>(outstanding_, max_count_)); }

  const int max_count_;
  const Duration epoch_;
  Epoch current_, previous_;
  Time epoch_end_;
  Time last_ = 0;
  int64_t outstanding_ = 0;
  int ceiling_ = -1;  // Closed()'s ceiling while it stands, else −1
  using Departure = std::pair<Time, uint64_t>;  // when, handle
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures_;
  std::unordered_map<uint64_t, int> pending_;  // handle → requests, until they leave
  uint64_t next_handle_ = 0;
};

}  // namespace tutti

#endif  // TUTTI_SCHEDULER_ARRIVAL_OUTLOOK_H_
