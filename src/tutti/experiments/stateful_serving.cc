#include "tutti/experiments/stateful_serving.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tutti/core/real_clock.h"
#include "tutti/core/status_macros.h"
#include "tutti/models/torch_model.h"
#include "tutti/deployment/cluster_layout.h"
#include "tutti/server/layout_runtime.h"
#include "tutti/serving/inference_core.h"

namespace tutti {
namespace {

constexpr Duration kPlanSampleEvery = 20 * kMillisecond;

// The clients: each walks through images, one request per step.
class Clients {
 public:
  // `step_elements`: a sequence's step; 0 for a compute-then-update model,
  // whose requests are whole images followed by their labels.
  // `seed`: of the clients' pauses.
  Clients(InferenceEngine* engine, ModelId model, const ImageSet& images, int64_t step_elements,
          const StatefulServingSetup& setup, uint64_t seed, Clock* clock)
      : engine_(engine), model_(model), images_(images), pixels_(images.ToFloat(0, images.size())),
        online_(step_elements == 0), step_(online_ ? images.image_size() : step_elements),
        steps_(static_cast<int>(images.image_size() / step_)), setup_(setup), clock_(clock),
        clients_(setup.sequences), rng_(seed) {
    for (int c = 0; c < setup.sequences; ++c) clients_[c].image = c;
  }

  // `on`: false starts no image until Resume (StatefulServingSetup::turn).
  void Start(Time until, bool on) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      until_ = until;
      finished_ = clock_->Now();  // if none is sent
      on_ = on;
    }
    for (int c = 0; c < static_cast<int>(clients_.size()); ++c) Send(c);
  }
  // A client that finishes an image starts no other until Resume; one in
  // the middle of an image goes on to its end.
  void Pause() {
    std::lock_guard<std::mutex> lock(mu_);
    on_ = false;
  }
  // The clients Pause held start their next images.
  void Resume() {
    std::vector<int> parked;
    {
      std::lock_guard<std::mutex> lock(mu_);
      on_ = true;
      parked.swap(parked_);
    }
    for (int c : parked) Send(c);
  }
  // Returns when every request sent is answered and none will be sent:
  // the instant the last was answered.
  Time Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [this] { return outstanding_ == 0; });
    return finished_;
  }

  StatefulServingResult Result() {
    std::lock_guard<std::mutex> lock(mu_);
    StatefulServingResult r;
    r.requests = requests_;
    r.answers = answers_;
    r.duplicates = duplicates_;
    r.errors = errors_;
    r.first_error = first_error_;
    r.late = late_;
    r.images = images_done_;
    r.accuracy = images_done_ == 0 ? 0 : static_cast<double>(correct_) / static_cast<double>(images_done_);
    std::sort(latency_.begin(), latency_.end());
    if (!latency_.empty()) {
      r.p50_ms = ToMillis(latency_[latency_.size() / 2]);
      r.p99_ms = ToMillis(latency_[std::min(latency_.size() - 1, latency_.size() * 99 / 100)]);
    }
    return r;
  }

 private:
  struct Client {
    int64_t image = 0;
    int step = 0;
    uint64_t sequence = 0;
  };

  void Send(int c) {
    std::vector<float> input;
    SequenceRef ref;
    int64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Client& cl = clients_[c];
      if (cl.step == 0) {
        if (clock_->Now() >= until_) return;  // no new image after the end
        if (!on_) {
          parked_.push_back(c);
          return;
        }
        cl.sequence = online_ ? 0 : ++next_sequence_;
      }
      ref = {cl.sequence, cl.step == 0, cl.step == steps_ - 1};
      const int64_t image = cl.image % images_.size();
      const float* at = pixels_.data() + image * images_.image_size() + cl.step * step_;
      input.assign(at, at + step_);
      if (online_) input.push_back(images_.labels[image]);  // learnt from after its answer
      id = requests_++;
      ++outstanding_;
      answered_.push_back(false);
    }
    const Time sent = clock_->Now();
    absl::Status s = engine_->SubmitWith(model_, {.sequence = ref}, std::move(input), setup_.objective,
                                               [this, c, id, sent, ref](InferenceOutcome o) {
                                                 OnAnswer(c, id, sent, ref, std::move(o));
                                               });
    if (!s.ok()) {
      InferenceOutcome o;
      o.status = s;
      OnAnswer(c, id, sent, ref, std::move(o));
    }
  }

  void OnAnswer(int c, int64_t id, Time sent, SequenceRef ref, InferenceOutcome o) {
    bool next = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (answered_[id]) {
        ++duplicates_;
        return;
      }
      answered_[id] = true;
      ++answers_;
      latency_.push_back(clock_->Now() - sent);
      late_ += o.late;
      Client& cl = clients_[c];
      if (!o.status.ok()) {
        if (errors_++ == 0) first_error_ = o.status.ToString();
        cl.step = 0;  // the image is abandoned; its sequence is left to expire
        cl.image += setup_.sequences;
      } else if (ref.end) {
        ++images_done_;
        const auto best = std::max_element(o.output.begin(), o.output.end()) - o.output.begin();
        correct_ += best == images_.labels[cl.image % images_.size()];
        cl.step = 0;
        cl.image += setup_.sequences;
      } else {
        ++cl.step;
      }
      next = true;
    }
    if (next && setup_.think > 0) {
      Duration pause;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++outstanding_;  // the pause counts until its request is sent
        pause = static_cast<Duration>(think_(rng_));
      }
      clock_->ScheduleAfter(pause, [this, c] {
        Send(c);
        Done();
      });
    } else if (next) {
      Send(c);
    }
    Done();
  }

  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--outstanding_ == 0) {
      finished_ = clock_->Now();
      idle_.notify_all();
    }
  }

  InferenceEngine* const engine_;
  const ModelId model_;
  const ImageSet& images_;
  const std::vector<float> pixels_;
  const bool online_;
  const int64_t step_;
  const int steps_;
  const StatefulServingSetup& setup_;
  Clock* const clock_;
  Time until_ = 0;
  Time finished_ = 0;

  std::mutex mu_;
  std::condition_variable idle_;
  std::vector<Client> clients_;
  bool on_ = true;
  std::vector<int> parked_;  // between images, until Resume
  std::vector<bool> answered_;
  std::vector<Duration> latency_;
  std::string first_error_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> think_{
      1.0 / static_cast<double>(std::max<Duration>(setup_.think, 1))};
  uint64_t next_sequence_ = 0;
  int64_t requests_ = 0, answers_ = 0, duplicates_ = 0, errors_ = 0, late_ = 0, outstanding_ = 0;
  int64_t images_done_ = 0, correct_ = 0;
};

// One mode's serving road, from its executors to its clients.
struct Stack {
  ReplicatedExecutor* slot = nullptr;  // the stateful steps' executor slot, owned by core
  std::unique_ptr<InferenceCore> core;
  std::unique_ptr<SequenceEngine> sequences;
  std::unique_ptr<GraphEngine> graphs;
  InferenceEngine* engine = nullptr;  // the outermost of the three
  std::unique_ptr<Clients> clients;

  ~Stack() {
    if (engine == nullptr) return;
    engine->StopAccepting();
    engine->WaitIdle();
  }
};

absl::StatusOr<std::unique_ptr<Stack>> BuildStack(const ModelRepository& repo, const StatefulServingSetup& setup,
                                                  ReplicationMode mode, uint64_t seed, const ImageSet& images,
                                                  Clock* clock) {
  ServerConfig config;
  config.policy = setup.policy;
  config.scheduler.max_in_flight = setup.max_in_flight;
  config.replication = setup.replication;
  config.replication.mode = mode;
  if (setup.planned_dispatch > 0) {
    config.delays.measure = false;
    config.network.ctrl = setup.planned_dispatch;
  }
  // A graph (gru_pipeline): its stateful steps on one executor (with its
  // backup), the stateless ones on another.
  TUTTI_ASSIGN_OR_RETURN(const ModelVersion* top, repo.Find(setup.model));
  std::vector<std::string> stateful, stateless;
  if (top->config.platform == Platform::kEnsemble) {
    for (const EnsembleStep& step : top->config.steps) {
      TUTTI_ASSIGN_OR_RETURN(const ModelVersion* v, repo.Find(step.model_name));
      (v->config.stateful() ? stateful : stateless).push_back(step.model_name);
    }
  } else {
    stateful.push_back(setup.model);
  }
  if (stateful.empty() || !(*repo.Find(stateful[0]))->config.stateful()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", setup.model,
        "' is not stateful (neither sequence_batching nor model_state), nor a graph with a stateful step"));
  }
  config.executors = {{"torch", 1, "cpu", stateful, setup.accelerator}};
  if (!stateless.empty()) config.executors.push_back({"torch", 1, "cpu", stateless});
  TUTTI_ASSIGN_OR_RETURN(config, ResolveServerConfig(config, repo));
  TUTTI_ASSIGN_OR_RETURN(ClusterLayout layout, LayOutCluster(repo, config));
  if (setup.accelerator > 0) {  // the scheduler plans the paced batches: ℓ(b) at least the pace
    for (ModelId id : layout.spec.sub_clusters.at(0).models) {
      LatencyProfile& profile = layout.spec.models[id].profile;
      std::vector<ProfilePoint> points;
      for (int b = 1; b <= profile.max_batch(); ++b) {
        points.push_back({b, std::max(profile.Latency(b), setup.accelerator)});
      }
      TUTTI_ASSIGN_OR_RETURN(profile, LatencyProfile::FromPoints(std::move(points), Monotonicity::kEnforce));
    }
  }
  const ModelConfig& model = layout.served[0].config;  // the stateful one
  std::vector<std::unique_ptr<Executor>> executors;
  for (size_t g = 0; g < config.executors.size(); ++g) {
    TUTTI_ASSIGN_OR_RETURN(executors.emplace_back(), MakeGroupExecutor(layout, config, g, clock));
  }
  auto stack = std::make_unique<Stack>();
  stack->slot = dynamic_cast<ReplicatedExecutor*>(executors[0].get());
  InferenceCore::Options options{config.policy, config.scheduler, config.delays, {}};
  TUTTI_ASSIGN_OR_RETURN(stack->core,
                         InferenceCore::Create(layout.spec, layout.shapes, std::move(executors), options, clock));
  stack->sequences = ServeSequences(stack->core.get(), layout.spec, layout, clock);
  stack->engine = stack->sequences ? static_cast<InferenceEngine*>(stack->sequences.get()) : stack->core.get();
  ModelId served = 0;
  const size_t inner = layout.spec.models.size();
  TUTTI_ASSIGN_OR_RETURN(stack->graphs, ServeGraphs(stack->engine, layout.spec, &layout));
  if (top->config.platform == Platform::kEnsemble) {
    for (size_t i = inner; i < layout.served.size(); ++i) {
      if (layout.served[i].config.name == setup.model) served = static_cast<ModelId>(i);
    }
    if (stack->graphs == nullptr || served == 0) {
      return absl::InvalidArgumentError(absl::StrCat("graph '", setup.model, "' cannot be served"));
    }
    stack->engine = stack->graphs.get();
  }
  stack->clients = std::make_unique<Clients>(stack->engine, served, images,
                                             model.sequence_batching ? model.inputs[0].ElementCount() : 0, setup,
                                             seed, clock);
  return stack;
}

}  // namespace

absl::StatusOr<std::vector<StatefulServingResult>> MeasureStatefulServing(const ModelRepository& repo,
                                                                          const StatefulServingSetup& setup,
                                                                          const std::vector<ReplicationMode>& modes,
                                                                          const ImageSet& images) {
  if (modes.empty()) return absl::InvalidArgumentError("no replication mode to measure");
  SetInjectedNondeterminism(setup.nondeterminism);
  RealClock clock;
  std::vector<std::unique_ptr<Stack>> stacks;
  for (size_t m = 0; m < modes.size(); ++m) {
    TUTTI_ASSIGN_OR_RETURN(stacks.emplace_back(), BuildStack(repo, setup, modes[m], 7 + m, images, &clock));
  }
  const bool turns = setup.turn > 0 && stacks.size() > 1;
  const Time start = clock.Now();
  for (size_t i = 0; i < stacks.size(); ++i) stacks[i]->clients->Start(start + setup.duration, !turns || i == 0);
  // Until `t`, each stack's planned dispatch delay, sampled every
  // kPlanSampleEvery (StatefulServingResult::planned_dispatch_us); and
  // with turns, the next stack's turn at each turn's end.
  std::vector<double> planned(stacks.size());
  int64_t samples = 0;
  size_t on = 0;
  Time turn_ends = turns ? start + setup.turn : kInfiniteFuture;
  auto sample_until = [&](Time t) {
    for (Time now = clock.Now(); now < t; now = clock.Now()) {
      if (now >= turn_ends) {
        stacks[on]->clients->Pause();
        on = (on + 1) % stacks.size();
        stacks[on]->clients->Resume();
        turn_ends += setup.turn;
      }
      for (size_t i = 0; i < stacks.size(); ++i) {
        planned[i] += ToMicros(stacks[i]->core->Delays().plan.network.Dispatch(1));
      }
      ++samples;
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min({kPlanSampleEvery, t - now, turn_ends - now})));
    }
  };
  absl::Status killed;  // returned once the clients are done: they run until then
  if (setup.kill_at > 0) {
    sample_until(start + setup.kill_at);
    for (auto& stack : stacks) killed.Update(stack->slot->KillPrimary());
  } else if (setup.hang_at > 0) {
    sample_until(start + setup.hang_at);
    for (auto& stack : stacks) stack->slot->HangPrimary();
  }
  sample_until(start + setup.duration);
  std::vector<StatefulServingResult> results;
  for (size_t i = 0; i < stacks.size(); ++i) {
    Stack& stack = *stacks[i];
    const Duration took = std::max<Duration>(1, stack.clients->Wait() - start);
    StatefulServingResult& r = results.emplace_back(stack.clients->Result());
    r.throughput = static_cast<double>(r.answers) / ToSeconds(took) * (turns ? stacks.size() : 1);
    r.replication = stack.slot->stats();
    r.planned_dispatch_us = samples == 0 ? 0 : planned[i] / static_cast<double>(samples);
    r.dispatch = stack.core->Delays().histograms[static_cast<int>(Delay::kDispatch)];
  }
  stacks.clear();
  SetInjectedNondeterminism(false);
  if (!killed.ok()) return killed;
  return results;
}

}  // namespace tutti
