// The fuzz corpora of the log readers and the scenario loader (fuzz/corpus/,
// what the libFuzzer campaigns of fuzz/Makefile kept) replayed through the
// same code as fuzz/fuzz_logs.cpp and fuzz/fuzz_import.cpp, without the
// sanitizers: every input the fuzzers once found interesting stays a
// regression test of `make test`. Bad input must end in InputError; any other
// exception, text with a control character, or a replay scenario that `run`
// refuses is a bug.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/incident/accumulator.hpp"
#include "formats/analyze_report.hpp"
#include "formats/scenario_io.hpp"
#include "logs/line_reader.hpp"
#include "logs/readers.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(RETRYSTORM_SOURCE_DIR) / "fuzz" / "corpus";

std::vector<std::string> corpus(const std::string& format) {
  std::vector<std::string> inputs;
  if (!fs::is_directory(kCorpus / format)) return inputs;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kCorpus / format))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    inputs.push_back(s.str());
  }
  return inputs;
}

// No byte below 0x20 but the line ends, and no DEL, in text for a terminal.
bool printable(const std::string& text) {
  for (char c : text)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f) return false;
  return true;
}

void read_log(const std::string& format, logs::LineReader& in, incident::Accumulator& acc) {
  logs::TimeBase base;
  if (format == "sessions") return logs::read_sessions_csv(in, base, acc);
  if (format == "events") return logs::read_events_jsonl(in, base, acc);
  if (format == "requests") return logs::read_requests_csv(in, base, acc);
  if (format == "client_log") return logs::read_client_log(in, base, acc);
  return logs::read_per_second_csv(in, base, acc);
}

// One input as fuzz_log() runs it; empty when all is well, else what went wrong.
std::string replay_log(const std::string& format, std::string bytes) {
  // fmemopen reads the bytes in place; it refuses an empty buffer.
  std::FILE* f = bytes.empty() ? nullptr : fmemopen(bytes.data(), bytes.size(), "rb");
  if (!f) return "";
  try {
    logs::LineReader in("corpus", f);
    incident::Accumulator acc({});
    acc.set_sessions_from_events(format == "events");
    read_log(format, in, acc);
    incident::Report r = acc.finish();
    if (!printable(analyze_text(r))) return "a control character in the text report";
    analyze_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (r.sessions <= 0) return "";  // analyze stops there
    std::string yaml = replay_yaml(r);
    try {
      validate(scenario_from_text(yaml, "replay"));
    } catch (const InputError& e) {
      return std::string("replay refused: ") + e.what();
    }
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    return std::string("not an InputError: ") + e.what();
  }
  return "";
}

class LogCorpus : public testing::TestWithParam<const char*> {};

TEST_P(LogCorpus, EveryInputEndsInAReportOrAnInputError) {
  const std::string format = GetParam();
  auto inputs = corpus(format);
  ASSERT_GE(inputs.size(), 50u) << "fuzz/corpus/" << format << " is missing or nearly empty";
  int bad = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = replay_log(format, inputs[i]);
    if (what.empty()) continue;
    if (++bad <= 3) ADD_FAILURE() << format << " input " << i << ": " << what;
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(Readers, LogCorpus,
                         testing::Values("sessions", "events", "requests", "client_log",
                                         "per_second"));

// The scenario loader as `run --scenario` uses it: what it accepts validates
// or is refused with an InputError, and what it writes it reads back.
TEST(ScenarioCorpus, EveryInputLoadsOrEndsInAnInputError) {
  auto inputs = corpus("scenario");
  ASSERT_GE(inputs.size(), 100u) << "fuzz/corpus/scenario is missing or nearly empty";
  int bad = 0, loaded = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      std::vector<std::string> given;
      Scenario s = scenario_from_text(inputs[i], "corpus", &given);
      validate(s);
      ignored_keys(s, given);
      scenario_from_json(scenario_to_json(s));
      ++loaded;
    } catch (const InputError&) {
    } catch (const std::exception& e) {
      if (++bad <= 3) ADD_FAILURE() << "scenario input " << i << ": " << e.what();
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(loaded, 10) << "the corpus should hold scenarios that load";
}

}  // namespace
}  // namespace retrystorm
