#include <future>
#include <set>

#include "absl/strings/str_cat.h"
#include "tutti/replication/replicated_executor_impl.h"

namespace tutti {

void ReplicatedExecutor::Impl::Promote() {
  OtherLock lock(this);
  StartPromotionLocked();
}

void ReplicatedExecutor::Impl::Demote() {
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
          "this backend lost its slot to its backup before answering (the sequence's state is the "
          "backup's "
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

bool ReplicatedExecutor::Impl::serving() const {
  OtherLock lock(this);
  return !standby_ && !promoting_;
}

void ReplicatedExecutor::Impl::ForgetStagesLocked() {
  unshipped_.clear();
  unshipped_keys_.clear();
  computed_.clear();
  held_release_.clear();
  model_busy_.clear();
  model_waiting_.clear();
}

absl::Status ReplicatedExecutor::Impl::LostError(const Key& key) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "the state of sequence ", key.second, " was lost with its executor (replication ",
      ReplicationModeName(options_.mode), "): start it again"));
}

void ReplicatedExecutor::Impl::NoteAnswerAfterFailover() {
  if (kill_time_ == 0) return;
  stats_.failover_time = clock_->Now() - kill_time_;
  kill_time_ = 0;
}

ReplicatedExecutor::Impl::Delivery ReplicatedExecutor::Impl::AnswerFromBackup(
    uint64_t n, const BackupState& backup) {
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

ExecResult ReplicatedExecutor::Impl::RunNow(Executor* exec, ExecBatch batch) {
  std::promise<ExecResult> promise;
  std::future<ExecResult> result = promise.get_future();
  batch.start_at = 0;
  exec->Run(std::move(batch), [&promise](ExecResult r) { promise.set_value(std::move(r)); });
  return result.get();
}

void ReplicatedExecutor::Impl::HangPrimary() {
  OtherLock lock(this);
  hung_ = true;
  hung_at_ = clock_->Now();
}

void ReplicatedExecutor::Impl::ScheduleCheck() {
  const Duration every = std::max<Duration>(options_.detect_after / 4, kMillisecond);
  check_ =
      clock_->ScheduleAfter(every, [gate = gate_] { gate->Run([](Impl& impl) { impl.Check(); }); });
}

void ReplicatedExecutor::Impl::Check() {
  OtherLock lock(this);
  const Time now = clock_->Now();
  Time since = kInfiniteFuture;  // the oldest overdue batch could start then
  for (const auto& [n, p] : pending_) {
    if (!p.dispatched || p.answered) continue;
    const Time could = std::max(p.dispatched_at, p.served.start_at);
    if (now - could > options_.detect_after) since = std::min(since, could);
  }
  if (since != kInfiniteFuture && !recovering_ && backup_exec_ != nullptr) {
    if (detector_.joinable())
      detector_.join();  // the previous failover's thread: done (not recovering_)
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
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>>
      logged_reads;  // rerun batch → what its items read first
  {
    OtherLock lock(this);
    const bool keeps = policy_.keeps_states;
    states_ = backup && keeps ? std::move(backup->states) : StateMap{};
    if (backup && keeps && options_.distributed) {
      audit_ = std::move(backup->reads);
      kept_ = std::move(backup->answers);
      kept_until_ = clock_->Now() + kKeepAnswersFor;
    }
    ForgetStagesLocked();  // unshipped states died with the primary, as states on the link do
    held_.clear();
    if (backup && keeps && policy_.holds_answers && !options_.distributed) {
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
      kept.status = answer.status.ok() && i < answer.item_status.size() ? answer.item_status[i]
                                                                        : answer.status;
      if (kept.status.ok()) {
        kept.output.assign(answer.output.begin() + i * width,
                           answer.output.begin() + (i + 1) * width);
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
      if (!had) kill_time_ = 0;                                 // a first start, not a failover
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
      if (policy_.keeps_states) ShipCheckpoint(last_committed_);
    }
  });
}

}  // namespace tutti
