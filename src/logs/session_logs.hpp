// The logs of a session-model run (docs/log-formats.md): sessions.csv and
// events.jsonl, which `retrystorm analyze` reads back (sessions_csv.cpp,
// events_jsonl.cpp beside this).
#pragma once

#include <string>

#include "engines/sessions/session_engine.hpp"
#include "logs/atomic_file.hpp"

namespace retrystorm {

// sessions.csv: one row per session, the columns of session_log::Column
// (docs/log-formats.md).
std::string sessions_csv(const sessions::SessionRun& run);

// events.jsonl, one line per event, written as the run goes (a long run's
// events never sit in memory whole) into an AtomicFile that commit() puts in
// place: the file is whole or absent, like every output.
class EventsJsonl : public sessions::SessionSink {
 public:
  // Throws InputError (naming `option`) when the file cannot be made.
  explicit EventsJsonl(const std::string& path, const std::string& option = "--log");
  void event(const sessions::SessionEvent& e) override;
  // Flushes and renames into place; throws InputError on failure.
  void commit();

 private:
  AtomicFile file_;
  std::string text_;  // what is not written yet
};

}  // namespace retrystorm
