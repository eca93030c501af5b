#include "tutti/frontend/inference_frontend.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tutti/core/user_text.h"
#include "tutti/frontend/frontend_state.h"

namespace tutti {
namespace {

// Everything a request waits on: one slot per item.
struct PendingInfer {
  std::mutex mu;
  InferenceFrontend::InferResult result;
  int remaining = 0;
  absl::Status first_error;
};

}  // namespace

InferenceFrontend::InferenceFrontend(InferenceEngine* engine, std::vector<ServedModel> models, Options options)
    : engine_(engine), options_(std::move(options)), access_(options_.access),
      monitor_(std::make_unique<VariantMonitor>()) {
  for (ServedModel& m : models) {
    auto state = std::make_unique<ModelState>();
    state->served = std::move(m);
    models_.push_back(std::move(state));
  }
  monitor_->given.assign(models_.size(), 0);
  monitor_->status.assign(models_.size(), VariantStatus{});
}

InferenceFrontend::~InferenceFrontend() = default;

absl::StatusOr<int> InferenceFrontend::FindModel(absl::string_view name, absl::string_view version) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    const ServedModel& m = models_[i]->served;
    if (m.config.name != name || m.internal) continue;
    int64_t v = 0;
    if (!version.empty() && (!absl::SimpleAtoi(version, &v) || v != m.version)) {
      return absl::NotFoundError(absl::StrCat("model '", name, "' has no version ", QuoteUserText(version),
                                              " (serving version ", m.version, ")"));
    }
    return static_cast<int>(i);
  }
  return absl::NotFoundError(absl::StrCat("unknown model ", QuoteUserText(name)));
}

const InferenceFrontend::ServedModel& InferenceFrontend::served(int model) const { return models_[model]->served; }

std::vector<int> InferenceFrontend::ListedModels() const {
  std::vector<int> out;
  for (size_t i = 0; i < models_.size(); ++i) {
    if (!models_[i]->served.internal) out.push_back(static_cast<int>(i));
  }
  return out;
}

void InferenceFrontend::CountRejected(int model) { ++models_[model]->rejected; }

absl::Status InferenceFrontend::Authorize(Api api, absl::string_view authorization) const {
  calls_.fetch_add(1, std::memory_order_relaxed);
  return access_.Check(api, authorization);
}

void InferenceFrontend::AwaitQuiet(Duration quiet, Duration bound) const {
  // Polls the call count: no clock read on the calls' path.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(bound);
  for (int64_t seen = -1; std::chrono::steady_clock::now() < deadline;) {
    const int64_t now = calls_.load(std::memory_order_relaxed);
    if (now == seen) return;
    seen = now;
    std::this_thread::sleep_for(std::min(std::chrono::nanoseconds(quiet),
                                         std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             deadline - std::chrono::steady_clock::now())));
  }
}

absl::Status InferenceFrontend::RequestShutdown() {
  if (!options_.shutdown) return absl::UnimplementedError("this server does not take shutdown requests");
  options_.shutdown();
  return absl::OkStatus();
}

void InferenceFrontend::Infer(int model, InferRequest request, InferDone answer) {
  ModelState& state = *models_[model];
  const TraceContext trace =
      options_.tracer != nullptr ? options_.tracer->StartRequest(request.traceparent) : TraceContext{};
  auto done = [this, &state, model, trace, received = engine_->Now(),
               answer = std::move(answer)](absl::StatusOr<InferResult> r) {
    CountAnswer(state, received, r);
    if (trace.recording()) {
      if (r.ok()) {  // its span ends once the answer is written (AnswerWritten)
        r->written.trace = trace;
        r->written.model = model;
        r->written.received = received;
        r->written.answered = engine_->Now();
      } else {
        RecordRequestSpan(trace, model, received, engine_->Now(), 0, std::string(r.status().message()));
      }
    }
    answer(std::move(r));
  };
  if (absl::Status s = CheckSequenceBatch(request); !s.ok()) return done(s);
  // A model of variable dimensions runs each shape bucket as an engine model of its own.
  const int engine_model = request.bucket >= 0 && !state.served.buckets.empty() ? state.served.buckets[request.bucket]
                                                                                : model;
  const int64_t per_item = static_cast<int64_t>(request.data.size()) / std::max(request.batch, 1);
  const Duration objective = Millis(request.objective_ms);
  const int64_t queued = state.queued.fetch_add(request.batch) + request.batch;
  // Counted before the check: an unload that begins now waits for these.
  if (state.control.load() != ModelState::kReady) {
    Release(state, request.batch);
    return done(absl::UnavailableError(absl::StrCat("model '", state.served.config.name,
                                                    "' is not loaded (unloaded through the repository API; "
                                                    "POST /v2/repository/models/",
                                                    state.served.config.name, "/load loads it)")));
  }
  if (options_.max_queue_size > 0 && queued > options_.max_queue_size) {
    Release(state, request.batch);
    ++state.overloaded;
    return done(absl::ResourceExhaustedError(absl::StrCat(
        "model '", state.served.config.name, "' has ", queued - request.batch,
        " items queued, at its limit of ", options_.max_queue_size, " (max_queue_size): retry later")));
  }
  // The level's queue policy (Triton's priority_queue_policy, else
  // default_queue_policy): its own limit, and the timeout it sets.
  const int level = PriorityLevel(state.served.config, request.priority);
  const QueuePolicy* policy = state.served.config.QueuePolicyOf(level + 1);
  const bool level_counted = policy != nullptr && policy->max_queue_size > 0;
  if (level_counted) {
    const int64_t at_level = state.level_queued[level].fetch_add(request.batch) + request.batch;
    if (at_level > policy->max_queue_size) {
      state.level_queued[level].fetch_sub(request.batch);
      Release(state, request.batch);
      ++state.overloaded;
      return done(absl::ResourceExhaustedError(absl::StrCat(
          "model '", state.served.config.name, "' has ", at_level - request.batch, " items queued at priority level ",
          level + 1, ", at its limit of ", policy->max_queue_size, " (its queue policy's max_queue_size): retry later")));
    }
  }
  auto pending = std::make_shared<PendingInfer>();
  pending->result.outputs.resize(request.batch);
  pending->remaining = request.batch;
  // A graph's steps record their own (GraphEngine).
  Tracer* const item_tracer = trace.recording() && state.served.config.steps.empty() ? options_.tracer : nullptr;
  auto finish = [&state, pending, batch = request.batch, item_tracer, trace, level_counted, level,
                 done = std::move(done)](int item, InferenceOutcome o) {
    if (item_tracer != nullptr) RecordRequestSpans(*item_tracer, trace, state.served.config.name, o);
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      InferResult& r = pending->result;
      if (o.status.ok()) {
        r.outputs[item] = std::move(o.output);
        r.emulated |= o.emulated;
        r.late |= o.late;
        r.reconstructed |= o.reconstructed;
        r.max_batch = std::max(r.max_batch, o.batch_size);
        r.max_queue = std::max(r.max_queue, o.started - o.arrival);
        r.max_compute = std::max(r.max_compute, o.finished - o.started);
        r.arrival = r.arrival == 0 ? o.arrival : std::min(r.arrival, o.arrival);
        r.written.items.push_back(o.Written());
        state.queue_seconds.Observe(ToSeconds(o.started - o.arrival));
        state.compute_seconds.Observe(ToSeconds(o.finished - o.started));
        state.batch_size.Observe(o.batch_size);
        if (o.batch_size > 0) state.executions += 1.0 / o.batch_size;
        state.latency_seconds.Observe(ToSeconds(o.finished - o.arrival));
      } else if (pending->first_error.ok()) {
        pending->first_error = o.status;
      }
      if (--pending->remaining > 0) return;
    }
    // Answered before the unload it may complete is reported.
    if (!pending->first_error.ok()) {
      done(pending->first_error);
    } else {
      done(std::move(pending->result));
    }
    if (level_counted) state.level_queued[level].fetch_sub(batch);
    Release(state, batch);
  };
  std::shared_ptr<CancelFlag> cancel = std::move(request.cancel);
  // A queue policy's timeout, unless it lets the request's own replace it.
  const int64_t timeout_us = policy == nullptr || (policy->allow_timeout_override && request.timeout_us > 0)
                                 ? request.timeout_us
                                 : policy->default_timeout_us;
  Time delay_at = kInfiniteFuture;
  if (timeout_us > 0 && policy != nullptr && policy->delay) {
    delay_at = engine_->Now() + Micros(timeout_us);  // DELAY: behind the others from then
  } else if (timeout_us > 0) {
    if (cancel == nullptr) cancel = std::make_shared<CancelFlag>();
    cancel->ExpireAt(engine_->Now() + Micros(timeout_us));
  }
  const RequestContext context{request.sequence, std::move(cancel), level, trace, delay_at};
  for (int i = 0; i < request.batch; ++i) {
    std::vector<float> item(request.data.begin() + i * per_item, request.data.begin() + (i + 1) * per_item);
    absl::Status s = engine_->SubmitWith(engine_model, context, std::move(item), objective,
                                         [finish, i](InferenceOutcome o) { finish(i, std::move(o)); });
    if (!s.ok()) finish(i, InferenceOutcome{s});  // refused: answer that item with the error
  }
}

void InferenceFrontend::RecordRequestSpan(const TraceContext& trace, int model, Time start, Time end, int64_t items,
                                          std::string error) const {
  const std::string& name = models_[model]->served.config.name;
  Span span{trace, absl::StrCat("infer ", name), Span::Kind::kServer, start, end};
  span.attributes.push_back({"tutti.model", name});
  if (items > 0) span.attributes.push_back({"tutti.items", items});
  span.error = std::move(error);
  options_.tracer->Record(std::move(span));
}

void InferenceFrontend::AnswerWritten(const AnswerReceipt& written) {
  for (const WrittenAnswer& w : written.items) engine_->OnAnswerWritten(w);
  if (!written.trace.recording() || options_.tracer == nullptr) return;
  const Time now = engine_->Now();
  options_.tracer->Record({Tracer::Child(written.trace), "respond", Span::Kind::kInternal, written.answered, now});
  RecordRequestSpan(written.trace, written.model, written.received, now, static_cast<int64_t>(written.items.size()),
                    "");
}

void InferenceFrontend::CountAnswer(ModelState& state, Time received, const absl::StatusOr<InferResult>& answer) const {
  const Duration held = engine_->Now() - received;
  if (!answer.ok()) return state.fail.Add(held);
  state.success.Add(held);
  state.queue.Add(answer->max_queue);
  state.compute_infer.Add(answer->max_compute);
  state.inference_count += static_cast<int64_t>(answer->outputs.size());
  state.last_inference_ms = absl::ToUnixMillis(absl::Now());
}

void InferenceFrontend::Release(ModelState& state, int64_t n) {
  if (state.queued.fetch_sub(n) != n || state.control.load() != ModelState::kUnloading) return;
  std::vector<std::function<void(absl::Status)>> drained;
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    if (state.control.load() != ModelState::kUnloading || state.queued.load() != 0) return;
    state.control = ModelState::kUnavailable;
    drained.swap(state.unloading);
  }
  for (auto& done : drained) done(absl::OkStatus());
}

InferenceFrontend::ModelStatus InferenceFrontend::Status(int model) const {
  const ModelState& state = *models_[model];
  if (!ready_) return {"UNAVAILABLE", "the server is shutting down"};
  switch (state.control.load()) {
    case ModelState::kReady:
      return {"READY", ""};
    case ModelState::kUnloading:
      return {"UNLOADING", absl::StrCat("answering the ", state.queued.load(), " items it accepted")};
    default:
      return {"UNAVAILABLE", "unloaded"};
  }
}

bool InferenceFrontend::model_ready(int model) const {
  return ready_ && models_[model]->control.load() == ModelState::kReady;
}

void InferenceFrontend::Load(int model) {
  ModelState& state = *models_[model];
  std::vector<std::function<void(absl::Status)>> aborted;
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    state.control = ModelState::kReady;
    aborted.swap(state.unloading);
  }
  for (auto& done : aborted) {
    done(absl::AbortedError(absl::StrCat("model '", state.served.config.name, "' was loaded again before it drained")));
  }
}

void InferenceFrontend::Unload(int model, std::function<void(absl::Status)> done) {
  ModelState& state = *models_[model];
  {
    std::lock_guard<std::mutex> lock(state.control_mu);
    if (state.control.load() == ModelState::kUnavailable) {
      done(absl::OkStatus());
      return;
    }
    state.control = ModelState::kUnloading;
    state.unloading.push_back(std::move(done));
  }
  // Completes at once when nothing is pending (a Release that ran before
  // the state changed did not).
  state.queued.fetch_add(1);
  Release(state, 1);
}

void InferenceFrontend::UnloadWithDependents(int model, bool dependents, std::function<void(absl::Status)> done) {
  std::vector<int> unload = {model};
  for (int g = 0; dependents && g < num_models(); ++g) {
    for (const EnsembleStep& step : models_[g]->served.config.steps) {
      if (step.model_name == models_[model]->served.config.name) {
        unload.push_back(g);
        break;
      }
    }
  }
  struct Join {
    std::mutex mu;
    size_t left;
    absl::Status first;
    std::function<void(absl::Status)> done;
  };
  auto join = std::make_shared<Join>();
  join->left = unload.size();
  join->done = std::move(done);
  for (int m : unload) {
    Unload(m, [join](absl::Status s) {
      {
        std::lock_guard<std::mutex> lock(join->mu);
        join->first.Update(s);
        if (--join->left > 0) return;
      }
      join->done(join->first);
    });
  }
}

}  // namespace tutti
