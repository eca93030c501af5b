#include "tutti/distributed/remote_engine.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

namespace pb = ::tutti::internal;
constexpr Duration kSweepEvery = 200 * kMillisecond;

RemoteEngine::RemoteEngine(ClusterSpec spec, std::vector<InferenceCore::ModelShape> shapes, Options options,
                           Clock* clock)
    : spec_(std::move(spec)),
      shapes_(std::move(shapes)),
      options_(std::move(options)),
      clock_(clock),
      submits_([this](std::vector<uint64_t> ids, std::function<void()> done) {
        SendToLeader(std::move(ids), std::move(done));
      }),
      counters_(spec_.models.size()) {
  std::lock_guard<std::mutex> lock(mu_);
  sweep_timer_ = clock_->ScheduleAfter(kSweepEvery, [this] { Sweep(); });
}

RemoteEngine::~RemoteEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    clock_->Cancel(sweep_timer_);
  }
  submits_.WaitIdle();
}

void RemoteEngine::SetLeader(const std::string& address) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (address == leader_) return;
    leader_ = address;
    ++epoch_;
    // The old leader's queue is gone: what no backend took will not run.
    std::vector<uint64_t> lost;
    for (const auto& [id, p] : pending_) {
      if (p.leader_epoch != 0 && p.leader_epoch < epoch_ && !p.fetched) lost.push_back(id);
    }
    for (uint64_t id : lost) {
      AnswerLocked(id,
                   ErrorOutcome(pending_.at(id), absl::UnavailableError("the leading scheduler changed before this "
                                                                        "request ran (failover); retry")),
                   &answers);
    }
  }
  Answer(std::move(answers));
}

void RemoteEngine::SetAddress(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  address_ = address;
}

std::string RemoteEngine::leader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

absl::Status RemoteEngine::Submit(ModelId model, std::vector<float> input, Duration objective,
                                  InferenceCallback done) {
  TUTTI_RETURN_IF_ERROR(InferenceCore::CheckSubmit(spec_, shapes_, model, input.size(), objective));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return absl::UnavailableError("the server is shutting down");
    if (leader_.empty()) {
      return absl::UnavailableError("no scheduler is leading the cluster (failover in progress); retry");
    }
    id = next_id_++;
    const Time now = clock_->Now();
    pending_.emplace(id, Pending{model, std::move(input), std::move(done), now,
                                 now + (objective > 0 ? objective : spec_.models[model].slo)});
  }
  submits_.Add(id);
  return absl::OkStatus();
}

void RemoteEngine::SendToLeader(std::vector<uint64_t> ids, std::function<void()> done) {
  pb::SubmitRequest req;
  std::string leader;
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    leader = leader_;
    epoch = epoch_;
    req.set_frontend(address_);
    const Time now = clock_->Now();
    for (uint64_t id : ids) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      it->second.leader_epoch = epoch;
      pb::RequestMeta* m = req.add_requests();
      m->set_id(id);
      m->set_model(it->second.model);
      m->set_budget_us(ToMicros(it->second.deadline - now));
    }
  }
  auto fail = [this, ids](const absl::Status& why) {
    Answers answers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint64_t id : ids) {
        auto it = pending_.find(id);
        if (it == pending_.end() || it->second.fetched) continue;
        AnswerLocked(id, ErrorOutcome(it->second, why), &answers);
      }
    }
    Answer(std::move(answers));
  };
  if (leader.empty()) {
    fail(absl::UnavailableError("no scheduler is leading the cluster (failover in progress); retry"));
    return done();
  }
  pb::Scheduler::Stub* stub = scheduler_stubs_.Get(leader);
  CallAsync<pb::SubmitReply>(options_.rpc_timeout, std::move(req), [stub](auto... a) { stub->async()->Submit(a...); },
                             [fail, leader, done](const grpc::Status& s, pb::SubmitReply&) {
                               if (!s.ok()) {
                                 fail(absl::UnavailableError(absl::StrCat("the scheduler at ", leader,
                                                                          " did not take the request (",
                                                                          s.error_message(), "); retry")));
                               }
                               done();
                             });
}

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

void RemoteEngine::Answer(Answers answers) {
  if (answers.empty()) return;
  for (auto& [done, outcome] : answers) done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  answering_ -= static_cast<int64_t>(answers.size());
  if (pending_.empty() && answering_ == 0) idle_.notify_all();
}

grpc::ServerUnaryReactor* RemoteEngine::FetchInputs(grpc::CallbackServerContext* context,
                                                    const pb::FetchRequest* request, pb::FetchReply* reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t id : request->ids()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      it->second.fetched = true;
      pb::Input* in = reply->add_inputs();
      in->set_id(id);
      in->set_values(FloatsToBytes(it->second.input.data(), it->second.input.size()));
    }
  }
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* RemoteEngine::Deliver(grpc::CallbackServerContext* context,
                                                const pb::DeliverRequest* request, pb::DeliverReply*) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Time now = clock_->Now();
    for (const pb::Outcome& o : request->outcomes()) {
      auto it = pending_.find(o.id());
      if (it == pending_.end()) continue;  // answered already (a re-dispatched copy, or the watchdog)
      const Pending& p = it->second;
      InferenceOutcome out;
      out.status = absl::Status(static_cast<absl::StatusCode>(o.code()), o.message());
      out.emulated = o.emulated();
      out.arrival = p.arrival;
      out.deadline = p.deadline;
      out.finished = now;
      out.started = now - Micros(o.compute_us());
      out.batch_size = o.batch_size();
      if (out.status.ok()) {
        out.output = BytesToFloats(o.output());
        if (static_cast<int64_t>(out.output.size()) != shapes_[p.model].output_elements) {
          out.status = absl::InternalError(absl::StrCat("the backend returned ", out.output.size(), " values for ",
                                                        shapes_[p.model].output_elements));
        }
        out.late = out.finished > out.deadline;
      }
      if (out.status.ok()) {
        ModelCounters& c = counters_[p.model];
        // Counted per item, so the mean batch size is the one requests saw.
        ++c.batches;
        c.batched_requests += out.batch_size;
      }
      AnswerLocked(o.id(), std::move(out), &answers);
    }
  }
  Answer(std::move(answers));
  return FinishUnary(context);
}

grpc::ServerUnaryReactor* RemoteEngine::Reject(grpc::CallbackServerContext* context,
                                               const pb::RejectRequest* request, pb::RejectReply*) {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t id : request->ids()) {
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      AnswerLocked(id,
                   ErrorOutcome(it->second, absl::DeadlineExceededError(absl::StrCat(
                                                "the latency objective of this '", spec_.models[it->second.model].name,
                                                "' request cannot be met; it was dropped before execution"))),
                   &answers);
    }
  }
  Answer(std::move(answers));
  return FinishUnary(context);
}

void RemoteEngine::Sweep() {
  Answers answers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    const Time now = clock_->Now();
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
    sweep_timer_ = clock_->ScheduleAfter(kSweepEvery, [this] { Sweep(); });
  }
  Answer(std::move(answers));
}

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

}  // namespace tutti
