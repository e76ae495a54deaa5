// One reader per log format (read_logs.cpp picks them). Each streams its file
// into the accumulator and throws InputError naming the line and column.
#pragma once

#include "analysis/incident/accumulator.hpp"
#include "logs/line_reader.hpp"

namespace retrystorm::logs {

void read_sessions_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc);
void read_events_jsonl(LineReader& in, TimeBase& base, incident::Accumulator& acc);
void read_requests_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc);
void read_client_log(LineReader& in, TimeBase& base, incident::Accumulator& acc);
void read_per_second_csv(LineReader& in, TimeBase& base, incident::Accumulator& acc);

}  // namespace retrystorm::logs
