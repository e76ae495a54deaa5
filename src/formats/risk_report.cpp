#include "formats/risk_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "formats/result_json.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"
#include "text/units.hpp"

namespace retrystorm {

namespace {

constexpr double kHour = 3600, kDay = 86400;

// A chance as a percentage, or in powers of ten below 0.1%, each figure by
// its own value: 0 of 100,000 is "0% to 3.8e-05", not "0% to 0%", and an
// interval's low end of 2e-05 is not "0%" beside a high end of 0.4%.
std::string chance_text(double p) {
  return p >= 0.001 || p == 0 ? format_percent(p) : text::general_text(p, 2);
}

std::string share_text(const Share& s) {
  return fmt::format("{} ({} to {})", chance_text(s.p), chance_text(s.low), chance_text(s.high));
}

std::string count_text(const Share& s) {
  return fmt::format("{} of {} ({} to {})", s.k, s.n, chance_text(s.low), chance_text(s.high));
}

std::string mean_text(const WaitingTime& w) {
  if (!w.mean_s) return "more than " + rough_duration(w.low_s);
  if (!w.high_s)  // the interval's low chance is 0: no upper bound
    return fmt::format("{} (at least {})", rough_duration(*w.mean_s), rough_duration(w.low_s));
  return fmt::format("{} ({} to {})", rough_duration(*w.mean_s), rough_duration(w.low_s),
                     rough_duration(*w.high_s));
}

// Splitting's mean time to tip. A chance of 1 gives none (the formula
// would say 0 s): the walks say only that it tips within the horizon; the
// plain runs above time how soon.
std::string rare_mean_text(const WaitingTime& w, double horizon_s) {
  if (!w.certain) return mean_text(w);
  return "none (a chance of 1 within " + rough_duration(horizon_s) +
         " gives no mean; the plain runs above time it)";
}

void rare_text(std::ostringstream& out, const RiskResult& r, const RareTip& t) {
  std::string levels;
  for (int64_t level : t.levels) levels += (levels.empty() ? "" : ", ") + std::to_string(level);
  if (t.reached) {
    out << "  by splitting: tips within " << rough_duration(r.scenario.horizon_s) << ": "
        << chance_text(t.p) << " (" << chance_text(t.low) << " to " << chance_text(t.high)
        << "); mean time to tip " << rare_mean_text(t.enter, r.scenario.horizon_s) << "\n"
        << "    tips within 1 h: " << chance_text(t.enter.within(kHour).p)
        << "; within 1 day: " << chance_text(t.enter.within(kDay).p) << "\n";
  } else {
    // Every run's product is 0: no evidence for a chance, not a chance of 0
    // with an interval of [0, 0].
    const size_t passed = std::min(static_cast<size_t>(t.stages_passed), t.levels.size());
    out << "  by splitting: no walk reached the stuck rule within "
        << rough_duration(r.scenario.horizon_s)
        << ", so no estimate: only that the chance is below what " << t.effort
        << " walks per stage can see; ";
    if (passed == 0)
      out << "none reached the first level";
    else
      out << "the furthest reached " << t.levels[passed - 1] << " attempts at the server ("
          << passed << " of " << t.levels.size() + 1 << " stages)";
    out << "; more walks per stage (--split-effort) see smaller chances\n";
  }
  out << "    stages: attempts at the server reaching " << levels << ", then the stuck rule; "
      << t.effort << " walks per stage, " << t.runs << " independent splitting runs, "
      << text::grouped_text(double(t.engine_runs)) << " runs of the engine in all\n";
}

// A replay is one run: runs 1, where the scenario's runs are not (--walk
// was refused, a seed ran a Monte Carlo from it), and the line as it was
// where they are.
std::string one_run_set(const RiskResult& r) {
  return r.scenario_runs != 1 ? " --set runs=1" : "";
}
// The keys that replay one quiet run: without the scripted incident, or
// with the incidents at random as they were.
std::string quiet_sets(const Scenario& s) {
  return s.incident.random_per_h > 0 ? "" : " --set incident.duration_s=0";
}
// How `run` shows a replay: with incidents at random its report (which
// measures recovery from one incident) refuses them, its series do not.
std::string replay_format(const Scenario& s) {
  return s.incident.random_per_h > 0 ? " --format csv" : "";
}

// What the runs meet besides chance.
std::string incident_text(const Scenario& s) {
  if (s.incident.random_per_h > 0)
    return fmt::format(
        "with incidents at random: {} per hour on average, each {} s at {}x capacity and {}x "
        "demand",
        number_text(s.incident.random_per_h), number_text(s.incident.duration_s),
        number_text(s.incident.capacity_factor), number_text(s.incident.demand_factor));
  return scripted_push(s) ? "no scripted incident; then as many with the incident, to time the "
                            "way out"
                          : "no scripted incident";
}

void level_text(std::ostringstream& out, const RiskResult& r, const RiskLevel& l) {
  const Scenario& s = r.scenario;
  out << "\nload " << number_text(l.load) << " (" << number_text(l.demand_per_s)
      << " new requests/s)\n";
  out << "  tipped within " << rough_duration(s.horizon_s) << ": "
      << count_text(l.enter_within_horizon) << "\n";
  out << "  mean time to tip: " << mean_text(l.enter) << "\n";
  out << "  tips within 1 h: " << share_text(l.enter.within(kHour))
      << "; within 1 day: " << share_text(l.enter.within(kDay)) << "\n";
  if (l.rare) {
    rare_text(out, r, *l.rare);
    if (!l.rare->tipped_path.empty())
      out << "    replay a walk that tipped: --set engine=agent" << one_run_set(r) << quiet_sets(s)
          << " --set demand.rate_per_s=" << number_text(l.demand_per_s)
          << " --set horizon_s=" << number_text(s.horizon_s) << " --walk "
          << walk_text(l.rare->tipped_path) << replay_format(s) << "\n";
  }
  const bool pushed = scripted_push(s);
  if (pushed) out << "  stuck when the incident ended: " << count_text(l.pushed) << "\n";
  if (l.pushed.k > 0) {
    out << "  of those, healthy again by the end: " << count_text(l.leave_within_horizon) << "\n";
    out << "  mean time to leave" << (pushed ? " after the incident: " : " once stuck: ")
        << mean_text(l.leave) << "\n";
  }
  if (l.tipped_seed)
    out << "  replay the first run that tipped: --set engine=agent" << one_run_set(r)
        << " --set seed=" << number_text(*l.tipped_seed) << quiet_sets(s)
        << " --set demand.rate_per_s=" << number_text(l.demand_per_s)
        << " --set horizon_s=" << number_text(s.horizon_s) << replay_format(s) << "\n";
  if (!l.exact) {
    if (!l.exact_note.empty()) out << "  no exact chain: " << l.exact_note << "\n";
    return;
  }
  const markov::RetryChainFigures& x = *l.exact;
  // NaN is a figure the chain has not: "0 s" (what rough_duration makes of
  // it) would read as an answer. Infinite is beyond what it resolves: never.
  auto chain_time = [](double s) { return std::isnan(s) ? "unknown" : rough_duration(s); };
  out << "  exact, " << l.exact_note << " (" << text::grouped_text(x.states) << " states):\n"
      << "    stuck (" << x.bad_from << " or more at the server) " << format_percent(x.bad_share)
      << " of the time; from empty to stuck " << rough_duration(x.enter_bad_s)
      << "; from stuck to empty "
      << (x.bad_share > 0 ? chain_time(x.leave_bad_s) : "none (never stuck)") << "; relaxation "
      << chain_time(x.relaxation_s)
      << " (mixing, as metafor counts it: " << chain_time(x.mixing_metafor_s) << ")"
      << "; orbit full " << format_percent(x.orbit_full_share)
      << " of the time (the cap on requests waiting to retry)\n";
}

void hysteresis_text(std::ostringstream& out, const RiskResult& r) {
  const Hysteresis h = hysteresis_of(r);
  const std::string within = rough_duration(r.scenario.horizon_s);
  out << "\nhysteresis: ";
  if (h.tipping_load)
    out << "half the runs or more tip by chance within " << within << " from load "
        << number_text(*h.tipping_load);
  else
    out << "fewer than half the runs tip by chance within " << within << " at every load";
  if (h.recovery_load) {
    // "and below" only when every lower load where runs were stuck also
    // comes back: the highest load that does may stand above one that does not.
    const bool below = std::all_of(r.levels.begin(), r.levels.end(), [&](const RiskLevel& l) {
      return l.load > *h.recovery_load || l.pushed.k == 0 || l.leave_within_horizon.p >= 0.5;
    });
    out << "; once stuck, half or more are healthy again within the horizon at load "
        << number_text(*h.recovery_load)
        << (below ? " and below" : ", though not at every load below it");
  } else if (std::any_of(r.levels.begin(), r.levels.end(),
                         [](const RiskLevel& l) { return l.pushed.k > 0; }))
    out << "; once stuck, fewer than half come back within the horizon at every load";
  out << "\n";
}

nlohmann::json share_json(const Share& s) {
  return {{"k", s.k}, {"n", s.n}, {"p", s.p}, {"low", s.low}, {"high", s.high}};
}

nlohmann::json waiting_json(const WaitingTime& w) {
  return {{"events", w.events},
          {"exposure_s", w.exposure_s},
          {"mean_s", optional_json(w.mean_s)},
          {"low_s", w.low_s},
          {"high_s", optional_json(w.high_s)},
          {"within_hour", share_json(w.within(kHour))},
          {"within_day", share_json(w.within(kDay))}};
}

nlohmann::json rare_json(const RareTip& t) {
  nlohmann::json path = nlohmann::json::array();
  for (const Reseed& r : t.tipped_path)
    path.push_back({{"after_events", r.after_events}, {"seed", r.seed}});
  return {{"p", t.p},
          {"low", t.low},
          {"high", t.high},
          {"time_to_tip", waiting_json(t.enter)},
          {"levels", t.levels},
          {"factors", t.factors},
          {"effort", t.effort},
          {"runs", t.runs},
          {"engine_runs", t.engine_runs},
          {"tipped_path", std::move(path)},
          {"reached", t.reached},
          {"stages_passed", t.stages_passed}};
}

// Which case a time to leave is, beside its figure: null alone cannot tell
// "nothing to leave" (no storm) from "never left" (the worst storm).
// Estimated: none when no run was stuck, never when none of those stuck was
// healthy again by the horizon, measured when some were.
const char* leave_case(const RiskLevel& l) {
  if (l.pushed.k == 0) return "none";
  return l.leave.events > 0 ? "measured" : "never";
}

// The chain's: none when it is never stuck, never beyond what it resolves,
// unknown when the solver gave no figure (the text's words).
const char* leave_case(const markov::RetryChainFigures& x) {
  if (!(x.bad_share > 0)) return "none";
  if (std::isinf(x.leave_bad_s)) return "never";
  return std::isnan(x.leave_bad_s) ? "unknown" : "measured";
}

nlohmann::json exact_json(const markov::RetryChainFigures& x) {
  return {{"states", x.states},
          {"stuck_from", x.bad_from},
          {"mean_backlog", x.mean_backlog},
          {"mean_retrying", x.mean_retrying},
          {"stuck_share", x.bad_share},
          {"orbit_full_share", x.orbit_full_share},
          {"enter_s", optional_json(x.enter_bad_s)},
          {"leave_s", optional_json(x.leave_bad_s)},
          {"leave", leave_case(x)},
          {"relaxation_s", optional_json(x.relaxation_s)},
          {"mixing_metafor_s", optional_json(x.mixing_metafor_s)}};
}

std::string leave_cell(const RiskLevel& l) {
  if (l.pushed.k == 0) return "-";
  return l.leave.mean_s ? rough_duration(*l.leave.mean_s) : "> " + rough_duration(l.leave.low_s);
}

void map_table(std::ostringstream& out, const RiskMap& map, const std::string& title,
               std::string (*cell)(const RiskLevel&)) {
  out << "\n" << title << "\n";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head = {map.knob.path};
  for (const RiskLevel& l : map.rows.front().levels) head.push_back("load " + number_text(l.load));
  rows.push_back(head);
  const std::vector<double> values = map.knob.values();
  for (size_t v = 0; v < map.rows.size(); ++v) {
    std::vector<std::string> row = {number_text(values[v])};
    for (const RiskLevel& l : map.rows[v].levels) {
      const bool here = values[v] == map.operating_value && l.load == 1;
      row.push_back(cell(l) + (here ? " *" : ""));
    }
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    out << " ";
    for (size_t c = 0; c < row.size(); ++c)
      out << " " << row[c] << std::string(width[c] - row[c].size() + 1, ' ');
    out << "\n";
  }
}

// The stuck rule, once when every value of the knob has the same, else one
// line per value (a knob such as client.timeout_s moves it).
void rules_text(std::ostringstream& out, const RiskMap& map) {
  std::vector<std::string> rules;
  for (const RiskResult& row : map.rows) rules.push_back(describe(row.rule, row.scenario));
  if (std::all_of(rules.begin(), rules.end(), [&](const auto& r) { return r == rules.front(); })) {
    out << "  " << rules.front() << "\n";
    return;
  }
  const std::vector<double> values = map.knob.values();
  for (size_t v = 0; v < rules.size(); ++v)
    out << "  at " << map.knob.path << " " << number_text(values[v]) << ": " << rules[v] << "\n";
}

}  // namespace

std::string risk_map_text(const RiskMap& map) {
  const RiskResult& first = map.rows.front();
  const Scenario& s = first.scenario;
  std::ostringstream out;
  out << printable(s.name) << ": the metastable region over " << map.knob.path << " and load\n"
      << "  " << first.runs << " runs of " << rough_duration(s.horizon_s)
      << " per cell on the agent engine (seeds " << number_text(s.seed) << " to "
      << number_text(s.seed + first.runs - 1) << "); * marks the scenario as it stands\n";
  rules_text(out, map);
  map_table(out, map, "chance of tipping within 1 day (by chance, from empty)",
            [](const RiskLevel& l) { return format_percent(l.enter.within(kDay).p); });
  map_table(
      out, map,
      scripted_push(s) ? "mean time to leave after the incident" : "mean time to leave once stuck",
      leave_cell);
  return out.str();
}

nlohmann::json risk_map_json(const RiskMap& map) {
  nlohmann::json rows = nlohmann::json::array();
  const std::vector<double> values = map.knob.values();
  for (size_t v = 0; v < map.rows.size(); ++v) {
    nlohmann::json row = risk_json(map.rows[v]);
    row["value"] = values[v];
    rows.push_back(std::move(row));
  }
  return {{"knob", map.knob.path}, {"operating_value", map.operating_value}, {"rows", rows}};
}

std::string walk_text(const std::vector<Reseed>& path) {
  std::string text;
  for (const Reseed& r : path)
    text += fmt::format("{}{}:{}", text.empty() ? "" : ",", r.after_events, r.seed);
  return text;
}

std::vector<Reseed> parse_walk(const std::string& text) {
  std::vector<Reseed> path;
  auto whole = [&](const std::string& part, const std::string& digits) {
    if (digits.empty() || digits.size() > 20 ||
        digits.find_first_not_of("0123456789") != std::string::npos ||
        (digits.size() == 20 && digits > "18446744073709551615"))
      throw InputError("--walk: '" + printable(part) +
                       "' must be EVENTS:SEED, two whole numbers (0 to 2^64 - 1)");
    return std::stoull(digits);
  };
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    const size_t colon = part.find(':');
    if (colon == std::string::npos)
      throw InputError("--walk: '" + printable(part) + "' must be EVENTS:SEED");
    const Reseed r{whole(part, part.substr(0, colon)), whole(part, part.substr(colon + 1))};
    if (!path.empty() && r.after_events <= path.back().after_events)
      throw InputError("--walk: '" + printable(part) +
                       "': the events must grow from one pair to the next");
    path.push_back(r);
    if (path.size() > kWalkReseeds)
      throw InputError(fmt::format("--walk: more than {} pairs", kWalkReseeds));
    at = comma + 1;
  }
  return path;
}

nlohmann::json stuck_rule_json(const StuckRule& rule, const Scenario& s) {
  return {{"backlog_above", rule.backlog_above},
          {"goodput_below", rule.goodput_below},
          {"window_s", rule.window_steps * s.step_s},
          {"text", describe(rule, s)}};
}

std::string risk_text(const RiskResult& r) {
  const Scenario& s = r.scenario;
  std::ostringstream out;
  out << printable(s.name) << ": how likely it tips, and how long it stays\n"
      << "  " << r.runs << " runs of " << rough_duration(s.horizon_s)
      << " per load on the agent engine (seeds " << number_text(s.seed) << " to "
      << number_text(s.seed + r.runs - 1) << "), starting empty, " << incident_text(s);
  out << "\n  " << describe(r.rule, s) << "\n"
      << "  intervals: 95%; within 1 h and 1 day assume a waiting time without memory\n";
  for (const RiskLevel& l : r.levels) level_text(out, r, l);
  if (r.levels.size() > 1) hysteresis_text(out, r);
  return out.str();
}

nlohmann::json risk_json(const RiskResult& r) {
  nlohmann::json levels = nlohmann::json::array();
  for (const RiskLevel& l : r.levels) {
    nlohmann::json j = {{"load", l.load},
                        {"demand_per_s", l.demand_per_s},
                        {"tipped_within_horizon", share_json(l.enter_within_horizon)},
                        {"time_to_tip", waiting_json(l.enter)},
                        {"stuck_to_leave", share_json(l.pushed)},
                        {"left_within_horizon", share_json(l.leave_within_horizon)},
                        {"time_to_leave", waiting_json(l.leave)},
                        {"leave", leave_case(l)},
                        {"replay_seed", optional_json(l.tipped_seed)},
                        {"exact", l.exact ? exact_json(*l.exact) : nlohmann::json(nullptr)},
                        {"exact_note", l.exact_note}};
    if (l.rare) j["splitting"] = rare_json(*l.rare);
    levels.push_back(std::move(j));
  }
  const Hysteresis h = hysteresis_of(r);
  return {{"runs", r.runs},
          {"horizon_s", r.scenario.horizon_s},
          {"hysteresis",
           {{"tipping_load", optional_json(h.tipping_load)},
            {"recovery_load", optional_json(h.recovery_load)}}},
          {"seed", r.scenario.seed},
          {"stuck_rule", stuck_rule_json(r.rule, r.scenario)},
          {"levels", std::move(levels)}};
}

}  // namespace retrystorm
