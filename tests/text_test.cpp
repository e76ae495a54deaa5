// The text toolkit (src/core/text) and the session log's vocabulary
// (src/core/session_log): one clock grammar for the session model's keys and
// for `analyze --from/--to`, one set of clock formatters, and one set of
// names the session model writes and the log readers read.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <optional>
#include <string>

#include "analysis/incident/report.hpp"
#include "cli_run.hpp"
#include "engines/sessions/clock.hpp"
#include "formats/observed_report.hpp"
#include "formats/preset_texts.hpp"
#include "formats/scenario_io.hpp"
#include "logs/times.hpp"
#include "model/keys.hpp"
#include "session_log/session_log.hpp"
#include "systems/common.hpp"
#include "systems/prometheus/client.hpp"
#include "text/clock.hpp"
#include "text/list.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {
namespace {

struct ClockCase {
  const char* text;
  std::optional<double> seconds;  // nothing: not a clock
};

constexpr double h = 3600, m = 60, d = 86400;

// Before issue 14 the timeline's parser took "9:40" and "09:40:5" was only
// taken by analyze's; the grammar chosen is the session model's documented
// [Nd]HH:MM[:SS] with one-digit hours allowed and seconds always two digits.
const ClockCase kClockCases[] = {
    {"9:40", 9 * h + 40 * m},
    {"09:40", 9 * h + 40 * m},
    {"1d09:40", d + 9 * h + 40 * m},
    {"1d9:40", d + 9 * h + 40 * m},
    {"22:15:09", 22 * h + 15 * m + 9},
    {"22:15:09.5", 22 * h + 15 * m + 9.5},
    {"2d22:15", 2 * d + 22 * h + 15 * m},
    {"0d00:00", 0.0},
    {"70200", 70200.0},
    {"12.5", 12.5},
    {"25:00", std::nullopt},
    {"9:60", std::nullopt},
    {"9:4", std::nullopt},
    {"123:00", std::nullopt},
    {"09:40:5", std::nullopt},
    {"09:40:60", std::nullopt},
    {"1.5d09:40", std::nullopt},
    {"d09:40", std::nullopt},
    {"1e305d00:00", std::nullopt},
    {"-73", std::nullopt},
    {"soon", std::nullopt},
    {"", std::nullopt},
};

// The same text as a time of the session model's timeline
// (`--set api.timeline="9:40 dead"`): its seconds, or nothing when refused.
std::optional<double> timeline_time(const std::string& text) {
  try {
    return sessions::parse_clock(text, "api.timeline");
  } catch (const InputError&) {
    return std::nullopt;
  }
}

bool timeline_accepts(const std::string& when) {
  Scenario s = preset_or_throw("scheduler-normal-day").scenario;
  try {
    set_key_text(s, "api.timeline", when + " dead");
    validate(s);
  } catch (const InputError&) {
    return false;
  }
  return true;
}

TEST(TextClock, TimelineKeysAndAnalyzeAcceptTheSameForms) {
  for (const auto& c : kClockCases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(text::parse_clock(c.text), c.seconds);
    EXPECT_EQ(logs::parse_clock(c.text), c.seconds);  // analyze --from, --to
    EXPECT_EQ(timeline_time(c.text), c.seconds);      // api.timeline, items.initial_queue
    if (*c.text != '\0') {
      EXPECT_EQ(timeline_accepts(c.text), c.seconds.has_value());
    }
  }
}

TEST(TextClock, AnalyzeFromTakesTheTimelinesShortHour) {
  testing::TempDir dir("text_clock_from");
  std::string log = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/logs/outage/sessions.csv";
  auto short_hour =
      testing::run_cli(dir.path(), {"analyze", log, "--from", "1:00", "--to", "7:00"});
  auto seconds = testing::run_cli(dir.path(), {"analyze", log, "--from", "3600", "--to", "25200"});
  EXPECT_EQ(short_hour.status, 0) << short_hour.err;
  EXPECT_EQ(short_hour.out, seconds.out);
}

TEST(TextClock, FormattersWriteWhatTheParserReads) {
  EXPECT_EQ(text::format_clock(2 * d + 22 * h + 15 * m + 9.7), "2d22:15:09");
  EXPECT_EQ(text::format_clock(-h), "-1d23:00:00");
  EXPECT_EQ(text::hour_label(24 + 13), "1d13:00");
  EXPECT_EQ(text::hour_label(-1), "-1d23:00");
  // From day 10 on an hour keeps its minutes (the first seven characters of
  // the clock, which two reports used to print, were "10d22:0").
  EXPECT_EQ(text::hour_label(10 * 24 + 22), "10d22:00");
  EXPECT_EQ(text::format_minutes(24 * m + 57.9), "24m57s");
  for (double t : {0.0, 59.0, 86399.0, 3 * d + 7 * h + 5 * m + 1})
    EXPECT_EQ(text::parse_clock(text::format_clock(t)), t);
}

// The two replay writers rounded differently: the log's replay with printf
// (halves to even), the Prometheus replay halves away from zero and never
// "-0". One formatter now, the second rule: 0.125 is "0.13" in both.
TEST(TextNumber, DecimalTextRoundsHalvesAwayAndDropsZeros) {
  EXPECT_EQ(text::decimal_text(0.125, 2), "0.13");
  EXPECT_EQ(text::decimal_text(-0.125, 2), "-0.13");
  EXPECT_EQ(text::decimal_text(2.5, 3), "2.5");
  EXPECT_EQ(text::decimal_text(100, 0), "100");
  EXPECT_EQ(text::decimal_text(1800, 3), "1800");
  EXPECT_EQ(text::decimal_text(-0.0001, 3), "0");
  EXPECT_EQ(text::fixed_text(0.125, 2), "0.12");  // printf's "%.2f"
  EXPECT_EQ(text::fixed_text(26.0 / 3600, 4), "0.0072");
}

// The reports' numbers moved from snprintf and ostream precision to {fmt}:
// the same bytes as printf's "%.*f" and "%.*g", ties to even included.
TEST(TextNumber, FormattersWriteWhatPrintfWrote) {
  char printed[64];
  for (double v : {0.125, 2.5, -0.5, 1e-7, 0.1, 123456.5, 1234567.0, 9.995, -0.0}) {
    for (int digits : {0, 1, 2, 3, 6, 17}) {
      std::snprintf(printed, sizeof printed, "%.*f", digits, v);
      EXPECT_EQ(text::fixed_text(v, digits), printed);
      std::snprintf(printed, sizeof printed, "%.*g", digits, v);
      EXPECT_EQ(text::general_text(v, digits), printed);
    }
  }
  EXPECT_EQ(text::trimmed_text(0.125, 2), "0.12");  // not decimal_text's "0.13"
  EXPECT_EQ(text::trimmed_text(2.5, 3), "2.5");
  EXPECT_EQ(text::trimmed_text(-0.001, 2), "0");
  EXPECT_EQ(text::general_text(0.1, 17), "0.10000000000000001");  // CSV's full precision
}

// Durations split with std::chrono read as the hand-made arithmetic did.
TEST(TextClock, DurationsSplitIntoHoursMinutesSeconds) {
  EXPECT_EQ(incident::span_label(h + 2 * m + 5), "1:02:05");
  EXPECT_EQ(incident::span_label(25 * h), "25:00:00");
  EXPECT_EQ(incident::span_label(-65), "-1:05");
  EXPECT_EQ(incident::span_label(59.6), "1:00");
  EXPECT_EQ(configs::go_duration(0.0004), "400us");
  EXPECT_EQ(configs::go_duration(0.25), "250ms");
  EXPECT_EQ(configs::go_duration(1.5), "1.5s");
  EXPECT_EQ(configs::go_duration(2 * m + 0.25), "2m0.25s");
  EXPECT_EQ(configs::go_duration(h + 2 * m + 3.5), "1h2m3.5s");
  EXPECT_EQ(configs::go_duration(m), "1m");
  EXPECT_EQ(human_duration(h + 2 * m + 3.5), "1 h 2 min 3.5 s");
  EXPECT_EQ(human_duration(2 * h), "2 h");
  EXPECT_EQ(configs::proto_duration(2.5), "2.5s");
  EXPECT_EQ(configs::proto_duration(0.05), "0.05s");
}

TEST(TextClip, CutsBetweenCharacters) {
  EXPECT_EQ(clip("short", 10), "short");
  EXPECT_EQ(clip("abcdef", 3), "abc...");
  EXPECT_EQ(clip("a\u00e9b", 2), "a...");  // not half of the two bytes of e-acute
  EXPECT_EQ(clip("\u00e9\u00e9", 2), "\u00e9...");
}

// `run --metrics-start` and `analyze --prometheus --from` read date-times
// with the log readers' one parser (std::chrono's calendar).
TEST(TextClock, UnixTimesAndLogDateTimesAreOneGrammar) {
  EXPECT_EQ(parse_unix_time("2024-01-01T00:00:00Z"), 1704067200.0);
  EXPECT_EQ(parse_unix_time("2024-01-01T00:00:00.5Z"), 1704067200.5);
  EXPECT_EQ(parse_unix_time("2024-01-01T01:00:00+01:00"), 1704067200.0);
  EXPECT_EQ(parse_unix_time("1704067200"), 1704067200.0);
  EXPECT_EQ(parse_unix_time("2024-13-01T00:00:00Z"), std::nullopt);
  // A day the month does not have is no date (it read as the next month's).
  EXPECT_EQ(parse_unix_time("2024-02-30T00:00:00Z"), std::nullopt);
  EXPECT_EQ(parse_unix_time("2023-02-29T00:00:00Z"), std::nullopt);
  EXPECT_EQ(parse_unix_time("2024-02-29T00:00:00Z"), 1709164800.0);  // a leap day
  EXPECT_EQ(parse_unix_time("2024-04-31T00:00:00Z"), std::nullopt);
  EXPECT_EQ(parse_unix_time("yesterday"), std::nullopt);
}

// Text values went out between quotes unescaped; the emitter escapes them, so
// the file reads back as the keys that were written.
TEST(ReplayYaml, KeysNestAndTextReadsBack) {
  std::vector<incident::ReplayKey> keys{
      {"name", "replay", false, ""},
      {"client.retries", "6", false, "ladder from sleep events"},
      {"api.timeline", "0d01:00 dead", true, "a \"quoted\" note"},
      {"client.deadline_s", "1800", false, ""},
      {"description", "say \"hi\" \\ 100%: done", true, ""},
  };
  std::string text = replay_keys_yaml(keys);
  EXPECT_NE(text.find("retries: 6  # ladder from sleep events\n"), std::string::npos) << text;
  YAML::Node y = YAML::Load(text);
  EXPECT_EQ(y["client"]["retries"].as<int>(), 6);
  EXPECT_EQ(y["client"]["deadline_s"].as<double>(), 1800);  // with its section
  EXPECT_EQ(y["api"]["timeline"].as<std::string>(), "0d01:00 dead");
  EXPECT_EQ(y["description"].as<std::string>(), "say \"hi\" \\ 100%: done");
}

TEST(TextList, ItemsAreTrimmedAndEmptyOnesKept) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(text::list_items("30, 60,\t120 "), (V{"30", "60", "120"}));
  EXPECT_EQ(text::list_items("1,,2"), (V{"1", "", "2"}));
  EXPECT_EQ(text::list_items("0d19:40 dead, "), (V{"0d19:40 dead", ""}));
  EXPECT_EQ(text::list_items("30,60,"), (V{"30", "60"}));  // as std::getline cut them
  EXPECT_EQ(text::list_items(","), V{""});
  EXPECT_EQ(text::list_items(""), V{});
}

TEST(SessionLog, NamesReadBackAsWhatWasWritten) {
  for (auto o : session_log::kModelOutcomes)
    EXPECT_EQ(session_log::outcome_from_name(session_log::outcome_name(o)), o);
  EXPECT_EQ(session_log::outcome_from_name("failed"), session_log::Outcome::failed);
  EXPECT_FALSE(session_log::outcome_from_name("other"));
  using K = session_log::EventKind;
  for (K k : {K::arrival, K::superseded, K::launch, K::call, K::resp, K::sleep, K::wake,
              K::item_start, K::item_done, K::defer, K::end})
    EXPECT_EQ(session_log::event_kind_from_name(session_log::event_name(k)), k);
  EXPECT_EQ(session_log::sessions_csv_header(),
            "session_id,start_s,end_s,outcome,n_429,n_401,terminal_error_line,n_api_calls,"
            "items_in,items_done,queue_unread_at_open,time_working_s,time_blocked_s,"
            "time_asleep_s,anchor_in_batch,anchor_done,items_deferred,delivery\n");
}

}  // namespace
}  // namespace retrystorm
