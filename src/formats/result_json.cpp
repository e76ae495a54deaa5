#include "formats/result_json.hpp"

#include <cmath>

#include "formats/scenario_io.hpp"
#include "model/graph.hpp"

namespace retrystorm {

using nlohmann::json;

json optional_json(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

namespace {

// A number, null when missing, or true / false.
json figure_json(const MetricField& field, const Metrics& m) {
  std::optional<double> v = field.get(m);
  if (!v) return nullptr;
  return field.kind == FigureKind::flag ? json(*v != 0) : json(*v);
}

}  // namespace

json metrics_json(const Metrics& m) {
  json out = json::object();
  for (const MetricField& field : metric_fields()) {
    json& place = field.group.empty() ? out : out[std::string(field.group)];
    place[std::string(field.name)] = figure_json(field, m);
  }
  return out;
}

json series_json(const Series& s) {
  json out = json::object();
  for (const SeriesField& field : kSeriesFields) {
    std::span<const double> v = s.*field.member;
    out[std::string(field.name)] = std::vector<double>(v.begin(), v.end());
  }
  return out;
}

namespace {

template <typename Record, size_t N>
json graph_series_json(const Record& x, const std::array<GraphField<Record>, N>& fields) {
  json out = json::object();
  for (const auto& field : fields) out[std::string(field.name)] = x.*field.member;
  return out;
}

json service_json(const ServiceHop& h, const ServiceSeries& x) {
  return {{"name", h.name},
          {"serves", h.serves},
          {"totals",
           {{"first_attempts", h.first_attempts},
            {"retries", h.retries},
            {"served", h.served},
            {"late", h.late},
            {"rejected", h.rejected},
            {"shed", h.shed},
            {"failed", h.failed},
            {"peak_queue", h.peak_queue},
            {"amplification", h.amplification},
            {"attempts_per_request", h.per_request},
            {"worst_case_per_request", h.worst_case}}},
          {"series", graph_series_json(x, kServiceFields)}};
}

json edge_json(const EdgeHop& h, const EdgeSeries& x) {
  return {{"from", h.from},
          {"to", h.to},
          {"totals",
           {{"calls", h.calls},
            {"retries", h.retries},
            {"timeouts", h.timeouts},
            {"failed", h.failed},
            {"denied", h.denied},
            {"attempts_per_call", h.attempts_per_call},
            {"delayed", h.delayed},
            {"aborted", h.aborted},
            {"paced", h.paced}}},
          {"series", graph_series_json(x, kEdgeFields)}};
}

}  // namespace

json graph_json(const RunResult& run) {
  GraphSummary summary = graph_summary(run);
  json services = json::array(), edges = json::array();
  for (size_t v = 0; v < summary.services.size(); ++v)
    services.push_back(service_json(summary.services[v], run.graph.services[v]));
  for (size_t e = 0; e < summary.edges.size(); ++e)
    edges.push_back(edge_json(summary.edges[e], run.graph.edges[e]));
  // The service the top-level series describe (docs/graph.md, "Results").
  int incident = incident_service(run.scenario);
  json named = incident < 0 ? json(nullptr)
                            : json(run.scenario.graph.services[static_cast<size_t>(incident)].name);
  return {{"services", services}, {"edges", edges}, {"incident_service", named}};
}

json tipping_json(const TippingResult& t) {
  return {{"grid_s", t.grid_s},
          {"on_grid_s", optional_json(t.on_grid_s)},
          {"exact_s", optional_json(t.exact_s)}};
}

json summaries_json(const Summaries& metrics) {
  json out = json::object();
  for (const auto& [name, m] : metrics)
    out[name] =
        m.n ? json{{"mean", m.mean},     {"low", m.low}, {"high", m.high}, {"min", m.min},
                   {"median", m.median}, {"max", m.max}, {"n", m.n}}
            : json{{"mean", nullptr},   {"low", nullptr}, {"high", nullptr}, {"min", nullptr},
                   {"median", nullptr}, {"max", nullptr}, {"n", m.n}};
  return out;
}

json montecarlo_json(const MonteCarloResult& mc) {
  return {{"runs", mc.runs},
          {"seed", mc.seed},
          {"metrics", summaries_json(mc.metrics)},
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

namespace {

// Per host of a dependency with server.hosts (docs/cli.md, "hosts").
json hosts_json(const std::vector<HostTotals>& hosts) {
  json out = json::array();
  for (size_t h = 0; h < hosts.size(); ++h)
    out.push_back({{"host", h},
                   {"attempts", hosts[h].attempts},
                   {"served", hosts[h].served},
                   {"refused", hosts[h].refused},
                   {"ejected_s", hosts[h].ejected_s},
                   {"ejections", hosts[h].ejections}});
  return out;
}

}  // namespace

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
  if (!r.run.graph.empty()) out["graph"] = graph_json(r.run);
  if (!r.run.hosts.empty()) out["hosts"] = hosts_json(r.run.hosts);
  return out;
}

json trace_json(const std::vector<TraceEntry>& trace) {
  json out = json::array();
  for (const auto& e : trace) out.push_back({{"t_s", e.t_s}, {"text", e.text}});
  return out;
}

json ladder_json(const std::vector<LadderResult>& rows) {
  json out = json::array();
  const std::vector<std::string> changes = row_changes(rows, presets());
  for (size_t i = 0; i < rows.size(); ++i) {
    const LadderResult& r = rows[i];
    json set = json::object();
    for (const auto& [path, v] : r.row.set) set[path] = key_value_to_json(v);
    RunResult dummy;  // verdict needs only the scenario and metrics
    dummy.scenario = r.scenario;
    Verdict v = verdict(dummy, r.metrics);
    out.push_back({{"name", r.row.name},
                   {"change", changes[i]},
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
    if (row.montecarlo.empty())
      out.push_back({{"values", values}, {"metrics", metrics_json(row.metrics)}});
    else  // runs > 1: the replications' summaries, as `run --runs N` gives them
      out.push_back({{"values", values}, {"montecarlo", summaries_json(row.montecarlo)}});
  }
  return {{"rows", out}};
}

}  // namespace retrystorm
