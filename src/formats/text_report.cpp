#include "formats/text_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>
#include <utility>

#include "analysis/graph_report.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {

namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s += std::string(width - s.size(), ' ');
  return s;
}

std::string recovery_text(const Scenario& s, const Metrics& m) {
  auto rec = recovery_time(m, s);
  return rec ? "recovered +" + format_seconds(*rec)
             : "not recovered by " + format_seconds(s.horizon_s);
}

std::string optional_seconds(const std::optional<double>& v) {
  return v ? format_seconds(*v) : "none";
}

// Full precision for CSV: 17 significant digits read back as the same double.
std::string csv_number(double v) {
  return text::general_text(v, 17);
}

// The attempts that reached the charted service in step i: what the clients
// sent, or a graph's incident service's own arrivals, its first attempts and
// retries (a user request may reach it by several paths: shared-database's
// db gets two calls for each, which the top-level series count once).
double load_at(const RunResult& run, const ServiceSeries* hit, size_t i) {
  return hit ? hit->first_attempts[i] + hit->retries[i] : attempts_sent(run.series, i);
}

}  // namespace

std::string terminal_chart(const RunResult& run, int width, int height) {
  const Scenario& s = run.scenario;
  const Series& x = run.series;
  const ServiceSeries* hit = charted_service(run);
  size_t n = x.size();
  if (n == 0) return "";
  width = std::max(1, std::min<int>(width, static_cast<int>(n)));
  std::vector<double> load(width), capacity(width), goodput(width);
  std::vector<bool> incident(width);
  for (int c = 0; c < width; ++c) {
    size_t from = n * c / width, to = std::max(from + 1, n * (c + 1) / width);
    for (size_t i = from; i < to; ++i) {
      load[c] += load_at(run, hit, i);
      capacity[c] += x.capacity[i];
      goodput[c] += x.goodput[i];
      incident[c] = incident[c] || s.in_incident(static_cast<int>(i));
    }
    double per_s = 1.0 / ((to - from) * s.step_s);
    load[c] *= per_s;
    capacity[c] *= per_s;
    goodput[c] *= per_s;
  }
  double top = 0;
  for (int c = 0; c < width; ++c) top = std::max({top, load[c], capacity[c], goodput[c]});
  if (top <= 0) top = 1;
  auto row_of = [&](double v) { return static_cast<int>(std::lround(v / top * (height - 1))); };
  std::vector<std::string> grid(height, std::string(width, ' '));
  for (int c = 0; c < width; ++c) {
    for (int r = 0; r <= row_of(load[c]) && load[c] > 0; ++r) grid[r][c] = '.';
    grid[row_of(capacity[c])][c] = '-';
    grid[row_of(goodput[c])][c] = '*';
  }
  std::ostringstream out;
  std::string label_top = format_amount(top) + "/s", label_zero = "0/s";
  size_t margin = std::max(label_top.size(), label_zero.size()) + 1;
  for (int r = height - 1; r >= 0; --r) {
    std::string label = r == height - 1 ? label_top : r == 0 ? label_zero : "";
    out << std::string(margin - label.size() - 1, ' ') << label << " |" << grid[r] << "\n";
  }
  out << std::string(margin, ' ') << "+" << std::string(width, '-') << "\n";
  out << std::string(margin + 1, ' ');
  for (int c = 0; c < width; ++c) out << (incident[c] ? '^' : ' ');
  out << "\n"
      << std::string(margin + 1, ' ') << pad("0 s", width - 6) << format_seconds(s.horizon_s)
      << "\n"
      << "  . sent (first attempts + retries)   - capacity   * on-time responses   ^ incident\n";
  return out.str();
}

namespace {

// A graph's run hop by hop: each service's arrivals and amplification, each
// edge's attempts per call (docs/graph.md, "Results").
std::string hops_text(const RunResult& run) {
  GraphSummary g = graph_summary(run);
  size_t name_w = 9, edge_w = 6;  // the widest name, and the headers
  for (const ServiceHop& h : g.services) name_w = std::max(name_w, printable(h.name).size() + 2);
  for (const EdgeHop& h : g.edges)
    edge_w = std::max(edge_w, printable(h.from + " -> " + h.to).size() + 2);
  std::ostringstream out;
  out << "Per service (x = attempts per first attempt; per request = attempts per user "
         "request, in this run / when all fail)\n";
  out << "  " << pad("service", name_w) << pad("attempts", 11) << pad("x", 7)
      << pad("per request", 16) << pad("served", 10) << pad("late", 10) << pad("rejected", 10)
      << pad("shed", 10) << "peak queue\n";
  for (const ServiceHop& h : g.services) {
    out << "  " << pad(printable(h.name), name_w)
        << pad(format_amount(h.first_attempts + h.retries), 11)
        << pad(format_amount(h.amplification), 7)
        << pad(format_amount(h.per_request) + " / " + format_amount(h.worst_case), 16);
    if (h.serves)
      out << pad(format_amount(h.served), 10) << pad(format_amount(h.late), 10)
          << pad(format_amount(h.rejected), 10) << pad(format_amount(h.shed), 10)
          << format_amount(h.peak_queue) << "\n";
    else
      out << "(a proxy: no server)\n";
  }
  // The fault's columns only when the incident is a fault on a call; the
  // rate limiter's when one held an attempt.
  bool fault = run.scenario.incident.call >= 0;
  bool paced =
      std::any_of(g.edges.begin(), g.edges.end(), [](const EdgeHop& h) { return h.paced > 0; });
  out << "Per call (x = attempts per call)\n";
  out << "  " << pad("call", edge_w) << pad("calls", 10) << pad("retries", 10) << pad("x", 7)
      << pad("timeouts", 10) << pad("failed", 10) << (fault || paced ? pad("denied", 10) : "denied")
      << (fault ? pad("delayed", 10) + (paced ? pad("aborted", 10) : "aborted") : "")
      << (paced ? "paced" : "") << "\n";
  for (const EdgeHop& h : g.edges) {
    out << "  " << pad(printable(h.from + " -> " + h.to), edge_w) << pad(format_amount(h.calls), 10)
        << pad(format_amount(h.retries), 10) << pad(format_amount(h.attempts_per_call), 7)
        << pad(format_amount(h.timeouts), 10) << pad(format_amount(h.failed), 10);
    std::vector<double> tail = {h.denied};
    if (fault) tail.insert(tail.end(), {h.delayed, h.aborted});
    if (paced) tail.push_back(h.paced);
    for (size_t i = 0; i < tail.size(); ++i)
      out << (i + 1 < tail.size() ? pad(format_amount(tail[i]), 10) : format_amount(tail[i]));
    out << "\n";
  }
  return out.str();
}

std::string dependency_name(const RunResult& run) {
  const Scenario& s = run.scenario;
  return s.graph.services[static_cast<size_t>(incident_service(s))].name;
}

}  // namespace

namespace {

// The preset's description tells of its own incident and load; once the
// scenario has left the preset, the keys it changed are said instead, so
// that no sentence states a value the run no longer has (the ladder's rows
// by the same rule: row_changes).
std::string scenario_line(const Scenario& s) {
  std::string changed = left_preset_by(s, preset_behind(s, presets()));
  if (changed.empty()) return printable(s.description);
  return "the preset with " + changed + " (its own description no longer applies)";
}

}  // namespace

std::string run_text(const RunReport& r) {
  const Scenario& s = r.run.scenario;
  const Metrics& m = r.metrics;
  std::ostringstream out;
  out << printable(s.name) << ": " << scenario_line(s) << "\n\n";
  out << "  " << r.verdict.headline << "\n\n";
  out << "Key metrics\n";
  out << "  failed requests     " << format_percent(m.failed_fraction) << "  ("
      << format_amount(m.failed) << " of " << format_amount(m.user_requests) << ")\n";
  out << "  wasted work         " << format_percent(m.wasted_fraction)
      << "  served after the caller gave up\n";
  out << "  peak amplification  " << format_amount(m.peak_amplification) << "x at "
      << format_seconds(m.peak_t_s) << "\n";
  if (m.latency_p50_s)
    out << "  success latency     p50 " << format_seconds(*m.latency_p50_s) << ", p90 "
        << format_seconds(*m.latency_p90_s) << ", p99 " << format_seconds(*m.latency_p99_s) << "\n";
  out << "  goodput recovery    " << optional_seconds(m.goodput_recovery_s) << "\n";
  out << "  failure recovery    " << optional_seconds(m.failure_recovery_s)
      << (m.backlog_growing ? "  (backlog still growing)" : "") << "\n";
  out << "  last " << format_seconds(m.last_window.seconds) << "         goodput "
      << format_amount(m.last_window.goodput_per_s) << "/s, utilization "
      << format_percent(m.last_window.utilization) << ", "
      << text::fixed_text(m.last_window.attempts_per_request, 2)
      << " attempts per request\n";  // "1.00", never "1 attempts"
  if (!r.tipping)
    out << "  tipping point       not computed for a run this long; see `retrystorm tipping`\n";
  if (r.tipping)
    out << "  tipping point       "
        << (r.tipping->on_grid_s ? format_seconds(*r.tipping->on_grid_s) + " on a " +
                                       format_seconds(r.tipping->grid_s) + " grid, exactly " +
                                       format_seconds(r.tipping->exact_s.value_or(0))
                                 : "none up to the horizon")
        << "\n";
  out << "\n" << r.verdict.detail << "\n\n";
  if (!r.run.graph.empty()) out << hops_text(r.run) << "\n";
  std::string at = r.run.graph.empty() ? "the dependency" : printable(dependency_name(r.run));
  out << "Load at " << at << " (per second)\n" << terminal_chart(r.run) << "\n";
  out << "Goodput per second\n";
  for (const auto& g : r.goodput)
    out << "  " << pad(format_seconds(g.t_s), 10) << pad(g.phase, 8)
        << format_amount(g.goodput_per_s) << "\n";
  if (!r.advice.empty()) {
    out << "\nWhat would help\n";
    int i = 1;
    for (const auto& a : r.advice) out << "  " << i++ << ". " << a.title << ". " << a.why << "\n";
  }
  return out.str();
}

std::string ladder_text(const Scenario& s, const std::vector<LadderResult>& rows) {
  std::ostringstream out;
  Ladder l = ladder_of(s);
  out << printable(s.name) << ": the same incident, one defense at a time ("
      << (l.mode == LadderMode::cumulative ? "each row keeps the changes above it"
                                           : "each row is one change from the scenario")
      << ")\n\n";
  size_t width = 24;  // the longest name and two spaces (a graph's rows name their call)
  for (const auto& r : rows) width = std::max(width, printable(r.row.name).size() + 2);
  out << "  " << pad("defense", width) << pad("outcome", 34) << pad("failed", 22) << "peak\n";
  const std::vector<std::string> changes = row_changes(rows, presets());
  for (size_t i = 0; i < rows.size(); ++i) {
    const LadderResult& r = rows[i];
    std::string failed =
        format_percent(r.metrics.failed_fraction) + " (" + format_amount(r.metrics.failed) + ")";
    out << "  " << pad(printable(r.row.name), width)
        << pad(recovery_text(r.scenario, r.metrics), 34) << pad(failed, 22)
        << format_amount(r.metrics.peak_amplification) << "x\n";
    out << "  " << std::string(width, ' ') << printable(changes[i]) << "\n";
  }
  return out.str();
}

std::string tipping_text(const Scenario& s, const TippingResult& t) {
  std::ostringstream out;
  out << printable(s.name) << ": shortest incident that does not recover by "
      << format_seconds(s.horizon_s) << "\n";
  if (!t.on_grid_s) {
    out << "  none: every incident length on a " << format_seconds(t.grid_s)
        << " grid up to the horizon recovers\n";
    return out.str();
  }
  out << "  on a " << format_seconds(t.grid_s) << " grid: " << format_seconds(*t.on_grid_s)
      << "\n  exact (to one step of " << format_seconds(s.step_s)
      << "): " << format_seconds(*t.exact_s) << "\n";
  return out.str();
}

std::string presets_text() {
  std::ostringstream out;
  size_t w = 0;
  for (const auto& p : presets()) w = std::max(w, p.name.size());
  for (const auto& p : presets()) out << pad(p.name, w + 2) << p.description << "\n";
  return out.str();
}

std::string keys_markdown() {
  std::ostringstream out;
  Scenario defaults;
  out << "| key | type | allowed | default | what |\n|---|---|---|---|---|\n";
  for (const KeySpec& k : scenario_keys()) {
    std::string type, allowed;
    switch (k.type) {
      case KeyType::number:
      case KeyType::integer:
        type = k.type == KeyType::number ? "number" : "integer";
        allowed = (k.min_exclusive ? "> " : ">= ") + to_string(KeyValue{k.min}) +
                  ", <= " + to_string(KeyValue{k.max});
        if (!k.unit.empty() && k.unit != "x") allowed += " " + k.unit;
        break;
      case KeyType::boolean:
        type = "boolean";
        allowed = "true, false";
        break;
      case KeyType::choice:
        type = "choice";
        for (const auto& c : k.choices) allowed += (allowed.empty() ? "" : ", ") + c;
        break;
      case KeyType::text:
        type = "text";
        break;
    }
    out << "| `" << k.path << "` | " << type << " | " << allowed << " | "
        << to_string(k.get(defaults)) << " | " << k.help << " |\n";
  }
  return out.str();
}

std::string series_csv(const Series& s) {
  std::ostringstream out;
  const char* separator = "";
  for (const SeriesField& field : kSeriesFields) out << std::exchange(separator, ",") << field.name;
  for (size_t i = 0; i < s.size(); ++i) {
    separator = "\n";
    for (const SeriesField& field : kSeriesFields)
      out << std::exchange(separator, ",") << csv_number((s.*field.member)[i]);
  }
  out << "\n";
  return out.str();
}

namespace {

// One row per step and record: the time, the record's own columns, its fields.
template <typename Record, size_t N, typename Label>
std::string long_csv(const RunResult& run, const std::vector<Record>& records,
                     const std::array<GraphField<Record>, N>& fields, const std::string& head,
                     Label label) {
  std::ostringstream out;
  out << "t_s," << head;
  for (const auto& field : fields) out << "," << field.name;
  out << "\n";
  for (size_t i = 0; i < run.series.size(); ++i)
    for (size_t r = 0; r < records.size(); ++r) {
      out << csv_number(run.series.t_s[i]) << "," << label(r, records[r]);
      for (const auto& field : fields) out << "," << csv_number((records[r].*field.member)[i]);
      out << "\n";
    }
  return out.str();
}

// A name as one CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string graph_services_csv(const RunResult& run) {
  return long_csv(run, run.graph.services, kServiceFields, "service",
                  [](size_t, const ServiceSeries& x) { return csv_field(x.name); });
}

std::string graph_calls_csv(const RunResult& run) {
  return long_csv(run, run.graph.edges, kEdgeFields, "call,from,to",
                  [](size_t index, const EdgeSeries& x) {
                    return std::to_string(index) + "," + csv_field(x.from) + "," + csv_field(x.to);
                  });
}

// The figures a sweep's CSV lists after the varied keys, in this order.
constexpr std::string_view kSweepCsvFigures[] = {
    "failed_fraction",    "wasted_fraction", "peak_amplification", "goodput_recovery_s",
    "failure_recovery_s", "backlog_growing", "recovered"};

std::span<const std::string_view> sweep_csv_figures() {
  return kSweepCsvFigures;
}

std::string sweep_csv(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows) {
  std::ostringstream out;
  for (const auto& a : axes) out << csv_field(a.path) << ",";
  const char* separator = "";
  for (std::string_view name : kSweepCsvFigures) out << std::exchange(separator, ",") << name;
  out << "\n";
  for (const auto& r : rows) {
    for (double v : r.values) out << csv_number(v) << ",";
    separator = "";
    for (std::string_view name : kSweepCsvFigures) {
      const MetricField& field = metric_field(name);
      std::optional<double> v = sweep_figure(r, field);
      out << std::exchange(separator, ",");
      if (field.kind == FigureKind::flag && r.montecarlo.empty())
        out << (*v != 0 ? "true" : "false");
      else if (v)
        out << csv_number(*v);  // a missing figure is an empty cell
    }
    out << "\n";
  }
  return out.str();
}

std::string summaries_text(int runs, double seed, const Summaries& metrics) {
  std::string out = fmt::format(
      "\nMonte Carlo: {} runs from seed {:.0f} (mean, 95% interval of the mean; per "
      "seed min / median / max)\n",
      runs, seed);
  for (const auto& [name, m] : metrics) {
    if (m.n == 0) {
      out += fmt::format("  {:<34} never\n", name);
      continue;
    }
    std::string some = m.n < static_cast<size_t>(runs)
                           ? fmt::format(" in {} run{}", m.n, m.n == 1 ? "" : "s")
                           : "";
    out += fmt::format("  {:<34} {:.6g}  [{:.6g}, {:.6g}]  {:.6g} / {:.6g} / {:.6g}{}\n", name,
                       m.mean, m.low, m.high, m.min, m.median, m.max, some);
  }
  return out;
}

std::string montecarlo_text(const MonteCarloResult& r) {
  return summaries_text(r.runs, r.seed, r.metrics);
}

}  // namespace retrystorm
