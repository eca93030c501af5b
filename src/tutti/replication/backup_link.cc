#include "tutti/replication/backup_link.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace tutti::replication {
namespace {

class LocalChannel final : public Channel {
 public:
  LocalChannel(Clock* clock, Duration rtt, BackupState* backup, std::mutex* backup_mu,
               std::atomic<int64_t>* apply_time)
      : clock_(clock),
        rtt_(rtt),
        backup_(backup),
        backup_mu_(backup_mu),
        apply_time_(apply_time),
        ring_(kRing),
        thread_([this] { Loop(); }) {}
  ~LocalChannel() override { Kill(); }

  bool Post(std::unique_ptr<Outgoing>& m) override {
    const uint64_t head = head_.load(std::memory_order_relaxed);  // written by this side only
    const int64_t size = static_cast<int64_t>(m->size);
    if (!Room(head, size) && !AwaitRoom(head, size)) {
      m->Clear();  // lost with the primary
      return false;
    }
    posted_bytes_ += size;
    peak_bytes_ = std::max(peak_bytes_, Unapplied());
    Slot& slot = ring_[head % kRing];
    const uint64_t seq = m->seq;
    const Time at = clock_->Now() + rtt_;
    slot.at = at;
    slot.message.swap(m);
    head_.store(head + 1, std::memory_order_release);
    if (m == nullptr) m = std::make_unique<Outgoing>();  // a slot not used before
    posted_ = seq;
    if (rtt_ > 0) in_flight_.emplace_back(seq, at);
    // Without the lock: a wake-up lost delays the applying by kApplyEvery at most.
    if (head + 1 - applied_.tail.load(std::memory_order_relaxed) >= kApplyBatch) wake_.notify_one();
    return false;
  }

  int64_t peak_bytes() const override { return peak_bytes_; }

  uint64_t Delivered(Time now, Time* next) override {
    *next = kInfiniteFuture;
    if (rtt_ == 0) return posted_;
    while (!in_flight_.empty() && in_flight_.front().second <= now) {
      delivered_ = in_flight_.front().first;
      in_flight_.pop_front();
    }
    *next = in_flight_.empty() ? kInfiniteFuture : in_flight_.front().second;
    return delivered_;
  }

  void Kill() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dead_) return;
      dead_ = true;
      killed_at_ = clock_->Now();  // messages delivered later are lost
    }
    wake_.notify_one();
    room_.notify_all();
    thread_.join();
  }

 private:
  // The backup's proxy wakes for this many messages, or after kApplyEvery
  // (a pace of the applying thread only: what the primary may release
  // depends on delivery, not on it).
  static constexpr uint64_t kRing = 256;
  static constexpr int64_t kMaxBytes = 64 << 20;
  static constexpr uint64_t kApplyBatch = 64;
  static constexpr auto kApplyEvery = std::chrono::milliseconds(2);
  struct Slot {
    Time at = 0;  // delivered
    std::unique_ptr<Outgoing> message;
  };

  // Under the slot's mutex: the bytes posted and not yet applied (at most;
  // the applying thread may be further on).
  int64_t Unapplied() const {
    return posted_bytes_ - applied_.bytes.load(std::memory_order_relaxed);
  }

  // Whether a message of `size` bytes fits: the ring has a free slot, and
  // it is empty or holds less than kMaxBytes with it.
  bool Room(uint64_t head, int64_t size) const {
    const uint64_t tail = applied_.tail.load(std::memory_order_acquire);
    return head - tail < kRing && (head == tail || Unapplied() + size <= kMaxBytes);
  }

  // No Room: waits for the applying thread. False: killed.
  bool AwaitRoom(uint64_t head, int64_t size) {
    std::unique_lock<std::mutex> lock(mu_);
    room_wanted_.store(true);
    wake_.notify_one();
    while (!dead_ && !Room(head, size)) room_.wait_for(lock, kApplyEvery);
    room_wanted_.store(false);
    return !dead_;
  }

  void Loop() {
    std::string bytes;     // its capacity kept
    uint64_t tail = 0;     // this side's: applied_.tail publishes it
    bool on_link = false;  // the last wake-up found only messages still on the link: sleep
    for (;;) {
      bool dead;
      Time until;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait_for(lock, kApplyEvery, [&] {
          return dead_ ||
                 (!on_link && (head_.load(std::memory_order_acquire) - tail >= kApplyBatch ||
                               room_wanted_.load()));
        });
        dead = dead_;
        until = dead ? killed_at_ : clock_->Now();
      }
      const uint64_t head = head_.load(std::memory_order_acquire);
      on_link = tail < head && ring_[tail % kRing].at > until;
      if (tail < head && !on_link) {
        const Duration began = ProxyClock();
        int64_t applied = 0;
        {
          std::lock_guard<std::mutex> b(*backup_mu_);
          for (; tail < head && ring_[tail % kRing].at <= until; ++tail) {
            Outgoing& m = *ring_[tail % kRing].message;
            Encode(m, &bytes);
            backup_->Apply(bytes);
            applied += static_cast<int64_t>(m.size);
            m.Clear();
          }
        }
        applied_.bytes.store(applied_.bytes.load(std::memory_order_relaxed) + applied,
                             std::memory_order_relaxed);
        applied_.tail.store(tail, std::memory_order_release);
        apply_time_->fetch_add(ProxyClock() - began, std::memory_order_relaxed);
        if (room_wanted_.load()) {
          std::lock_guard<std::mutex> lock(mu_);
          room_.notify_all();
        }
      }
      if (dead) return;
    }
  }

  Clock* const clock_;
  const Duration rtt_;
  BackupState* const backup_;
  std::mutex* const backup_mu_;
  std::atomic<int64_t>* const apply_time_;
  std::vector<Slot> ring_;  // [applied_.tail, head_): posted, not yet applied
  std::atomic<uint64_t> head_{0};
  struct {
    std::atomic<uint64_t> tail{0};
    std::atomic<int64_t> bytes{0};  // of the messages applied (Outgoing::size)
  } applied_;                       // written by the applying thread only
  std::mutex mu_;                   // the applying thread's sleep and wake-ups, and room_'s
  std::condition_variable wake_, room_;
  std::atomic<bool> room_wanted_{false};
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  Time killed_at_ ABSL_GUARDED_BY(mu_) = 0;
  // Under the slot's mutex (Post, Delivered).
  uint64_t posted_ = 0;
  int64_t posted_bytes_ = 0, peak_bytes_ = 0;
  std::deque<std::pair<uint64_t, Time>> in_flight_;  // rtt > 0: posted, not yet known delivered
  uint64_t delivered_ = 0;
  std::thread thread_;
};

class RemoteChannel final : public Channel {
 public:
  RemoteChannel(SendFn send, std::atomic<int64_t>* encode_time)
      : send_(std::move(send)), encode_time_(encode_time) {}

  bool Post(std::unique_ptr<Outgoing>& m) override {
    {
      std::lock_guard<std::mutex> q(queue_mu_);
      queued_.push_back(std::move(*m));
    }
    m->Clear();
    return true;
  }

  // A thread that finds another sending leaves its messages to it: the
  // sender looks at the queue again once done.
  void Flush() override {
    for (;;) {
      std::unique_lock<std::mutex> sending(send_mu_, std::try_to_lock);
      if (!sending.owns_lock()) return;
      {
        std::lock_guard<std::mutex> q(queue_mu_);
        sending_.swap(queued_);
      }
      if (sending_.empty()) return;
      const Duration began = ProxyClock();
      for (Outgoing& m : sending_) {
        std::string bytes;
        Encode(m, &bytes);
        send_(m.seq, std::move(bytes));
      }
      encode_time_->fetch_add(ProxyClock() - began, std::memory_order_relaxed);
      sending_.clear();  // its capacity kept
      sending.unlock();
      std::lock_guard<std::mutex> q(queue_mu_);
      if (queued_.empty()) return;
    }
  }

  uint64_t Delivered(Time, Time* next) override {
    *next = kInfiniteFuture;
    return 0;
  }
  void Kill() override {}

 private:
  const SendFn send_;
  std::atomic<int64_t>* const encode_time_;
  std::mutex queue_mu_, send_mu_;
  std::vector<Outgoing> queued_ ABSL_GUARDED_BY(queue_mu_);  // posted, not yet sent
  std::vector<Outgoing> sending_ ABSL_GUARDED_BY(send_mu_);
};

}  // namespace

std::shared_ptr<Channel> MakeLocalChannel(Clock* clock, Duration rtt, BackupState* backup,
                                          std::mutex* backup_mu, std::atomic<int64_t>* apply_time) {
  return std::make_shared<LocalChannel>(clock, rtt, backup, backup_mu, apply_time);
}

std::shared_ptr<Channel> MakeRemoteChannel(SendFn send, std::atomic<int64_t>* encode_time) {
  return std::make_shared<RemoteChannel>(std::move(send), encode_time);
}

}  // namespace tutti::replication
