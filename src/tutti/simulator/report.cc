#include "tutti/simulator/report.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tutti/core/file_util.h"
#include "tutti/core/json_quote.h"
#include "tutti/core/status_macros.h"

namespace tutti {
namespace {

void Row(const ModelMetrics& m, double window_s, std::ostream& out) {
  out << absl::StrFormat("%-22s %9d %10.1f %10.1f %6.2f%% %8s %8s %8s %7.2f %8.2f\n",
                         m.name.substr(0, 22), m.arrived, m.arrived / window_s, m.good / window_s,
                         100 * m.rate(), FormatMillis(m.QuantileWithDrops(0.5)),
                         FormatMillis(m.QuantileWithDrops(0.99)), FormatMillis(m.QuantileWithDrops(0.999)),
                         m.MeanBatch(), ToMillis(static_cast<Duration>(m.queueing.mean())));
}

std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

// SimReportJson names this many models at most (the last entry sums the rest).
constexpr size_t kReportModels = 12;

}  // namespace


void PrintSimResult(const SimResult& r, std::ostream& out, int max_rows) {
  const double w = ToSeconds(r.window);
  out << absl::StrFormat("policy %s, %.1f s measured\n", r.policy, w);
  out << absl::StrFormat("%-22s %9s %10s %10s %7s %8s %8s %8s %7s %8s\n", "model", "arrived",
                         "offered/s", "goodput/s", "bad", "p50 ms", "p99 ms", "p99.9 ms", "batch",
                         "queue ms");
  int shown = 0;
  for (const ModelMetrics& m : r.models) {
    if (shown++ < max_rows) Row(m, w, out);
  }
  if (shown > max_rows) out << "  … " << shown - max_rows << " more models (see --csv)\n";
  Row(r.total, w, out);
  std::vector<std::string> split;
  for (const ModelMetrics& m : r.steps) {  // a graph's steps: their items, against their shares
    ModelMetrics step = m;
    step.name = "- " + m.name;
    Row(step, w, out);
    split.push_back(absl::StrFormat("%s %.1f ms", m.name, ToMillis(m.slo)));
  }
  if (!split.empty()) out << "graph: the objective split as " << absl::StrJoin(split, ", ") << "\n";
  for (const ModelMetrics& m : r.levels) Row(m, w, out);  // requests by priority level, every model's
  out << absl::StrFormat("GPUs: %d of %d used, mean busy %.1f%% (%.1f GPU-s running batches), %d batch(es) waited "
                         "for a busy GPU\n",
                         r.gpus_used, r.gpu_busy.size(), 100 * r.MeanBusy(), r.BusySeconds(), r.delayed_starts);
  if (r.peak_memory_bytes > 0) {
    const int64_t arrived = r.total.arrived;
    out << absl::StrFormat(
        "memory: %d load(s) (%.1f/s), at most %.2f GB of weights on a GPU, %d breach(es) of the memory contract; "
        "%.4f%% of requests within their objective\n",
        r.loads, r.loads / w, r.peak_memory_bytes / 1e9, r.memory_violations,
        arrived > 0 ? 100.0 * static_cast<double>(r.total.good) / static_cast<double>(arrived) : 0.0);
  }
  if (r.scale_ups + r.scale_downs > 0 || r.peak_gpus_allocated > 0) {
    const double window_s = ToSeconds(r.window);
    out << absl::StrFormat(
        "autoscaling: %d request(s) for GPUs and %d release(s); GPUs up: mean %.1f, peak %d of %d "
        "(%.1f GPU-hours against %.1f for all of them)\n",
        r.scale_ups, r.scale_downs, r.gpu_seconds_allocated / window_s, r.peak_gpus_allocated, r.gpu_busy.size(),
        r.gpu_seconds_allocated / 3600, window_s * r.gpu_busy.size() / 3600);
  }
  if (r.advice.add > 0) {
    out << absl::StrFormat("autoscaling advice: add %d GPU(s) (bad rate %.2f%%)\n", r.advice.add,
                           100 * r.total.rate());
  } else {
    out << absl::StrFormat("autoscaling advice: %d GPU(s) could be released (idle %.1f%%)\n",
                           r.advice.remove, 100 * r.IdleFraction());
  }
  const DelayPlan& p = r.final_plan;
  if (!(p == DelayPlan{})) {
    out << absl::StrFormat("planned delays at the end: dispatch %.1f us, response %.1f us, frontrun slack %.1f us, "
                           "head guard %.1f us\n",
                           ToMicros(p.network.ctrl), ToMicros(p.network.resp), ToMicros(p.frontrun_slack),
                           ToMicros(p.head_guard));
  }
}

void PrintComparison(const std::vector<PolicyRun>& runs, std::ostream& out) {
  const bool autoscaled = std::any_of(runs.begin(), runs.end(), [](const PolicyRun& p) {
    return p.result.peak_gpus_allocated > 0;
  });
  out << absl::StrFormat("%-28s %12s %8s %9s %9s %7s %5s %6s %9s%s\n", "policy", "goodput/s", "bad", "p50 ms",
                         "p99 ms", "batch", "GPUs", "busy", "GPU-s", autoscaled ? absl::StrFormat(" %9s", "GPU-s up") : "");
  for (const PolicyRun& p : runs) {
    const ModelMetrics& t = p.result.total;
    // Busy: of the GPUs used (consolidation packs the load onto fewer, busier GPUs).
    // GPU-s: running batches; GPU-s up: allocated by the autoscaler.
    const double busy = p.result.MeanBusy() * static_cast<double>(p.result.gpu_busy.size());
    out << absl::StrFormat("%-28s %12.1f %7.2f%% %9s %9s %7.2f %5d %5.1f%% %9.2f%s\n", p.label, p.goodput,
                           100 * t.rate(), FormatMillis(t.QuantileWithDrops(0.5)),
                           FormatMillis(t.QuantileWithDrops(0.99)), t.MeanBatch(), p.result.gpus_used,
                           100 * busy / std::max(1, p.result.gpus_used), p.result.BusySeconds(),
                           autoscaled ? absl::StrFormat(" %9.2f", p.result.gpu_seconds_allocated) : "");
  }
  if (runs.size() < 2) return;
  out << "\ngoodput ratios (row / column):\n" << absl::StrFormat("%-20s", "");
  for (const PolicyRun& c : runs) out << absl::StrFormat(" %20s", c.label.substr(0, 20));
  out << "\n";
  for (const PolicyRun& r : runs) {
    out << absl::StrFormat("%-20s", r.label);
    for (const PolicyRun& c : runs) {
      out << (c.goodput > 0 ? absl::StrFormat(" %19.2fx", r.goodput / c.goodput)
                            : absl::StrFormat(" %20s", "-"));
    }
    out << "\n";
  }
}

absl::Status WriteCsv(const std::vector<PolicyRun>& runs, const std::string& path) {
  std::string csv =
      "policy,model,arrived,good,late,dropped,goodput_rps,bad_rate,p50_ms,p99_ms,p999_ms,"
      "mean_batch,mean_queue_ms\n";
  for (const PolicyRun& p : runs) {
    const double w = ToSeconds(p.result.window);
    std::vector<const ModelMetrics*> rows;
    for (const ModelMetrics& m : p.result.models) rows.push_back(&m);
    rows.push_back(&p.result.total);
    for (const ModelMetrics* m : rows) {
      absl::StrAppendFormat(&csv, "%s,%s,%d,%d,%d,%d,%.3f,%.6f,%s,%s,%s,%.3f,%.3f\n", p.label,
                            m->name, m->arrived, m->good, m->late, m->dropped, m->good / w,
                            m->rate(), FormatMillis(m->QuantileWithDrops(0.5)),
                            FormatMillis(m->QuantileWithDrops(0.99)),
                            FormatMillis(m->QuantileWithDrops(0.999)), m->MeanBatch(),
                            ToMillis(static_cast<Duration>(m->queueing.mean())));
    }
  }
  return WriteFileAtomic(path, csv);
}

absl::Status WritePlots(const std::vector<PolicyRun>& runs, const std::string& dir) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    return absl::FailedPreconditionError("gnuplot is not installed (scripts/setup.sh installs it)");
  }
  std::filesystem::create_directories(dir);
  std::string gp = absl::StrCat("set terminal pngcairo size 900,540\nset grid\n");
  // Goodput per policy.
  std::string bars;
  for (size_t i = 0; i < runs.size(); ++i) absl::StrAppendFormat(&bars, "%d %s %.3f\n", i, Quote(runs[i].label), runs[i].goodput);
  TUTTI_RETURN_IF_ERROR(WriteFileAtomic(dir + "/goodput.dat", bars));
  absl::StrAppend(&gp, "set output '", dir, "/goodput.png'\nset title 'Goodput per policy'\n",
                  "set ylabel 'requests/s'\nset style fill solid 0.6\nset boxwidth 0.6\nset yrange [0:*]\n",
                  "plot '", dir, "/goodput.dat' using 1:3:xtic(2) with boxes notitle\n");
  // Batch size CDF per policy.
  absl::StrAppend(&gp, "set output '", dir, "/batch_cdf.png'\nset title 'Batch size CDF'\n",
                  "set xlabel 'batch size'\nset ylabel 'fraction of batches'\nset yrange [0:1]\nplot ");
  for (size_t i = 0; i < runs.size(); ++i) {
    const ModelMetrics& t = runs[i].result.total;
    std::string cdf;
    int64_t seen = 0;
    for (size_t b = 1; b < t.batch_size_counts.size(); ++b) {
      seen += t.batch_size_counts[b];
      absl::StrAppendFormat(&cdf, "%d %.6f\n", b, t.batches ? static_cast<double>(seen) / t.batches : 0);
    }
    const std::string file = absl::StrCat(dir, "/batch_cdf_", i, ".dat");
    TUTTI_RETURN_IF_ERROR(WriteFileAtomic(file, cdf));
    absl::StrAppend(&gp, i ? ", " : "", "'", file, "' using 1:2 with steps title ", Quote(runs[i].label));
  }
  absl::StrAppend(&gp, "\n");
  // GPU timelines for runs that recorded them.
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<TimelineEntry>& tl = runs[i].result.timeline;
    if (tl.empty()) continue;
    std::string data;
    for (const TimelineEntry& e : tl) {
      absl::StrAppendFormat(&data, "%.3f %d %.3f %d %d\n", ToMillis(e.start), e.gpu,
                            ToMillis(e.end - e.start), e.model, e.size);
    }
    const std::string file = absl::StrCat(dir, "/timeline_", i, ".dat");
    TUTTI_RETURN_IF_ERROR(WriteFileAtomic(file, data));
    absl::StrAppend(&gp, "set output '", dir, "/timeline_", runs[i].label, ".png'\n",
                    "set title 'GPU timeline: ", runs[i].label, " (box label: batch size)'\n",
                    "set xlabel 'time (ms)'\nset ylabel 'GPU'\nset ytics 1\nset yrange [-0.6:",
                    runs[i].result.gpu_busy.size() - 0.4, "]\nset autoscale x\nunset key\n",
                    "plot '", file, "' using ($1+$3/2):2:($3/2):(0.3):(1+int($4)%8) ",
                    "with boxxyerror fill solid 0.5 border lc rgb 'black' lc variable, ",
                    "'' using ($1+$3/2):2:(sprintf('%d',$5)) with labels font ',8'\n",
                    "set ytics autofreq\nset yrange [*:*]\n");
  }
  // Over time (SimConfig::series_interval): Symphony Figure 15's panels.
  for (size_t i = 0; i < runs.size(); ++i) {
    const SimSeries& s = runs[i].result.series;
    if (s.gpus_used.empty()) continue;
    const double interval = ToSeconds(s.interval);
    std::string data;
    for (size_t k = 0; k < s.gpus_used.size(); ++k) {
      absl::StrAppendFormat(&data, "%.3f %.3f %.3f %d %d %d %d %.6f\n", k * interval, s.Good(k) / interval,
                            s.Bad(k) / interval, s.gpus_used[k], k < s.gpus_allocated.size() ? s.gpus_allocated[k] : -1,
                            s.advice[k].add, s.advice[k].remove, 100 * s.BadRate(k));
    }
    const std::string file = absl::StrCat(dir, "/series_", i, ".dat");
    TUTTI_RETURN_IF_ERROR(WriteFileAtomic(file, data));
    absl::StrAppend(&gp, "set output '", dir, "/series_", runs[i].label, ".png'\n",
                    "set terminal pngcairo size 900,1000\nset multiplot layout 4,1 title ", Quote(runs[i].label), "\n",
                    "set key top left\nset xlabel ''\nset ylabel ''\nset yrange [0:*]\n",
                    "set title 'requests/s'\nplot '", file, "' using 1:($2+$3) with filledcurves x1 lc rgb '#9ca3af' ",
                    "title 'unsatisfied', '' using 1:2 with filledcurves x1 lc rgb '#2563eb' title 'good'\n",
                    "set title 'GPUs'\nplot '", file, "' using 1:4 with lines title 'used'",
                    s.gpus_allocated.empty() ? "" : ", '' using 1:5 with steps lw 2 title 'allocated'", "\n",
                    "set title 'autoscaling advice (GPUs)'\nplot '", file,
                    "' using 1:6 with lines lc rgb '#dc2626' title 'add', '' using 1:7 with lines lc rgb '#16a34a' "
                    "title 'remove'\n",
                    "set title 'bad rate (%)'\nset xlabel 'virtual time (s)'\nplot '", file,
                    "' using 1:8 with lines lc rgb '#b42318' notitle\n",
                    "unset multiplot\nset terminal pngcairo size 900,540\nset key default\n");
  }
  TUTTI_RETURN_IF_ERROR(WriteFileAtomic(dir + "/plots.gp", gp));
  const std::string cmd = absl::StrCat("gnuplot '", dir, "/plots.gp' 2>'", dir, "/gnuplot.log'");
  if (std::system(cmd.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("gnuplot failed; see ", dir, "/gnuplot.log"));
  }
  return absl::OkStatus();
}

std::string SimReportJson(const SimResult& r, const std::string& policy, int gpus) {
  const SimSeries& s = r.series;
  const double interval = ToSeconds(s.interval);
  const size_t n = s.gpus_used.size();
  auto list = [](const std::vector<std::string>& items) { return absl::StrCat("[", absl::StrJoin(items, ","), "]"); };
  auto rates = [&](const std::vector<int64_t>& counts) {
    std::vector<std::string> out;
    for (int64_t c : counts) out.push_back(absl::StrFormat("%.6g", c / interval));
    return list(out);
  };
  std::vector<std::string> names, good, bad, t, bad_total, used, add, remove, bad_rate, allocated, loads, memory;
  for (int a : s.gpus_allocated) allocated.push_back(absl::StrCat(a));
  // The busiest models by name, the rest summed as one: a chart of
  // thousands of models shows nothing.
  std::vector<size_t> order(s.good.size());
  std::iota(order.begin(), order.end(), 0);
  auto total = [&](size_t m) { return std::accumulate(s.good[m].begin(), s.good[m].end(), int64_t{0}); };
  if (order.size() > kReportModels) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return total(a) > total(b); });
  }
  std::vector<int64_t> other_good(n, 0), other_bad(n, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t m = order[k];
    if (order.size() <= kReportModels || k + 1 < kReportModels) {
      names.push_back(JsonQuote(r.models[m].name));
      good.push_back(rates(s.good[m]));
      bad.push_back(rates(s.bad[m]));
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      other_good[i] += s.good[m][i];
      other_bad[i] += s.bad[m][i];
    }
  }
  if (order.size() > kReportModels) {
    names.push_back(JsonQuote(absl::StrCat("the other ", order.size() - kReportModels + 1, " models")));
    good.push_back(rates(other_good));
    bad.push_back(rates(other_bad));
  }
  for (size_t i = 0; i < s.loads.size(); ++i) {
    loads.push_back(absl::StrFormat("%.6g", s.loads[i] / interval));
    memory.push_back(absl::StrFormat("%.6g", s.memory_bytes[i] / 1e9));
  }
  for (size_t i = 0; i < n; ++i) {
    t.push_back(absl::StrFormat("%.6g", i * interval));
    bad_total.push_back(absl::StrFormat("%.6g", s.Bad(i) / interval));
    bad_rate.push_back(absl::StrFormat("%.6g", s.BadRate(i)));
    used.push_back(absl::StrCat(s.gpus_used[i]));
    add.push_back(absl::StrCat(s.advice[i].add));
    remove.push_back(absl::StrCat(s.advice[i].remove));
  }
  return absl::StrFormat(
      R"({"policy":%s,"gpus":%d,"interval_s":%g,"models":%s,"t":%s,"good":%s,"bad":%s,"bad_total":%s,)"
      R"("gpus_used":%s,"gpus_allocated":%s,"advice_add":%s,"advice_remove":%s,"bad_rate":%s,)"
      R"("loads":%s,"memory_gb":%s,)"
      R"("summary":{"offered_rps":%.6g,"goodput_rps":%.6g,"bad_rate":%.6g,"gpus_used":%d}})",
      JsonQuote(policy), gpus, interval, list(names), list(t), list(good), list(bad), list(bad_total), list(used),
      list(allocated), list(add), list(remove), list(bad_rate), list(loads), list(memory), r.OfferedRate(),
      r.Goodput(), r.total.rate(), r.gpus_used);
}

}  // namespace tutti
