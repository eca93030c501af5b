#include "tutti/serving/inference_engine.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "tutti/tracing/tracer.h"

namespace tutti {

absl::Status CheckSubmission(const ClusterSpec& spec, const std::vector<ModelShape>& shapes, ModelId model,
                             size_t input_size, Duration objective) {
  if (model < 0 || model >= static_cast<ModelId>(spec.models.size())) {
    return absl::NotFoundError(absl::StrCat("unknown model id ", model));
  }
  if (static_cast<int64_t>(input_size) != shapes[model].input_elements) {
    return absl::InvalidArgumentError(absl::StrCat("model '", spec.models[model].name, "' takes ",
                                                   shapes[model].input_elements, " input values, got ", input_size));
  }
  if (objective < 0) return absl::InvalidArgumentError("the latency objective must not be negative");
  return absl::OkStatus();
}

absl::Status InferenceEngine::SubmitWith(ModelId model, const RequestContext& context, std::vector<float> input,
                                         Duration objective, InferenceCallback done) {
  if (context.sequence.id != 0) return absl::InvalidArgumentError("this server keeps no sequences");
  return Submit(model, std::move(input), objective, std::move(done));
}

absl::Status CancelledError(const ClusterSpec& spec, ModelId model) {
  return absl::CancelledError(absl::StrCat("this '", spec.models[model].name, "' request was cancelled (its client "
                                           "went away or cancelled it, or its timeout passed) before it ran"));
}

absl::Status DroppedError(const ClusterSpec& spec, ModelId model) {
  return absl::DeadlineExceededError(absl::StrCat("the latency objective of this '", spec.models[model].name,
                                                  "' request cannot be met; it was dropped before execution"));
}

void RecordRequestSpans(Tracer& tracer, const TraceContext& parent, const std::string& model,
                        const InferenceOutcome& out) {
  const bool ran = out.batch_size > 0;
  if (!parent.recording() || (!ran && out.arrival == 0)) return;  // refused: it had no life in the engine
  Span queue{Tracer::Child(parent), "queue", Span::Kind::kInternal, out.arrival, ran ? out.started : out.finished};
  queue.attributes.push_back({"tutti.model", model});
  if (ran && out.dispatched > 0) {
    // Relative to its arrival: what the scheduler planned, what it did.
    queue.attributes.push_back({"tutti.planned_start_us", static_cast<int64_t>(ToMicros(out.planned_start - out.arrival))});
    queue.attributes.push_back({"tutti.dispatched_us", static_cast<int64_t>(ToMicros(out.dispatched - out.arrival))});
    queue.attributes.push_back({"tutti.started_us", static_cast<int64_t>(ToMicros(out.started - out.arrival))});
  } else if (!ran && !out.status.ok()) {
    queue.error = std::string(out.status.message());
  }
  tracer.Record(std::move(queue));
  if (!ran) return;
  Span compute{Tracer::Child(parent), "compute", Span::Kind::kInternal, out.started, out.finished};
  compute.attributes = {{"tutti.model", model}, {"tutti.batch_size", int64_t{out.batch_size}}, {"tutti.late", out.late}};
  if (out.executor >= 0) compute.attributes.push_back({"tutti.executor", int64_t{out.executor}});
  if (!out.status.ok()) compute.error = std::string(out.status.message());
  tracer.Record(std::move(compute));
  if (out.released > 0) RecordReplicateSpan(tracer, parent, out.finished, out.released);
}

void RecordReplicateSpan(Tracer& tracer, const TraceContext& parent, Time computed, Time released) {
  Span span{Tracer::Child(parent), "replicate", Span::Kind::kInternal, computed, std::max(computed, released)};
  span.attributes.push_back({"tutti.held_us", static_cast<int64_t>(ToMicros(std::max<Duration>(0, released - computed)))});
  tracer.Record(std::move(span));
}

}  // namespace tutti
