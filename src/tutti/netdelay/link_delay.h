// LinkDelay: when a packet that leaves now may go on, for a link that
// delays every packet by `delay` ± up to `jitter` (uniform), the way a
// network path between hosts does. Packets keep their order, as on a
// real path: one never leaves before the one ahead of it, so jitter
// shows as delay variation, not as reordering (which TCP would read as
// loss).
//
// Pure: the caller brings the clock and the seed.
#ifndef TUTTI_NETDELAY_LINK_DELAY_H_
#define TUTTI_NETDELAY_LINK_DELAY_H_

#include <cstdint>
#include <random>

#include "tutti/core/time.h"

namespace tutti {

class LinkDelay {
 public:
  // REQUIRES: 0 <= jitter; 0 <= delay.
  LinkDelay(Duration delay, Duration jitter, uint64_t seed) : rng_(seed) { Set(delay, jitter); }

  // Changes the link from the next packet on (packets already timed keep
  // their times).
  void Set(Duration delay, Duration jitter) {
    delay_ = delay;
    jitter_ = jitter;
  }

  // The time a packet that arrives at `now` leaves: now + delay + a draw in
  // [-jitter, jitter] (at least now), and never before the previous one.
  Time Release(Time now);

  Duration delay() const { return delay_; }
  Duration jitter() const { return jitter_; }

 private:
  Duration delay_ = 0, jitter_ = 0;
  Time last_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace tutti

#endif  // TUTTI_NETDELAY_LINK_DELAY_H_
