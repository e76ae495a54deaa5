// requests.csv (docs/log-formats.md): one row per attempt of a
// per-request engine. Each attempt is one unit in the system; a retry is an
// attempt after the first, and every outcome but `ok` is an error, except
// `in_flight` (still out when the run ended: neither success nor failure).
#include "analysis/incident/records.hpp"
#include "io/logs/readers.hpp"

namespace retrystorm::logs {

namespace {
const std::string kNeeds = "requests.csv needs attempt, sent_s, done_s and outcome";
constexpr const char* kOutcomes =
    "ok, late, timeout, rejected, shed, budget_denied, failed, in_flight";

// What the agent engine writes (docs/log-formats.md): `failed` is an outer
// layer's attempt whose inner attempts all failed.
bool allowed_outcome(std::string_view o) {
  for (std::string_view name :
       {"ok", "late", "timeout", "rejected", "shed", "budget_denied", "failed", "in_flight"})
    if (o == name) return true;
  return false;
}
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
    split(line, ',', fields);
    incident::SessionRecord s;
    s.start_s = row.time(sent, "sent_s");
    // An attempt never answered leaves its client at the send time.
    s.end_s = row.text(done).empty() ? s.start_s : row.time(done, "done_s");
    check_span(in, s.start_s, s.end_s, "sent_s", "done_s");
    std::string_view o = row.text(outcome);
    if (!allowed_outcome(o))
      in.fail("column outcome: '" + printable(o.substr(0, 40)) +
              "' is not allowed; allowed: " + kOutcomes);
    bool running = o == "in_flight";
    s.outcome = o == "ok" ? incident::Outcome::completed
                : running ? incident::Outcome::in_flight
                          : incident::Outcome::failed;
    s.other_errors = o == "ok" || running ? 0 : 1;
    s.is_retry = row.count(attempt, "attempt", 1) > 1;
    acc.add(s);
  }
}

}  // namespace retrystorm::logs
