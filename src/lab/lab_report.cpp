#include "lab/lab_report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <span>
#include <sstream>

#include "engines/series.hpp"
#include "formats/result_json.hpp"
#include "text/number.hpp"
#include "text/units.hpp"

namespace retrystorm::lab {

namespace {

// Goodput per second, one value per column over the horizon (the scenario's:
// an interrupted measurement is shorter).
std::vector<double> per_column(const RunResult& run, double horizon, int width) {
  const auto& g = run.series.goodput;
  std::vector<double> v(static_cast<size_t>(width), 0.0);
  double step = run.scenario.step_s;
  for (int c = 0; c < width; ++c) {
    double from = horizon * c / width, to = horizon * (c + 1) / width, sum = 0;
    size_t i0 = static_cast<size_t>(from / step);
    size_t i1 = std::max(i0 + 1, static_cast<size_t>(std::ceil(to / step - 1e-9)));
    for (size_t i = i0; i < i1 && i < g.size(); ++i) sum += g[i];
    v[static_cast<size_t>(c)] = sum / (static_cast<double>(i1 - i0) * step);
  }
  return v;
}

// One chart, two curves: M measured, P predicted (agent), = both.
std::string chart(const LabResult& r, int width = 72, int height = 12) {
  double h = r.scaled.horizon_s;
  auto m = per_column(r.measured.run, h, width), p = per_column(r.predicted.run, h, width);
  // Columns after an interrupt hold nothing measured: no M there.
  double measured_until = static_cast<double>(r.measured.run.series.size()) * r.bin_s;
  double top =
      std::max(*std::max_element(m.begin(), m.end()), *std::max_element(p.begin(), p.end()));
  top = std::max(top, r.scaled.demand.rate_per_s) * 1.05;
  std::vector<std::string> rows(static_cast<size_t>(height),
                                std::string(static_cast<size_t>(width), ' '));
  auto row_of = [&](double v) {
    int k = static_cast<int>(std::lround(v / top * (height - 1)));
    return height - 1 - std::clamp(k, 0, height - 1);
  };
  for (int c = 0; c < width; ++c) {
    int a = row_of(m[static_cast<size_t>(c)]), b = row_of(p[static_cast<size_t>(c)]);
    rows[static_cast<size_t>(b)][static_cast<size_t>(c)] = 'P';
    if (h * c / width < measured_until - 1e-9)
      rows[static_cast<size_t>(a)][static_cast<size_t>(c)] = a == b ? '=' : 'M';
  }
  std::ostringstream o;
  o << "goodput per second: M measured, P predicted (agent engine), = both\n";
  for (int i = 0; i < height; ++i) {
    double level = top * (height - 1 - i) / (height - 1);
    o << std::setw(8) << std::lround(level) << " |" << rows[static_cast<size_t>(i)] << "\n";
  }
  std::string axis(static_cast<size_t>(width), '-');
  for (int c = 0; c < width; ++c) {
    double t = h * (c + 0.5) / width;
    if (t >= r.scaled.incident.start_s && t < r.scaled.incident_end_s())
      axis[static_cast<size_t>(c)] = '#';
  }
  o << "         +" << axis << "\n         0 s" << std::string(static_cast<size_t>(width - 8), ' ')
    << number_text(h) << " s   (# incident)\n";
  return o.str();
}

std::string recovery_text(const Metrics& m, const Scenario& s) {
  auto t = recovery_time(m, s);
  return t ? format_seconds(*t) : "not recovered";
}

std::string signed_points(double a, double b) {
  std::ostringstream o;
  o << std::showpos << std::fixed << std::setprecision(1) << (a - b) * 100 << " pt";
  return o.str();
}

std::string difference_of_recovery(const Metrics& m, const Metrics& p, const Scenario& s) {
  auto a = recovery_time(m, s), b = recovery_time(p, s);
  if (!a || !b) return a || b ? "one recovered" : "-";
  std::ostringstream o;
  o << std::showpos << std::fixed << std::setprecision(2) << *a - *b << " s";
  return o.str();
}

void table_row(std::ostringstream& o, const std::string& name, const std::string& a,
               const std::string& b, const std::string& d, const std::string& f) {
  o << std::left << std::setw(22) << name << std::setw(16) << a << std::setw(16) << b
    << std::setw(16) << d << f << "\n";
}

std::string amplification(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << v << "x";
  return o.str();
}

std::string table(const LabResult& r) {
  const Metrics &m = r.measured.metrics, &p = r.predicted.metrics, &f = r.fluid.metrics;
  const Scenario& s = r.scaled;
  // An interrupted run has no measured verdict or recovery; a machine that
  // could not keep time has them, but no comparison (not_judged_why).
  bool judged = not_judged_why(r).empty();
  auto measured = [&](const std::string& v) { return r.interrupted ? "not judged" : v; };
  auto compared = [&](const std::string& v) { return judged ? v : "not judged"; };
  // Where the fluid engine refuses (a graph, a breaker), its column says so.
  auto fluid = [&](const std::string& v) { return r.fluid_ran ? v : std::string("-"); };
  std::ostringstream o;
  table_row(o, "", "measured", "predicted", "difference", "fluid engine");
  table_row(o, "verdict", measured(m.recovered ? "recovers" : "stuck"),
            p.recovered ? "recovers" : "stuck",
            compared(m.recovered == p.recovered ? "agree" : "DISAGREE"),
            fluid(f.recovered ? "recovers" : "stuck"));
  table_row(o, "failed requests", format_percent(m.failed_fraction),
            format_percent(p.failed_fraction), signed_points(m.failed_fraction, p.failed_fraction),
            fluid(format_percent(f.failed_fraction)));
  table_row(o, "wasted work", format_percent(m.wasted_fraction), format_percent(p.wasted_fraction),
            signed_points(m.wasted_fraction, p.wasted_fraction),
            fluid(format_percent(f.wasted_fraction)));
  table_row(o, "peak amplification", amplification(m.peak_amplification),
            amplification(p.peak_amplification),
            amplification(m.peak_amplification - p.peak_amplification),
            fluid(amplification(f.peak_amplification)));
  table_row(o, "recovery", measured(recovery_text(m, s)), recovery_text(p, s),
            compared(difference_of_recovery(m, p, s)), fluid(recovery_text(f, s)));
  table_row(o, "user requests", format_amount(m.user_requests), format_amount(p.user_requests), "",
            fluid(format_amount(f.user_requests)));
  // The client's breaker, throttle or max_requests (the fluid engine runs none).
  auto refused = [](const LabRun& x) {
    const auto& v = x.run.series.refused_locally;
    return std::accumulate(v.begin(), v.end(), 0.0);
  };
  if (refused(r.measured) > 0 || refused(r.predicted) > 0)
    table_row(o, "refused by the client", format_amount(refused(r.measured)),
              format_amount(refused(r.predicted)), "", "-");
  return o.str();
}

// A chain, service by service: attempts per user request and the share of
// arrivals served while their caller waited (docs/lab.md, "A chain of services").
std::string hop_table(const LabResult& r) {
  bool judged = not_judged_why(r).empty();
  std::ostringstream o;
  o << "per service (attempts per user request; share of its arrivals served in time):\n";
  table_row(o, "service", "measured", "predicted", "served m / p", "agree");
  for (const HopAgreement& h : r.hops) {
    std::string served = h.serves ? format_percent(h.measured_served_share) + " / " +
                                        format_percent(h.predicted_served_share)
                                  : "(a proxy)";
    table_row(o, h.service, number_text(std::round(h.measured_per_request * 100) / 100),
              number_text(std::round(h.predicted_per_request * 100) / 100), served,
              !judged                  ? "not judged"
              : h.attempts && h.served ? "yes"
                                       : "NO");
  }
  return o.str();
}

std::string delays_text(const LabResult& r) {
  std::ostringstream o;
  double gap = r.give_up_gap_s;
  o << "measured between caller and backend: the backend gives up " << human_duration(std::abs(gap))
    << (gap < 0 ? " before" : " after") << " the caller, an answer takes "
    << human_duration(r.answer_way_back_s) << " to come back; predicted with server.shed_lag_s = "
    << human_duration(r.scaled.server.shed_lag_s)
    << ", server.answer_delay_s = " << human_duration(r.scaled.server.answer_delay_s)
    << " (docs/lab.md)\n";
  return o.str();
}

// Disturbed bins that end after the incident: those recovery is judged on.
size_t disturbed_after_incident(const LabResult& r) {
  double end = r.scaled.incident_end_s();
  return static_cast<size_t>(std::count_if(r.disturbed_t_s.begin(), r.disturbed_t_s.end(),
                                           [&](double t) { return t + r.bin_s > end; }));
}

// Bins a stall of the machine disturbed, left out of the measured goodput
// recovery (lab_run.cpp, discount_stalls).
std::string stalls_text(const LabResult& r) {
  std::ostringstream o;
  size_t after = disturbed_after_incident(r);
  o << "stalls: " << r.disturbed_t_s.size() << " bins disturbed (a timer more than "
    << human_duration(kStallBinFraction * r.bin_s) << " late), " << after
    << " after the incident ended";
  if (r.scaled.recovery.criterion == RecoveryCriterion::goodput && after > 0)
    o << "; left out of the goodput recovery (counting them: "
      << (r.goodput_recovery_counting_stalls_s
              ? format_seconds(*r.goodput_recovery_counting_stalls_s)
              : std::string("not recovered"))
      << ")";
  o << "\n";
  return o.str();
}

}  // namespace

std::string lab_text(const LabResult& r) {
  std::ostringstream o;
  o << "retrystorm lab: '" << r.scaled.name << "' through " << r.through << ", scale "
    << number_text(r.scale) << " (rates and capacities x" << number_text(r.scale)
    << ", times unchanged), seed " << number_text(r.scaled.seed) << ", " << number_text(r.bin_s)
    << " s bins\n";
  if (!r.imported_policy.empty())
    o << "predicted with the " << r.through << " settings read back as scenario keys:\n"
      << r.imported_policy;
  o << delays_text(r);
  std::string why = not_judged_why(r);
  if (r.interrupted)
    o << "INTERRUPTED: the measurement stops where the run was interrupted, at "
      << number_text(std::round(r.interrupted_at_s * 10) / 10)
      << " s; the measured verdict, recovery and agreement are not judged\n";
  else if (!why.empty())
    o << "TIME NOT KEPT: " << why << "; the comparison with the prediction is void\n";
  o << "\n" << chart(r) << "\n" << table(r) << "\n";
  if (!r.hops.empty()) o << hop_table(r) << "\n";
  Agreement a = agreement(r.measured.metrics, r.predicted.metrics, r.scaled);
  if (!why.empty())
    o << "agreement (docs/lab.md): not judged, because " << why << "\n";
  else
    o << "agreement (docs/lab.md): verdict " << (a.verdict ? "yes" : "no")
      << ", failed within 5 pt " << (a.failed_share ? "yes" : "no")
      << ", recovery within 2 s or 10% " << (a.recovery ? "yes" : "no") << "\n";
  o << "measured: " << (r.interrupted ? "not judged, because " + why : r.measured.verdict.headline)
    << "\npredicted: " << r.predicted.verdict.headline << "\n";
  o << "timing error (how late timers fired, p50 / p99 / max): generator "
    << human_duration(r.generator_error.p50_s) << " / " << human_duration(r.generator_error.p99_s)
    << " / " << human_duration(r.generator_error.max_s) << ", backend "
    << human_duration(r.backend_error.p50_s) << " / " << human_duration(r.backend_error.p99_s)
    << " / " << human_duration(r.backend_error.max_s) << "\n";
  o << stalls_text(r);
  if (r.connection_errors > 0)
    o << "connection errors: " << format_amount(r.connection_errors) << "\n";
  return o.str();
}

namespace {

nlohmann::json run_block(const LabRun& v) {
  nlohmann::json b{{"metrics", metrics_json(v.metrics)},
                   {"verdict",
                    {{"recovered", v.verdict.recovered},
                     {"headline", v.verdict.headline},
                     {"detail", v.verdict.detail}}},
                   {"series", series_json(v.run.series)}};
  if (!v.run.graph.empty()) b["graph"] = graph_json(v.run);
  return b;
}

nlohmann::json timing_json(const TimingError& e) {
  return nlohmann::json{{"p50_s", e.p50_s}, {"p99_s", e.p99_s}, {"max_s", e.max_s}};
}

// The measured block; of an interrupted run, its figures up to the
// interrupt and no verdict or recovery (`why` says so).
nlohmann::json measured_json(const LabResult& r, const std::string& why) {
  nlohmann::json measured = run_block(r.measured);
  if (!r.interrupted) return measured;
  for (const char* k : {"recovered", "goodput_recovery_s", "failure_recovery_s"})
    if (measured["metrics"].contains(k)) measured["metrics"][k] = nullptr;
  measured["verdict"] = {{"recovered", nullptr},
                         {"headline", "not judged, because " + why},
                         {"detail", ""},
                         {"judged", false}};
  return measured;
}

// How the run went on this machine: its clocks, its delays, its stalls.
nlohmann::json lab_block(const LabResult& r, const TimeKeeping& kept) {
  return {{"scenario", r.scaled.name},
          {"through", r.through},
          {"scale", r.scale},
          {"seed", r.scaled.seed},
          {"bin_s", r.bin_s},
          {"interrupted", r.interrupted},
          {"interrupted_at_s",
           r.interrupted ? nlohmann::json(r.interrupted_at_s) : nlohmann::json(nullptr)},
          {"time_keeping",
           {{"kept", kept.kept},
            {"why", kept.why},
            {"p99_limit_s", kMaxTimingErrorP99S},
            {"worst_lateness_s", r.worst_lateness_s},
            {"worst_lateness_limit_s", r.worst_lateness_limit_s}}},
          {"max_attempts_per_s", kMaxAttemptsPerS},
          {"timing_error",
           {{"generator", timing_json(r.generator_error)},
            {"backend", timing_json(r.backend_error)},
            {"grpc_transit", timing_json(r.grpc_transit)},
            {"give_up_lead", timing_json(r.give_up_lead)},
            {"answer_transit", timing_json(r.answer_transit)}}},
          {"give_up_gap_s", r.give_up_gap_s},
          {"answer_way_back_s", r.answer_way_back_s},
          {"predicted_with",
           {{"server.shed_lag_s", r.scaled.server.shed_lag_s},
            {"server.answer_delay_s", r.scaled.server.answer_delay_s}}},
          {"served_in_time_after_caller_left", r.served_in_time_after_caller_left},
          {"connection_errors", r.connection_errors},
          {"stalls",
           {{"threshold_s", kStallBinFraction * r.bin_s},
            {"disturbed_bins", r.disturbed_t_s.size()},
            {"disturbed_bins_after_incident", disturbed_after_incident(r)},
            {"disturbed_t_s", r.disturbed_t_s},
            {"goodput_recovery_s_counting_stalls",
             r.goodput_recovery_counting_stalls_s
                 ? nlohmann::json(*r.goodput_recovery_counting_stalls_s)
                 : nlohmann::json(nullptr)}}},
          {"pids", r.pids},
          {"layer_config", r.layer_config},
          {"imported_policy", r.imported_policy}};
}

// Measured against predicted; not judged (an interrupt, a machine that
// could not keep time): every field stays, its value null, and `judged`
// and `why_not_judged` say why.
nlohmann::json agreement_json(const LabResult& r, const std::string& why, bool kept_time) {
  const bool judged = why.empty();
  auto judgement = [&](bool v) { return judged ? nlohmann::json(v) : nlohmann::json(nullptr); };
  Agreement a = agreement(r.measured.metrics, r.predicted.metrics, r.scaled);
  nlohmann::json hops = nlohmann::json::array();
  for (const HopAgreement& h : r.hops)
    hops.push_back({{"service", h.service},
                    {"serves", h.serves},
                    {"measured_per_request", h.measured_per_request},
                    {"predicted_per_request", h.predicted_per_request},
                    {"measured_served_share", h.measured_served_share},
                    {"predicted_served_share", h.predicted_served_share},
                    {"attempts", judgement(h.attempts)},
                    {"served", judgement(h.served)}});
  return {{"verdict", judgement(a.verdict)},
          {"failed_share", judgement(a.failed_share)},
          {"recovery", judgement(a.recovery)},
          {"hops", hops},
          {"judged", judged},
          {"interrupted", r.interrupted},
          {"kept_time", kept_time},
          {"why_not_judged", why}};
}

}  // namespace

nlohmann::json lab_json(const LabResult& r) {
  const std::string why = not_judged_why(r);
  const TimeKeeping kept = time_keeping(r);
  nlohmann::json fluid = r.fluid_ran ? run_block(r.fluid) : nlohmann::json(nullptr);
  if (r.fluid_ran) fluid.erase("series");
  return {{"interrupted", r.interrupted},
          {"kept_time", kept.kept},
          {"judged", why.empty()},
          {"lab", lab_block(r, kept)},
          {"measured", measured_json(r, why)},
          {"predicted", run_block(r.predicted)},
          {"predicted_fluid", fluid},
          {"agreement", agreement_json(r, why, kept.kept)}};
}

std::string lab_csv(const LabResult& r) {
  const Series &m = r.measured.run.series, &p = r.predicted.run.series;
  // Every series but t_s (the shared first column), in kSeriesFields' order.
  static_assert(kSeriesFields[0].name == "t_s");
  auto fields = std::span(kSeriesFields).subspan(1);
  std::ostringstream o;
  o << "t_s";
  for (const char* side : {"measured", "predicted"})
    for (const SeriesField& f : fields) o << "," << side << "_" << f.name;
  o << "\n";
  // After an interrupt the measured cells are empty: nothing was measured.
  for (size_t i = 0; i < p.size(); ++i) {
    o << number_text(p.t_s[i]);
    for (const Series* s : {&m, &p})
      for (const SeriesField& f : fields)
        o << "," << (i < s->size() ? number_text((s->*f.member)[i]) : std::string());
    o << "\n";
  }
  return o.str();
}

}  // namespace retrystorm::lab
