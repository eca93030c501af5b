// ClockSync: a process's estimate of how far the leading scheduler's clock
// ("cluster time") is from its own, from ping exchanges on its stream —
// NTP's four timestamps: the ping leaves at t1 (here), reaches the leader
// at t2, the pong leaves at t3 (there) and arrives at t4 (here). Each
// exchange gives offset ((t2 − t1) + (t3 − t4)) / 2, wrong by at most half
// its round trip (t4 − t1) − (t3 − t2); the estimate is the exchange with
// the shortest round trip among the last `keep` (queueing only lengthens
// round trips), so it follows slow drift between two hosts' clocks.
//
// Hosts sharing a clock (one machine) get an offset within a few
// microseconds of 0. Transport-free; time is the caller's.
//
// Thread-safety: none; the owner serializes.
#ifndef TUTTI_DISTRIBUTED_CLOCK_SYNC_H_
#define TUTTI_DISTRIBUTED_CLOCK_SYNC_H_

#include <deque>
#include <optional>

#include "tutti/core/time.h"

namespace tutti {

class ClockSync {
 public:
  explicit ClockSync(int keep = 64) : keep_(keep) {}

  // One exchange: t1, t4 on this clock, t2, t3 on the leader's.
  void Add(Time t1, Time t2, Time t3, Time t4);
  // Forgets everything (a new leader has another clock).
  void Reset() { samples_.clear(); }

  bool synced() const { return !samples_.empty(); }
  // Cluster time − this clock. REQUIRES: synced().
  Duration offset() const;
  // How far offset() may be off: half the best round trip. REQUIRES: synced().
  Duration uncertainty() const;

  Time ToCluster(Time local) const { return local + offset(); }
  Time ToLocal(Time cluster) const { return cluster - offset(); }

 private:
  struct Sample {
    Duration offset;
    Duration round_trip;
  };
  const Sample& Best() const;

  const int keep_;
  std::deque<Sample> samples_;
};

}  // namespace tutti

#endif  // TUTTI_DISTRIBUTED_CLOCK_SYNC_H_
