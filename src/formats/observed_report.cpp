#include "formats/observed_report.hpp"

#include <fmt/format.h>

#include <ctime>
#include <sstream>
#include <string_view>

#include "formats/analyze_report.hpp"
#include "text/number.hpp"

namespace retrystorm {

using incident::known;
using nlohmann::json;

namespace {

std::string utc(double unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string share_or_unknown(double v) {
  return known(v) ? format_percent(v) : "unknown";
}

void windows_text(std::ostringstream& o, const incident::ObservedReport& r) {
  // Columns right-aligned to the width of their heading.
  constexpr std::string_view row = "{:>8} {:>11} {:>11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>11}\n";
  o << "\nOver time:\n"
    << fmt::format(row, "t_s", "requests/s", "attempts/s", "goodput/s", "att/req", "retries",
                   "failed", "slow", "overflow/s");
  for (const auto& w : r.windows)
    o << fmt::format(row, format_amount(w.t_s), format_amount(w.requests_per_s),
                     format_amount(w.attempts_per_s), format_amount(w.goodput_per_s),
                     format_amount(w.amplification), format_percent(w.retry_share),
                     format_percent(w.failed_share), share_or_unknown(w.slow_share),
                     known(w.overflow_per_s) ? format_amount(w.overflow_per_s) : "unknown");
}

}  // namespace

std::string observed_text(const incident::ObservedReport& r, const ObservedSource& src) {
  std::ostringstream o;
  o << "Prometheus " << src.url << ", " << src.mapping << " metrics, " << r.run.series.size()
    << " steps of " << format_seconds(src.step_s) << " from " << utc(src.start_unix_s) << "\n\n";
  o << "Verdict: " << r.verdict.headline << "\n";
  if (!r.findings.empty()) {
    const auto& f = r.findings.front();
    o << "Diagnosis: " << f.id << ": " << f.title << "\n";
  }
  o << "\nTrigger: " << format_seconds(r.trigger_start_s) << " to "
    << format_seconds(r.trigger_end_s) << " (" << r.trigger_source << ")\n";
  o << "Demand: " << format_amount(r.demand_per_s) << " requests/s before the trigger; capacity "
    << format_amount(r.capacity_per_s) << "/s (" << r.capacity_source << ")\n";
  o << "Amplification: " << format_amount(r.amplification)
    << " attempts per request over the range, " << format_amount(r.amplification_after)
    << " after the trigger, peak " << format_amount(r.metrics.peak_amplification) << " at "
    << format_seconds(r.metrics.peak_t_s) << "\n";
  o << "Retries: " << format_percent(r.retry_share)
    << " of attempts; failed: " << format_percent(r.failed_share) << " of requests\n";
  o << "Last minute: goodput " << format_amount(r.goodput_after) << "/s against throughput "
    << format_amount(r.throughput_after) << " attempts/s\n";
  o << "Recovery: "
    << (r.recovery_s
            ? "the last failure " + format_seconds(*r.recovery_s) + " after the trigger ended"
            : "none by the end of the range")
    << "\n";
  o << "Budget overflow: "
    << (known(r.overflow) ? format_amount(r.overflow) + " retries refused" : "unknown") << "\n";
  o << "Latency: " << share_or_unknown(r.slow_share) << " of attempts at or above the timeout\n";
  o << "\nFindings:\n";
  for (const auto& f : r.findings) {
    o << "- " << f.id << ": " << f.title << "\n";
    for (const auto& e : f.evidence) o << "    " << e << "\n";
    o << "    fix: " << f.fix << "\n";
  }
  windows_text(o, r);
  if (!r.unknowns.empty()) {
    o << "\nUnknown:\n";
    for (const auto& u : r.unknowns) o << "- " << u.figure << ": " << u.reason << "\n";
  }
  return o.str();
}

json observed_json(const incident::ObservedReport& r, const ObservedSource& src) {
  json findings = json::array(), windows = json::array();
  for (const auto& f : r.findings) findings.push_back(finding_json(f));
  for (const auto& w : r.windows)
    windows.push_back({{"t_s", w.t_s},
                       {"requests_per_s", w.requests_per_s},
                       {"attempts_per_s", w.attempts_per_s},
                       {"goodput_per_s", w.goodput_per_s},
                       {"amplification", w.amplification},
                       {"retry_share", w.retry_share},
                       {"failed_share", w.failed_share},
                       {"slow_share", known_or_null(w.slow_share)},
                       {"overflow_per_s", known_or_null(w.overflow_per_s)}});
  return {
      {"source",
       {{"prometheus", src.url},
        {"mapping", src.mapping},
        {"start", utc(src.start_unix_s)},
        {"start_unix_s", src.start_unix_s},
        {"step_s", src.step_s}}},
      {"verdict",
       {{"recovered", r.verdict.recovered},
        {"headline", r.verdict.headline},
        {"detail", r.verdict.detail}}},
      {"diagnosis", r.findings.empty() ? json(nullptr) : json(r.findings.front().id)},
      {"metastable", r.metastable},
      {"trigger_ongoing", r.ongoing},
      {"trigger",
       {{"start_s", r.trigger_start_s}, {"end_s", r.trigger_end_s}, {"source", r.trigger_source}}},
      {"demand_per_s", r.demand_per_s},
      {"capacity_per_s", r.capacity_per_s},
      {"capacity_source", r.capacity_source},
      {"amplification", r.amplification},
      {"amplification_after_trigger", r.amplification_after},
      {"peak_amplification", r.metrics.peak_amplification},
      {"peak_t_s", r.metrics.peak_t_s},
      {"retry_share", r.retry_share},
      {"failed_share", r.failed_share},
      {"recovery_s", r.recovery_s ? json(*r.recovery_s) : json(nullptr)},
      {"goodput_after_per_s", r.goodput_after},
      {"throughput_after_per_s", r.throughput_after},
      {"budget_overflow", known_or_null(r.overflow)},
      {"slow_share", known_or_null(r.slow_share)},
      {"findings", findings},
      {"windows", windows},
      {"unknowns", unknowns_json(r.unknowns)},
  };
}

std::string observed_replay_yaml(const incident::ObservedReport& r,
                                 const incident::ObservedOptions& o) {
  std::string description =
      "The incident seen in Prometheus: " + format_amount(r.demand_per_s) +
      " requests/s, a trigger of " + format_seconds(r.trigger_end_s - r.trigger_start_s) + ", " +
      format_amount(r.amplification_after) + " attempts per request after it.";
  std::vector<incident::ReplayKey> keys{{"name", "replay", false, ""},
                                        {"description", description, true, ""}};
  for (auto& k : incident::observed_replay_keys(r, o)) keys.push_back(std::move(k));
  return "# A replay of the incident seen in Prometheus (retrystorm analyze --prometheus\n"
         "# --emit-scenario). Run it: retrystorm run --scenario THIS_FILE\n" +
         replay_keys_yaml(keys);
}

}  // namespace retrystorm
