#include "tutti/serving/inference_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/core/status_macros.h"

namespace tutti {

InferenceCore::InferenceCore(ClusterSpec spec, std::vector<ModelShape> shapes,
                             std::vector<std::unique_ptr<Executor>> executors, Clock* clock)
    : spec_(std::move(spec)),
      shapes_(std::move(shapes)),
      executors_(std::move(executors)),
      clock_(clock),
      locked_clock_(std::make_unique<SerializedClock>(
          clock, [this] { Flush(); },
          [this](Time when) {
            const Time now = clock_->Now();
            delays_->Record(Delay::kTimer, now, now - when);
          })),
      mu_(locked_clock_->mu()),
      counters_(spec_.models.size()),
      busy_(executors_.size(), 0),
      created_(clock->Now()) {
  local_index_.resize(spec_.models.size());
  for (const SubCluster& sub : spec_.EffectiveSubClusters()) {
    for (size_t i = 0; i < sub.models.size(); ++i) local_index_[sub.models[i]] = static_cast<int>(i);
  }
  listener_ = std::make_unique<CallbackListener>([this](Batch b) { OnDispatch(std::move(b)); },
                                                 [this](const Request& r) { OnDrop(r); });
}

absl::StatusOr<std::unique_ptr<InferenceCore>> InferenceCore::Create(
    ClusterSpec spec, std::vector<ModelShape> shapes, std::vector<std::unique_ptr<Executor>> executors,
    const Options& options, Clock* clock) {
  TUTTI_RETURN_IF_ERROR(ValidateClusterSpec(spec));
  if (shapes.size() != spec.models.size()) {
    return absl::InvalidArgumentError(absl::StrCat(shapes.size(), " model shapes for ",
                                                   spec.models.size(), " models"));
  }
  if (static_cast<int>(executors.size()) != spec.num_gpus()) {
    return absl::InvalidArgumentError(absl::StrCat(executors.size(), " executors for ",
                                                   spec.num_gpus(), " GPUs"));
  }
  const int models = static_cast<int>(spec.models.size());
  std::vector<bool> coded(models, false), parity(models, false);
  for (const Coding& c : options.coding) {
    if (c.model < 0 || c.model >= models || c.parity_model < 0 || c.parity_model >= models ||
        c.model == c.parity_model) {
      return absl::InvalidArgumentError(absl::StrCat("coding: bad model ids ", c.model, " and ", c.parity_model));
    }
    const std::string& name = spec.models[c.model].name;
    if (coded[c.model] || parity[c.model] || coded[c.parity_model]) {
      return absl::InvalidArgumentError(absl::StrCat("coding: model '", name, "' is coded twice or is a parity model"));
    }
    coded[c.model] = true;
    parity[c.parity_model] = true;
    if (c.codec.item_elements() != shapes[c.model].input_elements ||
        shapes[c.parity_model].input_elements != shapes[c.model].input_elements ||
        shapes[c.parity_model].output_elements != shapes[c.model].output_elements) {
      return absl::InvalidArgumentError(absl::StrCat("coding: parity model '", spec.models[c.parity_model].name,
                                                     "' and its codec must match the sizes of '", name, "'"));
    }
  }
  std::unique_ptr<InferenceCore> core(
      new InferenceCore(std::move(spec), std::move(shapes), std::move(executors), clock));
  core->coded_.resize(models);
  for (const Coding& c : options.coding) {
    core->coded_[c.model] = std::make_unique<Coded>(
        Coded{c.parity_model, ParityGroups(c.codec, core->shapes_[c.model].output_elements), c.reconstruct_delay,
              kInfiniteFuture, {}});
  }
  core->delays_ = std::make_unique<DelayModel>(
      core->spec_, options.delays, DelayPlan{core->spec_.delays, options.scheduler.frontrun_slack, {}});
  TUTTI_ASSIGN_OR_RETURN(core->scheduler_,
                         CreateScheduler(options.policy, core->spec_, options.scheduler,
                                         core->locked_clock_.get(), core->listener_.get()));
  InferenceCore* c = core.get();
  core->delays_->Start(core->locked_clock_.get(), [c](const DelayPlan& plan) { c->scheduler_->SetDelayPlan(plan); });
  return core;
}

InferenceCore::~InferenceCore() {
  std::unique_lock<std::mutex> lock(mu_);
  locked_clock_->Close(lock);
  scheduler_.reset();  // cancels its timers
  delays_->Stop();
}

absl::Status InferenceCore::Submit(ModelId model, std::vector<float> input, Duration objective,
                                   InferenceCallback done) {
  TUTTI_RETURN_IF_ERROR(CheckSubmission(spec_, shapes_, model, input.size(), objective));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return absl::UnavailableError("the server is shutting down");
    const Time now = clock_->Now();
    SubmitLocked(model, std::move(input), DeadlineOf(spec_, model, now, objective),
                 std::move(done));
  }
  Flush();
  return absl::OkStatus();
}

void InferenceCore::SubmitLocked(ModelId model, std::vector<float> input, Time deadline, InferenceCallback done) {
  const Request r{next_id_++, model, clock_->Now(), deadline};
  pending_.emplace(r.id, Pending{model, std::move(input), std::move(done), r.arrival, r.deadline});
  ++in_flight_;
  delays_->RecordArrival(model, r.arrival);
  scheduler_->Submit(r);
}

void InferenceCore::OnDrop(const Request& r) {
  auto it = pending_.find(r.id);
  Pending p = std::move(it->second);
  pending_.erase(it);
  ++counters_[r.model].dropped;
  InferenceOutcome out;
  out.status = absl::DeadlineExceededError(absl::StrCat(
      "the latency objective of this '", spec_.models[r.model].name,
      "' request cannot be met; it was dropped before execution"));
  out.arrival = p.arrival;
  out.deadline = p.deadline;
  out.finished = clock_->Now();
  outbox_.push_back([this, done = std::move(p.done), out = std::move(out)]() mutable {
    Answer({{std::move(done), std::move(out)}}, 1);
  });
}

void InferenceCore::OnDispatch(Batch batch) {
  const ModelShape& shape = shapes_[batch.model];
  auto members = std::make_shared<std::vector<Pending>>();
  ExecBatch exec;
  exec.model = local_index_[batch.model];
  exec.size = static_cast<int>(batch.requests.size());
  exec.start_at = batch.exec_at;
  exec.input.reserve(exec.size * shape.input_elements);
  Time earliest = kInfiniteFuture;
  for (const Request& r : batch.requests) {
    auto it = pending_.find(r.id);
    exec.input.insert(exec.input.end(), it->second.input.begin(), it->second.input.end());
    std::vector<float>().swap(it->second.input);
    earliest = std::min(earliest, r.deadline);
    members->push_back(std::move(it->second));
    pending_.erase(it);
  }
  ++counters_[batch.model].batches;
  counters_[batch.model].batched_requests += exec.size;
  ParityGroups::BatchKey key = 0;
  if (Coded* coded = coded_[batch.model].get()) {
    ParityGroups::Dispatched d = coded->groups.AddBatch(exec.size, exec.input);
    key = d.batch;
    coded->batches[key].members = members;
    coded->open_group_deadline = std::min(coded->open_group_deadline, earliest);
    for (size_t p = 0; p < d.parity_queries.size(); ++p) {
      parity_queries_.push_back({batch.model, d.group, static_cast<int>(p), std::move(d.parity_queries[p]),
                                 coded->open_group_deadline});
    }
    if (!d.parity_queries.empty()) coded->open_group_deadline = kInfiniteFuture;
  }
  Executor* executor = executors_[batch.gpu].get();
  const ModelId model = batch.model;
  const int gpu = batch.gpu;
  const Time decided = clock_->Now();
  outbox_.push_back([this, executor, model, gpu, decided, members, key, exec = std::move(exec)]() mutable {
    executor->Run(std::move(exec), [this, model, gpu, decided, members, key](ExecResult result) {
      OnExecuted(model, gpu, decided, members, key, std::move(result));
    });
  });
}

void InferenceCore::OnExecuted(ModelId model, int gpu, Time decided, const Members& members,
                               ParityGroups::BatchKey key, ExecResult result) {
  const int64_t n = static_cast<int64_t>(members->size());
  // Learnt now, with the batch's end: stamped so (the simulator's too).
  delays_->Record(Delay::kDispatch, result.finished, result.received - decided);
  if (result.status.ok()) {
    delays_->RecordBatch(gpu, model, static_cast<int>(n), result.ready, result.started, result.finished);
  }
  const int64_t per_item = shapes_[model].output_elements;
  if (result.status.ok() && static_cast<int64_t>(result.output.size()) != n * per_item) {
    result.status = absl::InternalError(
        absl::StrCat("executor returned ", result.output.size(), " values for ", n, " items of ", per_item));
  }
  Answers answers;
  int64_t done = 0;
  bool queued_work = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_[gpu] += result.finished - result.started;
    scheduler_->OnBatchDone(gpu);
    const uint64_t batch_id = next_batch_++;
    Time batch_deadline = kInfiniteFuture;
    for (const Pending& p : *members) batch_deadline = std::min(batch_deadline, p.deadline);
    ModelCounters& c = counters_[model];
    Coded* coded = coded_[model].get();
    // Coded models: which originals to deliver (the others were rebuilt, or
    // belong to a failed batch, whose requests the coding events answer).
    std::vector<bool> deliver;
    ParityGroups::Events events;
    if (coded != nullptr && result.status.ok()) {
      deliver = coded->groups.OnBatchDone(key, result.output, &events);
    } else if (coded != nullptr) {
      coded->batches[key].error = result.status;
      coded->groups.OnBatchFailed(key, &events);
      deliver.assign(n, false);
    }
    for (int64_t i = 0; i < n; ++i) {
      Pending& p = (*members)[i];
      p.executed = true;
      if (coded != nullptr && !deliver[i]) {
        done += p.answered;  // a reconstruction answered it before
        continue;
      }
      InferenceOutcome out;
      out.status = result.status;
      out.emulated = result.emulated;
      out.arrival = p.arrival;
      out.deadline = p.deadline;
      out.started = result.started;
      out.finished = result.finished;
      out.batch_size = static_cast<int>(n);
      if (out.status.ok()) {
        out.batch_id = batch_id;
        out.batch_deadline = batch_deadline;
        out.output.assign(result.output.begin() + i * per_item, result.output.begin() + (i + 1) * per_item);
        out.late = out.finished > out.deadline;
        ++(out.late ? c.late : c.success);
      } else {
        ++c.error;
      }
      p.answered = true;
      ++done;
      answers.push_back({std::move(p.done), std::move(out)});
    }
    for (auto& [callback, out] : answers) out.batch_answers = static_cast<int>(answers.size());
    if (coded != nullptr) {
      HandleCodingEvents(model, std::move(events), result.emulated, &answers, &done);
      ForgetIfFinished(*coded, key);
    }
    queued_work = !outbox_.empty() || !parity_queries_.empty();
  }
  // Batches the freed GPU was given (await_completion); before Answer, which
  // may let the core be destroyed.
  if (queued_work) Flush();
  Answer(std::move(answers), done);
}

void InferenceCore::OnParityOutcome(ModelId deployed, ParityGroups::GroupId group, int position,
                                    InferenceOutcome outcome) {
  Answers answers;
  int64_t done = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ParityGroups::Events events;
    Coded& coded = *coded_[deployed];
    if (outcome.status.ok()) {
      coded.groups.OnParityDone(group, position, outcome.output, &events);
    } else {
      coded.groups.OnParityLost(group, position, &events);
    }
    HandleCodingEvents(deployed, std::move(events), outcome.emulated, &answers, &done);
  }
  Answer(std::move(answers), done);
}

void InferenceCore::HandleCodingEvents(ModelId model, ParityGroups::Events events, bool emulated, Answers* answers,
                                       int64_t* done) {
  Coded& coded = *coded_[model];
  for (ParityGroups::Reconstruction& r : events.reconstructions) {
    // A failed batch has no original coming: rebuild its requests at once.
    const bool failed = !coded.batches[r.batch].error.ok();
    if (coded.reconstruct_delay <= 0 || failed) {
      AnswerReconstruction(model, r, emulated, answers, done);
      continue;
    }
    locked_clock_->ScheduleAfter(coded.reconstruct_delay, [this, model, r = std::move(r), emulated] {
      Answers late_answers;
      int64_t late_done = 0;
      AnswerReconstruction(model, r, emulated, &late_answers, &late_done);
      if (late_answers.empty() && late_done == 0) return;
      outbox_.push_back([this, a = std::move(late_answers), late_done]() mutable { Answer(std::move(a), late_done); });
    });
  }
  for (const ParityGroups::Position& f : events.failures) {
    Coded::BatchInfo& info = coded.batches[f.batch];
    Pending& p = (*info.members)[f.position];
    InferenceOutcome out;
    out.status = info.error;
    out.arrival = p.arrival;
    out.deadline = p.deadline;
    out.finished = clock_->Now();
    ++counters_[model].error;
    p.answered = true;
    *done += p.executed;
    answers->push_back({std::move(p.done), std::move(out)});
    ForgetIfFinished(coded, f.batch);
  }
}

void InferenceCore::AnswerReconstruction(ModelId model, const ParityGroups::Reconstruction& r, bool emulated,
                                         Answers* answers, int64_t* done) {
  Coded& coded = *coded_[model];
  if (!coded.groups.Claim(r.batch, r.position)) return;  // the original came first
  Coded::BatchInfo& info = coded.batches[r.batch];
  Pending& p = (*info.members)[r.position];
  InferenceOutcome out;
  out.output = r.output;
  out.reconstructed = true;
  out.emulated = emulated;
  out.arrival = p.arrival;
  out.deadline = p.deadline;
  out.started = out.finished = clock_->Now();
  out.late = out.finished > out.deadline;
  out.batch_size = static_cast<int>(info.members->size());
  ModelCounters& c = counters_[model];
  ++(out.late ? c.late : c.success);
  ++c.reconstructed;
  p.answered = true;
  *done += p.executed;
  answers->push_back({std::move(p.done), std::move(out)});
  ForgetIfFinished(coded, r.batch);
}

void InferenceCore::ForgetIfFinished(Coded& coded, ParityGroups::BatchKey key) {
  auto it = coded.batches.find(key);
  if (it == coded.batches.end()) return;
  for (const Pending& p : *it->second.members) {
    if (!p.answered || !p.executed) return;
  }
  coded.batches.erase(it);
}

void InferenceCore::Answer(Answers answers, int64_t count) {
  for (auto& [done, outcome] : answers) done(std::move(outcome));
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ -= count;
  if (in_flight_ == 0) idle_.notify_all();
}

// One thread flushes at a time, so executors receive batches in dispatch
// order; work queued meanwhile by other threads is drained by that thread.
void InferenceCore::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (flushing_) return;
  flushing_ = true;
  while (!outbox_.empty() || !parity_queries_.empty()) {
    // Parity queries wait here because a scheduler listener must not call
    // back into the scheduler.
    std::vector<ParityQuery> queries;
    queries.swap(parity_queries_);
    for (ParityQuery& q : queries) {
      SubmitLocked(coded_[q.deployed]->parity_model, std::move(q.input), q.deadline,
                   [this, deployed = q.deployed, group = q.group, position = q.position](InferenceOutcome o) {
                     OnParityOutcome(deployed, group, position, std::move(o));
                   });
    }
    std::vector<std::function<void()>> work;
    work.swap(outbox_);
    lock.unlock();
    for (auto& w : work) w();
    lock.lock();
  }
  flushing_ = false;
}

void InferenceCore::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  accepting_ = false;
}

void InferenceCore::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return in_flight_ == 0; });
}

int64_t InferenceCore::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

std::vector<ModelCounters> InferenceCore::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelCounters> out = counters_;
  for (size_t m = 0; m < out.size(); ++m) {
    if (coded_[m]) out[m].coding = coded_[m]->groups.stats();
  }
  return out;
}

void InferenceCore::OnAnswerWritten(const WrittenAnswer& answer) {
  std::vector<ResponseTracker::Sample> samples;
  {
    std::lock_guard<std::mutex> lock(answers_mu_);
    answers_.Written(answer, clock_->Now(), &samples);
  }
  for (const ResponseTracker::Sample& s : samples) delays_->Record(Delay::kResponse, s.at, s.delay);
}

DelayReport InferenceCore::Delays() const { return {delays_->options(), delays_->estimates(), delays_->plan()}; }

std::vector<double> InferenceCore::BusyFractions() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double elapsed = static_cast<double>(std::max<Duration>(1, clock_->Now() - created_));
  std::vector<double> out;
  for (Duration b : busy_) out.push_back(std::min(1.0, static_cast<double>(b) / elapsed));
  return out;
}

}  // namespace tutti
