// The link from a slot's primary to its backup (replicated_executor.h):
// a backup in this process behind a one-sided write, or one in another
// process behind a transport. Internal to replication/.
#ifndef TUTTI_REPLICATION_BACKUP_LINK_H_
#define TUTTI_REPLICATION_BACKUP_LINK_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tutti/core/clock.h"
#include "tutti/replication/backup_state.h"
#include "tutti/replication/state_message.h"

namespace tutti::replication {

// Times the proxies' own work (ReplicationStats::proxy_time): a monotonic
// clock read through the vDSO, not the thread's CPU clock, which costs a
// system call (several per batch would be most of what they measure).
// Includes any preemption inside the work.
inline Duration ProxyClock() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<Duration>(t.tv_sec) * kSecond + t.tv_nsec;
}

// The link to the backup: messages in order, numbered 1, 2, … The slot
// numbers and posts each under its lock (Post); what posting leaves to do
// that may wait — a transport — the slot does once it lets go (Flush).
// The slot never posts after Kill: it lets go of the link first.
class Channel {
 public:
  virtual ~Channel() = default;
  // Under the slot's mutex: `*m`, numbered one more than the last, leaves
  // now; `m` is left holding a cleared message to make the next one in.
  // True: its sending waits for Flush.
  virtual bool Post(std::unique_ptr<Outgoing>& m) = 0;
  // Without the slot's mutex: sends, in order, what Post left to send.
  virtual void Flush() {}
  // Under the slot's mutex: the last message known delivered at `now`;
  // `*next`: when the one after it will be (kInfiniteFuture: not known
  // here — a remote backup acknowledges through
  // ReplicatedExecutor::OnBackupApplied).
  virtual uint64_t Delivered(Time now, Time* next) = 0;
  // The primary died: messages not yet delivered are lost; returns once
  // those delivered are applied.
  virtual void Kill() = 0;
  // Under the slot's mutex: the most bytes (encoded) posted and not yet
  // applied at any Post so far.
  virtual int64_t peak_bytes() const { return 0; }

  uint64_t numbered = 0;  // under the slot's mutex: the last number given to a message
};

// A backup in this process, behind a link (ReplicationOptions::link_rtt):
// a message posted at t is in the backup's memory — where the primary's
// failure does not reach it — and known to the primary as delivered at
// t + rtt, as a one-sided (RDMA) write would be: the primary posts the
// message, which holds what it carries (Outgoing), and the link reads it;
// 0: at once, as shared memory. Posting
// takes no lock and allocates nothing: the message goes into a ring of
// kRing, whose slot's emptied message it takes back. The backup's proxy,
// on a thread of its own, makes the bytes of what was delivered and
// applies them, in order, many messages per wake-up, and everything
// delivered before it takes over (Kill). A backup kRing messages, or
// kMaxBytes of them, behind holds the primary's next Post until it catches
// up (on a manual clock, until the clock moves on: messages still on the
// link wait for it): what the link holds — the messages, and the states
// they alone still share — stays bounded whatever the states' size. The
// ring is short, so that the message the slot takes back to make its next
// one in, with its buffers, was used a few hundred messages before and is
// likely still in a near cache.
// `apply_time` accumulates the applying thread's time in its work; the
// backup, its mutex, the clock and `apply_time` must outlive the link.
std::shared_ptr<Channel> MakeLocalChannel(Clock* clock, Duration rtt, BackupState* backup,
                                          std::mutex* backup_mu, std::atomic<int64_t>* apply_time);

// A backup in another process (distributed mode): messages go through the
// transport's send function, once the slot lets go of its lock, one
// sending thread at a time, in order; acknowledgements come back through
// ReplicatedExecutor::OnBackupApplied.
// `encode_time` accumulates the time spent making and sending the bytes.
using SendFn = std::function<void(uint64_t seq, std::string body)>;
std::shared_ptr<Channel> MakeRemoteChannel(SendFn send, std::atomic<int64_t>* encode_time);

}  // namespace tutti::replication

#endif  // TUTTI_REPLICATION_BACKUP_LINK_H_
