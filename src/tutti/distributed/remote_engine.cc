#include "tutti/distributed/remote_engine.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/fnv_hash.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace pb = ::tutti::internal;

RemoteEngine::RemoteEngine(ClusterSpec spec, std::vector<ModelShape> shapes, Options options,
                           Clock* clock, Connector* connector)
    : spec_(std::move(spec)),
      shapes_(std::move(shapes)),
      options_(std::move(options)),
      source_(FnvMix(kFnvOffsetBasis, options_.name.data(), options_.name.size())),
      incarnation_((uint64_t{std::random_device()()} << 32) | std::random_device()()),
      clock_(clock),
      connector_(connector),
      table_(&spec_, &shapes_),
      stages_(spec_.models.size()) {
  for (const auto& [model, stage] : options_.stages) stages_.at(model) = stage;
  std::lock_guard<std::mutex> lock(mu_);
  StagedBatches<Progress>::Hooks hooks;
  hooks.submit_internal = [this](ModelId model, std::vector<float> input, Time deadline,
                                 std::function<void(InferenceOutcome)> done) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const uint64_t id = table_.Add(model, std::move(input),
                                   [this, done = std::move(done)](InferenceOutcome o) {
                                     RunStaged([&] { done(std::move(o)); });
                                   },
                                   clock_->Now(), deadline);
    if (sync_.synced()) HoldLocked(id, clock_->Now());
  };
  hooks.schedule_after = [this](Duration delay, std::function<void()> fn) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto timer = std::make_shared<TimerId>(kNoTimer);
    *timer = clock_->ScheduleAfter(delay, [this, timer, fn = std::move(fn)] {
      RunStaged([&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        stage_timers_.erase(*timer);
        fn();
      });
    });
    stage_timers_.insert(*timer);
  };
  staged_ = std::make_unique<StagedBatches<Progress>>(&table_, &stages_, clock_, std::move(hooks));
  tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
}

RemoteEngine::~RemoteEngine() {
  std::shared_ptr<FrontendLink> leader;
  absl::flat_hash_map<std::string, std::shared_ptr<FeedLink>> feeds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    clock_->Cancel(tick_timer_);
    clock_->Cancel(hold_timer_);
    clock_->Cancel(withdraw_timer_);
    for (TimerId t : stage_timers_) clock_->Cancel(t);
    ++epoch_;  // the streams' handlers do nothing from now on
    leader = std::move(leader_link_);
    feeds = std::move(feeds_);
  }
  if (leader) leader->Close();
  for (auto& [address, link] : feeds) link->Close();
  streams_.WaitAll();
}

// ---- the leader ---------------------------------------------------------------

void RemoteEngine::SetLeader(const std::string& address) {
  Answers answers;
  std::shared_ptr<FrontendLink> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (address == leader_ && leader_link_) return;
    FailUnplannedLocked(absl::UnavailableError("the leading scheduler changed before this request ran "
                                               "(failover); retry"),
                        &answers);
    old = std::move(leader_link_);
    leader_ = address;
    if (!leader_.empty()) Connect();
  }
  if (old) old->Close();
  Run(std::move(answers));
}

std::string RemoteEngine::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

void RemoteEngine::Connect() {
  const uint64_t epoch = ++epoch_;
  sync_.Reset();
  reconnect_at_ = 0;
  heard_at_ = clock_->Now();
  leader_link_ = connector_->OpenFrontend(
      leader_,
      streams_.Track<pb::FrontendDown, pb::FrontendUp>(
          {[this, epoch](pb::FrontendDown& down) { OnLeaderMessage(epoch, down); },
           [this, epoch] { OnLeaderGone(epoch); },
           [this](pb::FrontendUp* up) {
             if (up->has_ping()) up->mutable_ping()->set_sent(clock_->Now());
           }}));
  leader_link_->Send([&](pb::FrontendUp* up) {
    up->set_name(options_.name);
    up->set_incarnation(incarnation_);
    up->set_stream(epoch);
    up->mutable_ping();
  });
}

void RemoteEngine::AskToLoad(int variant) {
  std::lock_guard<std::mutex> lock(mu_);
  if (leader_link_ != nullptr) leader_link_->Send([variant](pb::FrontendUp* up) { up->add_load(variant); });
}

void RemoteEngine::OnLeaderMessage(uint64_t epoch, pb::FrontendDown& down) {
  const Time now = clock_->Now();
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != epoch_) return;
    heard_at_ = now;
    if (down.has_pong()) {
      const bool first = !sync_.synced();
      const pb::Pong& p = down.pong();
      sync_.Add(p.ping_sent(), p.received(), p.sent(), now);
      if (first) {  // requests that waited for the clock
        SubmitLocked(table_.Select([](uint64_t, const Pending& p) { return p.extra.state == State::kWaiting; }));
      }
    }
    for (const pb::PlanPart& part : down.plans()) PlanLocked(part, &answers);
    for (uint64_t id : down.dropped()) {
      if (const Pending* p = table_.Find(id)) {
        table_.Answer(id, ErrorOutcomeLocked(id, DroppedError(spec_, p->model)), &answers);
      }
    }
    for (uint64_t id : down.lost()) {
      if (!table_.contains(id)) continue;
      table_.Answer(id, ErrorOutcomeLocked(id, absl::UnavailableError("the scheduler could not take it; retry")),
                   &answers);
    }
    if (down.has_delays()) report_ = FromProto(down.delays());
    if (down.has_task() && options_.on_task_state) {
      const pb::TaskState& t = down.task();
      options_.on_task_state(TaskRoutingState{{t.up().begin(), t.up().end()},
                                              {t.paid().begin(), t.paid().end()},
                                              {t.draining().begin(), t.draining().end()},
                                              {t.recent().begin(), t.recent().end()}},
                             t.cost());
    }
    staged_->TakeAnswers(&answers);  // what stages answered when shown the plans
    PiggybackLocked(now);
  }
  Run(std::move(answers));
}

void RemoteEngine::OnLeaderGone(uint64_t epoch) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != epoch_ || stopping_) return;
    leader_link_ = nullptr;
    FailUnplannedLocked(absl::UnavailableError("the leading scheduler went away before this request ran; retry"),
                        &answers);
    reconnect_at_ = clock_->Now() + options_.ping_every;  // unless etcd names another leader first
  }
  Run(std::move(answers));
}

void RemoteEngine::FailUnplannedLocked(const absl::Status& why, Answers* answers) {
  for (uint64_t id : table_.Select([](uint64_t, const Pending& p) { return p.extra.state != State::kPlanned; })) {
    table_.Answer(id, ErrorOutcomeLocked(id, why), answers);
  }
}

// ---- requests -----------------------------------------------------------------

absl::Status RemoteEngine::Submit(ModelId model, std::vector<float> input, Duration objective,
                                  InferenceCallback done) {
  return SubmitWith(model, {}, std::move(input), objective, std::move(done));
}

absl::Status RemoteEngine::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                      Duration objective, InferenceCallback done) {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  TUTTI_ASSIGN_OR_RETURN(const Time deadline, table_.Admit(model, input.size(), objective, now));
  if (leader_link_ == nullptr) {
    return absl::UnavailableError("no scheduler is leading the cluster (failover in progress); retry");
  }
  const uint64_t id = table_.Add(model, std::move(input), std::move(done), now, deadline);
  Pending& p = *table_.Find(id);
  p.sequence = context.sequence;
  p.cancel = context.cancel;
  p.extra.level = context.level;
  p.extra.delay_at = context.delay_at;
  p.extra.trace = context.trace;
  if (sync_.synced()) HoldLocked(id, now);
  if (p.cancel != nullptr && p.sequence.id == 0) {
    cancellable_.push_back(id);
    if (withdraw_timer_ == kNoTimer) {
      withdraw_timer_ = clock_->ScheduleAt(now + options_.withdraw_every, [this] { SweepWithdrawn(); });
    }
  }
  return absl::OkStatus();
}

void RemoteEngine::HoldLocked(uint64_t id, Time now) {
  held_.push_back(id);
  const Duration left = table_.Find(id)->deadline - now;
  // Requests go at most one message a hold: one that follows a hold with
  // none goes at once, as nothing would share its message anyway.
  const Time by = std::min(now + std::min(options_.metadata_hold, left / 10), submitted_at_ + options_.metadata_hold);
  HeldUntilLocked(now, std::max(now, by));
}

void RemoteEngine::HoldSamplesLocked(const std::vector<ResponseTracker::Sample>& samples, Time now) {
  held_samples_.insert(held_samples_.end(), samples.begin(), samples.end());
  HeldUntilLocked(now, now + options_.metadata_hold);
}

void RemoteEngine::HeldUntilLocked(Time now, Time by) {
  if (flush_by_ == kInfiniteFuture) held_since_ = now;  // the first held since the last flush
  flush_by_ = std::min(flush_by_, by);
  PiggybackLocked(now);
}

void RemoteEngine::PiggybackLocked(Time now) {
  if (held_.empty() && held_samples_.empty()) return;
  if (now >= held_since_ + (flush_by_ - held_since_) * 3 / 4) {
    FlushHeldLocked();
    return;
  }
  if (hold_timer_ != kNoTimer && hold_timer_at_ <= flush_by_) return;
  clock_->Cancel(hold_timer_);
  hold_timer_at_ = flush_by_;
  hold_timer_ = clock_->ScheduleAt(flush_by_, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    hold_timer_ = kNoTimer;
    if (!stopping_) FlushHeldLocked();
  });
}

void RemoteEngine::FlushHeldLocked() {
  clock_->Cancel(hold_timer_);
  hold_timer_ = kNoTimer;
  flush_by_ = kInfiniteFuture;
  std::vector<uint64_t> ids;
  ids.swap(held_);
  if (!ids.empty()) submitted_at_ = clock_->Now();
  std::vector<ResponseTracker::Sample> samples;
  samples.swap(held_samples_);
  if (leader_link_ == nullptr || !sync_.synced()) return;  // requests: failed, or they go with the first pong
  leader_link_->Send([&](pb::FrontendUp* up) {
    for (const ResponseTracker::Sample& sample : samples) {
      pb::ResponseSample* s = up->add_responses();
      s->set_at(sync_.ToCluster(sample.at));
      s->set_delay(sample.delay);
    }
  });
  SubmitLocked(ids);
}

void RemoteEngine::SubmitLocked(const std::vector<uint64_t>& ids) {
  if (ids.empty() || leader_link_ == nullptr) return;
  leader_link_->Send([&](pb::FrontendUp* up) {
    for (uint64_t id : ids) {
      Pending* found = table_.Find(id);
      if (found == nullptr || found->extra.state != State::kWaiting) continue;  // answered while held
      Pending& p = *found;
      p.extra.state = State::kSubmitted;
      pb::RequestMeta* m = up->add_submit();
      m->set_id(id);
      m->set_model(p.model);
      m->set_deadline(sync_.ToCluster(p.deadline));
      if (p.extra.level != 0) m->set_level(p.extra.level);
      if (p.extra.delay_at != kInfiniteFuture) m->set_delay_at(sync_.ToCluster(p.extra.delay_at));
      if (p.extra.trace.recording()) m->set_traceparent(FormatTraceparent(p.extra.trace));
    }
  });
}

bool RemoteEngine::WithdrawnLocked(uint64_t id, Time now, Answers* answers) {
  const Pending& p = *table_.Find(id);
  if (!p.Withdrawn(now) || staged_->stage(p.model) != nullptr) return false;
  table_.Answer(id, ErrorOutcomeLocked(id, CancelledError(spec_, p.model)), answers);
  return true;
}

void RemoteEngine::SweepWithdrawn() {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    withdraw_timer_ = kNoTimer;
    if (stopping_) return;
    const Time now = clock_->Now();
    std::vector<uint64_t> told;
    std::vector<uint64_t> kept;
    for (uint64_t id : cancellable_) {
      const Pending* p = table_.Find(id);
      if (p == nullptr || p->extra.state == State::kPlanned) continue;
      const bool submitted = p->extra.state == State::kSubmitted;  // else its metadata is still held: it never goes
      if (!WithdrawnLocked(id, now, &answers)) {
        kept.push_back(id);
      } else if (submitted) {
        told.push_back(id);
      }
    }
    cancellable_.swap(kept);
    if (!told.empty() && leader_link_ != nullptr) {
      leader_link_->Send([&told](pb::FrontendUp* up) {
        for (uint64_t id : told) up->add_withdrawn(id);
      });
    }
    if (!cancellable_.empty()) {
      withdraw_timer_ = clock_->ScheduleAt(now + options_.withdraw_every, [this] { SweepWithdrawn(); });
    }
  }
  Run(std::move(answers));
}

void RemoteEngine::PlanLocked(const pb::PlanPart& plan, Answers* answers) {
  std::vector<uint64_t> ids;
  // An empty part still goes: the backend waits for every part of a batch.
  FeedToLocked(plan.backend()).Send([&](pb::FeedDown* down) {
    pb::Part* part = down->add_parts();
    part->set_batch(plan.batch());
    part->set_model(plan.model());
    part->set_exec_at(plan.exec_at());
    part->set_latency(plan.latency());
    part->set_parts(plan.parts());
    part->set_source(source_);
    std::string& inputs = *part->mutable_inputs();
    const Time now = clock_->Now();
    for (uint64_t id : plan.ids()) {
      Pending* p = table_.Find(id);
      if (p == nullptr) continue;  // answered meanwhile: left out
      if (WithdrawnLocked(id, now, answers)) continue;  // cancelled: left out, never run
      p->extra.state = State::kPlanned;
      p->extra.batch_deadline = sync_.synced() ? sync_.ToLocal(plan.deadline()) : plan.deadline();
      part->add_ids(id);
      ids.push_back(id);
      // Sequences go only with a stateful model's requests: from the first
      // one on, one entry per id (none before it).
      if (p->sequence.id != 0 && part->sequence_ids_size() == 0) {
        for (int k = 1; k < part->ids_size(); ++k) {
          part->add_sequence_ids(0);
          part->add_sequence_flags(0);
        }
      }
      if (p->sequence.id != 0 || part->sequence_ids_size() > 0) {
        part->add_sequence_ids(p->sequence.id);
        part->add_sequence_flags((p->sequence.start ? 1u : 0u) | (p->sequence.end ? 2u : 0u));
      }
      // Likewise traces: from the first traced request on, one per id.
      if (p->extra.trace.recording() && part->traceparents_size() == 0) {
        for (int k = 1; k < part->ids_size(); ++k) part->add_traceparents("");
      }
      if (p->extra.trace.recording() || part->traceparents_size() > 0) {
        part->add_traceparents(p->extra.trace.recording() ? FormatTraceparent(p->extra.trace) : "");
      }
      inputs.append(reinterpret_cast<const char*>(p->input.data()), p->input.size() * sizeof(float));
    }
  });
  if (ids.empty()) return;
  const Pending& first = *table_.Find(ids[0]);
  // A re-dispatched copy of a staged part is not shown again: its stage has it.
  if (staged_->stage(first.model) == nullptr || first.extra.staged != 0) return;
  std::vector<float> inputs;
  for (uint64_t id : ids) {
    const std::vector<float>& in = table_.Find(id)->input;
    inputs.insert(inputs.end(), in.begin(), in.end());
  }
  StageLocked(plan.batch(), first.model, std::move(ids), std::move(inputs));
}

void RemoteEngine::StageLocked(uint64_t batch, ModelId model, std::vector<uint64_t> ids, std::vector<float> inputs) {
  const uint64_t staged = staged_->Dispatch(model, std::move(ids), inputs);
  staged_of_batch_[batch] = staged;
  // (An item its stage already answered is gone; it is not re-dispatched.)
  for (uint64_t id : staged_->Find(staged)->ids) {
    if (Pending* p = table_.Find(id)) p->extra.staged = staged;
  }
}

std::vector<bool> RemoteEngine::ExecutedLocked(uint64_t staged, const absl::Status& status,
                                               const pb::Outputs* outputs) {
  const StagedBatches<Progress>::Part& part = *staged_->Find(staged);
  const size_t n = part.ids.size();
  const int64_t per_item = shapes_[part.model].output_elements;
  ExecResult result;
  result.status = status;
  if (outputs != nullptr) {
    const Duration offset = sync_.synced() ? sync_.offset() : 0;
    result.emulated = outputs->emulated();
    result.started = outputs->started() - offset;
    result.finished = outputs->finished() - offset;
    if (status.ok() && outputs->outputs().size() != n * per_item * sizeof(float)) {
      result.status = absl::InternalError("the backend returned too few output values");
    } else if (status.ok()) {
      result.output.resize(n * per_item);
      std::memcpy(result.output.data(), outputs->outputs().data(), result.output.size() * sizeof(float));
    }
  } else {
    result.started = result.finished = clock_->Now();
  }
  return staged_->Executed(staged, result);
}

void RemoteEngine::RunStaged(const std::function<void()>& fn) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    fn();
    staged_->TakeAnswers(&answers);
  }
  Run(std::move(answers));
}

FeedLink& RemoteEngine::FeedToLocked(const std::string& backend) {
  std::shared_ptr<FeedLink>& link = feeds_[backend];
  if (link == nullptr || !link->open()) {
    link = connector_->OpenFeed(backend, streams_.Track<pb::FeedUp, pb::FeedDown>(
                                             {[this](pb::FeedUp& up) { OnOutputs(up); }, {}, {}}));
  }
  return *link;
}

void RemoteEngine::OnOutputs(pb::FeedUp& up) {
  const Time now = clock_->Now();
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Back to this clock (the leader's, if no pong came yet).
    const Duration offset = sync_.synced() ? sync_.offset() : 0;
    for (pb::Outputs& o : *up.mutable_outputs()) {
      const absl::Status status(static_cast<absl::StatusCode>(o.code()), o.message());
      // A staged part's items the stage keeps, it answers.
      std::vector<bool> deliver(o.ids_size(), true);
      uint64_t staged = 0;
      if (auto s = staged_of_batch_.find(o.batch()); s != staged_of_batch_.end()) {
        staged = s->second;
        staged_of_batch_.erase(s);
        // (Gone: its stage was told it failed, its items all answered otherwise.)
        const StagedBatches<Progress>::Part* part = staged_->Find(staged);
        if (part != nullptr && !part->executed &&
            std::equal(part->ids.begin(), part->ids.end(), o.ids().begin(), o.ids().end())) {
          deliver = ExecutedLocked(staged, status, &o);
        }
      }
      int delivered = 0;
      for (int i = 0; i < o.ids_size(); ++i) delivered += deliver[i] && table_.contains(o.ids(i));
      bool counted = false;
      for (int i = 0; i < o.ids_size(); ++i) {
        const Pending* found = table_.Find(o.ids(i));
        // Answered already (a re-dispatched copy, the watchdog, or its stage), or kept by its stage.
        if (found == nullptr || !deliver[i]) continue;
        const Pending& p = *found;
        InferenceOutcome out;
        out.status = status;
        out.emulated = o.emulated();
        out.arrival = p.arrival;
        out.deadline = p.deadline;
        out.started = o.started() - offset;
        out.finished = o.finished() - offset;
        out.batch_size = o.batch_size();
        if (status.ok() && i < o.item_codes_size() && o.item_codes(i) != 0) {  // this item failed alone
          out.status = absl::Status(static_cast<absl::StatusCode>(o.item_codes(i)),
                                    i < o.item_messages_size() ? o.item_messages(i) : "");
        } else if (status.ok()) {
          out.batch_id = o.batch();
          out.batch_answers = delivered;
          out.batch_deadline = p.extra.batch_deadline;
          const int64_t n = shapes_[p.model].output_elements;
          const size_t bytes = static_cast<size_t>(n) * sizeof(float);
          if (o.outputs().size() < (static_cast<size_t>(i) + 1) * bytes) {
            out.status = absl::InternalError("the backend returned too few output values");
          } else {
            out.output.resize(n);
            if (bytes > 0) std::memcpy(out.output.data(), o.outputs().data() + i * bytes, bytes);
            out.late = now > out.deadline;
          }
        }
        if (out.status.ok() && !counted) {  // once per batch, as in process: the batches this frontend's requests ran in
          counted = true;
          ModelCounters& c = table_.counters(p.model);
          ++c.batches;
          c.batched_requests += out.batch_size;
        }
        table_.Answer(o.ids(i), std::move(out), &answers);
      }
      if (staged != 0) staged_->ForgetIfFinished(staged);
      staged_->TakeAnswers(&answers);
    }
    PiggybackLocked(now);
  }
  Run(std::move(answers));
}

void RemoteEngine::OnAnswerWritten(const WrittenAnswer& answer) {
  std::lock_guard<std::mutex> lock(mu_);
  const Time now = clock_->Now();
  std::vector<ResponseTracker::Sample> samples;
  answers_.Written(answer, now, &samples);
  if (samples.empty() || leader_link_ == nullptr || !sync_.synced()) return;
  HoldSamplesLocked(samples, now);
}

// ---- answers --------------------------------------------------------------------

InferenceOutcome RemoteEngine::ErrorOutcomeLocked(uint64_t id, absl::Status status) {
  return Table::ErrorOutcome(*table_.Find(id), std::move(status), clock_->Now());
}

void RemoteEngine::Run(Answers answers) {
  if (answers.empty()) return;
  const int64_t n = RunAnswers(std::move(answers));
  std::lock_guard<std::mutex> lock(mu_);
  table_.Release(n);
}

void RemoteEngine::Tick() {
  Answers answers;
  std::shared_ptr<FrontendLink> silent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    const Time now = clock_->Now();
    if (leader_link_ != nullptr) {
      if (options_.silent_after > 0 && now - heard_at_ > options_.silent_after) {
        silent = std::move(leader_link_);
        FailUnplannedLocked(absl::UnavailableError("the leading scheduler stopped answering before this request "
                                                   "ran; retry"),
                            &answers);
        Connect();
      } else {
        leader_link_->Send([](pb::FrontendUp* up) { up->mutable_ping(); });
      }
    } else if (!leader_.empty() && reconnect_at_ > 0 && now >= reconnect_at_) {
      Connect();  // the leader stream broke without a new leader: try again
    }
    const std::vector<uint64_t> orphans =
        table_.Select([&](uint64_t, const Pending& p) { return now > p.deadline + options_.orphan_grace; });
    for (uint64_t id : orphans) {
      table_.Answer(id,
                   ErrorOutcomeLocked(id, absl::DeadlineExceededError(
                                                     "no answer came from the cluster: the backend that held this "
                                                     "request failed")),
                   &answers);
    }
    // Staged parts whose outputs never came and whose items no longer wait.
    for (uint64_t staged : staged_->Abandoned()) {
      absl::erase_if(staged_of_batch_, [staged](const auto& entry) { return entry.second == staged; });
      ExecutedLocked(staged, absl::UnavailableError("its outputs never came"), nullptr);
      staged_->ForgetIfFinished(staged);
    }
    staged_->TakeAnswers(&answers);
    tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
  }
  if (silent) silent->Close();
  Run(std::move(answers));
}

// ---- the rest ---------------------------------------------------------------------

void RemoteEngine::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  table_.StopAccepting();
}

void RemoteEngine::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  table_.WaitIdle(lock);
}

int64_t RemoteEngine::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.in_flight();
}

std::vector<ModelCounters> RemoteEngine::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.Counters(stages_);
}

DelayReport RemoteEngine::Delays() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

}  // namespace tutti
