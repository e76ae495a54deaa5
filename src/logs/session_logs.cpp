#include "logs/session_logs.hpp"

#include <fmt/format.h>

#include "session_log/session_log.hpp"

namespace retrystorm {

using sessions::SessionRun;

namespace {

using sessions::SessionRow;
using C = session_log::Column;

// The whole-number columns, by member; the others are written below.
constexpr std::pair<C, int SessionRow::*> kCounts[] = {
    {C::n_429, &SessionRow::n_429},
    {C::n_401, &SessionRow::n_401},
    {C::n_api_calls, &SessionRow::n_api_calls},
    {C::items_in, &SessionRow::items_in},
    {C::items_done, &SessionRow::items_done},
    {C::queue_unread_at_open, &SessionRow::queue_unread_at_open},
    {C::items_deferred, &SessionRow::items_deferred},
    {C::delivery, &SessionRow::delivery}};

// One field of sessions.csv, by its column (session_log::Column).
void append_field(std::string& out, const SessionRow& r, C c) {
  for (const auto& [column, member] : kCounts)
    if (column == c) {
      out += std::to_string(r.*member);
      return;
    }
  if (c == C::session_id) {
    out += r.session_id;
  } else if (c == C::outcome) {
    out += sessions::outcome_name(r.outcome);
  } else if (c == C::terminal_error_line) {
    if (r.terminal_error) out += std::to_string(r.terminal_error);  // empty: none
  } else if (c == C::anchor_in_batch || c == C::anchor_done) {
    out += (c == C::anchor_in_batch ? r.anchor_in_batch : r.anchor_done) ? '1' : '0';
  } else if (c != C::n_errors) {  // n_errors: never written by the model
    double seconds = c == C::start_s          ? r.start_s
                     : c == C::end_s          ? r.end_s
                     : c == C::time_working_s ? r.time_s[0]
                     : c == C::time_blocked_s ? r.time_s[1]
                                              : r.time_s[2];
    out += fmt::format("{:.3f}", seconds);
  }
}

}  // namespace

std::string sessions_csv(const SessionRun& run) {
  std::string out = session_log::sessions_csv_header();
  for (const auto& r : run.sessions) {
    // Every column but n_errors, in the enum's order: the header's.
    for (int c = 0; c < static_cast<int>(session_log::Column::n_errors); ++c) {
      if (c > 0) out += ',';
      append_field(out, r, static_cast<C>(c));
    }
    out += '\n';
  }
  return out;
}

EventsJsonl::EventsJsonl(const std::string& path, const std::string& option)
    : file_(path, option) {}

void EventsJsonl::commit() {
  file_.write(text_);
  text_.clear();
  file_.commit();
}

void EventsJsonl::event(const sessions::SessionEvent& e) {
  using K = sessions::SessionEvent;
  text_ += fmt::format("{{\"t\": {:.3f}", e.t_s);
  if (e.session >= 0) text_ += fmt::format(", \"sid\": \"{}\"", e.session_id);
  text_ += fmt::format(", \"ev\": \"{}\"", sessions::event_name(e.kind));
  switch (e.kind) {
    case K::arrival:
    case K::superseded:
    case K::item_start:
    case K::item_done:
    case K::defer:
      text_ += fmt::format(", \"item\": {}, \"kind\": \"{}\"", e.item,
                           sessions::item_kind_name(e.item_kind));
      break;
    case K::resp:
      text_ += fmt::format(", \"status\": {}", e.status);
      if (e.status != 200) text_ += fmt::format(", \"step\": {}", e.step);
      break;
    case K::sleep:
      text_ += fmt::format(", \"dur\": {:.3f}", e.duration_s);
      break;
    case K::end:
      text_ += fmt::format(", \"outcome\": \"{}\"", sessions::outcome_name(e.outcome));
      break;
    default:
      break;
  }
  text_ += "}\n";
  if (text_.size() >= (1u << 20)) {
    file_.write(text_);
    text_.clear();
  }
}

}  // namespace retrystorm
