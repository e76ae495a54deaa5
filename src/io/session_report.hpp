// Views of a session-model run (engine: sessions): the JSON answer of `run`
// and /api/run, the terminal report, the per-bucket CSV, and the logs of
// docs/log-formats.md (sessions.csv, events.jsonl).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "analysis/session_advice.hpp"
#include "analysis/session_calibration.hpp"
#include "analysis/session_metrics.hpp"

namespace retrystorm {

struct SessionReport {
  sessions::SessionRun run;
  SessionMetrics metrics;
  std::vector<SessionHourRow> hours;
  std::string verdict;
  std::string claim;  // what the verdict claims, counted over Monte Carlo seeds
  std::vector<Advice> advice;
  std::optional<SessionMonteCarlo> montecarlo;  // when runs > 1
};

// Runs a validated scenario (Monte Carlo when its runs > 1); `log`, when
// given, receives the events of the reported run (replication 0).
SessionReport make_session_report(const Scenario& s, sessions::SessionSink* log = nullptr);

nlohmann::json session_json(const SessionReport& r);
std::string session_text(const SessionReport& r);
std::string session_series_csv(const sessions::SessionRun& run);

// docs/scheduler-calibration.md: the post-mortem's figures against the
// session model over `seeds` seeds (`retrystorm calibrate` prints it).
std::string calibration_page(const std::vector<CalibrationRow>& rows, int seeds);
std::vector<CalibrationRow> scheduler_calibration_of_presets(int seeds = 40);

// sessions.csv: one row per session, the columns of session_log::Column
// (docs/log-formats.md).
std::string sessions_csv(const sessions::SessionRun& run);

// events.jsonl, one line per event, into a string the caller writes.
// Written as the run goes (a long run's events never sit in memory whole),
// into a temporary file beside `path` that commit() renames into place: the
// file is whole or absent, like every output.
class EventsJsonl : public sessions::SessionSink {
 public:
  // Throws std::runtime_error when the temporary file cannot be made.
  explicit EventsJsonl(const std::string& path);
  ~EventsJsonl() override;  // removes the temporary file unless committed
  EventsJsonl(const EventsJsonl&) = delete;
  EventsJsonl& operator=(const EventsJsonl&) = delete;
  void event(const sessions::SessionEvent& e) override;
  // Flushes and renames into place; throws std::runtime_error on failure.
  void commit();

 private:
  void flush_buffer();
  std::string path_, temporary_;
  std::FILE* out_ = nullptr;
  std::string text_;  // what is not flushed yet
  bool failed_ = false;
};

}  // namespace retrystorm
