#include "io/result_json.hpp"

#include "engines/engine.hpp"
#include "io/scenario_io.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {
json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}
}  // namespace

json metrics_json(const Metrics& m) {
  return {
      {"user_requests", m.user_requests},
      {"failed", m.failed},
      {"failed_fraction", m.failed_fraction},
      {"succeeded", m.succeeded},
      {"in_flight", m.in_flight},
      {"served", m.served},
      {"served_on_time", m.served_on_time},
      {"served_late", m.served_late},
      {"shed", m.shed},
      {"rejected", m.rejected},
      {"budget_denied", m.budget_denied},
      {"wasted_fraction", m.wasted_fraction},
      {"peak_amplification", m.peak_amplification},
      {"peak_step_t_s", m.peak_t_s},
      {"goodput_recovery_s", optional_json(m.goodput_recovery_s)},
      {"failure_recovery_s", optional_json(m.failure_recovery_s)},
      {"backlog_growing", m.backlog_growing},
      {"recovered", m.recovered},
      {"last_window",
       {{"seconds", m.last_window.seconds},
        {"goodput_per_s", m.last_window.goodput_per_s},
        {"utilization", m.last_window.utilization},
        {"attempts_per_request", m.last_window.attempts_per_request}}},
      {"bound",
       {{"max_amplification", m.bound.max_amplification},
        {"safe_load_below", m.bound.safe_load_below},
        {"load", m.bound.load}}},
      {"latency_s",
       {{"p50", optional_json(m.latency_p50_s)},
        {"p90", optional_json(m.latency_p90_s)},
        {"p99", optional_json(m.latency_p99_s)}}},
  };
}

json series_json(const Series& s) {
  auto list = [](std::span<const double> v) {
    return json(std::vector<double>(v.begin(), v.end()));
  };
  return {{"t_s", list(s.t_s)},
          {"capacity", list(s.capacity)},
          {"first_attempts", list(s.first_attempts)},
          {"retries", list(s.retries)},
          {"goodput", list(s.goodput)},
          {"served_late", list(s.served_late)},
          {"failed", list(s.failed)},
          {"shed", list(s.shed)},
          {"rejected", list(s.rejected)},
          {"backlog", list(s.backlog)},
          {"gave_up", list(s.gave_up)},
          {"budget_denied", list(s.budget_denied)}};
}

RunReport make_report(const Scenario& s, bool with_advice, bool with_tipping, TippingCache* cache,
                      bool with_trace) {
  RunReport r;
  r.run = run_engine(s);
  r.metrics = compute_metrics(r.run);
  r.verdict = verdict(r.run, r.metrics);
  r.goodput = goodput_table(r.run);
  if (with_trace) r.trace = decision_trace(r.run);
  // A very long run leaves the tipping point to the `tipping` command.
  if (with_tipping && tipping_steps(s) <= kReportTippingSteps)
    r.tipping = cache ? cache->get(s) : tipping_point(s);
  if (with_advice) r.advice = advise(r.run, r.metrics, r.tipping);
  return r;
}

json tipping_json(const TippingResult& t) {
  return {{"grid_s", t.grid_s},
          {"on_grid_s", optional_json(t.on_grid_s)},
          {"exact_s", optional_json(t.exact_s)}};
}

json montecarlo_json(const MonteCarloResult& mc) {
  json metrics = json::object();
  for (const auto& [name, m] : mc.metrics)
    metrics[name] =
        m.n ? json{{"mean", m.mean},     {"low", m.low}, {"high", m.high}, {"min", m.min},
                   {"median", m.median}, {"max", m.max}, {"n", m.n}}
            : json{{"mean", nullptr},   {"low", nullptr}, {"high", nullptr}, {"min", nullptr},
                   {"median", nullptr}, {"max", nullptr}, {"n", 0}};
  return {{"runs", mc.runs},
          {"seed", mc.seed},
          {"metrics", metrics},
          {"band",
           {{"goodput_low", mc.goodput.low},
            {"goodput_mean", mc.goodput.mean},
            {"goodput_high", mc.goodput.high}}}};
}

json advice_json(const std::vector<Advice>& list) {
  json advice = json::array();
  for (const auto& a : list) {
    json change = json::object();
    for (const auto& [path, v] : a.change) change[path] = key_value_to_json(v);
    advice.push_back({{"title", a.title},
                      {"why", a.why},
                      {"change", change},
                      {"failed_fraction", optional_json(a.failed_fraction)},
                      {"recovers", a.recovers}});
  }
  return advice;
}

json run_json(const RunReport& r) {
  json goodput = json::array();
  for (const auto& g : r.goodput)
    goodput.push_back({{"t_s", g.t_s}, {"phase", g.phase}, {"goodput_per_s", g.goodput_per_s}});
  json advice = advice_json(r.advice);
  json out = {{"scenario", scenario_to_json(r.run.scenario)},
              {"metrics", metrics_json(r.metrics)},
              {"verdict",
               {{"recovered", r.verdict.recovered},
                {"headline", r.verdict.headline},
                {"detail", r.verdict.detail}}},
              {"series", series_json(r.run.series)},
              {"goodput_table", goodput},
              {"advice", advice}};
  if (!r.trace.empty()) out["trace"] = trace_json(r.trace);
  if (r.tipping) out["tipping"] = tipping_json(*r.tipping);
  return out;
}

json trace_json(const std::vector<TraceEntry>& trace) {
  json out = json::array();
  for (const auto& e : trace) out.push_back({{"t_s", e.t_s}, {"text", e.text}});
  return out;
}

json ladder_json(const std::vector<LadderResult>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json set = json::object();
    for (const auto& [path, v] : r.row.set) set[path] = key_value_to_json(v);
    RunResult dummy;  // verdict needs only the scenario and metrics
    dummy.scenario = r.scenario;
    Verdict v = verdict(dummy, r.metrics);
    out.push_back({{"name", r.row.name},
                   {"change", r.row.change},
                   {"set", set},
                   {"scenario", scenario_to_json(r.scenario)},
                   {"metrics", metrics_json(r.metrics)},
                   {"verdict", {{"recovered", v.recovered}, {"headline", v.headline}}},
                   {"goodput_per_s", r.goodput_per_s}});
  }
  return {{"rows", out}};
}

json sweep_json(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows) {
  json out = json::array();
  for (const auto& row : rows) {
    json values = json::object();
    for (size_t a = 0; a < axes.size(); ++a) values[axes[a].path] = row.values[a];
    out.push_back({{"values", values}, {"metrics", metrics_json(row.metrics)}});
  }
  return {{"rows", out}};
}

}  // namespace retrystorm
