#include "tutti/replication/replicated_executor.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tutti/core/fnv_hash.h"
#include "tutti/core/timer_gate.h"

namespace tutti {
namespace {

using Key = std::pair<int, uint64_t>;  // the model's position, the sequence id

struct State {
  // A commit makes a new one; never changed in place (a states' message may
  // share it: Outgoing).
  std::shared_ptr<const std::vector<float>> value;
  uint64_t version = 0;  // requests of the sequence it has seen
  uint64_t digest = 0;   // of its bits
  uint64_t parent = 0;   // the digest of the state it was made from
  Time touched = 0;
  uint64_t shipped = 0;  // the primary's: the message that carries it to the backup
};
using StateMap = absl::flat_hash_map<Key, State>;

// A digest of a state's bits: FNV-1a's step over 32-bit words, then a final
// mix (the audit compares digests; they need not be cryptographic).
uint64_t Digest(const float* p, int64_t n) {
  uint64_t h = kFnvOffsetBasis;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, p + i, sizeof w);
    h = (h ^ w) * kFnvPrime;
  }
  return h ^ (h >> 29);
}

// Times the proxies' own work (ReplicationStats::proxy_time): a monotonic
// clock read through the vDSO (30 ns here), not the thread's CPU clock,
// which costs a system call (0.54 µs here: four of them per batch were
// most of what they measured). Includes any preemption inside the work.
Duration ProxyClock() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<Duration>(t.tv_sec) * kSecond + t.tv_nsec;
}

// The bytes of messages to the backup: what would cross the network.
class Writer {
 public:
  // Writes into `into`'s buffer, emptied (its capacity kept).
  explicit Writer(std::string into = {}) : out_(std::move(into)) { out_.clear(); }
  template <typename T>
  void Put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutFloats(const float* p, int64_t n) {
    Put(n);
    out_.append(reinterpret_cast<const char*>(p), n * sizeof(float));
  }
  void PutBytes(const std::string& bytes) { out_ += bytes; }
  void Reserve(size_t bytes) { out_.reserve(bytes); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  void GetFloats(std::vector<float>* v) {
    const int64_t n = Get<int64_t>();
    v->resize(n);
    std::memcpy(v->data(), in_.data() + at_, n * sizeof(float));
    at_ += n * sizeof(float);
  }

 private:
  const std::string& in_;
  size_t at_ = 0;
};

enum Kind : uint8_t { kLog = 1, kStates = 2, kCheckpoint = 3 };

// `value`: the n floats of s's value (s->value itself may be null).
void PutState(Writer& w, const Key& k, const State* s, const float* value, int64_t n) {
  w.Put(k.first);
  w.Put(k.second);
  w.Put<uint8_t>(s == nullptr);  // erased
  if (s == nullptr) return;
  w.Put(s->version);
  w.Put(s->digest);
  w.Put(s->parent);
  w.Put(s->touched);
  w.PutFloats(value, n);
}

// PutState with s's own value (s null: erased).
void PutState(Writer& w, const Key& k, const State* s) {
  const std::vector<float>* v = s != nullptr ? s->value.get() : nullptr;
  PutState(w, k, s, v != nullptr ? v->data() : nullptr, v != nullptr ? static_cast<int64_t>(v->size()) : 0);
}

// PutState's bytes.
size_t StateBytes(const State* s) {
  constexpr size_t kHead = sizeof(int) + sizeof(uint64_t) + 1, kMeta = 4 * sizeof(uint64_t) + sizeof(int64_t);
  return kHead + (s == nullptr ? 0 : kMeta + (s->value ? s->value->size() * sizeof(float) : 0));
}

// A batch's inputs as served (the backup's log), and what each item read.
struct Logged {
  int model = 0;
  int size = 0;
  std::vector<SequenceRef> sequences;
  std::vector<uint64_t> tags;   // per item; 0: none
  std::vector<uint64_t> reads;  // per item: the digest of the state it read
  std::vector<float> input;
};

// An answer the backup keeps for a request it may be asked again after a
// failover (distributed mode: its primary died before the answer left).
struct Kept {
  std::vector<float> output;
  absl::Status status;
};

// What the backup holds: the states it applied, in order, the logged
// batches whose states it has not, per sequence the digest of the state its
// last logged request read (for the audit), and the answers of the batches
// whose states it applied, by tag (at most kKeptAnswers, oldest out first).
struct BackupState {
  static constexpr size_t kKeptAnswers = 1 << 16;
  StateMap states;
  std::map<uint64_t, Logged> log;
  absl::flat_hash_map<Key, uint64_t> reads;
  absl::flat_hash_map<uint64_t, Kept> answers;
  std::deque<uint64_t> answer_order;
  uint64_t applied = 0;  // the last batch whose states (or checkpoint) it applied

  void Keep(uint64_t tag, Kept kept) {
    if (tag == 0) return;
    if (answers.insert_or_assign(tag, std::move(kept)).second) answer_order.push_back(tag);
    while (answer_order.size() > kKeptAnswers) {
      answers.erase(answer_order.front());
      answer_order.pop_front();
    }
  }

  void Apply(const std::string& bytes) {
    Reader r(bytes);
    const auto kind = r.Get<uint8_t>();
    const auto batch = r.Get<uint64_t>();
    if (kind == kLog) {
      Logged l;
      l.model = r.Get<int>();
      l.size = r.Get<int>();
      for (int i = 0; i < l.size; ++i) {
        SequenceRef s;
        s.id = r.Get<uint64_t>();
        s.start = r.Get<uint8_t>();
        s.end = r.Get<uint8_t>();
        l.sequences.push_back(s);
        l.tags.push_back(r.Get<uint64_t>());
        l.reads.push_back(r.Get<uint64_t>());
        const Key key{l.model, s.id};
        if (s.end) {
          reads.erase(key);
        } else {
          reads[key] = l.reads.back();
        }
      }
      r.GetFloats(&l.input);
      log.emplace(batch, std::move(l));
      return;
    }
    if (kind == kCheckpoint) states.clear();
    const auto count = r.Get<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      Key k;
      k.first = r.Get<int>();
      k.second = r.Get<uint64_t>();
      if (r.Get<uint8_t>()) {
        states.erase(k);
        continue;
      }
      State& s = states[k];
      s.version = r.Get<uint64_t>();
      s.digest = r.Get<uint64_t>();
      s.parent = r.Get<uint64_t>();
      s.touched = r.Get<Time>();
      auto value = std::make_shared<std::vector<float>>();
      r.GetFloats(value.get());
      s.value = std::move(value);
    }
    if (kind == kStates) {  // the batch's answers, by tag
      const auto answered = r.Get<int64_t>();
      for (int64_t i = 0; i < answered; ++i) {
        const auto tag = r.Get<uint64_t>();
        Kept kept;
        r.GetFloats(&kept.output);
        Keep(tag, std::move(kept));
      }
    }
    applied = batch;
    log.erase(log.begin(), log.upper_bound(batch));
  }
};

// A message to the backup as the slot posts it: a checkpoint's `bytes`; or
// batch `states_of`'s kStates message — the states it wrote (none: erased),
// then `bytes` (its answers: PutAnswers); or batch `log_of`'s kLog message,
// `log`. The link makes its bytes (Encode), off the slot's lock and off
// every answer's path. Its buffers are used again, message after message
// (Clear keeps their capacity up to kKept floats), so that making one
// allocates nothing. A state of up to kCopied floats is copied into
// `values`; a larger one shares its committed value (which no later commit
// changes). Small values shared, each value's count and memory went to the
// link's thread, which freed it: 16 states of 64 floats a batch took 15.7 µs
// against 6.3 µs copied; large ones copied, the copy costs more than that
// (1.09 against 0.64 ms at 16,384 floats; bench/replication_benchmark.cc).
struct Outgoing {
  static constexpr int64_t kCopied = 1024;
  static constexpr size_t kKept = 16384;
  uint64_t seq = 0;
  std::string bytes;
  uint64_t states_of = 0;
  std::vector<std::pair<Key, std::optional<State>>> states;  // a copied one's `value` null
  std::vector<float> values;    // the copied states' values, one after another
  std::vector<int64_t> counts;  // per state: its floats in `values` (0: shared, or erased)
  uint64_t log_of = 0;
  Logged log;
  size_t size = 0;  // encoded

  void Clear() {
    seq = states_of = log_of = 0;
    size = 0;
    bytes.clear();
    states.clear();
    Empty(values);
    counts.clear();
    log.sequences.clear();
    log.tags.clear();
    log.reads.clear();
    Empty(log.input);
  }

 private:
  static void Empty(std::vector<float>& v) {
    if (v.capacity() > kKept) {
      std::vector<float>().swap(v);  // a ring of messages keeps no large buffers
    } else {
      v.clear();
    }
  }
};

// An Outgoing's bytes, as BackupState::Apply reads them, into `out` (its
// capacity kept).
void Encode(const Outgoing& m, std::string* out) {
  Writer w(std::move(*out));
  w.Reserve(m.size);
  if (m.log_of > 0) {
    const Logged& l = m.log;
    w.Put<uint8_t>(kLog);
    w.Put(m.log_of);
    w.Put(l.model);
    w.Put(l.size);
    for (int i = 0; i < l.size; ++i) {
      w.Put(l.sequences[i].id);
      w.Put<uint8_t>(l.sequences[i].start);
      w.Put<uint8_t>(l.sequences[i].end);
      w.Put(l.tags[i]);
      w.Put(l.reads[i]);
    }
    w.PutFloats(l.input.data(), static_cast<int64_t>(l.input.size()));
  } else if (m.states_of > 0) {
    w.Put<uint8_t>(kStates);
    w.Put(m.states_of);
    w.Put<int64_t>(static_cast<int64_t>(m.states.size()));
    const float* copied = m.values.data();
    for (size_t i = 0; i < m.states.size(); ++i) {
      const auto& [key, st] = m.states[i];
      if (st && st->value) {
        PutState(w, key, &*st);  // shared
      } else {
        PutState(w, key, st ? &*st : nullptr, copied, m.counts[i]);
        copied += m.counts[i];
      }
    }
    w.PutBytes(m.bytes);
  } else {
    w.PutBytes(m.bytes);
  }
  *out = w.Take();
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
class LocalChannel final : public Channel {
 public:
  LocalChannel(Clock* clock, Duration rtt, BackupState* backup, std::mutex* backup_mu,
               std::atomic<int64_t>* apply_time)
      : clock_(clock), rtt_(rtt), backup_(backup), backup_mu_(backup_mu), apply_time_(apply_time), ring_(kRing),
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
  int64_t Unapplied() const { return posted_bytes_ - applied_.bytes.load(std::memory_order_relaxed); }

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
    std::string bytes;  // its capacity kept
    uint64_t tail = 0;  // this side's: applied_.tail publishes it
    bool on_link = false;  // the last wake-up found only messages still on the link: sleep
    for (;;) {
      bool dead;
      Time until;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait_for(lock, kApplyEvery, [&] {
          return dead_ ||
                 (!on_link && (head_.load(std::memory_order_acquire) - tail >= kApplyBatch || room_wanted_.load()));
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
        applied_.bytes.store(applied_.bytes.load(std::memory_order_relaxed) + applied, std::memory_order_relaxed);
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
  } applied_;  // written by the applying thread only
  std::mutex mu_;  // the applying thread's sleep and wake-ups, and room_'s
  std::condition_variable wake_, room_;
  std::atomic<bool> room_wanted_{false};
  bool dead_ = false;
  Time killed_at_ = 0;
  // Under the slot's mutex (Post, Delivered).
  uint64_t posted_ = 0;
  int64_t posted_bytes_ = 0, peak_bytes_ = 0;
  std::deque<std::pair<uint64_t, Time>> in_flight_;  // rtt > 0: posted, not yet known delivered
  uint64_t delivered_ = 0;
  std::thread thread_;
};

// A backup in another process (distributed mode): messages go through the
// transport's send function, once the slot lets go of its lock, one
// sending thread at a time, in order; acknowledgements come back through
// ReplicatedExecutor::OnBackupApplied.
class RemoteChannel final : public Channel {
 public:
  RemoteChannel(ReplicatedExecutor::SendFn send, std::atomic<int64_t>* encode_time)
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
  const ReplicatedExecutor::SendFn send_;
  std::atomic<int64_t>* const encode_time_;
  std::mutex queue_mu_, send_mu_;
  std::vector<Outgoing> queued_;   // posted, not yet sent
  std::vector<Outgoing> sending_;  // under send_mu_
};

}  // namespace

absl::StatusOr<ReplicationMode> ParseReplicationMode(absl::string_view name) {
  if (name == "none") return ReplicationMode::kNone;
  if (name == "nspb") return ReplicationMode::kNspb;
  if (name == "remus") return ReplicationMode::kRemus;
  if (name == "checkpoint") return ReplicationMode::kCheckpoint;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown replication mode '", name, "' (expected none, nspb, remus or checkpoint)"));
}

absl::string_view ReplicationModeName(ReplicationMode mode) {
  switch (mode) {
    case ReplicationMode::kNone: return "none";
    case ReplicationMode::kNspb: return "nspb";
    case ReplicationMode::kRemus: return "remus";
    case ReplicationMode::kCheckpoint: return "checkpoint";
  }
  return "?";
}

class ReplicatedExecutor::Impl {
  // A batch as Run had it, since `received`: queued for mu_ (incoming_), or
  // for a takeover (deferred_).
  struct Received {
    ExecBatch batch;
    DoneFn done;
    Time received = 0;
  };

 public:
  Impl(Clock* clock, std::unique_ptr<Executor> primary, std::unique_ptr<Executor> backup,
       std::vector<SlotModel> models, ReplicationOptions options, ExecutorFactory spare)
      : clock_(clock), models_(std::move(models)), options_(options), spare_(std::move(spare)),
        primary_(std::move(primary)), backup_exec_(std::move(backup)) {
    if (backup_exec_ != nullptr) StartChannel();
    std::lock_guard<std::mutex> lock(mu_);
    if (options_.distributed) {
      standby_ = true;
      std::lock_guard<std::mutex> b(backup_mu_);
      backup_ = std::make_unique<BackupState>();
    } else if (options_.detect_after > 0) {
      ScheduleCheck();
    }
  }

  ~Impl() {
    {
      gate_->Close();  // a check under way ends first
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (check_ != kNoTimer) clock_->Cancel(check_);
      if (delivery_timer_ != kNoTimer) clock_->Cancel(delivery_timer_);
    }
    if (detector_.joinable()) detector_.join();
    if (spare_thread_.joinable()) spare_thread_.join();
    for (std::thread& t : promoters_) t.join();
    std::shared_ptr<Channel> channel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      channel = std::move(channel_);
    }
    if (channel) channel->Kill();  // joins its thread: no ack after this
    {
      std::lock_guard<std::mutex> in(incoming_mu_);
      incoming_.clear();
    }
    // Batches still queued finish first, calling back into this.
    dead_.clear();
    primary_.reset();
    backup_exec_.reset();
  }

  // Never waits long for mu_ (Executor::Run does not block): the batch
  // joins the incoming queue, which this thread takes in if mu_ is free or
  // let go within kRunSpins tries, and otherwise mu_'s holder takes in once
  // it lets go (DrainIncoming). Holders mostly let go within microseconds,
  // so the batches' work stays on Run's thread; one that stays (preempted
  // on a busy core) no longer holds up the dispatching thread.
  void Run(ExecBatch batch, DoneFn done) {
    {
      std::lock_guard<std::mutex> in(incoming_mu_);
      incoming_.push_back({std::move(batch), std::move(done), clock_->Now()});
      incoming_any_.store(true);
    }
    if (!DrainIncoming(kRunSpins)) queued_batches_.fetch_add(1, std::memory_order_relaxed);
  }
  // About 10 µs of tries (a pause each; timed on the 2-core Xeon of the
  // README's figures): longer than a holder's usual hold (its states, log
  // and messages: a few µs), shorter than a preemption.
  static constexpr int kRunSpins = 500;

  // Without mu_: takes in the batches Run queued, unless another thread
  // holds mu_ through `spins` more tries — every holder calls this (Finish)
  // or has it called on the clock's timer (OtherLock) once it lets go, so
  // no batch waits for a later one. Batches are taken in the order Run had
  // them. False when it left them to another thread.
  bool DrainIncoming(int spins = 0) {
    while (incoming_any_.load()) {
      std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
      for (int i = 0; i < spins && !lock.owns_lock() && incoming_any_.load(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        lock.try_lock();
      }
      if (!lock.owns_lock()) return false;
      std::vector<Received> in;
      {
        std::lock_guard<std::mutex> q(incoming_mu_);
        in.swap(incoming_);
        incoming_any_.store(false);
      }
      for (Received& r : in) AcceptLocked(std::move(r));
      Outside o = TakeOutside();
      lock.unlock();
      Deliver(std::move(o));
    }
    return true;
  }

  // Under mu_: a batch the slot has had since `r.received`.
  void AcceptLocked(Received r) {
    if (standby_ || promoting_) {  // only the slot's holder gets batches: take over first
      deferred_.push_back(std::move(r));
      StartPromotionLocked();
      return;
    }
    if (!kept_.empty() && clock_->Now() > kept_until_) kept_.clear();  // the requests that come again came
    if (!kept_.empty() && !r.batch.tags.empty()) {
      std::vector<std::optional<Kept>> kept = TakeKeptLocked(r.batch);
      if (!kept.empty()) {
        r.batch = SplitKept(std::move(r.batch), r.done, std::move(kept));
        if (r.batch.size == 0) {
          outside_.answers.emplace_back(std::move(r.done), ExecResult{});
          return;
        }
      }
    }
    const uint64_t n = ++next_batch_;
    Pending& p = pending_[n];
    p.stateful = models_.at(r.batch.model).state_elements > 0 || models_.at(r.batch.model).model_state;
    p.served = std::move(r.batch);
    p.done = std::move(r.done);
    p.received = r.received;
    if (recovering_) {
      held_.push_back(n);
      return;
    }
    Start(n);
  }

  std::string kind() const {
    OtherLock lock(this);
    return primary_->kind();
  }

  // Distributed mode (see the header).
  void AttachBackup(SendFn send) {
    Outside o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      DetachLocked();
      channel_ = std::make_shared<RemoteChannel>(std::move(send), &outside_time_);
      if (options_.mode != ReplicationMode::kNone) ShipCheckpoint(last_committed_);
      // The checkpoint holds committed states only: checkpoint-replay logs
      // the batches already under way after it, so that a takeover replays
      // them (NSPB and Remus ship their states when they commit).
      if (options_.mode == ReplicationMode::kCheckpoint) {
        for (auto& [n, p] : pending_) {
          if (p.stateful && p.dispatched && n > last_committed_) p.log_seq = ShipLog(n, p);
        }
      }
      o = TakeOutside();
    }
    Finish(std::move(o));
  }
  void OnBackupApplied(uint64_t seq) { OnAcked(seq); }
  void DetachBackup() {
    Outside o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      DetachLocked();
      o = TakeOutside();
    }
    Finish(std::move(o));
  }
  bool BeginFromPrimary() {
    OtherLock lock(this);
    if (!standby_) return false;
    std::lock_guard<std::mutex> b(backup_mu_);
    backup_ = std::make_unique<BackupState>();
    return true;
  }
  bool ApplyFromPrimary(const std::string& body) {
    OtherLock lock(this);
    if (!standby_) return false;  // promoted: never adopts a state of the old primary's again
    const Duration began = ProxyClock();
    {
      std::lock_guard<std::mutex> b(backup_mu_);
      backup_->Apply(body);
    }
    stats_.proxy_time += ProxyClock() - began;
    return true;
  }
  void Promote() {
    OtherLock lock(this);
    StartPromotionLocked();
  }
  void Demote() {
    std::vector<Delivery> failed;
    {
      OtherLock lock(this);
      if (standby_ || promoting_ || !options_.distributed) return;
      // Nothing it holds leaves as an answer: the backup that took over
      // may not have the states those answers read. What the executor
      // still runs answers nobody (another generation).
      ++generation_;
      channel_.reset();
      watermark_ = last_state_seq_ = 0;
      for (auto& [n, p] : pending_) {
        if (!p.done) continue;
        ExecResult r;
        r.status = absl::UnavailableError(
            "this backend lost its slot to its backup before answering (the sequence's state is the backup's "
            "now): start the sequence again");
        failed.emplace_back(std::move(p.done), std::move(r));
      }
      pending_.clear();
      ForgetStagesLocked();
      standby_ = true;
      states_.clear();
      audit_.clear();
      kept_.clear();
      std::lock_guard<std::mutex> b(backup_mu_);
      backup_ = std::make_unique<BackupState>();
    }
    for (auto& [done, result] : failed) done(std::move(result));
  }
  bool serving() const {
    OtherLock lock(this);
    return !standby_ && !promoting_;
  }

  ReplicationMode mode() const { return options_.mode; }

  absl::Status KillPrimary();
  ReplicationStats stats() const {
    OtherLock lock(this);
    ReplicationStats s = stats_;
    s.proxy_time += outside_time_.load(std::memory_order_relaxed);
    s.queued_batches = queued_batches_.load(std::memory_order_relaxed);
    s.live_states = static_cast<int64_t>(states_.size());
    s.backup = backup_exec_ != nullptr || (options_.distributed && channel_ != nullptr);
    std::lock_guard<std::mutex> b(backup_mu_);
    s.backup_states = backup_ ? static_cast<int64_t>(backup_->states.size()) : 0;
    s.link_peak_bytes = channel_ != nullptr ? channel_->peak_bytes() : 0;
    return s;
  }

 private:
  struct Row {
    Key key;
    bool start = false, end = false, lost = false;
    uint64_t read_version = 0, read_digest = 0, read_parent = 0;
    uint64_t read_shipped = 0;  // the message carrying the state it read
  };
  struct Pending {
    bool stateful = false;
    ExecBatch served;  // as received: kept until answered, to run again after a failover
    DoneFn done;
    std::vector<Row> rows;
    uint64_t log_seq = 0;
    ExecResult result;     // the primary's, with the states
    uint64_t release_seq = 0;  // remus: its states' message
    Time computed = 0;         // the primary answered
    bool waited = false;       // its release waited for the backup
    bool answered = false;     // by the primary
    bool dispatched = false;   // handed to the primary, at
    Time dispatched_at = 0;
    Time received = 0;         // by the slot (Run)
  };
  using Delivery = std::pair<DoneFn, ExecResult>;
  // Work decided under mu_ and done outside it (Finish): batches for the
  // primary, then answers.
  struct Dispatch {
    Executor* exec;
    int generation;
    uint64_t n;
    ExecBatch batch;
  };
  struct Outside {
    std::vector<Dispatch> dispatch;
    std::vector<Delivery> answers;
    std::shared_ptr<Channel> flush;  // its posted messages wait to be sent
    bool states = false;             // states' messages to be made (ShipStatesLocked)
  };

  // Under mu_: what the primary held of its batches between their run and
  // their release (update stages to come, releases waiting for the backup,
  // a compute-then-update model's turn) — gone with its slot.
  void ForgetStagesLocked() {
    unshipped_.clear();
    unshipped_keys_.clear();
    computed_.clear();
    held_release_.clear();
    model_busy_.clear();
    model_waiting_.clear();
  }

  // Under mu_: the remote backup goes; nothing waits for it any more.
  void DetachLocked() {
    if (channel_ == nullptr || !options_.distributed) return;
    channel_.reset();
    watermark_ = last_state_seq_ = 0;
    for (auto& [n, p] : pending_) p.log_seq = p.release_seq = 0;
    Advance();
  }

  // Under mu_: per item of `batch`, its kept answer (taken out), or none;
  // empty if none is kept.
  std::vector<std::optional<Kept>> TakeKeptLocked(const ExecBatch& batch) {
    std::vector<std::optional<Kept>> kept(batch.size);
    bool any = false;
    for (int i = 0; i < batch.size && i < static_cast<int>(batch.tags.size()); ++i) {
      auto it = kept_.find(batch.tags[i]);
      if (it == kept_.end()) continue;
      kept[i] = std::move(it->second);
      kept_.erase(it);
      any = true;
    }
    if (!any) kept.clear();
    return kept;
  }

  // The items of `batch` to run (those without a kept answer); `done`
  // becomes the answer that merges their outputs with the kept ones, in
  // the batch's order. All kept: an empty batch, and `done` is to be given
  // an empty result.
  ExecBatch SplitKept(ExecBatch batch, DoneFn& done, std::vector<std::optional<Kept>> kept) const {
    const SlotModel& m = models_[batch.model];
    ExecBatch rest;
    rest.model = batch.model;
    rest.start_at = batch.start_at;
    rest.state = batch.state;
    for (int i = 0; i < batch.size; ++i) {
      if (kept[i]) continue;
      ++rest.size;
      rest.input.insert(rest.input.end(), batch.input.begin() + i * m.input_elements,
                        batch.input.begin() + (i + 1) * m.input_elements);
      if (i < static_cast<int>(batch.sequences.size())) rest.sequences.push_back(batch.sequences[i]);
      if (i < static_cast<int>(batch.tags.size())) rest.tags.push_back(batch.tags[i]);
    }
    const int64_t width = m.output_elements;
    auto merge = [kept = std::move(kept), width, done = std::move(done)](ExecResult r) mutable {
      ExecResult out;
      out.received = r.received;
      out.ready = r.ready;
      out.started = r.started;
      out.finished = r.finished;
      bool any_error = false;
      int j = 0;  // among the items run
      for (std::optional<Kept>& k : kept) {
        absl::Status status = k ? k->status : (!r.status.ok() ? r.status
                                                : j < static_cast<int>(r.item_status.size()) ? r.item_status[j]
                                                                                             : absl::OkStatus());
        if (k && status.ok()) {
          out.output.insert(out.output.end(), k->output.begin(), k->output.end());
        } else if (!k && r.status.ok()) {
          out.output.insert(out.output.end(), r.output.begin() + j * width, r.output.begin() + (j + 1) * width);
        } else {
          out.output.insert(out.output.end(), width, 0.0f);
        }
        if (!k) ++j;
        any_error |= !status.ok();
        out.item_status.push_back(std::move(status));
      }
      if (!any_error) out.item_status.clear();
      done(std::move(out));
    };
    done = std::move(merge);
    return rest;
  }

  void StartChannel() {
    {
      std::lock_guard<std::mutex> b(backup_mu_);
      backup_ = std::make_unique<BackupState>();
    }
    watermark_ = last_state_seq_ = 0;
    channel_ = std::make_shared<LocalChannel>(clock_, options_.link_rtt, backup_.get(), &backup_mu_, &outside_time_);
  }
  bool replicating() const { return channel_ != nullptr && options_.mode != ReplicationMode::kNone; }

  // Under mu_: numbers a message to the backup and posts it on the link
  // (a remote backup's transport sends it once mu_ is let go: Deliver).
  // The message is next_, made by the caller; `state`: states or a
  // checkpoint, not a log (ReplicationStats).
  uint64_t Ship(bool state) {
    Outgoing& m = *next_;
    m.seq = ++channel_->numbered;
    ++stats_.messages;
    (state ? stats_.state_bytes : stats_.log_bytes) += static_cast<int64_t>(m.size);
    const uint64_t seq = m.seq;
    if (channel_->Post(next_)) outside_.flush = channel_;
    return seq;
  }
  uint64_t Ship(std::string bytes, bool state) {
    next_->size = bytes.size();
    next_->bytes = std::move(bytes);
    return Ship(state);
  }

  // Under mu_: every committed state to the backup (a new backup, or
  // checkpoint-replay's period); batches reading them wait for it.
  void ShipCheckpoint(uint64_t n) {
    last_state_seq_ = Ship(Checkpoint(n), true);
    for (auto& [k, s] : states_) s.shipped = last_state_seq_;
  }

  // Under mu_: batch n is committed; the states it wrote (or erased) are
  // to go to the backup, with PutAnswers's part — HAMS's state manager
  // shipping batch n's states while batch n+1 computes. Under NSPB their
  // message is made once the batch's answers have left (Deliver), or
  // before any state is read or written again (ShipStatesLocked), so that
  // making it is on no answer's path; under Remus, whose answers wait for
  // it, at once. The message holds the committed states (small ones copied
  // into its own buffers, large ones shared: Outgoing); the link makes its
  // bytes.
  void QueueStates(uint64_t n, const Pending& p) {
    const SlotModel& m = models_[p.served.model];
    Unshipped& u = unshipped_.emplace_back();
    u.n = n;
    u.first = unshipped_keys_.size();
    for (const Row& row : p.rows) {
      unshipped_keys_.emplace_back(row.key, !m.model_state && (row.lost || row.end));
      if (m.model_state) break;  // one state
    }
    u.last = unshipped_keys_.size();
    Writer answers;
    PutAnswers(answers, n, p, m.model_state ? m.output_elements : m.output_elements + m.state_elements);
    u.answers = answers.Take();
    if (options_.mode != ReplicationMode::kNspb) ShipStatesLocked();
  }

  // Under mu_: the messages of the states QueueStates left, in order.
  void ShipStatesLocked() {
    for (Unshipped& u : unshipped_) {
      if (!replicating()) break;  // the backup went since QueueStates: nothing to ship to
      const Duration began = ProxyClock();
      Outgoing& out = *next_;
      out.states_of = u.n;
      size_t bytes = 1 + 2 * sizeof(uint64_t);
      const uint64_t seq = channel_->numbered + 1;  // the number Ship gives it
      for (size_t i = u.first; i < u.last; ++i) {
        const auto& [key, erased] = unshipped_keys_[i];
        auto it = erased ? states_.end() : states_.find(key);
        State* st = it == states_.end() ? nullptr : &it->second;
        if (st == nullptr) {
          out.states.emplace_back(key, std::nullopt);
          out.counts.push_back(0);
        } else {
          State& copy = out.states.emplace_back(key, State{}).second.value();
          copy.version = st->version;
          copy.digest = st->digest;
          copy.parent = st->parent;
          copy.touched = st->touched;
          const int64_t n = st->value ? static_cast<int64_t>(st->value->size()) : 0;
          if (n > Outgoing::kCopied) {
            copy.value = st->value;
            out.counts.push_back(0);
          } else {
            if (n > 0) out.values.insert(out.values.end(), st->value->begin(), st->value->end());
            out.counts.push_back(n);
          }
          st->shipped = seq;
        }
        bytes += StateBytes(st);
      }
      out.bytes.assign(u.answers);
      out.size = bytes + out.bytes.size();
      last_state_seq_ = Ship(true);
      stats_.proxy_time += ProxyClock() - began;
    }
    unshipped_.clear();
    unshipped_keys_.clear();
  }

  bool logs() const {
    return options_.mode == ReplicationMode::kNspb || options_.mode == ReplicationMode::kCheckpoint;
  }

  // Under mu_: batch n's inputs, to the backup's log — copied here, their
  // bytes made by the link (Encode).
  uint64_t ShipLog(uint64_t n, const Pending& p) {
    Outgoing& m = *next_;
    m.log_of = n;
    Logged& l = m.log;
    l.model = p.served.model;
    l.size = p.served.size;
    for (int i = 0; i < l.size; ++i) {
      const Row& row = p.rows[i];
      l.sequences.push_back({row.key.second, row.start, row.end});
      l.tags.push_back(i < static_cast<int>(p.served.tags.size()) ? p.served.tags[i] : 0);
      l.reads.push_back(row.read_digest);
    }
    l.input.assign(p.served.input.begin(), p.served.input.end());
    m.size = 1 + sizeof(uint64_t) + 2 * sizeof(int) + l.size * (3 * sizeof(uint64_t) + 2) + sizeof(int64_t) +
             l.input.size() * sizeof(float);
    return Ship(false);
  }

  // Under mu_: the batch with each item's state after its input, and the
  // rows' reads.
  ExecBatch Prepare(uint64_t n) {
    Pending& p = pending_.at(n);
    ExecBatch full;
    full.model = p.served.model;
    full.size = p.served.size;
    full.start_at = p.served.start_at;
    if (!p.stateful) {
      full.input = p.served.input;
      return full;
    }
    const Duration began = ProxyClock();
    const SlotModel& m = models_[p.served.model];
    const Time now = clock_->Now();
    SweepIdle(now);
    if (m.model_state) {  // every item reads the model's one state
      full.input = p.served.input;
      Row row;
      row.key = {p.served.model, 0};
      if (auto it = states_.find(row.key); it != states_.end()) {
        full.state = *it->second.value;
        row.read_version = it->second.version;
        row.read_digest = it->second.digest;
        row.read_parent = it->second.parent;
        row.read_shipped = it->second.shipped;
      }
      p.rows.assign(p.served.size, row);
      stats_.proxy_time += ProxyClock() - began;
      return full;
    }
    full.input.reserve(p.served.size * (m.input_elements + m.state_elements));
    p.rows.assign(p.served.size, Row{});
    std::vector<float>& zeros = zeros_[p.served.model];
    if (zeros.empty()) {
      zeros.assign(m.state_elements, 0.0f);
      zero_digest_[p.served.model] = Digest(zeros.data(), m.state_elements);
    }
    for (int i = 0; i < p.served.size; ++i) {
      const SequenceRef ref = i < static_cast<int>(p.served.sequences.size()) ? p.served.sequences[i] : SequenceRef{};
      Row& row = p.rows[i];
      row.key = {p.served.model, ref.id};
      row.start = ref.start;
      row.end = ref.end;
      const float* x = p.served.input.data() + i * m.input_elements;
      full.input.insert(full.input.end(), x, x + m.input_elements);
      const State* s = nullptr;
      if (!ref.start) {
        auto it = states_.find(row.key);
        if (it != states_.end()) {
          it->second.touched = now;
          s = &it->second;
        }
      }
      if (s != nullptr) {
        row.read_version = s->version;
        row.read_digest = s->digest;
        row.read_parent = s->parent;
        row.read_shipped = s->shipped;
        full.input.insert(full.input.end(), s->value->begin(), s->value->end());
      } else {
        row.lost = !ref.start;
        row.read_digest = zero_digest_[p.served.model];
        full.input.insert(full.input.end(), zeros.begin(), zeros.end());
      }
    }
    stats_.proxy_time += ProxyClock() - began;
    return full;
  }

  // Under mu_: forgets states idle beyond their model's limit, at most
  // twice per limit.
  void SweepIdle(Time now) {
    if (now < next_sweep_) return;
    Duration shortest = kInfiniteFuture;
    for (auto it = states_.begin(); it != states_.end();) {
      const Duration limit = models_[it->first.first].max_idle;
      shortest = std::min(shortest, limit);
      if (limit > 0 && now - it->second.touched > limit) {
        audit_.erase(it->first);
        states_.erase(it++);
      } else {
        ++it;
      }
    }
    next_sweep_ = now + (shortest == kInfiniteFuture ? kSecond : std::max<Duration>(shortest / 2, kMillisecond));
  }

  // Under mu_: stores the states batch n made (its update stage); their
  // message to the backup is QueueStates's.
  void Commit(uint64_t n, Pending& p) {
    last_committed_ = std::max(last_committed_, n);
    const SlotModel& m = models_[p.served.model];
    if (m.model_state) {
      const Row& row = p.rows.at(0);
      State& s = states_[row.key];
      s.digest = Digest(p.result.state.data(), static_cast<int64_t>(p.result.state.size()));
      s.value = std::make_shared<const std::vector<float>>(std::move(p.result.state));
      s.version = row.read_version + 1;
      s.parent = row.read_digest;
      s.touched = clock_->Now();
      return;
    }
    const int64_t width = m.output_elements + m.state_elements;
    const Time now = clock_->Now();
    for (int i = 0; i < p.served.size; ++i) {
      const Row& row = p.rows[i];
      if (row.lost || row.end) {
        if (row.end) states_.erase(row.key);
        continue;
      }
      const float* h = p.result.output.data() + i * width + m.output_elements;
      State& s = states_[row.key];
      s.value = std::make_shared<const std::vector<float>>(h, h + m.state_elements);
      s.version = row.read_version + 1;
      s.parent = row.read_digest;
      s.digest = Digest(h, m.state_elements);
      s.touched = now;
    }
  }

  // Batch n's answers after its states, by tag: the first output elements
  // of each item's `stride`. Tagged items' (distributed: requests that may
  // come again); in one process under remus every item's, by ItemTag —
  // Remus's buffered outputs travel with its states, so a backup that
  // applied the states of a batch whose release died with the primary
  // answers it (Recover) instead of running it twice.
  void PutAnswers(Writer& w, uint64_t n, const Pending& p, int64_t stride) {
    const SlotModel& m = models_[p.served.model];
    const bool every = !options_.distributed && options_.mode == ReplicationMode::kRemus;
    auto tag = [&](int i) -> uint64_t {
      if (p.rows[i].lost) return 0;
      if (every) return ItemTag(n, i);
      return i < static_cast<int>(p.served.tags.size()) ? p.served.tags[i] : 0;
    };
    int64_t kept = 0;
    for (int i = 0; i < p.served.size; ++i) kept += tag(i) != 0;
    w.Put(kept);
    for (int i = 0; i < p.served.size; ++i) {
      if (tag(i) == 0) continue;
      w.Put(tag(i));
      w.PutFloats(p.result.output.data() + i * stride, m.output_elements);
    }
  }
  // Item i of batch n, in one process (a batch holds fewer than 2^16).
  static uint64_t ItemTag(uint64_t n, int i) { return n << 16 | static_cast<uint64_t>(i + 1); }

  absl::Status LostError(const Key& key) const {
    return absl::FailedPreconditionError(absl::StrCat("the state of sequence ", key.second,
                                                      " was lost with its executor (replication ",
                                                      ReplicationModeName(options_.mode), "): start it again"));
  }

  // Under mu_: the first answer after a failover ends it.
  void NoteAnswerAfterFailover() {
    if (kill_time_ == 0) return;
    stats_.failover_time = clock_->Now() - kill_time_;
    kill_time_ = 0;
  }

  // Under mu_: remus in one process — batch n's states and outputs reached
  // the backup, its release did not: answered with those outputs (its
  // states already hold its effect).
  Delivery AnswerFromBackup(uint64_t n, const BackupState& backup) {
    Pending p = std::move(pending_.at(n));
    pending_.erase(n);
    const SlotModel& m = models_[p.served.model];
    ExecResult r;
    bool any_lost = false;
    for (int i = 0; i < p.served.size; ++i) {
      auto it = backup.answers.find(ItemTag(n, i));
      if (it == backup.answers.end()) {
        r.output.insert(r.output.end(), m.output_elements, 0.0f);
        r.item_status.push_back(LostError(p.rows[i].key));
        ++stats_.lost_states;
        any_lost = true;
        continue;
      }
      r.output.insert(r.output.end(), it->second.output.begin(), it->second.output.end());
      r.item_status.push_back(absl::OkStatus());
      if (!m.model_state || i == 0) Audit(p.rows[i]);  // a compute-then-update batch read one state
    }
    if (!any_lost) r.item_status.clear();
    NoteAnswerAfterFailover();
    return {std::move(p.done), std::move(r)};
  }

  // Under mu_: batch n's answer — its outputs without the states, its lost
  // items' errors — checked by the consistency audit.
  // Not `delivered` (a rerun of a batch answered before): not audited.
  Delivery Answer(uint64_t n, bool delivered = true) {
    Pending p = std::move(pending_.at(n));
    pending_.erase(n);
    ExecResult r = std::move(p.result);
    if (p.stateful && r.status.ok() && models_[p.served.model].model_state) {
      r.state.clear();
      if (!p.rows.empty() && delivered) Audit(p.rows[0]);  // the batch read one state
    } else if (p.stateful && r.status.ok()) {
      const SlotModel& m = models_[p.served.model];
      const int64_t width = m.output_elements + m.state_elements;
      std::vector<float> out;
      out.reserve(p.served.size * m.output_elements);
      bool any_lost = false;
      for (int i = 0; i < p.served.size; ++i) {
        const float* y = r.output.data() + i * width;
        out.insert(out.end(), y, y + m.output_elements);
        any_lost |= p.rows[i].lost;
      }
      r.output = std::move(out);
      if (any_lost) {
        for (const Row& row : p.rows) {
          r.item_status.push_back(row.lost ? LostError(row.key) : absl::OkStatus());
          stats_.lost_states += row.lost;
        }
      }
      if (delivered) {
        for (const Row& row : p.rows) Audit(row);
      }
    }
    if (delivered) NoteAnswerAfterFailover();
    return {std::move(p.done), std::move(r)};
  }

  void Audit(const Row& row) {
    if (row.lost) {
      audit_.erase(row.key);
      return;
    }
    if (!row.start) {
      auto it = audit_.find(row.key);
      if (it != audit_.end()) {
        ++stats_.audited;
        stats_.inconsistent += row.read_parent != it->second;
      }
    }
    if (row.end) {
      audit_.erase(row.key);
    } else {
      audit_[row.key] = row.read_digest;
    }
  }

  // Under mu_: moves computed batches through their update stage and
  // release, in order, as far as the backup's acknowledgements allow.
  void Advance() {
    // A failover is under way: every batch not yet released runs again on
    // the new primary (Recover) — none leaves from the dead one, whose
    // states may have died on the link.
    if (recovering_) return;
    Refresh();
    for (;;) {
      if (MoveOn() == 0) return;
      const uint64_t before = watermark_;
      Refresh();
      if (watermark_ == before) break;
    }
    AwaitDelivery();
  }

  // Under mu_: Advance's moves, with the watermark as it is; returns the
  // message the first batch left waiting waits for (0: none waits).
  uint64_t MoveOn() {
    const bool rep = replicating();
    while (!computed_.empty()) {
      const uint64_t n = computed_.front();
      Pending& p = pending_.at(n);
      // NSPB: batch n's update stage waits for its inputs' log and for the
      // states it read (HAMS waits for batch n-1's, all of the model's
      // state; a sequence's state is its own, so a batch of other
      // sequences need not wait — a takeover replays it from the same
      // parents). Clamped to the last states shipped: messages numbered
      // on an earlier link.
      uint64_t need = 0;
      if (rep && options_.mode == ReplicationMode::kNspb) {
        uint64_t read = 0;
        for (const Row& row : p.rows) read = std::max(read, row.read_shipped);
        need = std::max(p.log_seq, std::min(read, last_state_seq_));
      }
      if (rep && options_.mode == ReplicationMode::kCheckpoint) need = p.log_seq;
      if (watermark_ < need) {
        p.waited = true;
        return need;
      }
      computed_.pop_front();
      const int p_model = p.served.model;
      if (!unshipped_.empty()) ShipStatesLocked();  // before its states change
      const Duration began = ProxyClock();
      Commit(n, p);
      ++stats_.stateful_batches;
      const bool ships = rep && (options_.mode == ReplicationMode::kNspb || options_.mode == ReplicationMode::kRemus);
      if (ships) {
        QueueStates(n, p);
      } else if (rep && options_.mode == ReplicationMode::kCheckpoint &&
                 ++since_checkpoint_ >= options_.checkpoint_every) {
        since_checkpoint_ = 0;
        ShipCheckpoint(n);
      }
      stats_.proxy_time += ProxyClock() - began;
      if (rep && options_.mode == ReplicationMode::kRemus) {
        p.release_seq = last_state_seq_;  // its answers wait for this message
        p.waited = p.release_seq > watermark_;
        held_release_.push_back(n);
      } else {
        Release(n);
      }
      if (models_[p_model].model_state) Unblock(p_model);
    }
    while (!held_release_.empty()) {
      const uint64_t awaited = pending_.at(held_release_.front()).release_seq;
      if (rep && awaited > watermark_) return awaited;
      Release(held_release_.front());
      held_release_.pop_front();
    }
    return 0;
  }

  // Under mu_: how far the link to a local backup has delivered (as Advance
  // starts, and when a batch waits: time and the sender deliver more).
  void Refresh() {
    if (channel_ != nullptr) watermark_ = std::max(watermark_, channel_->Delivered(clock_->Now(), &next_delivery_));
  }

  // Under mu_: batches wait for the link (ReplicationOptions::link_rtt):
  // Advance again when its next message is delivered.
  void AwaitDelivery() {
    if (next_delivery_ == kInfiniteFuture || delivery_timer_ != kNoTimer) return;
    delivery_timer_ = clock_->ScheduleAt(next_delivery_, [gate = gate_] { gate->Run([](Impl& impl) { impl.OnAcked(0); }); });
  }

  void Release(uint64_t n) {
    const Pending& p = pending_.at(n);
    stats_.release_time += clock_->Now() - p.computed;
    if (p.waited) {
      ++stats_.held_batches;
      stats_.held_time += clock_->Now() - p.computed;
    }
    outside_.answers.push_back(Answer(n));
  }

  std::string Checkpoint(uint64_t n) {
    Writer w;
    w.Put<uint8_t>(kCheckpoint);
    w.Put(n);
    w.Put<int64_t>(static_cast<int64_t>(states_.size()));
    for (const auto& [k, s] : states_) PutState(w, k, &s);
    return w.Take();
  }

  void OnPrimaryDone(int gen, uint64_t n, ExecResult r) {
    Outside o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gen != generation_ || hung_) return;  // from a primary that died: its batches run again
      Pending& p = pending_.at(n);
      p.result = std::move(r);
      p.computed = clock_->Now();
      p.answered = true;
      StampReceipt(p);
      if (!p.stateful || !p.result.status.ok()) {
        const int model = p.served.model;
        outside_.answers.push_back(Answer(n));
        if (models_[model].model_state) Unblock(model);
      } else {
        computed_.push_back(n);
        Advance();
      }
      o = TakeOutside();
    }
    Finish(std::move(o));
  }

  // Under mu_: the timings of the primary's answer made the slot's
  // (ExecResult's contract: `received` when Run() was called — the slot's,
  // not the primary's, which the slot calls once it has put the states in).
  // What the slot did before handing the batch on (waiting for its lock,
  // the states, the log) is then its executor's own start, which the delay
  // model reads as a late start (`ready` → `started`), not as dispatch delay
  // — a tail of which every later batch would wait for (Symphony plans the
  // dispatch at a high quantile). What the primary itself waited for (its
  // `ready` after its receipt: the previous batch, or a start_at its kind
  // waits for, executor.h) it keeps.
  void StampReceipt(Pending& p) {
    ExecResult& r = p.result;
    const Time previous = last_finished_;
    last_finished_ = std::max(last_finished_, r.finished);
    if (p.received > r.received) return;  // an executor that does not time its batches
    const Time waited_for = r.ready > r.received ? r.ready : 0;
    r.received = p.received;
    r.ready = std::min(r.started, std::max({p.received, waited_for, std::min(previous, r.started)}));
  }

  // `seq`: a remote backup's acknowledgement; 0: a local link delivered.
  void OnAcked(uint64_t seq) {
    Outside o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (seq == 0) delivery_timer_ = kNoTimer;
      watermark_ = std::max(watermark_, seq);
      Advance();
      o = TakeOutside();
    }
    Finish(std::move(o));
  }

  // Under mu_: batch n goes to the primary — unless it is a compute-then-
  // update model's and an earlier batch of that model has not passed its
  // update stage: then it waits (Unblock), so that it reads the state the
  // earlier one makes.
  void Start(uint64_t n) {
    Pending& p = pending_.at(n);
    const int model = p.served.model;
    if (models_[model].model_state) {
      if (model_busy_[model]) {
        model_waiting_[model].push_back(n);
        return;
      }
      model_busy_[model] = true;
    }
    if (!unshipped_.empty()) ShipStatesLocked();  // the states it reads, and which message carries them
    ExecBatch full = Prepare(n);
    if (logs() && replicating() && p.stateful) {  // the request manager: delivered while the batch computes
      const Duration began = ProxyClock();
      p.log_seq = ShipLog(n, p);
      stats_.proxy_time += ProxyClock() - began;
    }
    p.dispatched = true;
    p.dispatched_at = clock_->Now();
    if (hung_) return;  // the injected hang: the primary never hears of it
    outside_.dispatch.push_back({primary_.get(), generation_, n, std::move(full)});
  }

  // Under mu_: `model`'s batch passed its update stage (or failed): its
  // next waiting batch starts.
  void Unblock(int model) {
    model_busy_[model] = false;
    std::deque<uint64_t>& waiting = model_waiting_[model];
    if (waiting.empty()) return;
    const uint64_t n = waiting.front();
    waiting.pop_front();
    Start(n);
  }

  // mu_, for a holder that does not let go through Finish (readers, the
  // failure detector, a failover's steps): once it lets go, batches that Run
  // queued meanwhile are taken in on the clock's timer — not on this
  // caller's thread, which may hold locks their answers need.
  class OtherLock {
   public:
    explicit OtherLock(const Impl* impl) : impl_(impl), lock_(impl->mu_) {}
    ~OtherLock() {
      lock_.unlock();
      if (impl_->incoming_any_.load()) {
        impl_->clock_->ScheduleAfter(0, [gate = impl_->gate_] { gate->Run([](Impl& impl) { impl.DrainIncoming(); }); });
      }
    }
    OtherLock(const OtherLock&) = delete;
    OtherLock& operator=(const OtherLock&) = delete;

   private:
    const Impl* const impl_;
    std::unique_lock<std::mutex> lock_;
  };

  Outside TakeOutside() {
    Outside o;
    std::swap(o, outside_);
    o.states = !unshipped_.empty();
    return o;
  }

  // Without mu_, once a holder of it lets go: Deliver, then take in the
  // batches Run queued meanwhile.
  void Finish(Outside o) {
    Deliver(std::move(o));
    DrainIncoming();
  }

  // Without mu_: hands the batches to the primary, gives the answers, then
  // makes the messages of the states of batches answered (NSPB's, which
  // QueueStates left until the answers had left), and has a remote
  // backup's transport send what was posted for it: those, and the request
  // manager's logs of the batches now computing (their outputs wait for
  // them: Advance). A local backup's link took them as they were posted.
  void Deliver(Outside o) {
    for (Dispatch& d : o.dispatch) {
      d.exec->Run(std::move(d.batch), [this, gen = d.generation, n = d.n](ExecResult r) {
        OnPrimaryDone(gen, n, std::move(r));
      });
    }
    for (auto& [done, result] : o.answers) done(std::move(result));
    if (o.states) {
      std::lock_guard<std::mutex> lock(mu_);
      ShipStatesLocked();
      if (outside_.flush) o.flush = std::move(outside_.flush);
    }
    if (o.flush) o.flush->Flush();
  }

  // Runs a prepared batch on `exec` and waits for it.
  static ExecResult RunNow(Executor* exec, ExecBatch batch) {
    std::promise<ExecResult> promise;
    std::future<ExecResult> result = promise.get_future();
    batch.start_at = 0;
    exec->Run(std::move(batch), [&promise](ExecResult r) { promise.set_value(std::move(r)); });
    return result.get();
  }

  void StartSpare();
  // The backup's states become the primary's; the logged batches whose
  // states it lacks, then every batch not answered, run again on `exec` in
  // order; then the batches that waited start.
  void Recover(std::unique_ptr<BackupState> backup, Executor* exec);
  // Under mu_: a standby takes over, on a thread of its own.
  void StartPromotionLocked();

 public:
  void HangPrimary() {
    OtherLock lock(this);
    hung_ = true;
    hung_at_ = clock_->Now();
  }

 private:
  // Under mu_: the failure detector's next look (ReplicationOptions::
  // detect_after): a batch the primary has not answered that long after it
  // could start means the primary is dead; the failover runs on a thread of
  // its own.
  void ScheduleCheck() {
    const Duration every = std::max<Duration>(options_.detect_after / 4, kMillisecond);
    check_ = clock_->ScheduleAfter(every, [gate = gate_] { gate->Run([](Impl& impl) { impl.Check(); }); });
  }
  void Check() {
    OtherLock lock(this);
    const Time now = clock_->Now();
    Time since = kInfiniteFuture;  // the oldest overdue batch could start then
    for (const auto& [n, p] : pending_) {
      if (!p.dispatched || p.answered) continue;
      const Time could = std::max(p.dispatched_at, p.served.start_at);
      if (now - could > options_.detect_after) since = std::min(since, could);
    }
    if (since != kInfiniteFuture && !recovering_ && backup_exec_ != nullptr) {
      if (detector_.joinable()) detector_.join();  // the previous failover's thread: done (not recovering_)
      stats_.detection_time = now - (hung_at_ != 0 ? hung_at_ : since);
      recovering_ = true;  // from now: no second detection, and new batches wait
      detector_ = std::thread([this] {
        if (KillPrimary().ok()) return;
        Outside o;  // nothing to promote after all: serve on as before
        {
          std::lock_guard<std::mutex> lock(mu_);
          recovering_ = false;
          for (uint64_t n : held_) Start(n);
          held_.clear();
          o = TakeOutside();
        }
        Finish(std::move(o));
      });
    }
    ScheduleCheck();
  }

  Clock* const clock_;
  const std::vector<SlotModel> models_;
  const ReplicationOptions options_;
  const ExecutorFactory spare_;

  mutable std::mutex mu_;
  // Batches Run had, for mu_'s next holder (DrainIncoming).
  std::mutex incoming_mu_;
  std::vector<Received> incoming_;
  std::atomic<bool> incoming_any_{false};
  std::atomic<int64_t> queued_batches_{0};  // ReplicationStats::queued_batches
  std::unique_ptr<Executor> primary_;
  std::unique_ptr<Executor> backup_exec_;
  std::vector<std::unique_ptr<Executor>> dead_;  // primaries that died: their threads finish unheard
  StateMap states_;                              // the primary's
  absl::flat_hash_map<Key, uint64_t> audit_;     // per sequence: the digest its last answer read
  absl::flat_hash_map<int, std::vector<float>> zeros_;  // per stateful model: its start state
  absl::flat_hash_map<int, uint64_t> zero_digest_;
  std::map<uint64_t, Pending> pending_;          // by batch number: not yet answered
  // Batches committed, their states' messages not yet made (QueueStates):
  // each its keys in unshipped_keys_ [first, last) — erased or not — and
  // its answers' part. Their capacity is kept.
  struct Unshipped {
    uint64_t n = 0;
    size_t first = 0, last = 0;
    std::string answers;
  };
  std::vector<Unshipped> unshipped_;
  std::vector<std::pair<Key, bool>> unshipped_keys_;
  std::deque<uint64_t> computed_;                // stateful batches computed, before their update stage
  std::deque<uint64_t> held_release_;            // remus: updated, waiting for their states' ack
  std::vector<uint64_t> held_;                   // received while recovering
  Outside outside_;                              // for Finish()
  // Compute-then-update models: a batch is between its start and its update
  // stage; the batches waiting for it.
  absl::flat_hash_map<int, bool> model_busy_;
  absl::flat_hash_map<int, std::deque<uint64_t>> model_waiting_;
  uint64_t next_batch_ = 0;
  uint64_t last_committed_ = 0;  // the last batch past its update stage
  Time last_finished_ = 0;       // the primary's last batch (StampReceipt)
  uint64_t watermark_ = 0, last_state_seq_ = 0;  // delivered (acknowledged); the last states shipped
  Time next_delivery_ = kInfiniteFuture;          // of a local link: its next message (Refresh)
  TimerId delivery_timer_ = kNoTimer;             // AwaitDelivery
  // The proxies' time outside mu_: the links' encoding, sending and (a
  // local backup's thread) applying.
  std::atomic<int64_t> outside_time_{0};
  int since_checkpoint_ = 0;
  int generation_ = 0;
  bool recovering_ = false;
  bool hung_ = false;          // HangPrimary(): the primary hears nothing and says nothing
  Time hung_at_ = 0;
  TimerId check_ = kNoTimer;
  // The detector's timers reach the slot through this, closed before the slot goes.
  const std::shared_ptr<TimerGate<Impl>> gate_ = std::make_shared<TimerGate<Impl>>(this);
  std::thread detector_;       // the failover the detector started
  Time kill_time_ = 0;
  Time next_sweep_ = 0;
  ReplicationStats stats_;
  std::shared_ptr<Channel> channel_;
  // The message being made (Ship): one the link gave back, its buffers' capacity kept.
  std::unique_ptr<Outgoing> next_ = std::make_unique<Outgoing>();
  mutable std::mutex backup_mu_;
  std::unique_ptr<BackupState> backup_;
  std::thread spare_thread_;
  // Distributed mode: a standby until promoted; the batches that came
  // during the takeover; the answers kept for requests that come again.
  bool standby_ = false;
  bool promoting_ = false;
  std::vector<Received> deferred_;
  absl::flat_hash_map<uint64_t, Kept> kept_;
  // Long past the frontends' orphan grace: the requests of the dead primary
  // have come again by then.
  static constexpr Duration kKeepAnswersFor = 30 * kSecond;
  Time kept_until_ = 0;
  std::vector<std::thread> promoters_;
};

absl::Status ReplicatedExecutor::Impl::KillPrimary() {
  std::shared_ptr<Channel> channel;
  {
    OtherLock lock(this);
    if (backup_exec_ == nullptr) return absl::FailedPreconditionError("no backup to promote");
    ++generation_;
    recovering_ = true;
    hung_ = false;  // the new primary hears again
    hung_at_ = 0;
    kill_time_ = clock_->Now();
    ++stats_.failovers;
    channel = std::move(channel_);
  }
  if (channel) channel->Kill();  // what was on the wire is lost
  std::unique_ptr<BackupState> backup;
  {
    std::lock_guard<std::mutex> b(backup_mu_);
    backup = std::move(backup_);
  }
  Executor* exec;
  {
    OtherLock lock(this);
    dead_.push_back(std::move(primary_));
    primary_ = std::move(backup_exec_);
    exec = primary_.get();
  }
  Recover(std::move(backup), exec);
  if (spare_) StartSpare();
  return absl::OkStatus();
}

void ReplicatedExecutor::Impl::Recover(std::unique_ptr<BackupState> backup, Executor* exec) {
  std::vector<Delivery> out;
  std::vector<uint64_t> order;
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> logged_reads;  // rerun batch → what its items read first
  {
    OtherLock lock(this);
    const bool keeps = options_.mode != ReplicationMode::kNone;
    states_ = backup && keeps ? std::move(backup->states) : StateMap{};
    if (backup && keeps && options_.distributed) {
      audit_ = std::move(backup->reads);
      kept_ = std::move(backup->answers);
      kept_until_ = clock_->Now() + kKeepAnswersFor;
    }
    ForgetStagesLocked();  // unshipped states died with the primary, as states on the link do
    held_.clear();
    if (backup && keeps && options_.mode == ReplicationMode::kRemus && !options_.distributed) {
      std::vector<uint64_t> applied;
      for (const auto& [n, p] : pending_) {
        if (p.stateful && n <= backup->applied) applied.push_back(n);
      }
      for (uint64_t n : applied) out.push_back(AnswerFromBackup(n, *backup));
    }
    std::set<uint64_t> rerun;
    if (backup) {
      for (auto& [n, logged] : backup->log) {
        if (n > backup->applied) rerun.insert(n);
      }
    }
    for (const auto& [n, p] : pending_) rerun.insert(n);
    order.assign(rerun.begin(), rerun.end());
    // Logged batches already answered come back as pending entries whose
    // outputs are dropped.
    if (backup) {
      for (uint64_t n : order) {
        if (pending_.contains(n)) continue;
        Logged& l = backup->log.at(n);
        Pending& p = pending_[n];
        p.stateful = true;
        p.served.model = l.model;
        p.served.size = l.size;
        p.served.sequences = std::move(l.sequences);
        p.served.tags = std::move(l.tags);
        p.served.input = std::move(l.input);
        logged_reads[n] = std::move(l.reads);
      }
    }
    if (!order.empty()) next_batch_ = std::max(next_batch_, order.back());
  }
  for (uint64_t n : order) {
    ExecBatch full;
    {
      OtherLock lock(this);
      full = Prepare(n);
    }
    ExecResult r = RunNow(exec, std::move(full));
    OtherLock lock(this);
    ++stats_.rerun_batches;
    Pending& p = pending_.at(n);  // (reruns pass their update stage in order)
    p.result = std::move(r);
    if (p.stateful && p.result.status.ok()) Commit(n, p);
    if (p.done) {
      out.push_back(Answer(n));
      continue;
    }
    // Answered before the failure (once is enough), or — in distributed
    // mode — perhaps not: kept for its request coming again. An item that
    // now read another state than it did then makes the answers after it
    // inconsistent with its first (checkpoint-replay's divergence).
    if (auto it = logged_reads.find(n); it != logged_reads.end() && options_.distributed) {
      for (size_t i = 0; i < it->second.size() && i < p.rows.size(); ++i) {
        if (p.rows[i].start || p.rows[i].lost) continue;
        ++stats_.audited;
        stats_.inconsistent += p.rows[i].read_digest != it->second[i];
      }
    }
    const std::vector<uint64_t> tags = p.served.tags;
    const int model = p.served.model;
    ExecResult answer = Answer(n, /*delivered=*/false).second;
    const int64_t width = models_[model].output_elements;
    for (size_t i = 0; i < tags.size(); ++i) {
      if (tags[i] == 0) continue;
      Kept kept;
      kept.status = answer.status.ok() && i < answer.item_status.size() ? answer.item_status[i] : answer.status;
      if (kept.status.ok()) {
        kept.output.assign(answer.output.begin() + i * width, answer.output.begin() + (i + 1) * width);
      }
      kept_.insert_or_assign(tags[i], std::move(kept));
    }
  }
  Outside held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    recovering_ = false;
    for (uint64_t n : held_) Start(n);
    held_.clear();
    held = TakeOutside();
  }
  for (auto& [done, result] : out) done(std::move(result));
  Finish(std::move(held));
}

void ReplicatedExecutor::Impl::StartPromotionLocked() {
  if (!standby_) return;
  standby_ = false;
  promoting_ = true;
  ++generation_;
  kill_time_ = clock_->Now();
  promoters_.emplace_back([this] {
    std::unique_ptr<BackupState> backup;
    {
      std::lock_guard<std::mutex> b(backup_mu_);
      backup = std::move(backup_);
    }
    bool had = backup && (backup->applied > 0 || !backup->log.empty() || !backup->states.empty());
    Recover(std::move(backup), primary_.get());
    Outside o;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.failovers += had;
      promoting_ = false;
      std::vector<Received> deferred;
      deferred.swap(deferred_);
      for (Received& r : deferred) AcceptLocked(std::move(r));  // before any batch Run queued since
      if (!had) kill_time_ = 0;  // a first start, not a failover
      o = TakeOutside();
    }
    Finish(std::move(o));
  });
}

void ReplicatedExecutor::Impl::StartSpare() {
  if (spare_thread_.joinable()) spare_thread_.join();
  spare_thread_ = std::thread([this] {
    absl::StatusOr<std::unique_ptr<Executor>> made = spare_();
    if (!made.ok()) return;
    {
      OtherLock lock(this);
      backup_exec_ = *std::move(made);
      StartChannel();
      // The new backup starts from the states the batches committed so far;
      // later batches' states follow in order, and outputs reading these
      // wait for them to be applied.
      if (options_.mode != ReplicationMode::kNone) ShipCheckpoint(last_committed_);
    }
  });
}

std::string ReplicationPrometheusText(const std::vector<const ReplicatedExecutor*>& slots) {
  if (slots.empty()) return "";
  struct Metric {
    const char* name;
    const char* type;
    const char* help;
    std::function<double(const ReplicationStats&)> value;
  };
  const Metric metrics[] = {
      {"tutti_replication_failovers_total", "counter", "Failovers: the backup became the primary.",
       [](const ReplicationStats& s) { return static_cast<double>(s.failovers); }},
      {"tutti_replication_last_failover_seconds", "gauge", "The last failover: from its start to the new primary's first answer.",
       [](const ReplicationStats& s) { return ToSeconds(s.failover_time); }},
      {"tutti_replication_last_detection_seconds", "gauge", "The last failure the detector found: from the hang to its detection.",
       [](const ReplicationStats& s) { return ToSeconds(s.detection_time); }},
      {"tutti_replication_sent_bytes_total", "counter", "Bytes to the backup: logged inputs, states, checkpoints.",
       [](const ReplicationStats& s) { return static_cast<double>(s.state_bytes + s.log_bytes); }},
      {"tutti_replication_held_batches_total", "counter", "Stateful batches whose answers waited for the backup.",
       [](const ReplicationStats& s) { return static_cast<double>(s.held_batches); }},
      {"tutti_replication_lost_states_total", "counter", "Items answered with an error because their state died.",
       [](const ReplicationStats& s) { return static_cast<double>(s.lost_states); }},
      {"tutti_replication_inconsistent_total", "counter",
       "Answers that read a state not descended from their sequence's previous answer's (the audit).",
       [](const ReplicationStats& s) { return static_cast<double>(s.inconsistent); }},
      {"tutti_replication_states", "gauge", "States the primary holds (sequences, or the model's own).",
       [](const ReplicationStats& s) { return static_cast<double>(s.live_states); }},
      {"tutti_replication_backup_ready", "gauge", "1 while a backup stands by.",
       [](const ReplicationStats& s) { return s.backup ? 1.0 : 0.0; }},
      {"tutti_replication_link_peak_bytes", "gauge",
       "The most bytes posted to an in-process backup and not yet applied (bounded at 64 MiB).",
       [](const ReplicationStats& s) { return static_cast<double>(s.link_peak_bytes); }},
  };
  std::vector<ReplicationStats> stats;
  for (const ReplicatedExecutor* slot : slots) stats.push_back(slot->stats());
  std::string out;
  for (const Metric& m : metrics) {
    absl::StrAppend(&out, "# HELP ", m.name, " ", m.help, "\n# TYPE ", m.name, " ", m.type, "\n");
    for (size_t i = 0; i < slots.size(); ++i) {
      absl::StrAppend(&out, m.name, "{slot=\"", i, "\",mode=\"", ReplicationModeName(slots[i]->mode()), "\"} ",
                      absl::StrFormat("%.9g", m.value(stats[i])), "\n");
    }
  }
  return out;
}

ReplicatedExecutor::ReplicatedExecutor(Clock* clock, std::unique_ptr<Executor> primary,
                                       std::unique_ptr<Executor> backup, std::vector<SlotModel> models,
                                       ReplicationOptions options, ExecutorFactory spare)
    : impl_(std::make_unique<Impl>(clock, std::move(primary), std::move(backup), std::move(models), options,
                                   std::move(spare))) {}
ReplicatedExecutor::~ReplicatedExecutor() = default;
void ReplicatedExecutor::Run(ExecBatch batch, DoneFn done) { impl_->Run(std::move(batch), std::move(done)); }
std::string ReplicatedExecutor::kind() const { return impl_->kind(); }
absl::Status ReplicatedExecutor::KillPrimary() { return impl_->KillPrimary(); }
ReplicationStats ReplicatedExecutor::stats() const { return impl_->stats(); }
ReplicationMode ReplicatedExecutor::mode() const { return impl_->mode(); }
void ReplicatedExecutor::HangPrimary() { impl_->HangPrimary(); }
void ReplicatedExecutor::AttachBackup(SendFn send) { impl_->AttachBackup(std::move(send)); }
void ReplicatedExecutor::OnBackupApplied(uint64_t seq) { impl_->OnBackupApplied(seq); }
void ReplicatedExecutor::DetachBackup() { impl_->DetachBackup(); }
bool ReplicatedExecutor::BeginFromPrimary() { return impl_->BeginFromPrimary(); }
bool ReplicatedExecutor::ApplyFromPrimary(const std::string& body) { return impl_->ApplyFromPrimary(body); }
void ReplicatedExecutor::Promote() { impl_->Promote(); }
void ReplicatedExecutor::Demote() { impl_->Demote(); }
bool ReplicatedExecutor::serving() const { return impl_->serving(); }

}  // namespace tutti
