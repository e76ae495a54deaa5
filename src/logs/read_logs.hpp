// Reads the incident logs `retrystorm analyze` accepts, naming each one's
// format: sessions.csv, events.jsonl, requests.csv, the tab-separated client
// log (one line per request) and the per-second CSV. The formats are
// docs/log-formats.md; every reader streams.
#pragma once

#include <string>
#include <vector>

#include "analysis/incident/accumulator.hpp"

namespace retrystorm::logs {

enum class LogFormat { sessions_csv, events_jsonl, requests_csv, client_log, per_second_csv };

// "sessions CSV", "events JSONL", ...
const char* format_name(LogFormat f);

// The format of a file from its first line. Throws InputError naming the
// file and the formats allowed (also for an empty file).
LogFormat detect_format(const std::string& path);
class LineReader;
// The same from an open reader, left to give that first line again.
LogFormat detect_format(LineReader& in);

struct LogSource {
  std::string path;
  LogFormat format;
};

// Reads every file into `acc`; the sessions rows come from sessions.csv
// when one is given, else from the events. Throws InputError.
std::vector<LogSource> read_logs(const std::vector<std::string>& paths, incident::Accumulator& acc);

}  // namespace retrystorm::logs
