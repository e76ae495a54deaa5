#include "logs/read_logs.hpp"

#include <algorithm>
#include <memory>

#include "logs/atomic_file.hpp"
#include "logs/readers.hpp"

namespace retrystorm::logs {

namespace {

const std::string kFormats =
    "analyze reads sessions.csv (a header with start_s, end_s, outcome), events.jsonl (one JSON "
    "object a line), requests.csv (request_id, attempt, sent_s, done_s, outcome), a client log "
    "(timestamp, worker id, retry count, success|error, latency_us; tab-separated) and a "
    "per-second CSV (t, starts, successes, retries, timeouts, concurrency)";

bool has(const CsvHeader& h, std::initializer_list<const char*> names) {
  return std::all_of(names.begin(), names.end(), [&](const char* n) { return h.find(n) >= 0; });
}

// A file given twice (by two spellings, a link, the same name) would count
// every record twice: refused, naming both. Paths that cannot be read are left
// to the reader's message.
void check_distinct(const std::vector<std::string>& paths) {
  std::vector<std::optional<FileIdentity>> ids;
  for (const std::string& path : paths) {
    ids.push_back(regular_file_identity(path));
    for (size_t j = 0; j + 1 < ids.size(); ++j)
      if (ids.back() && ids[j] == ids.back())
        throw InputError(printable(path) + ": the same file as " + printable(paths[j]) +
                         "; give each log once (its records would count twice)");
  }
}

}  // namespace

const char* format_name(LogFormat f) {
  switch (f) {
    case LogFormat::sessions_csv:
      return "sessions CSV";
    case LogFormat::events_jsonl:
      return "events JSONL";
    case LogFormat::requests_csv:
      return "requests CSV";
    case LogFormat::client_log:
      return "client log (one line per request)";
    case LogFormat::per_second_csv:
      return "per-second CSV";
  }
  return "";
}

LogFormat detect_format(LineReader& in) {
  std::string_view line;
  while (in.next(line) && line.find_first_not_of(" \t") == std::string_view::npos) {
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos)
    throw InputError(printable(in.path()) + ": the file is empty; " + kFormats);
  in.unread();  // the reader takes it again, as its header or first record
  if (line[line.find_first_not_of(" \t")] == '{') return LogFormat::events_jsonl;
  if (line.find('\t') != std::string_view::npos) return LogFormat::client_log;
  CsvHeader h(line);
  if (has(h, {"start_s", "end_s"}) || has(h, {"session_id"})) return LogFormat::sessions_csv;
  if (has(h, {"request_id"}) || has(h, {"sent_s"})) return LogFormat::requests_csv;
  if (has(h, {"t", "starts"})) return LogFormat::per_second_csv;
  throw InputError(printable(in.path()) + ": cannot tell the format from the first line '" +
                   printable(line.substr(0, 60)) + "'; " + kFormats);
}

LogFormat detect_format(const std::string& path) {
  LineReader in(path);
  return detect_format(in);
}

std::vector<LogSource> read_logs(const std::vector<std::string>& paths,
                                 incident::Accumulator& acc) {
  check_distinct(paths);
  // A pipe or FIFO can be read only once: it stays open from its format's
  // first line on. A file is closed once its format is known and opened
  // again to be read (a thousand logs open at once ran out of descriptors).
  struct Open {
    LogSource source;
    std::unique_ptr<LineReader> in;
  };
  std::vector<Open> open;
  for (const auto& p : paths) {
    auto in = std::make_unique<LineReader>(p);
    LogFormat format = detect_format(*in);
    if (regular_file_identity(p)) in.reset();
    open.push_back({{p, format}, std::move(in)});
  }
  bool sessions = std::any_of(open.begin(), open.end(), [](const Open& o) {
    return o.source.format != LogFormat::events_jsonl;
  });
  acc.set_sessions_from_events(!sessions);
  TimeBase base;
  // Rows before events, so absolute times share the day the rows start on.
  std::stable_sort(open.begin(), open.end(), [](const Open& a, const Open& b) {
    return a.source.format != LogFormat::events_jsonl && b.source.format == LogFormat::events_jsonl;
  });
  std::vector<LogSource> sources;
  for (auto& [source, in] : open) {
    if (!in) {
      in = std::make_unique<LineReader>(source.path);
      detect_format(*in);  // past the blank lines, to the first line again
    }
    switch (source.format) {
      case LogFormat::sessions_csv:
        read_sessions_csv(*in, base, acc);
        break;
      case LogFormat::events_jsonl:
        read_events_jsonl(*in, base, acc);
        break;
      case LogFormat::requests_csv:
        read_requests_csv(*in, base, acc);
        break;
      case LogFormat::client_log:
        read_client_log(*in, base, acc);
        break;
      case LogFormat::per_second_csv:
        read_per_second_csv(*in, base, acc);
        break;
    }
    in.reset();  // closed once read
    sources.push_back(source);
  }
  return sources;
}

}  // namespace retrystorm::logs
