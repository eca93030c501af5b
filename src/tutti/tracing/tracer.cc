#include "tutti/tracing/tracer.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tutti/core/thread_name.h"

namespace tutti {
namespace {

class FileExporter final : public SpanExporter {
 public:
  explicit FileExporter(std::string path) : path_(std::move(path)) {}
  absl::Status Export(const std::string& json) override {
    std::ofstream out(path_, std::ios::app);
    out << json << '\n';
    out.flush();
    return out ? absl::OkStatus() : absl::UnavailableError(absl::StrCat("cannot write the trace file ", path_));
  }

 private:
  const std::string path_;
};

void WriteAttribute(const SpanAttribute& a, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  w.StartObject();
  w.Key("key");
  w.String(a.key.c_str());
  w.Key("value");
  w.StartObject();
  if (const auto* s = std::get_if<std::string>(&a.value)) {
    w.Key("stringValue");
    w.String(s->c_str());
  } else if (const auto* i = std::get_if<int64_t>(&a.value)) {
    w.Key("intValue");  // OTLP/JSON: 64-bit integers as strings
    w.String(std::to_string(*i).c_str());
  } else if (const auto* d = std::get_if<double>(&a.value)) {
    w.Key("doubleValue");
    w.Double(std::isfinite(*d) ? *d : 0);
  } else {
    w.Key("boolValue");
    w.Bool(std::get<bool>(a.value));
  }
  w.EndObject();
  w.EndObject();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SpanExporter>> NewFileExporter(const std::string& path) {
  std::ofstream out(path, std::ios::app);
  if (!out) return absl::InvalidArgumentError(absl::StrCat("cannot open the trace file '", path, "' for writing"));
  return std::make_unique<FileExporter>(path);
}

std::string OtlpJson(const std::string& service_name, const std::vector<Span>& spans, int64_t unix_offset) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("resourceSpans");
  w.StartArray();
  w.StartObject();
  w.Key("resource");
  w.StartObject();
  w.Key("attributes");
  w.StartArray();
  WriteAttribute({"service.name", service_name}, w);
  w.EndArray();
  w.EndObject();
  w.Key("scopeSpans");
  w.StartArray();
  w.StartObject();
  w.Key("scope");
  w.StartObject();
  w.Key("name");
  w.String("tutti");
  w.EndObject();
  w.Key("spans");
  w.StartArray();
  for (const Span& s : spans) {
    w.StartObject();
    w.Key("traceId");  // OTLP/JSON: ids in hex, not base64
    w.String(TraceIdHex(s.context.trace_id).c_str());
    w.Key("spanId");
    w.String(SpanIdHex(s.context.span_id).c_str());
    if (s.context.parent_id != 0) {
      w.Key("parentSpanId");
      w.String(SpanIdHex(s.context.parent_id).c_str());
    }
    w.Key("name");
    w.String(s.name.c_str());
    w.Key("kind");
    w.Int(static_cast<int>(s.kind));
    w.Key("startTimeUnixNano");
    w.String(std::to_string(s.start + unix_offset).c_str());
    w.Key("endTimeUnixNano");
    w.String(std::to_string(s.end + unix_offset).c_str());
    w.Key("attributes");
    w.StartArray();
    for (const SpanAttribute& a : s.attributes) WriteAttribute(a, w);
    w.EndArray();
    w.Key("status");
    w.StartObject();
    w.Key("code");  // STATUS_CODE_OK 1, STATUS_CODE_ERROR 2
    w.Int(s.error.empty() ? 1 : 2);
    if (!s.error.empty()) {
      w.Key("message");
      w.String(s.error.c_str());
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

absl::StatusOr<std::unique_ptr<Tracer>> Tracer::Create(const TracerOptions& options, const Clock* clock) {
  if (!(options.sampling_ratio >= 0 && options.sampling_ratio <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("the sampling ratio must be in [0, 1], not ", options.sampling_ratio));
  }
  std::vector<std::unique_ptr<SpanExporter>> exporters;
  if (!options.file.empty()) {
    absl::StatusOr<std::unique_ptr<SpanExporter>> file = NewFileExporter(options.file);
    if (!file.ok()) return file.status();
    exporters.push_back(*std::move(file));
  }
  if (!options.otlp_endpoint.empty()) {
    absl::StatusOr<std::unique_ptr<SpanExporter>> http = NewOtlpHttpExporter(options.otlp_endpoint, 2 * kSecond);
    if (!http.ok()) return http.status();
    exporters.push_back(*std::move(http));
  }
  if (exporters.empty()) return absl::InvalidArgumentError("tracing needs a file or an OTLP endpoint to export to");
  return std::make_unique<Tracer>(options, clock, std::move(exporters));
}

Tracer::Tracer(const TracerOptions& options, const Clock* clock, std::vector<std::unique_ptr<SpanExporter>> exporters)
    : options_(options),
      clock_(clock),
      unix_offset_(absl::GetCurrentTimeNanos() - clock->Now()),
      exporters_(std::move(exporters)),
      thread_([this] { Loop(); }) {}

Tracer::~Tracer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

TraceContext Tracer::StartRequest(const std::optional<TraceContext>& parent) const {
  TraceContext c;
  if (parent) {
    if (!parent->sampled) return c;
    c.trace_id = parent->trace_id;
    c.parent_id = parent->span_id;
  } else {
    if (options_.sampling_ratio <= 0 || UniformDraw() >= options_.sampling_ratio) return c;
    c.trace_id = NewTraceId();
  }
  c.span_id = NewSpanId();
  c.sampled = true;
  return c;
}

TraceContext Tracer::Child(const TraceContext& parent) {
  if (!parent.recording()) return TraceContext{};
  return TraceContext{parent.trace_id, NewSpanId(), parent.span_id, true};
}

void Tracer::Record(Span span) {
  if (!span.context.recording()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (buffer_.size() >= options_.max_buffered) {
    ++counts_.dropped;
    return;
  }
  ++counts_.recorded;
  const Duration took = span.end - span.start;
  if (span.kind == Span::Kind::kServer && options_.slowest_kept > 0 &&
      (slowest_.size() < options_.slowest_kept || took > slowest_.back().duration)) {
    const auto at = std::find_if(slowest_.begin(), slowest_.end(), [took](const SlowRequest& s) { return took > s.duration; });
    slowest_.insert(at, SlowRequest{TraceIdHex(span.context.trace_id), span.name, took, span.error});
    if (slowest_.size() > options_.slowest_kept) slowest_.pop_back();
  }
  buffer_.push_back(std::move(span));
}

std::vector<Tracer::SlowRequest> Tracer::TakeSlowest() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SlowRequest> taken;
  taken.swap(slowest_);
  return taken;
}

std::string TraceLink(const std::string& link_template, const std::string& trace_id) {
  return absl::StrReplaceAll(link_template, {{"{trace_id}", trace_id}});
}

void Tracer::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait(lock, [this] { return !exporting_; });  // the loop's export, under way, may hold spans
  ExportLocked(lock);
}

Tracer::Counts Tracer::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void Tracer::ExportLocked(std::unique_lock<std::mutex>& lock) {
  if (buffer_.empty()) return;
  std::vector<Span> spans;
  spans.swap(buffer_);
  exporting_ = true;
  lock.unlock();
  const std::string json = OtlpJson(options_.service_name, spans, unix_offset_);
  int64_t errors = 0;
  for (const auto& e : exporters_) errors += !e->Export(json).ok();
  lock.lock();
  exporting_ = false;
  counts_.exported += static_cast<int64_t>(spans.size());
  counts_.export_errors += errors;
  wake_.notify_all();
}

void Tracer::Loop() {
  SetThreadName("tutti-tracer");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::nanoseconds(options_.flush_interval), [this] { return stopping_; });
    if (!exporting_) ExportLocked(lock);
  }
  wake_.wait(lock, [this] { return !exporting_; });
  ExportLocked(lock);
}

}  // namespace tutti
