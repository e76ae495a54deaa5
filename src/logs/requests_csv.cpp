// requests.csv (docs/log-formats.md): one row per attempt of a
// per-request engine. Each attempt is one unit in the system; a retry is an
// attempt after the first, and every outcome but `ok` is an error, except
// `in_flight` (still out when the run ended: neither success nor failure).
#include "analysis/incident/records.hpp"
#include "logs/readers.hpp"
#include "session_log/request_log.hpp"

namespace retrystorm::logs {

using request_log::AttemptOutcome;

namespace {
const std::string kNeeds = "requests.csv needs attempt, sent_s, done_s and outcome";
}  // namespace

void read_requests_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc) {
  std::string_view line;
  in.next(line);
  CsvHeader header(line);
  int attempt = header.require(in, "attempt", kNeeds);
  int sent = header.require(in, "sent_s", kNeeds);
  int done = header.require(in, "done_s", kNeeds);
  int outcome = header.require(in, "outcome", kNeeds);
  acc.set_unit("attempts");
  std::vector<std::string_view> fields;
  Row row(in, fields, base);
  while (in.next(line)) {
    if (line.empty()) continue;
    header.split_row(in, line, fields);
    incident::SessionRecord s;
    s.start_s = row.time(sent, "sent_s");
    // An attempt never answered leaves its client at the send time.
    s.end_s = row.text(done).empty() ? s.start_s : row.time(done, "done_s");
    check_span(in, s.start_s, s.end_s, "sent_s", "done_s");
    std::string_view text = row.text(outcome);
    std::optional<AttemptOutcome> o = request_log::outcome_from_name(text);
    if (!o)
      in.fail("column outcome: '" + printable(text.substr(0, 40)) +
              "' is not allowed; allowed: " + request_log::outcome_names());
    bool ok = *o == AttemptOutcome::ok, running = *o == AttemptOutcome::in_flight;
    s.outcome = ok        ? incident::Outcome::completed
                : running ? incident::Outcome::in_flight
                          : incident::Outcome::failed;
    s.other_errors = ok || running ? 0 : 1;
    s.is_retry = row.count(attempt, "attempt", 1) > 1;
    acc.add(s);
  }
}

}  // namespace retrystorm::logs
