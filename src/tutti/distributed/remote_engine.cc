#include "tutti/distributed/remote_engine.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace pb = ::tutti::internal;

RemoteEngine::RemoteEngine(ClusterSpec spec, std::vector<ModelShape> shapes, Options options,
                           Clock* clock, Connector* connector)
    : spec_(std::move(spec)),
      shapes_(std::move(shapes)),
      options_(std::move(options)),
      clock_(clock),
      connector_(connector),
      counters_(spec_.models.size()) {
  std::lock_guard<std::mutex> lock(mu_);
  tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
}

RemoteEngine::~RemoteEngine() {
  std::shared_ptr<FrontendLink> leader;
  absl::flat_hash_map<std::string, std::shared_ptr<FeedLink>> feeds;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    clock_->Cancel(tick_timer_);
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
  leader_link_ = connector_->OpenFrontend(
      leader_,
      streams_.Track<pb::FrontendDown, pb::FrontendUp>(
          {[this, epoch](pb::FrontendDown& down) { OnLeaderMessage(epoch, down); },
           [this, epoch] { OnLeaderGone(epoch); },
           [this](pb::FrontendUp* up) {
             if (up->has_ping()) up->mutable_ping()->set_sent(clock_->Now());
           }}));
  leader_link_->Send([name = options_.name](pb::FrontendUp* up) {
    up->set_name(name);
    up->mutable_ping();
  });
}

void RemoteEngine::OnLeaderMessage(uint64_t epoch, pb::FrontendDown& down) {
  const Time now = clock_->Now();
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch != epoch_) return;
    if (down.has_pong()) {
      const bool first = !sync_.synced();
      const pb::Pong& p = down.pong();
      sync_.Add(p.ping_sent(), p.received(), p.sent(), now);
      if (first) {  // requests that waited for the clock
        std::vector<uint64_t> waiting;
        for (const auto& [id, r] : pending_) {
          if (r.state == State::kWaiting) waiting.push_back(id);
        }
        SubmitLocked(waiting);
      }
    }
    for (const pb::PlanPart& part : down.plans()) PlanLocked(part, &answers);
    for (uint64_t id : down.dropped()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      AnswerLocked(id,
                   ErrorOutcome(it->second, absl::DeadlineExceededError(absl::StrCat(
                                                "the latency objective of this '", spec_.models[it->second.model].name,
                                                "' request cannot be met; it was dropped before execution"))),
                   &answers);
    }
    for (uint64_t id : down.lost()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      AnswerLocked(id, ErrorOutcome(it->second, absl::UnavailableError("the scheduler could not take it; retry")),
                   &answers);
    }
    if (down.has_delays()) report_ = FromProto(down.delays());
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
  std::vector<uint64_t> lost;
  for (const auto& [id, p] : pending_) {
    if (p.state != State::kPlanned) lost.push_back(id);
  }
  for (uint64_t id : lost) AnswerLocked(id, ErrorOutcome(pending_.at(id), why), answers);
}

// ---- requests -----------------------------------------------------------------

absl::Status RemoteEngine::Submit(ModelId model, std::vector<float> input, Duration objective,
                                  InferenceCallback done) {
  TUTTI_RETURN_IF_ERROR(CheckSubmission(spec_, shapes_, model, input.size(), objective));
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return absl::UnavailableError("the server is shutting down");
  if (leader_link_ == nullptr) {
    return absl::UnavailableError("no scheduler is leading the cluster (failover in progress); retry");
  }
  const uint64_t id = next_id_++;
  const Time now = clock_->Now();
  pending_.emplace(id, Pending{model, std::move(input), std::move(done), now,
                               DeadlineOf(spec_, model, now, objective)});
  if (sync_.synced()) SubmitLocked({id});
  return absl::OkStatus();
}

void RemoteEngine::SubmitLocked(const std::vector<uint64_t>& ids) {
  if (ids.empty() || leader_link_ == nullptr) return;
  leader_link_->Send([&](pb::FrontendUp* up) {
    for (uint64_t id : ids) {
      Pending& p = pending_.at(id);
      p.state = State::kSubmitted;
      pb::RequestMeta* m = up->add_submit();
      m->set_id(id);
      m->set_model(p.model);
      m->set_deadline(sync_.ToCluster(p.deadline));
    }
  });
}

void RemoteEngine::PlanLocked(const pb::PlanPart& plan, Answers* answers) {
  // An empty part still goes: the backend waits for every part of a batch.
  FeedToLocked(plan.backend()).Send([&](pb::FeedDown* down) {
    pb::Part* part = down->add_parts();
    part->set_batch(plan.batch());
    part->set_model(plan.model());
    part->set_exec_at(plan.exec_at());
    part->set_latency(plan.latency());
    part->set_parts(plan.parts());
    std::string& inputs = *part->mutable_inputs();
    for (uint64_t id : plan.ids()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;  // answered meanwhile: left out
      it->second.state = State::kPlanned;
      it->second.batch_deadline = sync_.synced() ? sync_.ToLocal(plan.deadline()) : plan.deadline();
      part->add_ids(id);
      inputs.append(reinterpret_cast<const char*>(it->second.input.data()), it->second.input.size() * sizeof(float));
    }
  });
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
      const int delivered = static_cast<int>(
          std::count_if(o.ids().begin(), o.ids().end(), [this](uint64_t id) { return pending_.contains(id); }));
      for (int i = 0; i < o.ids_size(); ++i) {
        auto it = pending_.find(o.ids(i));
        if (it == pending_.end()) continue;  // answered already (a re-dispatched copy, or the watchdog)
        const Pending& p = it->second;
        InferenceOutcome out;
        out.status = status;
        out.emulated = o.emulated();
        out.arrival = p.arrival;
        out.deadline = p.deadline;
        out.started = o.started() - offset;
        out.finished = o.finished() - offset;
        out.batch_size = o.batch_size();
        if (status.ok()) {
          out.batch_id = o.batch();
          out.batch_answers = delivered;
          out.batch_deadline = p.batch_deadline;
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
        if (out.status.ok()) {
          ModelCounters& c = counters_[p.model];
          ++c.batches;  // counted per item, so the mean batch size is the one requests saw
          c.batched_requests += out.batch_size;
        }
        AnswerLocked(o.ids(i), std::move(out), &answers);
      }
    }
  }
  Run(std::move(answers));
}

void RemoteEngine::OnAnswerWritten(const WrittenAnswer& answer) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ResponseTracker::Sample> samples;
  answers_.Written(answer, clock_->Now(), &samples);
  if (samples.empty() || leader_link_ == nullptr || !sync_.synced()) return;
  leader_link_->Send([&](pb::FrontendUp* up) {
    for (const ResponseTracker::Sample& sample : samples) {
      pb::ResponseSample* s = up->add_responses();
      s->set_at(sync_.ToCluster(sample.at));
      s->set_delay(sample.delay);
    }
  });
}

// ---- answers --------------------------------------------------------------------

InferenceOutcome RemoteEngine::ErrorOutcome(const Pending& p, absl::Status status) const {
  InferenceOutcome out;
  out.status = std::move(status);
  out.arrival = p.arrival;
  out.deadline = p.deadline;
  out.finished = clock_->Now();
  return out;
}

void RemoteEngine::AnswerLocked(uint64_t id, InferenceOutcome outcome, Answers* answers) {
  auto it = pending_.find(id);
  ModelCounters& c = counters_[it->second.model];
  if (outcome.status.ok()) {
    ++(outcome.late ? c.late : c.success);
  } else if (outcome.status.code() == absl::StatusCode::kDeadlineExceeded) {
    ++c.dropped;
  } else {
    ++c.error;
  }
  answers->push_back({std::move(it->second.done), std::move(outcome)});
  pending_.erase(it);
  ++answering_;
}

void RemoteEngine::Run(Answers answers) {
  if (answers.empty()) return;
  for (auto& [done, outcome] : answers) done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  answering_ -= static_cast<int64_t>(answers.size());
  if (pending_.empty() && answering_ == 0) idle_.notify_all();
}

void RemoteEngine::Tick() {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    const Time now = clock_->Now();
    if (leader_link_ != nullptr) {
      leader_link_->Send([](pb::FrontendUp* up) { up->mutable_ping(); });
    } else if (!leader_.empty() && reconnect_at_ > 0 && now >= reconnect_at_) {
      Connect();  // the leader stream broke without a new leader: try again
    }
    std::vector<uint64_t> orphans;
    for (const auto& [id, p] : pending_) {
      if (now > p.deadline + options_.orphan_grace) orphans.push_back(id);
    }
    for (uint64_t id : orphans) {
      AnswerLocked(id,
                   ErrorOutcome(pending_.at(id), absl::DeadlineExceededError(
                                                     "no answer came from the cluster: the backend that held this "
                                                     "request failed")),
                   &answers);
    }
    tick_timer_ = clock_->ScheduleAfter(options_.ping_every, [this] { Tick(); });
  }
  Run(std::move(answers));
}

// ---- the rest ---------------------------------------------------------------------

void RemoteEngine::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

void RemoteEngine::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return pending_.empty() && answering_ == 0; });
}

int64_t RemoteEngine::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(pending_.size()) + answering_;
}

std::vector<ModelCounters> RemoteEngine::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

DelayReport RemoteEngine::Delays() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

}  // namespace tutti
