// Tracer: records the spans of the requests it samples and exports them as
// OpenTelemetry's OTLP/JSON — to an OTLP/HTTP collector (POST to its
// /v1/traces) or to a file, a line per export as the OpenTelemetry
// Collector's file exporter writes them.
//
// Sampling follows OpenTelemetry's default, parent-based: a request that
// arrives with a valid `traceparent` is recorded iff its sampled flag is set;
// one without starts a trace, recorded with probability `sampling_ratio`.
// An unrecorded request costs one draw and no allocation.
//
// Spans are kept in memory and exported by a thread of the tracer's own every
// `flush_interval` and when it is destroyed (Flush() forces one); at most
// `max_buffered` wait — beyond that, spans are dropped and counted. Export
// failures are counted, never surfaced to requests.
//
// Timestamps: spans are stamped with instants of the engine's clock, mapped
// to the Unix epoch by the offset the tracer reads at its construction.
//
// Thread-safety: every method may be called from any thread.
#ifndef TUTTI_TRACING_TRACER_H_
#define TUTTI_TRACING_TRACER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "tutti/core/clock.h"
#include "tutti/core/time.h"
#include "tutti/tracing/trace_context.h"

namespace tutti {

struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t, double, bool> value;
};

struct Span {
  enum class Kind { kInternal = 1, kServer = 2 };  // OTLP's SpanKind numbers
  TraceContext context;  // its trace, its id and its parent's
  std::string name;
  Kind kind = Kind::kInternal;
  Time start = 0;  // on the tracer's clock
  Time end = 0;
  std::vector<SpanAttribute> attributes;
  std::string error;  // not empty: the span failed, with this message
};

// Where exported spans go: one call per export, `json` an OTLP/JSON
// ExportTraceServiceRequest.
class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual absl::Status Export(const std::string& json) = 0;
};

// Appends each export as one line to `path` (created if missing).
absl::StatusOr<std::unique_ptr<SpanExporter>> NewFileExporter(const std::string& path);
// POSTs each export to `url`, "http://host:port/path" (OTLP/HTTP with a
// JSON body; an OpenTelemetry Collector listens on :4318/v1/traces). The
// timeout bounds each POST.
absl::StatusOr<std::unique_ptr<SpanExporter>> NewOtlpHttpExporter(const std::string& url, Duration timeout);

struct TracerOptions {
  double sampling_ratio = 0;   // of requests that arrive without a traceparent
  std::string file;            // export to this file …
  std::string otlp_endpoint;   // … and/or to this OTLP/HTTP URL
  std::string service_name = "tutti";  // the resource's service.name
  Duration flush_interval = 1 * kSecond;
  size_t max_buffered = 1 << 16;
  size_t slowest_kept = 5;  // Tracer::TakeSlowest
  // Where a trace can be seen, "{trace_id}" standing for its id (e.g. a
  // Jaeger UI's "http://jaeger:16686/trace/{trace_id}"); "": nowhere known.
  std::string link;
};

// A link to trace `trace_id` by `link_template` (TracerOptions::link); ""
// when the template is empty.
std::string TraceLink(const std::string& link_template, const std::string& trace_id);

// OTLP/JSON of `spans` from a service called `service_name`, their instants
// on a clock that reads `unix_offset` nanoseconds behind the Unix epoch.
std::string OtlpJson(const std::string& service_name, const std::vector<Span>& spans, int64_t unix_offset);

class Tracer {
 public:
  // The tracer `options` describe: an exporter per destination (at least
  // one); InvalidArgument for a ratio outside [0, 1] or a bad URL, or the
  // file's error. `clock` outlives it.
  static absl::StatusOr<std::unique_ptr<Tracer>> Create(const TracerOptions& options, const Clock* clock);
  // With an exporter of the caller's (tests).
  Tracer(const TracerOptions& options, const Clock* clock, std::vector<std::unique_ptr<SpanExporter>> exporters);
  ~Tracer();  // flushes what is buffered

  // The span of a request that arrived with `parent` (nullopt: none, or
  // malformed): recording() iff sampled (see above).
  TraceContext StartRequest(const std::optional<TraceContext>& parent) const;
  // A child span of `parent` (a recording one stays recording).
  static TraceContext Child(const TraceContext& parent);

  // Keeps `span` for export; ignored unless span.context.recording().
  void Record(Span span);
  // Exports what is buffered now; returns once done.
  void Flush();

  // The slowest requests (SERVER spans) recorded since the last call,
  // slowest first, at most options.slowest_kept: for a console to link a
  // slow request to its trace.
  struct SlowRequest {
    std::string trace_id;  // 32 hex digits
    std::string name;      // the span's
    Duration duration = 0;
    std::string error;     // the span's
  };
  std::vector<SlowRequest> TakeSlowest();
  const TracerOptions& options() const { return options_; }

  const Clock* clock() const { return clock_; }

  struct Counts {
    int64_t recorded = 0;
    int64_t dropped = 0;       // the buffer was full
    int64_t exported = 0;
    int64_t export_errors = 0;  // exports a destination refused
  };
  Counts counts() const;

 private:
  void Loop();
  void ExportLocked(std::unique_lock<std::mutex>& lock);

  const TracerOptions options_;
  const Clock* const clock_;
  const int64_t unix_offset_;
  std::vector<std::unique_ptr<SpanExporter>> exporters_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Span> buffer_;
  std::vector<SlowRequest> slowest_;  // since the last TakeSlowest, slowest first
  Counts counts_;
  bool stopping_ = false;
  bool exporting_ = false;
  std::thread thread_;
};

}  // namespace tutti

#endif  // TUTTI_TRACING_TRACER_H_
