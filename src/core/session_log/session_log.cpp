#include "session_log/session_log.hpp"

#include <utility>

namespace retrystorm::session_log {

namespace {

template <class E, size_t N>
using NameTable = std::array<std::pair<E, const char*>, N>;

constexpr NameTable<Outcome, kOutcomeCount> kOutcomes{{
    {Outcome::completed, "completed"},
    {Outcome::killed_asleep, "killed_asleep"},
    {Outcome::killed_working, "killed_working"},
    {Outcome::failed_fast, "failed_fast"},
    {Outcome::crashed, "crashed"},
    {Outcome::ladder_exhausted, "ladder_exhausted"},
    {Outcome::failed, "failed"},
    {Outcome::in_flight, "in_flight"},
}};

constexpr NameTable<EventKind, 11> kEvents{{
    {EventKind::arrival, "arrival"},
    {EventKind::superseded, "superseded"},
    {EventKind::launch, "launch"},
    {EventKind::call, "call"},
    {EventKind::resp, "resp"},
    {EventKind::sleep, "sleep"},
    {EventKind::wake, "wake"},
    {EventKind::item_start, "item_start"},
    {EventKind::item_done, "item_done"},
    {EventKind::defer, "defer"},
    {EventKind::end, "end"},
}};

constexpr NameTable<ItemKind, 3> kItemKinds{{
    {ItemKind::ping, "ping"},
    {ItemKind::notification, "notification"},
    {ItemKind::anchor, "anchor"},
}};

constexpr NameTable<Column, 19> kColumns{{
    {Column::session_id, "session_id"},
    {Column::start_s, "start_s"},
    {Column::end_s, "end_s"},
    {Column::outcome, "outcome"},
    {Column::n_429, "n_429"},
    {Column::n_401, "n_401"},
    {Column::terminal_error_line, "terminal_error_line"},
    {Column::n_api_calls, "n_api_calls"},
    {Column::items_in, "items_in"},
    {Column::items_done, "items_done"},
    {Column::queue_unread_at_open, "queue_unread_at_open"},
    {Column::time_working_s, "time_working_s"},
    {Column::time_blocked_s, "time_blocked_s"},
    {Column::time_asleep_s, "time_asleep_s"},
    {Column::anchor_in_batch, "anchor_in_batch"},
    {Column::anchor_done, "anchor_done"},
    {Column::items_deferred, "items_deferred"},
    {Column::delivery, "delivery"},
    {Column::n_errors, "n_errors"},
}};

template <class E, size_t N>
const char* name_of(const NameTable<E, N>& table, E value, const char* otherwise) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return otherwise;
}

template <class E, size_t N>
std::optional<E> value_of(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace

const char* outcome_name(Outcome o) {
  return name_of(kOutcomes, o, "failed");
}

std::optional<Outcome> outcome_from_name(std::string_view name) {
  return value_of(kOutcomes, name);
}

std::string outcome_names() {
  std::string list;
  for (const auto& [o, n] : kOutcomes) list += (list.empty() ? "" : ", ") + std::string(n);
  return list;
}

const char* event_name(EventKind k) {
  return name_of(kEvents, k, "other");
}

std::optional<EventKind> event_kind_from_name(std::string_view name) {
  return value_of(kEvents, name);
}

const char* item_kind_name(ItemKind k) {
  return name_of(kItemKinds, k, "?");
}

const char* column_name(Column c) {
  return name_of(kColumns, c, "?");
}

std::string sessions_csv_header() {
  std::string line;
  for (const auto& [c, n] : kColumns) {
    if (c == Column::n_errors) break;  // never written by the model
    line += (line.empty() ? "" : ",") + std::string(n);
  }
  return line + "\n";
}

}  // namespace retrystorm::session_log
