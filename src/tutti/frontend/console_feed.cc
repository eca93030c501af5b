#include "tutti/frontend/console_feed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tutti/core/thread_name.h"
#include "tutti/frontend/delay_metrics.h"
#include "tutti/core/prometheus.h"
#include "tutti/planner/scaling.h"

namespace tutti {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// The most batches a sample lists (the latest): enough to draw a timeline of
// a period, few enough for a page to take every second.
constexpr size_t kMaxTimelineBatches = 600;

void Number(Writer& w, const char* key, double value) {
  w.Key(key);
  if (std::isfinite(value)) {
    w.Double(std::round(value * 1000) / 1000);
  } else {
    w.Null();
  }
}

void OptionalMillis(Writer& w, const char* key, std::optional<double> seconds) {
  w.Key(key);
  if (seconds) {
    w.Double(std::round(*seconds * 1e6) / 1e3);
  } else {
    w.Null();
  }
}

std::vector<int64_t> Minus(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out = a;
  for (size_t i = 0; i < out.size() && i < b.size(); ++i) out[i] -= b[i];
  return out;
}

}  // namespace

std::optional<double> BucketQuantile(const std::vector<double>& bounds, const std::vector<int64_t>& buckets,
                                     double q) {
  int64_t total = 0;
  for (int64_t n : buckets) total += n;
  if (total <= 0) return std::nullopt;
  const double rank = q * static_cast<double>(total);
  int64_t below = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] > 0 && static_cast<double>(below + buckets[i]) >= rank) {
      if (i >= bounds.size()) return bounds.empty() ? std::nullopt : std::optional<double>(bounds.back());
      const double lo = i == 0 ? 0 : bounds[i - 1];
      return lo + (bounds[i] - lo) * std::clamp((rank - below) / static_cast<double>(buckets[i]), 0.0, 1.0);
    }
    below += buckets[i];
  }
  return bounds.empty() ? std::nullopt : std::optional<double>(bounds.back());
}

std::string ConsoleSampleJson(const ConsoleContext& context, const ConsoleReading& before,
                              const ConsoleReading& now) {
  const double period = std::max(1e-9, ToSeconds(now.at - before.at));
  const std::vector<double> latency_bounds = PromHistogram::LatencyBounds();
  const std::vector<double> batch_bounds = PromHistogram::BatchBounds();
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  Number(w, "time_s", ToSeconds(now.at));
  Number(w, "period_s", period);
  int64_t ended = 0, bad = 0;
  w.Key("models");
  w.StartArray();
  for (size_t m = 0; m < now.models.size(); ++m) {
    const InferenceFrontend::ModelSample& a = now.models[m];
    const InferenceFrontend::ModelSample b = m < before.models.size() ? before.models[m] : InferenceFrontend::ModelSample{};
    const ModelCounters& c = a.counters;
    const ModelCounters& p = b.counters;
    const OutcomeCounts o = c.Since(p);
    const int64_t rejected = a.rejected - b.rejected + a.overloaded - b.overloaded;
    ended += o.ended();
    bad += o.bad();
    w.StartObject();
    w.Key("name");
    const std::string name = m < context.model_names.size() ? context.model_names[m] : absl::StrCat("model ", m);
    w.String(name.c_str());
    Number(w, "objective_ms", m < context.objectives.size() ? ToMillis(context.objectives[m]) : 0);
    Number(w, "offered_rps", static_cast<double>(o.ended() + rejected) / period);
    Number(w, "goodput_rps", o.good / period);
    Number(w, "late_rps", o.late / period);
    Number(w, "dropped_rps", o.dropped / period);
    Number(w, "rejected_rps", rejected / period);
    Number(w, "error_rps", o.error / period);
    const std::vector<int64_t> latency = Minus(a.latency_buckets, b.latency_buckets);
    OptionalMillis(w, "p50_ms", BucketQuantile(latency_bounds, latency, 0.5));
    OptionalMillis(w, "p99_ms", BucketQuantile(latency_bounds, latency, 0.99));
    // Answered items by the batch size they ran in: [upper bound, count].
    w.Key("batch_sizes");
    w.StartArray();
    const std::vector<int64_t> sizes = Minus(a.batch_buckets, b.batch_buckets);
    for (size_t i = 0; i < sizes.size(); ++i) {
      w.StartArray();
      if (i < batch_bounds.size()) {
        w.Double(batch_bounds[i]);
      } else {
        w.Null();
      }
      w.Int64(sizes[i]);
      w.EndArray();
    }
    w.EndArray();
    // A graph's steps: where its objective is split, and how each fared.
    w.Key("steps");
    w.StartArray();
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const ModelCounters::Step& s = c.steps[i];
      const ModelCounters::Step q = i < p.steps.size() ? p.steps[i] : ModelCounters::Step{};
      w.StartObject();
      w.Key("model");
      w.String(s.model.c_str());
      Number(w, "deadline_share", s.deadline_share);
      const OutcomeCounts o = s.Since(q);
      Number(w, "goodput_rps", o.good / period);
      Number(w, "bad_rps", o.bad() / period);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();

  // Executors: busy fractions over the interval, and their batches.
  int in_use = 0;
  double busy_sum = 0;
  w.Key("executors");
  w.StartArray();
  for (size_t g = 0; g < now.busy.size(); ++g) {
    const double busy = std::clamp(ToSeconds(now.busy[g] - (g < before.busy.size() ? before.busy[g] : 0)) / period,
                                   0.0, 1.0);
    busy_sum += busy;
    in_use += busy > 0;
    w.StartObject();
    w.Key("id");
    w.Int(static_cast<int>(g));
    Number(w, "busy", busy);
    w.EndObject();
  }
  w.EndArray();
  // [executor, model, size, decided, planned start, planned end, start,
  // end, ok], instants in ms before now.
  w.Key("batches");
  w.StartArray();
  const size_t first = now.batches.size() > kMaxTimelineBatches ? now.batches.size() - kMaxTimelineBatches : 0;
  for (size_t i = first; i < now.batches.size(); ++i) {
    const BatchTrace& t = now.batches[i];
    w.StartArray();
    w.Int(t.executor);
    w.Int(t.model);
    w.Int(t.size);
    for (Time at : {t.decided, t.planned_start, t.planned_end, t.started, t.finished}) {
      w.Double(std::round(ToMicros(at - now.at)) / 1e3);
    }
    w.Bool(t.ok);
    w.EndArray();
  }
  w.EndArray();
  w.Key("delays");
  const std::string delays = DelayStatsJson(now.delays, kAnyModel);
  w.RawValue(delays.data(), delays.size(), rapidjson::kObjectType);

  const int gpus = static_cast<int>(now.busy.size());
  const double bad_rate = ended > 0 ? static_cast<double>(bad) / ended : 0;
  const double idle = gpus > 0 ? 1 - busy_sum / gpus : 0;
  w.Key("cluster");
  w.StartObject();
  w.Key("executors");
  w.Int(gpus);
  w.Key("in_use");
  w.Int(in_use);
  Number(w, "bad_rate", bad_rate);
  Number(w, "idle_fraction", idle);
  if (gpus > 0) {
    const ScalingAdvice advice = AdviseScaling(gpus, bad_rate, idle);
    w.Key("advice");
    w.StartObject();
    w.Key("add");
    w.Int(advice.add);
    w.Key("remove");
    w.Int(advice.remove);
    w.EndObject();
  }
  if (!context.cluster_json.empty()) {
    w.Key("process");
    w.RawValue(context.cluster_json.data(), context.cluster_json.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  // The slowest traced requests, each with its trace.
  w.Key("slow_traces");
  w.StartArray();
  for (const Tracer::SlowRequest& s : now.slowest) {
    w.StartObject();
    w.Key("trace_id");
    w.String(s.trace_id.c_str());
    w.Key("name");
    w.String(s.name.c_str());
    Number(w, "ms", ToMillis(s.duration));
    w.Key("error");
    w.String(s.error.c_str());
    const std::string url = TraceLink(context.trace_link, s.trace_id);
    w.Key("url");
    w.String(url.c_str());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

ConsoleFeed::ConsoleFeed(const InferenceFrontend* frontend, Options options)
    : frontend_(frontend), options_(std::move(options)) {
  for (int m = 0; m < frontend_->num_models(); ++m) {
    const InferenceFrontend::ServedModel& s = frontend_->served(m);
    context_.model_names.push_back(s.config.name);
    context_.objectives.push_back(s.objective);
  }
  if (frontend_->tracer() != nullptr) context_.trace_link = frontend_->tracer()->options().link;
}

ConsoleFeed::~ConsoleFeed() { Stop(); }

ConsoleReading ConsoleFeed::Read(Time since) const {
  const InferenceEngine& engine = frontend_->engine();
  ConsoleReading r;
  r.at = engine.Now();
  r.models = frontend_->Sample();
  r.busy = engine.BusyTimes();
  r.batches = engine.RecentBatches(since);
  r.delays = engine.Delays();
  if (frontend_->tracer() != nullptr) r.slowest = frontend_->tracer()->TakeSlowest();
  return r;
}

void ConsoleFeed::Subscribe(std::shared_ptr<HttpStream> stream) {
  // Tells the page to retry after a second if the connection drops.
  if (!stream->Send("retry: 1000\n\n")) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) {
    stream->Close();
    return;
  }
  streams_.push_back(std::move(stream));
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  wake_.notify_all();
}

void ConsoleFeed::Stop() {
  std::vector<std::shared_ptr<HttpStream>> streams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    streams.swap(streams_);
    wake_.notify_all();
  }
  for (const auto& s : streams) s->Close();
  if (thread_.joinable()) thread_.join();
}

void ConsoleFeed::Run() {
  SetThreadName("tutti-console");
  std::optional<ConsoleReading> before;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopped_) {
    if (streams_.empty()) {  // nobody looks: read nothing
      before.reset();
      wake_.wait(lock, [this] { return stopped_ || !streams_.empty(); });
      continue;
    }
    lock.unlock();
    if (!before) before = Read(frontend_->engine().Now());
    lock.lock();
    wake_.wait_for(lock, std::chrono::nanoseconds(options_.period), [this] { return stopped_; });
    if (stopped_) break;
    lock.unlock();
    ConsoleContext context = context_;
    if (options_.cluster) context.cluster_json = options_.cluster();
    ConsoleReading now = Read(before->at);
    const std::string event = absl::StrCat("event: sample\ndata: ", ConsoleSampleJson(context, *before, now), "\n\n");
    now.batches.clear();
    before = std::move(now);
    lock.lock();
    std::erase_if(streams_, [&](const std::shared_ptr<HttpStream>& s) { return !s->Send(event); });
  }
}

}  // namespace tutti
