#include "formats/step_down_report.hpp"

#include <fmt/format.h>

#include <map>
#include <sstream>

#include "formats/result_json.hpp"
#include "formats/risk_report.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"
#include "text/units.hpp"

namespace retrystorm {

namespace {

std::string load_text(double load) {
  return number_text(load) + "x";
}

// "1.1x in 7 runs, 1.2x in 3": how often each load was the one.
std::string tally(const std::vector<StepDownRun>& runs, std::optional<double> StepDownRun::*which) {
  std::map<double, int> count;
  for (const StepDownRun& r : runs)
    if (r.*which) ++count[*(r.*which)];
  std::string text;
  for (const auto& [load, n] : count)
    text += fmt::format("{}{} in {} run{}", text.empty() ? "" : ", ", load_text(load), n,
                        n == 1 ? "" : "s");
  return text;
}

int missing(const std::vector<StepDownRun>& runs, std::optional<double> StepDownRun::*which) {
  int n = 0;
  for (const StepDownRun& r : runs) n += !(r.*which).has_value();
  return n;
}

}  // namespace

std::string step_down_text(const StepDown& d) {
  const Scenario& s = d.scenario;
  const size_t top = d.loads.size() / 2;
  std::ostringstream out;
  out << printable(s.name) << ": the step-down experiment (the hysteresis loop)\n"
      << "  the load climbs from " << load_text(d.loads.front()) << " to "
      << load_text(d.loads[top]) << " in " << top << " steps, " << rough_duration(d.hold_s)
      << " at each, then comes back down the same steps; no scripted incident\n"
      << "  " << describe(d.rule, s) << "\n";
  if (s.engine == Engine::agent)
    out << "  " << d.runs.size() << " runs on the agent engine (seeds " << number_text(s.seed)
        << " to " << number_text(s.seed + double(d.runs.size()) - 1) << ")\n";
  const int never_tipped = missing(d.runs, &StepDownRun::tipped_load);
  out << "\ngoing up, stuck at: "
      << (d.tipping_load ? tally(d.runs, &StepDownRun::tipped_load) : "no load")
      << (d.tipping_load && never_tipped ? fmt::format("; never in {}", never_tipped) : "") << "\n";
  if (!d.tipping_load) {
    out << "  it never became stuck, even at " << load_text(d.loads[top])
        << ": raise --to to find where it tips\n";
    return out.str();
  }
  int stayed = 0, healthy_at_top = 0;  // stuck at the top and never healthy again; or not stuck
  for (const StepDownRun& r : d.runs) {
    stayed += r.stuck_at_top && !r.recovered_load;
    healthy_at_top += !r.stuck_at_top;
  }
  out << "coming down, healthy again at: "
      << (d.recovery_load ? tally(d.runs, &StepDownRun::recovered_load) : "no load")
      << (stayed > 0 ? fmt::format("; still stuck at the end in {}", stayed) : "")
      << (healthy_at_top > 0 ? fmt::format("; not stuck at the top in {}", healthy_at_top) : "")
      << "\n";
  out << "\nthe loop: it tips at " << load_text(*d.tipping_load);
  if (d.recovery_load && *d.recovery_load < *d.tipping_load)
    out << " and comes back only at " << load_text(*d.recovery_load) << " (medians): between them "
        << "it stays as it was, healthy if it was healthy, stuck if it was stuck\n";
  else if (d.recovery_load)
    out << " and comes back at " << load_text(*d.recovery_load)
        << " (medians): no loop at these steps\n";
  else
    out << " (median) and does not come back even at " << load_text(d.loads.back()) << "\n";
  return out.str();
}

nlohmann::json step_down_json(const StepDown& d) {
  nlohmann::json runs = nlohmann::json::array();
  for (const StepDownRun& r : d.runs)
    runs.push_back({{"seed", r.seed},
                    {"tipped_s", optional_json(r.tipped_s)},
                    {"tipped_load", optional_json(r.tipped_load)},
                    {"stuck_at_top", r.stuck_at_top},
                    {"recovered_s", optional_json(r.recovered_s)},
                    {"recovered_load", optional_json(r.recovered_load)}});
  return {{"loads", d.loads},
          {"hold_s", d.hold_s},
          {"horizon_s", d.scenario.horizon_s},
          {"engine", d.scenario.engine == Engine::agent ? "agent" : "fluid"},
          {"stuck_rule", stuck_rule_json(d.rule, d.scenario)},
          {"tipping_load", optional_json(d.tipping_load)},
          {"recovery_load", optional_json(d.recovery_load)},
          {"runs", std::move(runs)},
          {"series", series_json(d.first.series)}};
}

}  // namespace retrystorm
