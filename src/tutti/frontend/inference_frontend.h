// InferenceFrontend: the protocol-neutral half of a KServe v2 frontend,
// shared by the HTTP routes (KserveService) and the gRPC service
// (KserveGrpcService): the served models by name and version, readiness,
// inference of a parsed request, and per-model statistics.
//
// A request's N items are scheduled individually; its answer waits for all
// of them and is the first item's error if any failed. Admission control:
// a request that would take a model's items waiting or running beyond
// Options::max_queue_size is refused at once (ResourceExhausted), as
// Triton's max_queue_size does, instead of queueing without bound.
//
// Model control (Triton's model repository extension): every served model
// is loaded at start. Unload() stops a model taking requests and reports
// once every request it accepted is answered (nothing accepted is lost);
// Load() takes them again. Its executors and the scheduler's plan stay as
// the serve config placed them, so a model is loaded again at once; in
// distributed mode each frontend process controls its own.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_FRONTEND_INFERENCE_FRONTEND_H_
#define TUTTI_FRONTEND_INFERENCE_FRONTEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tutti/frontend/access.h"
#include "tutti/codec/infer_request.h"
#include "tutti/planner/variant_selection.h"
#include "tutti/repository/model_config.h"
#include "tutti/serving/inference_engine.h"
#include "tutti/tracing/tracer.h"

namespace tutti {

struct InferenceFrontendOptions {
  AccessOptions access;        // who may call what (see access.h)
  int64_t max_queue_size = 0;  // per model: items waiting or running; 0: no limit
  // Runs on an admin's shutdown request (POST /v2/tutti/shutdown); null:
  // remote shutdown is not offered.
  std::function<void()> shutdown;
  // Prometheus text appended to /metrics (e.g. the server's replication
  // figures); null: none.
  std::function<std::string()> extra_metrics;
  // Model-less requests routed by the server instead of ChooseForTask's
  // own selection (INFaaS's autoscaled variants: autoscale/
  // task_autoscaler.h): for a task it routes, the variant to run (a served
  // model's name); nullopt for the tasks it does not route. Null: none.
  struct RoutedTask {
    std::string model;
    bool meets = false;
    std::string note;
  };
  std::function<std::optional<RoutedTask>(absl::string_view task, double min_accuracy, Duration objective)> route_task;
  // The state and utilisation of a variant that router scales (by model
  // name), in place of the frontend's own monitoring; nullopt for others.
  struct RoutedStatus {
    VariantState state = VariantState::kInactive;
    double utilisation = 0;
  };
  std::function<std::optional<RoutedStatus>(absl::string_view model)> routed_status;
  // Starts each request's trace (Tracer::StartRequest) and records the
  // frontend's spans of those it samples: the request, server-side, from
  // receipt to its answer written, and "respond", its writing (null: no
  // tracing). Outlives the frontend.
  Tracer* tracer = nullptr;
};

// What a transport hands back once a request's answer is written
// (InferenceFrontend::AnswerWritten): per item, what the engine learns its
// response delay from; and the request's span.
struct AnswerReceipt {
  std::vector<WrittenAnswer> items;
  TraceContext trace;  // recording(): the frontend records its spans
  int model = -1;
  Time received = 0;   // on the engine's clock
  Time answered = 0;
};

class InferenceFrontend {
 public:
  using ServedModel = ::tutti::ServedModel;
  // An answered request: its outputs and how it was served.
  struct InferResult {
    std::vector<std::vector<float>> outputs;  // one per item
    bool emulated = false;       // by an emulated executor: outputs are placeholders
    bool late = false;           // some item finished after its deadline
    bool reconstructed = false;  // some item was rebuilt by ParM
    int max_batch = 0;           // the largest batch an item ran in
    Duration max_queue = 0, max_compute = 0;
    Time arrival = 0;            // the engine received it (its deadline's start), on the engine's clock
    AnswerReceipt written;       // what to report once the answer is written
  };
  using InferDone = std::function<void(absl::StatusOr<InferResult>)>;
  using Options = InferenceFrontendOptions;

  // models[i] is the engine's model i. `engine` must outlive this.
  InferenceFrontend(InferenceEngine* engine, std::vector<ServedModel> models, Options options = {});
  ~InferenceFrontend();

  // The model called `name` (not an internal one); `version` is "" or the
  // served version's number. NotFound naming the model or version otherwise.
  absl::StatusOr<int> FindModel(absl::string_view name, absl::string_view version = "") const;
  const ServedModel& served(int model) const;
  int num_models() const { return static_cast<int>(models_.size()); }
  Tracer* tracer() const { return options_.tracer; }  // null: no tracing
  // The models clients see (not ServedModel::internal), in model order.
  std::vector<int> ListedModels() const;

  // Whether a call to `api` with this Authorization value may run (see
  // AccessPolicy::Check). Both protocols ask it at every call's start,
  // which AwaitQuiet watches.
  absl::Status Authorize(Api api, absl::string_view authorization) const;
  // Returns once no call has begun for `quiet`, or after `bound` (real
  // time: a serving process's drain). Once StopAccepting() has been
  // called, a client mid-loop sends one more call, which is refused
  // (UNAVAILABLE, 503 with Connection: close); closing the listeners while
  // such calls arrive would cancel them or reset their connections instead.
  void AwaitQuiet(Duration quiet, Duration bound) const;
  // Starts a graceful shutdown (Options::shutdown); Unimplemented without one.
  absl::Status RequestShutdown();

  // Ready until StopAccepting().
  bool ready() const { return ready_; }
  void StopAccepting() { ready_ = false; }

  // Model control. A model's state in the repository index: "READY",
  // "UNLOADING" (answering what it accepted) or "UNAVAILABLE" (unloaded),
  // and why when it is not ready.
  struct ModelStatus {
    std::string state;
    std::string reason;
  };
  ModelStatus Status(int model) const;
  // ready() and the model loaded.
  bool model_ready(int model) const;
  // Takes the model's requests again (an unload still draining is answered
  // Aborted).
  void Load(int model);
  // Stops taking the model's requests (they are answered Unavailable, with
  // how to load it) and calls `done` once every request it accepted is
  // answered: at once when none is pending, else on the thread that answers
  // the last. Unloading an unloaded model is done at once.
  void Unload(int model, std::function<void(absl::Status)> done);
  // Unload(), and with `dependents` also every graph that runs `model` as a
  // step (Triton's unload_dependents); `done` once all have drained, with
  // the first error if any.
  void UnloadWithDependents(int model, bool dependents, std::function<void(absl::Status)> done);

  // Model-less requests (INFaaS): the request names a task and what it
  // needs. A task's variants are its served models with a measured
  // accuracy, stateless, with the same input and output tensors as the
  // first such (in model order), and loaded (an unloaded one was unloaded on
  // purpose).
  std::vector<int> TaskVariants(absl::string_view task) const;
  // INFaaS's monitoring (§4.1; its daemons report every 2 s): each loaded
  // model's state (planner/variant_selection.h NextVariantState), moved once
  // per kVariantWindow on the engine's clock by the first call after it,
  // from the window's measures: the requests it was given per second
  // (answered, dropped or refused: a saturated model answers only its
  // peak) against its ServedModel::peak_rps — Overloaded at or above it —
  // and how much slower than its profile its batches ran (the engine's
  // measured compute ratio, its slowest executor's) — Interfered at 1.2×.
  // Its utilisation is the given rate over the peak (0: peak unknown).
  static constexpr Duration kVariantWindow = 2 * kSecond;
  struct VariantStatus {
    VariantState state = VariantState::kInactive;
    double utilisation = 0;
  };
  // Of `models`, in their order (Options::routed_status's for the variants
  // a router scales).
  std::vector<VariantStatus> VariantStatuses(const std::vector<int>& models) const;
  // INFaaS's getVariant (planner/variant_selection.h) over `variants` (a
  // task's, from TaskVariants): accuracy from their configs; latency their
  // profiled ℓ(1) plus, per scheduled step, the margins the scheduler plans
  // with now; state and utilisation from VariantStatuses, the items in
  // flight per max batch breaking ties (and standing in for utilisation
  // when the peak is unknown) — unless Options::route_task routes `task`.
  // REQUIRES: variants not empty.
  struct TaskChoice {
    int model = -1;
    bool meets = false;
    std::string note;  // why, when it does not meet the requirements
  };
  TaskChoice ChooseForTask(absl::string_view task, const std::vector<int>& variants, double min_accuracy,
                           Duration objective) const;

  // Counts a request refused before scheduling (bad input) for `model`.
  void CountRejected(int model);

  // Schedules the request's items; `done` is called exactly once, on any
  // thread, possibly before Infer returns: with the outputs, or with the
  // error of the first failed item (DeadlineExceeded: the objective cannot
  // be met; Unavailable: shutting down, or the model is unloaded;
  // ResourceExhausted: the model's queue is full; others: execution
  // failures).
  void Infer(int model, InferRequest request, InferDone done);

  // How long the server has held the request of `result` by now, from
  // receipt: the `tutti_server_us` of its answer.
  Duration ServerTime(const InferResult& result) const { return engine_->Now() - result.arrival; }
  // The answer of a request (InferResult::written) was written to its
  // client's connection: the engine learns its response delay, and the
  // request's spans are recorded.
  void AnswerWritten(const AnswerReceipt& written);

  // {"model_name", "success", "late", …, "mean_compute_us", "peak_rps",
  // "delays": {…}}: counts, mean durations, its ServedModel::peak_rps, and
  // what the scheduler plans with for it.
  std::string StatsJson(int model) const;
  // Prometheus text exposition of every model's and executor's metrics.
  std::string PrometheusText() const;

  // Triton's statistics extension for a model, counted per request (not
  // per item) since the start: the requests answered and failed with their
  // summed time on the server (receipt to answer, engine clock); for the
  // answered, their queue and compute time (the slowest item's: Tutti's
  // compute includes copying inputs and outputs, so compute_input and
  // compute_output count the same requests with no time of their own);
  // items answered; the batches they ran in (a batch shared with other
  // models, as a prefix group's, counted by their share of its items); when
  // the last request was answered (ms since the epoch, wall clock; 0: none
  // yet).
  struct Statistics {
    struct Summed {
      int64_t count = 0;
      int64_t ns = 0;
    };
    Summed success, fail, queue, compute_infer;
    Summed compute_input, compute_output;  // compute_infer's count, no time of their own
    int64_t inference_count = 0;
    int64_t execution_count = 0;
    int64_t last_inference_ms = 0;
  };
  Statistics ModelStatistics(int model) const;
  // {"model_stats": [...]} in Triton's shape for `models`, each with Tutti's
  // own figures (StatsJson) under "tutti".
  std::string StatisticsJson(const std::vector<int>& models) const;

  // What the console samples of each model, in model order: the engine's
  // counters, the refusals, and the buckets (PromHistogram::Buckets) of
  // answered items' latency (over PromHistogram::LatencyBounds()) and
  // batch size (over BatchBounds()), all counted since the start.
  struct ModelSample {
    ModelCounters counters;
    int64_t rejected = 0, overloaded = 0;
    std::vector<int64_t> latency_buckets;
    std::vector<int64_t> batch_buckets;
  };
  std::vector<ModelSample> Sample() const;
  const InferenceEngine& engine() const { return *engine_; }

 private:
  struct ModelState;
  // `n` of the model's items are answered (or refused); completes an unload
  // that waited for them.
  static void Release(ModelState& state, int64_t n);
  // Records the SERVER span of a request for `model` ("infer <model>"),
  // with its answer's item count (0: none) or its error.
  void RecordRequestSpan(const TraceContext& trace, int model, Time start, Time end, int64_t items,
                         std::string error) const;
  // Counts a request's answer in its model's Statistics.
  void CountAnswer(ModelState& state, Time received, const absl::StatusOr<InferResult>& answer) const;

  // VariantStatuses' memory: per model, what it was given up to `at`.
  struct VariantMonitor;
  // Moves the states once a window has passed. REQUIRES: monitor_->mu held.
  void ObserveVariants() const;

  InferenceEngine* const engine_;
  const Options options_;
  const AccessPolicy access_;
  std::vector<std::unique_ptr<ModelState>> models_;
  std::atomic<bool> ready_{true};
  mutable std::atomic<int64_t> calls_{0};  // begun, for AwaitQuiet
  const std::unique_ptr<VariantMonitor> monitor_;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_INFERENCE_FRONTEND_H_
