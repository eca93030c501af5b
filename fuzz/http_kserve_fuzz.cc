// The HTTP request path into the KServe codec: KserveService::Handle — the
// routes, headers (the binary extension's Inference-Header-Content-Length,
// Authorization, traceparent) and bodies — over an engine that answers at
// once, on an open server that traces every request and on one guarded by
// tokens.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "fuzz/fuzz_util.h"
#include "tutti/frontend/inference_frontend.h"
#include "tutti/core/manual_clock.h"
#include "tutti/frontend/kserve_service.h"
#include "tutti/tracing/tracer.h"

namespace tutti::fuzz {
namespace {

// Answers every request at once with zeros, on the caller's thread.
class InstantEngine final : public InferenceEngine {
 public:
  absl::Status Submit(ModelId, std::vector<float> input, Duration, InferenceCallback done) override {
    if (input.size() != 4) return absl::InvalidArgumentError("input size");
    InferenceOutcome o;
    o.output.assign(3, 0.0f);
    o.batch_size = 1;
    done(std::move(o));
    return absl::OkStatus();
  }
  void StopAccepting() override {}
  void WaitIdle() override {}
  int64_t in_flight() const override { return 0; }
  std::vector<ModelCounters> Counters() const override { return std::vector<ModelCounters>(1); }
  std::vector<double> BusyFractions() const override { return {}; }
  Time Now() const override { return 0; }
  void OnAnswerWritten(const WrittenAnswer&) override {}
  DelayReport Delays() const override { return {}; }
};

// Spans go nowhere (they are still built and encoded).
class Discard final : public SpanExporter {
 public:
  absl::Status Export(const std::string&) override { return absl::OkStatus(); }
};

Tracer* EveryRequestTraced() {
  static ManualClock clock(0);
  std::vector<std::unique_ptr<SpanExporter>> exporters;
  exporters.push_back(std::make_unique<Discard>());
  static Tracer tracer(TracerOptions{.sampling_ratio = 1}, &clock, std::move(exporters));
  return &tracer;
}

}  // namespace
}  // namespace tutti::fuzz

// The input: "METHOD TARGET\nName: value\n…\n\nBODY" (any bytes anywhere).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tutti::fuzz::InstantEngine engine;
  static tutti::InferenceFrontend frontend(&engine, {{tutti::fuzz::Model(), 1}},
                                           tutti::InferenceFrontend::Options{.tracer = tutti::fuzz::EveryRequestTraced()});
  static tutti::KserveService service(&frontend);
  static tutti::InferenceFrontend guarded_frontend(
      &engine, {{tutti::fuzz::Model(), 1}},
      tutti::InferenceFrontend::Options{.access = {{"inference-token-0123456789"}, {"admin-token-0123456789abcdef"}},
                                        .max_queue_size = 8,
                                        .shutdown = [] {}});
  static tutti::KserveService guarded(&guarded_frontend);
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t head_end = text.find("\n\n");
  const std::string head = text.substr(0, head_end);
  tutti::HttpRequest request;
  if (head_end != std::string::npos) request.body = text.substr(head_end + 2);
  std::vector<std::string> lines = absl::StrSplit(head, '\n');
  const std::vector<std::string> start = absl::StrSplit(lines[0], absl::MaxSplits(' ', 1));
  request.method = start[0];
  request.target = start.size() > 1 ? start[1] : "/";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> kv = absl::StrSplit(lines[i], absl::MaxSplits(": ", 1));
    request.headers.emplace_back(kv[0], kv.size() > 1 ? kv[1] : "");
  }
  auto respond = [](tutti::HttpResponse r) {
    if (r.prepare) r.prepare(&r);
    if (r.on_written) r.on_written();
  };
  guarded.Handle(request, respond);
  service.Handle(std::move(request), respond);
  return 0;
}
