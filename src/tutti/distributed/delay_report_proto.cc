#include "tutti/distributed/delay_report_proto.h"

#include <algorithm>

namespace tutti {

namespace pb = ::tutti::internal;

void ToProto(const DelayReport& r, pb::DelayReport* out) {
  out->set_measure(r.options.measure);
  out->set_quantile(r.options.quantile);
  out->set_timer_quantile(r.options.timer_quantile);
  out->set_window(r.options.window);
  out->set_dispatch(r.plan.network.ctrl);
  out->set_data_per_request(r.plan.network.data_per_request);
  out->set_response(r.plan.network.resp);
  out->set_frontrun_slack(r.plan.frontrun_slack);
  out->set_head_guard(r.plan.head_guard);
  auto value = [](const std::optional<Duration>& v) { return v.value_or(-1); };
  out->set_measured_dispatch(value(r.estimates[Delay::kDispatch].value));
  out->set_measured_response(value(r.estimates[Delay::kResponse].value));
  out->set_measured_timer(value(r.estimates[Delay::kTimer].value));
  out->set_measured_timer_tail(value(r.estimates.timer_tail));
  out->set_samples_dispatch(r.estimates[Delay::kDispatch].samples);
  out->set_samples_response(r.estimates[Delay::kResponse].samples);
  out->set_samples_timer(r.estimates[Delay::kTimer].samples);
  out->set_planned_quantile(r.estimates.planned_quantile);
  for (const DelayEstimates::Compute& c : r.estimates.compute) {
    pb::DelayReport::Compute* x = out->add_compute();
    x->set_gpu(c.gpu);
    x->set_model(c.model);
    x->set_batches(c.batches);
    x->set_ratio(c.ratio);
    x->set_scale(c.scale);
    x->set_tail_scale(c.tail_scale);
    x->set_late_start(c.late_start);
  }
  for (const std::string& c : r.choices) out->add_choices(c);
  for (const DelayHistogram& h : r.histograms) {
    pb::DelayReport::Histogram* x = out->add_histograms();
    x->mutable_counts()->Add(h.counts.begin(), h.counts.end());
    x->set_sum(h.sum);
  }
}

DelayReport FromProto(const pb::DelayReport& p) {
  DelayReport r;
  r.options.measure = p.measure();
  r.options.quantile = p.quantile();
  r.options.timer_quantile = p.timer_quantile();
  r.options.window = p.window();
  r.plan.network = {p.dispatch(), p.data_per_request(), p.response()};
  r.plan.frontrun_slack = p.frontrun_slack();
  r.plan.head_guard = p.head_guard();
  auto value = [](int64_t v) { return v < 0 ? std::nullopt : std::optional<Duration>(v); };
  r.estimates.delays[static_cast<int>(Delay::kDispatch)] = {value(p.measured_dispatch()), p.samples_dispatch()};
  r.estimates.delays[static_cast<int>(Delay::kResponse)] = {value(p.measured_response()), p.samples_response()};
  r.estimates.delays[static_cast<int>(Delay::kTimer)] = {value(p.measured_timer()), p.samples_timer()};
  r.estimates.timer_tail = value(p.measured_timer_tail());
  r.estimates.planned_quantile = p.planned_quantile();
  for (const pb::DelayReport::Compute& c : p.compute()) {
    r.estimates.compute.push_back({c.gpu(), c.model(), c.batches(), c.ratio(), c.scale(), c.tail_scale(),
                                   c.late_start()});
  }
  r.choices.assign(p.choices().begin(), p.choices().end());
  // A sender with other bounds (or none) leaves its histograms out.
  for (int d = 0; d < kDelayKinds && d < p.histograms_size(); ++d) {
    const pb::DelayReport::Histogram& h = p.histograms(d);
    if (h.counts_size() != static_cast<int>(r.histograms[d].counts.size())) continue;
    std::copy(h.counts().begin(), h.counts().end(), r.histograms[d].counts.begin());
    r.histograms[d].sum = h.sum();
  }
  return r;
}

}  // namespace tutti
