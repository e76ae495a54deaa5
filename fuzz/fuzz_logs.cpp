// libFuzzer target for the incident-log readers of `retrystorm analyze`
// (src/logs) and what they feed: the accumulator, the reports and the
// replay scenario. The reader comes from FUZZ_FORMAT: sessions, events,
// requests, client_log, per_second, or time (the time, clock and number parsers
// and the terminal escaping on the raw text); shard (a `sweep --shard` file
// through `merge`); risk_shard (a `risk --shard` file through `merge`);
// prom_answer (a Prometheus
// /api/v1/query_range answer through `analyze --prometheus`: the series, the
// diagnosis, the reports and the replay) or prom_mapping (a --metrics file). Bad input must end in
// InputError; anything else (a crash, another exception, a sanitizer report,
// text with a control character, a replay scenario `run` refuses) is a bug.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "analysis/incident/accumulator.hpp"
#include "formats/analyze_report.hpp"
#include "formats/observed_report.hpp"
#include "formats/risk_shard.hpp"
#include "formats/scenario_io.hpp"
#include "formats/sweep_shard.hpp"
#include "logs/line_reader.hpp"
#include "logs/readers.hpp"
#include "logs/times.hpp"
#include "systems/prometheus/series.hpp"

namespace {

std::string format = "sessions";

using namespace retrystorm;

// No byte below 0x20 but the line ends, and no DEL, in text for a terminal.
void check_printable(const std::string& text) {
  for (char c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) std::abort();
}

void fuzz_time(std::string_view text) {
  logs::TimeBase base;
  if (auto t = logs::parse_time(text, base); t && !std::isfinite(*t)) std::abort();
  if (auto t = logs::parse_clock(text); t && (!std::isfinite(*t) || *t < 0)) std::abort();
  if (auto n = logs::parse_number(text); n && !std::isfinite(*n)) std::abort();
  std::string p = printable(text);
  for (char c : p)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
}

void read(logs::LineReader& in, incident::Accumulator& acc) {
  logs::TimeBase base;
  if (format == "sessions") return logs::read_sessions_csv(in, base, acc);
  if (format == "events") return logs::read_events_jsonl(in, base, acc);
  if (format == "requests") return logs::read_requests_csv(in, base, acc);
  if (format == "client_log") return logs::read_client_log(in, base, acc);
  if (format == "per_second") return logs::read_per_second_csv(in, base, acc);
  std::fprintf(stderr, "FUZZ_FORMAT: '%s' is not a log format\n", format.c_str());
  std::exit(1);
}

void fuzz_log(const uint8_t* data, size_t size) {
  // fmemopen reads the bytes in place; it refuses an empty buffer.
  std::FILE* f = size > 0 ? fmemopen(const_cast<uint8_t*>(data), size, "rb") : nullptr;
  if (!f) return;
  logs::LineReader in("fuzz", f);
  incident::Accumulator acc({});
  acc.set_sessions_from_events(format == "events");
  read(in, acc);
  incident::Report r = acc.finish();
  check_printable(analyze_text(r));
  analyze_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (r.sessions <= 0) return;  // analyze stops there
  // What --emit-scenario writes, `run --scenario` takes.
  std::string yaml = replay_yaml(r);
  try {
    validate(scenario_from_text(yaml, "replay"));
  } catch (const InputError& e) {
    std::fprintf(stderr, "replay refused: %s\n%s\n", e.what(), yaml.c_str());
    std::abort();
  }
}

// The answer's series as every quantity of `analyze --prometheus`.
void fuzz_prom_answer(const std::string& text) {
  auto series = parse_query_answer(text, "fuzz");
  QueryGrid g{1704067200, 1, 31};
  incident::ObservedSeries s;
  s.start_unix_s = g.from;
  s.requests = counter_increases(series, g);
  s.retries = s.successes = s.failed = s.overflow = s.timeouts = s.requests;
  s.in_flight = gauge_values(series, g);
  auto slow = slow_attempts(series, g, 1, 0.001);
  s.measured = slow.measured;
  s.slow = slow.slow;
  double total = 0;
  for (double v : s.requests) total += v;
  if (!(total > 0)) return;  // `analyze --prometheus` stops there
  incident::ObservedOptions o;
  o.timeout_s = 1;
  auto r = incident::analyze_observed(s, o);
  ObservedSource src{"fuzz", "fuzz", g.from, g.step};
  check_printable(observed_text(r, src));
  observed_json(r, src).dump();
  std::string yaml = observed_replay_yaml(r, o);
  try {
    validate(scenario_from_text(yaml, "replay"));
  } catch (const InputError& e) {
    std::fprintf(stderr, "replay refused: %s\n%s\n", e.what(), yaml.c_str());
    std::abort();
  }
}

// A `sweep --shard` file through `merge`: parsed, checked, merged both ways.
void fuzz_shard(const std::string& text) {
  std::vector<SweepShard> shards = order_sweep_shards({parse_sweep_shard(text, "fuzz")});
  for (const char* format : {"csv", "json"}) check_printable(merged_sweep_text(shards, format));
}

// A `risk --shard` file through `merge`: parsed, checked, the estimates
// taken both ways (the exact chain left out: seconds each, priced by merge).
void fuzz_risk_shard(const std::string& text) {
  auto no_chains = [](const RiskRequest& r) {
    if (r.options.exact) throw InputError("fuzz: exact chains are priced by merge");
  };
  for (const char* format : {"text", "json"})
    check_printable(merged_risk_text({{"fuzz", text}}, format, no_chains));
}

void fuzz_prom_mapping(const std::string& text) {
  MetricsMapping m = mapping_from_text(text, "fuzz");
  std::string matchers = selector_matchers("{job=\"x\"}");
  for (const auto* e : {&m.requests, &m.attempts, &m.retries, &m.successes, &m.failed})
    expand_selector(*e, matchers);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* f = std::getenv("FUZZ_FORMAT")) format = f;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::string text(reinterpret_cast<const char*>(data), size);
    if (format == "time")
      fuzz_time(text);
    else if (format == "prom_answer")
      fuzz_prom_answer(text);
    else if (format == "prom_mapping")
      fuzz_prom_mapping(text);
    else if (format == "shard")
      fuzz_shard(text);
    else if (format == "risk_shard")
      fuzz_risk_shard(text);
    else
      fuzz_log(data, size);
  } catch (const InputError&) {
  }
  return 0;
}
