#include "tutti/loadgen/load_generator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/file_util.h"
#include "tutti/core/json_quote.h"
#include "tutti/core/status_macros.h"
#include "tutti/datasets/fashion_mnist.h"
#include "tutti/loadgen/load_transport.h"
#include "tutti/workload/rate_search.h"

namespace tutti {
namespace {

using SteadyClock = std::chrono::steady_clock;

Duration Since(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - t).count();
}

// The predicted class of an answer, or -1 when it has no usable logits.
int Prediction(const LoadAnswer& a) {
  if (!a.error.empty() || a.output.size() != kFashionMnistClasses) return -1;
  return static_cast<int>(std::max_element(a.output.begin(), a.output.end()) - a.output.begin());
}

}  // namespace

void LoadModelResult::Merge(const LoadModelResult& o) {
  metrics.Merge(o.metrics);
  for (const auto& [what, n] : o.errors) errors[what] += n;
  emulated += o.emulated;
  labelled += o.labelled;
  correct += o.correct;
  timed += o.timed;
  server_late += o.server_late;
  client_late += o.client_late;
  outside.Merge(o.outside);
  server.Merge(o.server);
  for (const auto& [variant, n] : o.served_by) served_by[variant] += n;
}

double LoadResult::OfferedRate() const { return window ? total.metrics.arrived / ToSeconds(window) : 0; }
double LoadResult::Throughput() const { return window ? (total.metrics.good + total.metrics.late) / ToSeconds(window) : 0; }
double LoadResult::Goodput() const { return window ? total.metrics.good / ToSeconds(window) : 0; }

absl::StatusOr<LoadResult> RunLoad(const LoadSpec& spec) {
  if (spec.models.empty()) return absl::InvalidArgumentError("name at least one model to load");
  if (spec.duration <= spec.warmup) return absl::InvalidArgumentError("the duration must exceed the warm-up");
  // Declared before the transport, which is destroyed first: callbacks
  // still running then (after a drain timeout) find these alive.
  LoadResult result;
  std::mutex mu;
  std::condition_variable answered;
  int64_t outstanding = 0;
  Histogram lag;
  std::unique_ptr<LoadTransport> transport =
      spec.protocol == LoadProtocol::kGrpc
          ? MakeGrpcTransport(spec.host, spec.port, spec.token)
          : MakeHttpTransport(spec.host, spec.port, spec.connections, spec.binary, spec.token);
  std::vector<LoadTarget> targets;
  for (const std::string& m : spec.models) {
    TUTTI_ASSIGN_OR_RETURN(LoadTarget t, transport->Describe(m));
    targets.push_back(std::move(t));
  }
  ImageSet images;
  std::vector<float> pixels;
  if (std::any_of(targets.begin(), targets.end(), [](const LoadTarget& t) { return t.images; })) {
    TUTTI_ASSIGN_OR_RETURN(images, LoadFashionMnist(spec.data_dir.empty() ? kDefaultFashionMnistDir : spec.data_dir,
                                                    Split::kTest));
    pixels = images.ToFloat(0, images.size());
  }
  int64_t max_elements = 0;
  for (const LoadTarget& t : targets) max_elements = std::max(max_elements, t.input_elements);
  const std::vector<float> zeros(max_elements, 0.0f);
  TUTTI_ASSIGN_OR_RETURN(std::unique_ptr<ArrivalSource> source,
                         MakeArrivalSource(spec.workload, static_cast<int>(targets.size()), spec.duration, spec.seed));

  // Little's law with room to spare: the answers in flight at the peak rate,
  // each taking up to twice the SLO, plus a few.
  double peak_rate = spec.workload.rate;
  for (const RatePhase& p : spec.workload.phases) peak_rate = std::max(peak_rate, p.rate);
  TUTTI_RETURN_IF_ERROR(transport->Prepare(static_cast<int>(peak_rate * 2 * ToSeconds(spec.slo)) + 8));
  result.rate = spec.workload.rate;
  result.window = spec.duration - spec.warmup;
  result.models.resize(targets.size());
  for (size_t m = 0; m < targets.size(); ++m) {
    result.models[m].metrics.name = targets[m].name;
    if (!targets[m].task.empty()) result.models[m].asked_accuracy = targets[m].min_accuracy;
    result.models[m].metrics.slo = spec.slo;
  }
  const std::vector<double>& shares = spec.workload.priority_shares;
  for (size_t level = 0; level < shares.size(); ++level) {
    LoadModelResult& l = result.levels.emplace_back();
    l.metrics.name = PriorityName(static_cast<int>(level));
    l.metrics.slo = spec.slo;
  }
  LevelDraw levels(shares, spec.seed);
  const Duration timeout = static_cast<Duration>(spec.timeout_share * static_cast<double>(spec.slo));
  SteadyClock::time_point last_send ABSL_GUARDED_BY(mu) = SteadyClock::now();
  std::vector<int64_t> sent(targets.size(), 0);
  // The sender runs on a transport thread (HTTP: the I/O thread), woken by a
  // timer; it sends
  // every request due within kLookahead (arming a timer per request would
  // cost more than the request at 20k r/s; 0.2 ms is nothing next to an SLO).
  constexpr Duration kLookahead = 200 * kMicrosecond;
  const SteadyClock::time_point start = SteadyClock::now() + std::chrono::milliseconds(1);
  result.started_unix = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            (std::chrono::system_clock::now() + std::chrono::milliseconds(1)).time_since_epoch())
                            .count();
  std::promise<void> all_sent;
  Arrival next;
  bool have_next = source->Next(&next);
  auto done_with = [&](int model) { return spec.max_per_model > 0 && sent[model] >= spec.max_per_model; };
  std::function<void(int)> again;  // closed loop: model m's next request, if the run goes on
  auto send = [&](const Arrival& a) {
    const LoadTarget& t = targets[a.model];
    int64_t image;
    int level = 0;
    {
      std::lock_guard<std::mutex> lock(mu);  // closed loop: sends come from answer callbacks too
      image = sent[a.model]++ % std::max<int64_t>(1, images.size());
      lag.Record(std::max<Duration>(0, Since(start) - a.time));
      level = levels.Next();
    }
    const bool measured = a.time >= spec.warmup;
    const int label = t.images ? images.labels[image] : -1;
    const SteadyClock::time_point sent_at = SteadyClock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      ++outstanding;
      last_send = sent_at;
    }
    const absl::Span<const float> data = t.images ? absl::MakeConstSpan(&pixels[image * 784], 784)
                                                  : absl::MakeConstSpan(zeros.data(), t.input_elements);
    const InferParameters params{.objective_ms = ToMillis(spec.slo),
                                 .priority = shares.empty() ? 0 : static_cast<uint64_t>(level + 1),
                                 .timeout_us = timeout / kMicrosecond};
    const size_t step = static_cast<size_t>(std::max<Duration>(0, a.time) / result.timeline_step);
    transport->Infer(t, data, params, [&, model = a.model, measured, label, level, sent_at, step](LoadAnswer r) {
      const bool kernel = spec.kernel_timestamps && r.arrived;
      const Duration latency =
          kernel ? std::max<Duration>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(*r.arrived - sent_at).count())
                 : Since(sent_at);
      const int predicted = Prediction(r);
      if (spec.concurrency > 0) again(model);  // before this one stops counting as outstanding
      std::lock_guard<std::mutex> lock(mu);
      result.kernel_timed |= kernel;
      if (result.timeline.size() <= step) result.timeline.resize(step + 1);
      ++result.timeline[step].sent;
      result.timeline[step].bad += !r.error.empty() || latency > spec.slo;
      auto record = [&](LoadModelResult& m) {
        ++m.metrics.arrived;
        if (!r.error.empty()) {
          ++m.metrics.error;
          ++m.errors[r.error];
        } else {
          ++(latency <= spec.slo ? m.metrics.good : m.metrics.late);
          m.metrics.latency.Record(latency);
          if (r.server_time) {
            ++m.timed;
            m.outside.Record(latency - *r.server_time);
            m.server.Record(*r.server_time);
            if (*r.server_time > spec.slo) {
              ++m.server_late;
            } else if (latency > spec.slo) {
              ++m.client_late;
            }
          }
          m.emulated += r.emulated;
          if (!t.task.empty()) ++m.served_by[r.model];
          if (!r.emulated && label >= 0 && predicted >= 0) {
            ++m.labelled;
            m.correct += predicted == label;
          }
        }
      };
      if (measured) {
        record(result.models[model]);
        if (!result.levels.empty()) record(result.levels[level]);
      }
      if (--outstanding == 0) answered.notify_all();
    });
  };
  std::function<void()> tick = [&] {
    const Duration now = Since(start);
    while (have_next && next.time <= now + kLookahead) {
      if (!done_with(next.model)) send(next);
      if (spec.max_per_model > 0 &&
          std::all_of(sent.begin(), sent.end(), [&](int64_t n) { return n >= spec.max_per_model; })) {
        have_next = false;
        break;
      }
      have_next = source->Next(&next);
    }
    if (!have_next) return all_sent.set_value();
    transport->RunAt(start + std::chrono::nanoseconds(next.time), tick);
  };
  again = [&](int model) {
    const Duration now = Since(start);
    bool stop;
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = now >= spec.duration || done_with(model);
    }
    if (!stop) send(Arrival{now, model});
  };
  if (spec.concurrency > 0) {
    transport->RunAt(start, [&] {
      for (int m = 0; m < static_cast<int>(targets.size()); ++m) {
        for (int i = 0; i < spec.concurrency; ++i) again(m);
      }
      all_sent.set_value();
    });
  } else {
    transport->RunAt(start, tick);
  }
  all_sent.get_future().wait();
  {
    // Closed loop: answers send more requests, so the last send is not
    // known yet; the drain timeout counts from whichever was last.
    std::unique_lock<std::mutex> lock(mu);
    const auto drain = std::chrono::nanoseconds(spec.drain_timeout);
    while (!answered.wait_until(lock, last_send + drain, [&] { return outstanding == 0; })) {
      if (SteadyClock::now() >= last_send + drain) {
        return absl::DeadlineExceededError(absl::StrCat(outstanding, " requests still unanswered ",
                                                        ToSeconds(spec.drain_timeout), " s after the last send"));
      }
    }
  }
  if (spec.max_per_model > 0 || spec.concurrency > 0) {  // measured over the span it took
    result.window = std::max<Duration>(1, Since(start) - spec.warmup);
  }
  for (const LoadModelResult& m : result.models) result.total.Merge(m);
  result.total.metrics.name = "total";
  result.total.metrics.slo = spec.slo;
  result.max_send_lag = lag.max();
  result.p99_send_lag = lag.Quantile(0.99);
  return result;
}

absl::StatusOr<LoadGoodput> FindLoadGoodput(const LoadSpec& spec, double rel_tolerance, std::ostream* progress) {
  if (!(spec.workload.rate > 0)) return absl::InvalidArgumentError("the goodput search starts from --rate > 0");
  LoadGoodput out;
  auto probe = [&](double rate) -> absl::StatusOr<bool> {
    LoadSpec s = spec;
    s.workload = ScaleWorkload(spec.workload, rate / spec.workload.rate);
    TUTTI_ASSIGN_OR_RETURN(LoadResult r, RunLoad(s));
    std::vector<ModelMetrics> metrics;
    for (const LoadModelResult& m : r.models) metrics.push_back(m.metrics);
    const bool ok = MeetsSlo(metrics);
    ++out.probes;
    out.probed.push_back({r.OfferedRate(), r.Goodput(), r.total.metrics.QuantileWithDrops(0.99),
                          r.total.metrics.rate(), ok});
    if (progress) {
      *progress << absl::StrFormat("  probe %2d: %9.1f r/s offered → goodput %9.1f r/s, p99 %s ms, bad %.2f%%: %s\n",
                                   out.probes, r.OfferedRate(), r.Goodput(),
                                   FormatMillis(r.total.metrics.QuantileWithDrops(0.99)), 100 * r.total.metrics.rate(),
                                   ok ? "meets the SLO" : "misses");
    }
    if (ok && rate > out.rate) {
      out.rate = rate;
      out.at_rate = std::move(r);
    }
    return ok;
  };
  TUTTI_RETURN_IF_ERROR(SearchHighestRate(spec.workload.rate, rel_tolerance, probe).status());
  return out;
}

std::string LoadReportJson(const LoadResult& r, Duration slo, const LoadGoodput* search) {
  auto ms = [](Duration d) { return d >= kInfiniteFuture ? std::string("null") : absl::StrFormat("%.4f", ToMillis(d)); };
  std::vector<std::string> probes, models;
  if (search) {
    for (const LoadProbe& p : search->probed) {
      probes.push_back(absl::StrFormat(R"({"offered_rps":%.3f,"goodput_rps":%.3f,"p99_ms":%s,"bad_rate":%.6f,"meets":%s})",
                                       p.offered_rps, p.goodput_rps, ms(p.p99), p.bad_rate, p.meets ? "true" : "false"));
    }
  }
  const double w = std::max(1e-9, ToSeconds(r.window));
  std::vector<const LoadModelResult*> rows;
  for (const LoadModelResult& m : r.models) rows.push_back(&m);
  rows.push_back(&r.total);
  for (const LoadModelResult* row : rows) {
    const ModelMetrics& m = row->metrics;
    models.push_back(absl::StrFormat(
        R"({"name":%s,"sent_rps":%.3f,"ok_rps":%.3f,"goodput_rps":%.3f,"bad_rate":%.6f,"p50_ms":%s,"p90_ms":%s,)"
        R"("p99_ms":%s,"p999_ms":%s})",
        JsonQuote(m.name), m.arrived / w, (m.good + m.late) / w, m.good / w, m.rate(), ms(m.QuantileWithDrops(0.5)),
        ms(m.QuantileWithDrops(0.9)), ms(m.QuantileWithDrops(0.99)), ms(m.QuantileWithDrops(0.999))));
  }
  return absl::StrFormat(R"({"slo_ms":%.3f,"goodput_rps":%s,"probes":[%s],"result":{"models":[%s]}})", ToMillis(slo),
                         search ? absl::StrFormat("%.3f", search->rate) : "null", absl::StrJoin(probes, ","),
                         absl::StrJoin(models, ","));
}

void PrintLoadResult(const LoadResult& r, std::ostream& out) {
  // The client's latencies, then the server's own (receipt to answer, from
  // the answers that carry it: tutti_server_us): the difference is the
  // network and this client.
  out << absl::StrFormat("%-14s %9s %9s %9s %7s %8s %8s %8s %9s %8s %10s %10s\n", "model", "sent/s", "ok/s",
                         "goodput/s", "bad", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "accuracy", "server p50",
                         "server p99");
  const double w = ToSeconds(r.window);
  auto server = [](const LoadModelResult& m, double q) {
    return m.timed ? FormatMillis(m.server.Quantile(q)) : std::string("-");
  };
  auto row = [&](const LoadModelResult& x, const std::string& accuracy) {
    const ModelMetrics& m = x.metrics;
    out << absl::StrFormat("%-14s %9.1f %9.1f %9.1f %6.2f%% %8s %8s %8s %9s %8s %10s %10s\n", m.name, m.arrived / w,
                           (m.good + m.late) / w, m.good / w, 100 * m.rate(), FormatMillis(m.QuantileWithDrops(0.5)),
                           FormatMillis(m.QuantileWithDrops(0.9)), FormatMillis(m.QuantileWithDrops(0.99)),
                           FormatMillis(m.QuantileWithDrops(0.999)), accuracy, server(x, 0.5), server(x, 0.99));
  };
  // Who was late, for answers that say how long the server held them.
  auto who = [&](const LoadModelResult& m) {
    if (m.timed == 0) return;
    const double n = static_cast<double>(std::max<int64_t>(1, m.metrics.arrived));
    out << absl::StrFormat(
        "    late by the server %d (%.3f%%), outside it %d (%.3f%%); time outside the server p50 %s, p99 %s, "
        "p99.9 %s ms\n",
        m.server_late, 100 * m.server_late / n, m.client_late, 100 * m.client_late / n,
        FormatMillis(m.outside.Quantile(0.5)), FormatMillis(m.outside.Quantile(0.99)),
        FormatMillis(m.outside.Quantile(0.999)));
  };
  for (const LoadModelResult& m : r.models) {
    row(m, m.labelled ? absl::StrFormat("%.4f", m.Accuracy()) : m.emulated ? "emulated" : "-");
    for (const auto& [what, n] : m.errors) out << absl::StrFormat("    %d × %s\n", n, what);
    if (!m.served_by.empty()) {  // a model-less target: who served it, and whether it got what it asked
      std::vector<std::string> shares;
      const double answered = static_cast<double>(std::max<int64_t>(1, m.metrics.good + m.metrics.late));
      for (const auto& [variant, n] : m.served_by) {
        shares.push_back(absl::StrFormat("%s %.1f%%", variant.empty() ? "(unnamed)" : variant, 100 * n / answered));
      }
      out << "    served by " << absl::StrJoin(shares, ", ");
      if (m.asked_accuracy >= 0 && m.labelled > 0) {
        out << absl::StrFormat("; accuracy %.4f against %.4f asked: %s", m.Accuracy(), m.asked_accuracy,
                               m.Accuracy() >= m.asked_accuracy ? "met" : "NOT met");
      }
      out << "\n";
    }
    if (r.models.size() > 1) who(m);
  }
  row(r.total, "-");
  who(r.total);
  for (const LoadModelResult& l : r.levels) {  // every model's requests, by the priority they were sent at
    row(l, "-");
    for (const auto& [what, n] : l.errors) out << absl::StrFormat("    %d × %s\n", n, what);
  }
  out << absl::StrFormat("SLO %s ms; measured %.1f s; sender lag p99 %s ms, max %s ms; latency to %s\n",
                         FormatMillis(r.total.metrics.slo), w, FormatMillis(r.p99_send_lag), FormatMillis(r.max_send_lag),
                         r.kernel_timed ? "the kernel's receipt of the answer" : "the client's reading of the answer");
}

absl::Status WriteLoadCsv(const LoadResult& r, const std::string& path) {
  std::string csv =
      "model,offered_rate,sent,good,late,errors,throughput,goodput,bad_rate,p50_ms,p90_ms,p99_ms,p999_ms,"
      "labelled,accuracy,server_late,client_late,server_p50_ms,server_p99_ms\n";
  const double w = ToSeconds(r.window);
  auto row = [&](const LoadModelResult& x, double accuracy) {
    const ModelMetrics& m = x.metrics;
    auto server = [&](double q) { return x.timed ? FormatMillis(x.server.Quantile(q)) : std::string(); };
    absl::StrAppendFormat(&csv, "%s,%.3f,%d,%d,%d,%d,%.3f,%.3f,%.6f,%s,%s,%s,%s,%d,%.6f,%d,%d,%s,%s\n", m.name, r.rate,
                          m.arrived, m.good, m.late, m.error, (m.good + m.late) / w, m.good / w, m.rate(),
                          FormatMillis(m.QuantileWithDrops(0.5)), FormatMillis(m.QuantileWithDrops(0.9)),
                          FormatMillis(m.QuantileWithDrops(0.99)), FormatMillis(m.QuantileWithDrops(0.999)),
                          x.labelled, accuracy, x.server_late, x.client_late, server(0.5), server(0.99));
  };
  for (const LoadModelResult& m : r.models) row(m, m.Accuracy());
  row(r.total, 0);
  for (const LoadModelResult& l : r.levels) row(l, l.Accuracy());
  return WriteFileAtomic(path, csv);
}

absl::Status WriteLoadTimelineCsv(const LoadResult& r, const std::string& path) {
  std::string csv = "unix_s,sent,bad\n";
  for (size_t i = 0; i < r.timeline.size(); ++i) {
    const int64_t at = r.started_unix + static_cast<int64_t>(i) * r.timeline_step;
    absl::StrAppendFormat(&csv, "%.3f,%d,%d\n", static_cast<double>(at) / 1e9, r.timeline[i].sent, r.timeline[i].bad);
  }
  return WriteFileAtomic(path, csv);
}

}  // namespace tutti
