// sessions.csv (docs/log-formats.md): one row per session.
#include "analysis/incident/records.hpp"
#include "logs/readers.hpp"

namespace retrystorm::logs {

namespace {

const std::string kNeeds =
    "sessions.csv needs start_s, end_s, outcome and an error count (n_429 or n_errors); "
    "see docs/log-formats.md";

using session_log::Column;
using session_log::column_name;

// The columns one session row is read from; -1 where absent.
struct SessionColumns {
  int start, end, outcome, n429, n401, errors, terminal, calls, items_in, items_done, queue,
      working, blocked, asleep, anchor_in, anchor_done;

  explicit SessionColumns(const CsvHeader& h, const LineReader& in)
      : start(h.require(in, column_name(Column::start_s), kNeeds)),
        end(h.require(in, column_name(Column::end_s), kNeeds)),
        outcome(h.require(in, column_name(Column::outcome), kNeeds)),
        n429(h.find(column_name(Column::n_429))),
        n401(h.find(column_name(Column::n_401))),
        errors(h.find(column_name(Column::n_errors))),
        terminal(h.find(column_name(Column::terminal_error_line))),
        calls(h.find(column_name(Column::n_api_calls))),
        items_in(h.find(column_name(Column::items_in))),
        items_done(h.find(column_name(Column::items_done))),
        queue(h.find(column_name(Column::queue_unread_at_open))),
        working(h.find(column_name(Column::time_working_s))),
        blocked(h.find(column_name(Column::time_blocked_s))),
        asleep(h.find(column_name(Column::time_asleep_s))),
        anchor_in(h.find(column_name(Column::anchor_in_batch))),
        anchor_done(h.find(column_name(Column::anchor_done))) {}
};

// Counts and amounts of one row, each named by its column in messages.
double count(const Row& row, int at, Column c, double otherwise) {
  return row.count(at, column_name(c), otherwise);
}
double amount(const Row& row, int at, Column c) {
  return row.amount(at, column_name(c), incident::kUnknown, kMaxDuration);
}

incident::SessionRecord session_row(const SessionColumns& c, const Row& row, const LineReader& in) {
  using incident::kUnknown;
  incident::SessionRecord s;
  s.start_s = row.time(c.start, column_name(Column::start_s));
  s.end_s = row.time(c.end, column_name(Column::end_s));
  check_span(in, s.start_s, s.end_s, column_name(Column::start_s), column_name(Column::end_s));
  std::string_view outcome = row.text(c.outcome);
  auto o = incident::outcome_from_name(outcome);
  if (!o)
    in.fail("column outcome: '" + printable(outcome.substr(0, 40)) +
            "' is not an outcome; allowed: " + incident::outcome_names());
  s.outcome = *o;
  s.lines_429 = count(row, c.n429, Column::n_429, 0);
  s.lines_401 = count(row, c.n401, Column::n_401, 0);
  s.other_errors = count(row, c.errors, Column::n_errors, 0);
  // The last line of a session that died with an error repeats it.
  std::string_view terminal = row.text(c.terminal);
  if (terminal == "429")
    s.lines_429 += 1;
  else if (terminal == "401")
    s.lines_401 += 1;
  else if (!terminal.empty())
    s.other_errors += 1;
  s.api_calls = count(row, c.calls, Column::n_api_calls, kUnknown);
  s.items_in = count(row, c.items_in, Column::items_in, kUnknown);
  s.items_done = count(row, c.items_done, Column::items_done, kUnknown);
  s.queue_at_open = count(row, c.queue, Column::queue_unread_at_open, kUnknown);
  s.working_s = amount(row, c.working, Column::time_working_s);
  s.blocked_s = amount(row, c.blocked, Column::time_blocked_s);
  s.asleep_s = amount(row, c.asleep, Column::time_asleep_s);
  s.anchor_in_batch = row.flag(c.anchor_in, column_name(Column::anchor_in_batch));
  s.anchor_done = row.flag(c.anchor_done, column_name(Column::anchor_done));
  return s;
}

}  // namespace

void read_sessions_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc) {
  std::string_view line;
  in.next(line);
  CsvHeader header(line);
  SessionColumns columns(header, in);
  if (columns.n429 < 0 && columns.n401 < 0 && columns.errors < 0)
    acc.add_unknown("error answers",
                    printable(in.path()) + " has no n_429, n_401 or n_errors column");
  std::vector<std::string_view> fields;
  Row row(in, fields, base);
  while (in.next(line)) {
    if (line.empty()) continue;
    header.split_row(in, line, fields);
    acc.add(session_row(columns, row, in));
  }
}

}  // namespace retrystorm::logs
