#include "analysis/incident/records.hpp"

#include <array>
#include <utility>

namespace retrystorm::incident {

namespace {

constexpr std::array<std::pair<Outcome, const char*>, 8> kOutcomes{{
    {Outcome::completed, "completed"},
    {Outcome::killed_asleep, "killed_asleep"},
    {Outcome::killed_working, "killed_working"},
    {Outcome::failed_fast, "failed_fast"},
    {Outcome::crashed, "crashed"},
    {Outcome::ladder_exhausted, "ladder_exhausted"},
    {Outcome::failed, "failed"},
    {Outcome::in_flight, "in_flight"},
}};

constexpr std::array<std::pair<EventKind, const char*>, 11> kEvents{{
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

}  // namespace

std::optional<Outcome> outcome_from_name(std::string_view name) {
  for (const auto& [o, n] : kOutcomes)
    if (name == n) return o;
  return std::nullopt;
}

const char* outcome_name(Outcome o) {
  for (const auto& [v, n] : kOutcomes)
    if (v == o) return n;
  return "failed";
}

std::string outcome_names() {
  std::string list;
  for (const auto& [o, n] : kOutcomes) list += (list.empty() ? "" : ", ") + std::string(n);
  return list;
}

std::optional<EventKind> event_kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kEvents)
    if (name == n) return k;
  return std::nullopt;
}

}  // namespace retrystorm::incident
