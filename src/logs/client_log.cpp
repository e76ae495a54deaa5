// The client log of published metastability experiments: one line per user
// request, tab-separated: timestamp, worker id, retry count, success or
// error, latency in microseconds. The timestamp is taken as the send time;
// the retries count as the request's error answers.
#include <utility>

#include "analysis/incident/records.hpp"
#include "logs/readers.hpp"

namespace retrystorm::logs {

namespace {
constexpr double kMicro = 1e-6;
}

void read_client_log(LineReader& in, TimeBase& base, incident::Accumulator& acc) {
  acc.set_unit("requests");
  std::string_view line;
  std::vector<std::string_view> fields;
  Row row(in, fields, base);
  bool first = true;  // the first line that is not blank may be a header
  while (in.next(line)) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    split(line, '\t', fields);
    if (fields.size() < 5)
      in.fail(std::to_string(fields.size()) +
              " fields; a client log line is timestamp, worker id, retry count, success|error, "
              "latency_us, separated by tabs");
    // A header line names its columns instead of giving values.
    if (std::exchange(first, false) && !parse_number(fields[2])) continue;
    incident::SessionRecord s;
    s.start_s = row.time(0, "timestamp");
    s.end_s = s.start_s + row.amount(4, "latency_us", 0, kMaxDuration / kMicro) * kMicro;
    check_span(in, s.start_s, s.end_s, "timestamp", "timestamp + latency");
    std::string_view result = fields[3];
    if (result != "success" && result != "error")
      in.fail("column 4: '" + printable(result.substr(0, 40)) +
              "' is not allowed; allowed: success, error");
    s.outcome = result == "success" ? incident::Outcome::completed : incident::Outcome::failed;
    s.other_errors = row.count(2, "retry_count", 0);
    acc.add(s);
  }
}

}  // namespace retrystorm::logs
