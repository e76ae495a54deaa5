// `analyze` over log files, one way for every front end (the command line
// and the Python package): the options as the command line types them, or
// Python's numbers written as text (number_text reads back exactly), checked
// in the command line's ranges and words; then the logs read into one report
// (docs/analyze.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/incident/observed.hpp"
#include "analysis/incident/report.hpp"
#include "formats/observed_report.hpp"

namespace retrystorm::app {

// One option as its front end received it. Refusals name it and show the value.
struct OptionText {
  std::string name;           // "--slots" (command line), "slots" (Python)
  std::string text;           // "9:40", "30,60", "0"
  bool typed = true;          // false: a number given as a number, shown unquoted
  std::string shown() const;  // "'9:40'" typed, "0" not
};

// A finite number in (low, high] (or [low, high] when `low_in`); else
// InputError naming the option, the value and, in `what`, the range.
double checked_number(const OptionText& option, double low, bool low_in, double high,
                      const std::string& what);

struct AnalyzeRequest {
  std::vector<std::string> logs;  // log files, format detected
  // Seconds or clocks ([Nd]HH:MM[:SS]), and the ladder as seconds separated
  // by commas; not given when empty, as on the command line.
  OptionText from{"--from", ""}, to{"--to", ""}, ladder{"--ladder", ""};
  std::optional<OptionText> slots, deadline;  // given even when empty
};

// The options in their ranges (InputError naming the option otherwise).
incident::AnalysisOptions analysis_options(const AnalyzeRequest& request);
// The report of the logs, with its sources; InputError when nothing is in them.
incident::Report analyze(const AnalyzeRequest& request);

// The replay scenario (YAML) of a report, checked the way `run --scenario`
// reads it; InputError naming `file` (where it would be written) otherwise.
std::string checked_replay(const incident::Report& report, const std::string& file);

// `analyze --prometheus`: the series of a Prometheus instead of logs
// (docs/prometheus.md). Times are Unix seconds or 2024-01-01T00:00:00Z;
// empty options are not given.
struct ObservedRequest {
  std::string url;                                // http://HOST:PORT
  OptionText from{"--from", ""}, to{"--to", ""};  // default: the last hour
  OptionText step{"--step", "1"};                 // seconds between points
  std::string selector;                           // label matchers for every metric
  std::string metrics_file;                       // a mapping file (YAML or JSON), or
  std::string metrics_as = "envoy";               // whose metric names
  OptionText trigger_start{"--trigger-start", ""}, trigger_end{"--trigger-end", ""};
  OptionText timeout{"--timeout", ""}, capacity{"--capacity", ""};
};

struct ObservedAnswer {
  incident::ObservedReport report;
  incident::ObservedOptions options;  // what the replay is built from
  ObservedSource source;              // what the report names
};

// The series through Prometheus's HTTP API, and their diagnosis.
ObservedAnswer analyze_prometheus(const ObservedRequest& request);
// The replay scenario (YAML) of the metrics, checked as checked_replay's.
std::string checked_observed_replay(const ObservedAnswer& answer, const std::string& file);

}  // namespace retrystorm::app
