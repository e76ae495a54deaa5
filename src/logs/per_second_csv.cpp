// The per-second CSV of load experiments: t, starts, successes, retries,
// timeouts, concurrency. Each row counts one interval (the gap to the next t;
// one second for the first row).
#include "analysis/incident/records.hpp"
#include "logs/readers.hpp"
#include "text/clock.hpp"

namespace retrystorm::logs {

namespace {
const std::string kNeeds =
    "a per-second log needs t, starts, successes, retries, timeouts and concurrency";
}

void read_per_second_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc) {
  std::string_view line;
  in.next(line);
  CsvHeader header(line);
  int t = header.require(in, "t", kNeeds);
  int starts = header.require(in, "starts", kNeeds);
  int successes = header.require(in, "successes", kNeeds);
  int retries = header.require(in, "retries", kNeeds);
  int timeouts = header.require(in, "timeouts", kNeeds);
  int concurrency = header.require(in, "concurrency", kNeeds);
  acc.set_unit("requests");
  std::vector<std::string_view> fields;
  Row row(in, fields, base);
  double last_t = incident::kUnknown;
  while (in.next(line)) {
    if (line.empty()) continue;
    header.split_row(in, line, fields);
    incident::CountBucket b;
    b.t_s = row.time(t, "t");
    if (incident::known(last_t) && b.t_s <= last_t)
      in.fail("column t: " + std::to_string(b.t_s) + " does not follow " + std::to_string(last_t) +
              "; rows must be in time order");
    b.width_s = incident::known(last_t) ? std::min(b.t_s - last_t, text::kHour) : 1.0;
    last_t = b.t_s;
    b.starts = row.count(starts, "starts", 0);
    b.successes = row.count(successes, "successes", 0);
    b.retries = row.count(retries, "retries", 0);
    b.timeouts = row.count(timeouts, "timeouts", 0);
    // A level, not a count: a mean over the second may have a fraction.
    b.concurrency = row.amount(concurrency, "concurrency", incident::kUnknown, kMaxCount);
    acc.add(b);
  }
}

}  // namespace retrystorm::logs
