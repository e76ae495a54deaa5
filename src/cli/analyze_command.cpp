#include "cli/analyze_command.hpp"

#include <iostream>

#include "analysis/incident/accumulator.hpp"
#include "cli/common.hpp"
#include "io/analyze_report.hpp"
#include "io/logs/line_reader.hpp"
#include "io/logs/read_logs.hpp"
#include "io/logs/times.hpp"
#include "io/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

struct AnalyzeCommand {
  CLI::App* cmd = nullptr;
  std::vector<std::string> logs;
  std::string from, to, ladder, format = "text", out, emit_scenario, slots, deadline;
};

namespace {

// The most steps --ladder takes: client.retries' range in the key table.
constexpr size_t kMaxLadderSteps = 100;

double clock_option(const std::string& name, const std::string& text) {
  auto t = logs::parse_clock(text);
  if (!t || *t < 0 || *t > logs::kMaxTime)
    throw InputError(name + ": '" + logs::printable(text) +
                     "' is not a time from 0 to 1000000000 s; write seconds (70200) or a clock "
                     "([Nd]HH:MM[:SS], e.g. 1d09:40)");
  return *t;
}

// A finite number in (low, high] (or [low, high] when `low_in`); InputError
// naming the option, the value and the range.
double number_option(const std::string& name, const std::string& text, double low, bool low_in,
                     double high, const std::string& what) {
  auto v = logs::parse_number(text);
  if (!v || *v > high || *v < low || (!low_in && *v == low))
    throw InputError(name + ": '" + logs::printable(text) + "' is not allowed; " + what);
  return *v;
}

std::vector<double> ladder_option(const std::string& text) {
  std::vector<double> steps;
  size_t at = 0;
  for (;;) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    steps.push_back(number_option("--ladder", item, 0, false, logs::kMaxDuration,
                                  "give steps in seconds, above 0 and at most 10000000, separated "
                                  "by commas, e.g. 30,60,120,240,480,960"));
    if (steps.size() > kMaxLadderSteps)
      throw InputError("--ladder: more than " + std::to_string(kMaxLadderSteps) + " steps");
    if (comma == std::string::npos) return steps;
    at = comma + 1;
  }
}

incident::AnalysisOptions options_of(const AnalyzeCommand& c) {
  incident::AnalysisOptions o;
  if (!c.from.empty()) o.from_s = clock_option("--from", c.from);
  if (!c.to.empty()) o.to_s = clock_option("--to", c.to);
  if (o.from_s && o.to_s && *o.to_s <= *o.from_s)
    throw InputError("--to: '" + logs::printable(c.to) + "' is not after --from '" +
                     logs::printable(c.from) + "'");
  if (c.cmd->count("--slots"))
    o.slots = number_option("--slots", c.slots, 1, true, logs::kMaxCount,
                            "the ceiling is a number of slots from 1 to 1000000000");
  if (c.cmd->count("--deadline"))
    o.deadline_s = number_option("--deadline", c.deadline, 0, false, logs::kMaxDuration,
                                 "the deadline is seconds above 0 and at most 10000000");
  if (!c.ladder.empty()) o.ladder_s = ladder_option(c.ladder);
  return o;
}

// The replay scenario, checked the way `run --scenario` reads it.
std::string checked_replay(const incident::Report& r, const std::string& file) {
  std::string yaml = replay_yaml(r);
  try {
    validate(scenario_from_text(yaml, file));
  } catch (const InputError& e) {
    throw InputError("--emit-scenario: the replay of this log would not run, so '" +
                     logs::printable(file) + "' is not written: " + e.what());
  }
  return yaml;
}

}  // namespace

AnalyzeCommand& add_analyze_command(CLI::App& app) {
  static AnalyzeCommand c;
  c.cmd = app.add_subcommand(
      "analyze",
      "read incident logs (sessions.csv, events.jsonl, requests.csv, client logs, per-second "
      "CSVs; format detected) and report Little's law by hour, fake saturation, errors as a "
      "retry signal, durations, the ladder against the deadline and a ranked diagnosis");
  c.cmd->add_option("logs", c.logs, "log files")->required();
  c.cmd->add_option("--from", c.from, "only sessions starting from T (seconds or [Nd]HH:MM[:SS])");
  c.cmd->add_option("--to", c.to, "only sessions starting before T");
  c.cmd->add_option("--slots", c.slots,
                    "the concurrency ceiling for utilization, 1 to 1e9 (default: the peak in "
                    "flight)");
  c.cmd->add_option("--deadline", c.deadline,
                    "the session deadline in seconds, up to 1e7 (default: where killed or failed "
                    "sessions' durations cluster)");
  c.cmd->add_option("--ladder", c.ladder,
                    "the backoff ladder in seconds, e.g. 30,60,120,240,480,960 (default: "
                    "inferred from events)");
  c.cmd->add_option("--format", c.format, "text | json | html (one self-contained file)");
  c.cmd->add_option("--out", c.out, "write to FILE (atomically) instead of standard output");
  c.cmd->add_option("--emit-scenario", c.emit_scenario,
                    "also write a session-engine scenario (YAML) that replays the incident");
  return c;
}

std::optional<int> run_analyze_command(AnalyzeCommand& c) {
  if (!c.cmd->parsed()) return std::nullopt;
  check_format(c.format, {"text", "json", "html"});
  incident::Accumulator acc(options_of(c));
  auto sources = logs::read_logs(c.logs, acc);
  incident::Report r = acc.finish();
  for (const auto& s : sources)
    r.sources.push_back(logs::printable(s.path) + ": " + logs::format_name(s.format));
  if (r.sessions <= 0)
    throw InputError(logs::printable(c.logs.front()) +
                     (c.logs.size() > 1 ? " and the others" : "") + ": no sessions or requests" +
                     (c.from.empty() && c.to.empty() ? "" : " between --from and --to") +
                     "; nothing to analyze");
  std::string text =
      c.format == "json"
          ? analyze_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
      : c.format == "html" ? analyze_html(r)
                           : analyze_text(r);
  if (!c.emit_scenario.empty()) emit(checked_replay(r, c.emit_scenario), c.emit_scenario);
  emit(text, c.out);
  // Also on standard error: JSON and HTML reports go to files or pipes.
  for (const auto& w : r.warnings) std::cerr << "retrystorm: warning: " << w << "\n";
  return 0;
}

}  // namespace retrystorm::cli
