#include "session_log/request_log.hpp"

#include <utility>

namespace retrystorm::request_log {

namespace {

constexpr std::array<std::pair<AttemptOutcome, const char*>, 8> kOutcomes{{
    {AttemptOutcome::ok, "ok"},
    {AttemptOutcome::late, "late"},
    {AttemptOutcome::timeout, "timeout"},
    {AttemptOutcome::rejected, "rejected"},
    {AttemptOutcome::shed, "shed"},
    {AttemptOutcome::budget_denied, "budget_denied"},
    {AttemptOutcome::failed, "failed"},
    {AttemptOutcome::in_flight, "in_flight"},
}};

constexpr std::array<std::pair<Column, const char*>, kColumnCount> kColumns{{
    {Column::request_id, "request_id"},
    {Column::attempt, "attempt"},
    {Column::sent_s, "sent_s"},
    {Column::done_s, "done_s"},
    {Column::outcome, "outcome"},
    {Column::layer, "layer"},
}};

}  // namespace

const char* outcome_name(AttemptOutcome o) {
  for (const auto& [v, n] : kOutcomes)
    if (v == o) return n;
  return "?";
}

std::optional<AttemptOutcome> outcome_from_name(std::string_view name) {
  for (const auto& [v, n] : kOutcomes)
    if (name == n) return v;
  return std::nullopt;
}

std::string outcome_names() {
  std::string out;
  for (const auto& [v, n] : kOutcomes) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

const char* column_name(Column c) {
  for (const auto& [v, n] : kColumns)
    if (v == c) return n;
  return "?";
}

std::string requests_csv_header(bool graph) {
  std::string line;
  for (const auto& [c, n] : kColumns) line += (line.empty() ? "" : ",") + std::string(n);
  if (graph) line += std::string(",") + kCallColumn;
  return line + "\n";
}

}  // namespace retrystorm::request_log
