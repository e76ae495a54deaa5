// The request log's vocabulary: requests.csv, one row per attempt of the
// agent engine (docs/log-formats.md). The engine writes these outcomes, the
// `analyze` reader reads them back by the same names.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace retrystorm::request_log {

// How one attempt ended. `late`: served after its caller gave up on it;
// `failed`: an outer layer's attempt whose inner attempts all failed;
// `in_flight`: still out when the run ended (neither success nor failure).
enum class AttemptOutcome { ok, late, timeout, rejected, shed, budget_denied, failed, in_flight };
const char* outcome_name(AttemptOutcome o);
std::optional<AttemptOutcome> outcome_from_name(std::string_view name);
// "ok, late, ...": for messages naming what is allowed.
std::string outcome_names();

// The columns of requests.csv, in the order the agent engine writes them.
enum class Column { request_id, attempt, sent_s, done_s, outcome, layer };
inline constexpr size_t kColumnCount = 6;
const char* column_name(Column c);
// "request_id,attempt,sent_s,done_s,outcome,layer\n"; a graph's log adds
// the column `call` (docs/graph.md, "The per-request log").
std::string requests_csv_header(bool graph = false);
inline constexpr const char* kCallColumn = "call";

}  // namespace retrystorm::request_log
