// Hostile files and flags through the real binary (issue "Hold against hostile
// input"): every input reader is bounded in size, nesting and alias expansion,
// refuses what it would otherwise read wrongly, and --out / --log never damage
// what they write to. The limits are stated in docs/limits.md.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "formats/input_text.hpp"
#include "model/keys.hpp"
#include "server/server.hpp"

namespace retrystorm {
namespace {

using testing::Outcome;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Exit 2 within `seconds`, one message naming every needle.
void expect_refused(const Outcome& o, std::initializer_list<std::string> needles) {
  EXPECT_EQ(o.status, 2) << o.err;
  for (const auto& n : needles) EXPECT_NE(o.err.find(n), std::string::npos) << n << " in " << o.err;
  EXPECT_EQ(o.err.find("std::"), std::string::npos) << o.err;
}

Outcome run_scenario_file(const TempDir& dir, const std::string& name, const std::string& text) {
  write_file(dir.path() / name, text);
  return run_cli(dir.path(), {"run", "--scenario", name});
}

TEST(HostileFiles, DeepNestingIsRefusedNotACrash) {
  TempDir dir("deep");
  std::string json = R"({"scenario": )" + repeat(R"({"a": )", 10000) + "1" + repeat("}", 10001);
  expect_refused(run_scenario_file(dir, "deep.json", json), {"deep.json", "200 levels"});
  std::string flow = "a: " + repeat("[", 10000) + repeat("]", 10000) + "\n";
  expect_refused(run_scenario_file(dir, "flow.yaml", flow), {"flow.yaml:1", "200 levels"});
  std::string block;
  for (int i = 0; i < 300; ++i) block += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  expect_refused(run_scenario_file(dir, "block.yaml", block), {"block.yaml:201", "200 levels"});
  expect_refused(run_cli(dir.path(), {"import", "block.yaml"}), {"block.yaml", "200 levels"});
}

TEST(HostileFiles, DeepBodyToTheApiIs400) {
  std::string body = R"({"scenario": )" + repeat(R"({"a": )", 10000) + "1" + repeat("}", 10001);
  ApiAnswer a = handle_api("/api/run", body);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.dump().find("200 levels"), std::string::npos) << a.body.dump();
}

TEST(HostileFiles, AliasBombStopsFast) {
  TempDir dir("bomb");
  std::string bomb =
      "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [" + repeat("*" + prev + ",", 8) + "*" + prev + "]\n";
  }
  auto started = std::chrono::steady_clock::now();
  expect_refused(run_scenario_file(dir, "bomb.yaml", bomb), {"bomb.yaml", "200000 values"});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST(HostileFiles, EndlessDirectoryAndUnreadableInputs) {
  TempDir dir("endless");
  expect_refused(run_cli(dir.path(), {"run", "--scenario", "/dev/zero"}),
                 {"--scenario", "/dev/zero", "4 MiB"});
  expect_refused(run_cli(dir.path(), {"import", "/dev/zero"}), {"/dev/zero", "4 MiB"});
  expect_refused(run_cli(dir.path(), {"run", "--scenario", "."}), {"--scenario", "directory"});
  expect_refused(run_cli(dir.path(), {"import", "."}), {"directory"});
  expect_refused(run_cli(dir.path(), {"run", "--scenario", "/proc/self/mem"}),
                 {"--scenario", "/proc/self/mem", "cannot read"});
  expect_refused(run_cli(dir.path(), {"lint", "missing.yaml"}), {"missing.yaml", "cannot open"});
}

TEST(HostileFiles, NumbersOutOfRangeNameTheFile) {
  TempDir dir("numbers");
  expect_refused(run_scenario_file(dir, "big.json", R"({"horizon_s": 1e400})"),
                 {"big.json", "1e400"});
  expect_refused(run_scenario_file(dir, "big.yaml", "horizon_s: 1e400\n"),
                 {"big.yaml:1", "1e400", "outside the range"});
}

TEST(HostileFiles, HexAndOtherNonDecimalNumbersAreRefused) {
  TempDir dir("hex");
  expect_refused(run_cli(dir.path(), {"run", "--set", "client.timeout_s=0x10"}),
                 {"client.timeout_s", "0x10", "not a number"});
  expect_refused(run_cli(dir.path(), {"run", "--set", "client.timeout_s= 5"}),
                 {"client.timeout_s"});
  expect_refused(run_scenario_file(dir, "hex.yaml", "client: {timeout_s: 0x10}\n"),
                 {"client.timeout_s", "0x10"});
  double v = 0;
  EXPECT_EQ(parse_decimal("0x10", v), NumberText::not_a_number);
  EXPECT_EQ(parse_decimal("inf", v), NumberText::not_a_number);
  EXPECT_EQ(parse_decimal("nan", v), NumberText::not_a_number);
  EXPECT_EQ(parse_decimal("1e400", v), NumberText::out_of_range);
  EXPECT_EQ(parse_decimal("+2.5", v), NumberText::ok);
  EXPECT_EQ(v, 2.5);
  EXPECT_EQ(parse_decimal("-1e-3", v), NumberText::ok);
  EXPECT_EQ(v, -1e-3);
}

// Found by fuzz/ (scenario, envoy): a string that is not UTF-8 made the
// error message itself throw; a line ending in "- " read past the text.
TEST(HostileFiles, FuzzFindings) {
  TempDir dir("fuzz-findings");
  expect_refused(run_scenario_file(dir, "bytes.yaml", "name: caf\xF6\nhorizon_s: 300\n"),
                 {"bytes.yaml:1", "not UTF-8", "0xF6"});
  expect_refused(run_scenario_file(dir, "dash.yaml", "a:\n- "), {"dash.yaml"});
  EXPECT_NO_THROW(check_nesting("{\n  \"a\": 1,\n \xb0 \n- ", "x"));
}

TEST(HostileFiles, DuplicateKeysAreRefused) {
  TempDir dir("dupes");
  expect_refused(run_scenario_file(dir, "d.yaml", "horizon_s: 300\nhorizon_s: 400\n"),
                 {"d.yaml:2", "horizon_s", "twice"});
  expect_refused(run_scenario_file(dir, "d.json", R"({"client": {"retries": 1, "retries": 2}})"),
                 {"d.json", "retries", "twice"});
  ApiAnswer a = handle_api("/api/run", R"({"preset": "order-status", "preset": "brief-outage"})");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.dump().find("twice"), std::string::npos) << a.body.dump();
}

TEST(HostileFiles, KeysOfAnotherEngineAreNamedInAWarning) {
  TempDir dir("engine-keys");
  Outcome o = run_cli(dir.path(), {"run", "--set", "sessions.deadline_aware=true"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.err.find("warning: sessions.deadline_aware: ignored"), std::string::npos) << o.err;
  // A whole saved scenario (every key written) warns about nothing.
  o = run_cli(dir.path(), {"run", "--format", "json", "--out", "r.json"});
  ASSERT_EQ(o.status, 0) << o.err;
  auto saved = nlohmann::json::parse(testing::read_all(dir.path() / "r.json"))["scenario"];
  write_file(dir.path() / "saved.json", saved.dump());
  o = run_cli(dir.path(), {"run", "--scenario", "saved.json"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err, "");
}

// The server says the same as the command line, in "warnings".
TEST(HostileFiles, KeysOfAnotherEngineAreNamedByTheServerToo) {
  ApiAnswer a = handle_api("/api/run", R"({"preset": "order-status", "trace": false,
                                           "set": {"sessions.deadline_aware": true}})");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  ASSERT_TRUE(a.body.contains("warnings")) << "no warnings field";
  EXPECT_NE(a.body["warnings"][0].get<std::string>().find("sessions.deadline_aware: ignored"),
            std::string::npos);
  a = handle_api("/api/run", R"({"preset": "order-status", "trace": false})");
  EXPECT_FALSE(a.body.contains("warnings"));
}

bool is_char_device(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

TEST(HostileOut, DevicesAndFifosAreWrittenIntoNotReplaced) {
  TempDir dir("out-devices");
  ASSERT_TRUE(is_char_device("/dev/null"));
  Outcome o = run_cli(dir.path(), {"run", "--out", "/dev/null"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(is_char_device("/dev/null")) << "/dev/null was replaced";
  // A FIFO with a reader: the bytes go through the pipe, the FIFO stays.
  auto fifo = dir.path() / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader is bounded in time: it ends even if nothing ever writes.
  std::string cmd = "timeout 10 cat " + testing::shell_quote(fifo.string()) + " > " +
                    testing::shell_quote((dir.path() / "got").string()) + " &";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  o = run_cli(dir.path(), {"run", "--format", "json", "--out", "pipe"});
  EXPECT_EQ(o.status, 0) << o.err;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // The reader may still be copying the last bytes: wait until it is whole.
  nlohmann::json got;
  for (int i = 0; i < 250; ++i) {
    got = nlohmann::json::parse(testing::read_all(dir.path() / "got"), nullptr, false);
    if (!got.is_discarded()) break;
    ::usleep(20'000);
  }
  EXPECT_FALSE(got.is_discarded()) << "the JSON came through whole";
}

TEST(HostileOut, SymlinksAndPlantedNamesAreNotFollowedIntoOtherFiles) {
  TempDir dir("out-links");
  auto victim = dir.path() / "victim";
  write_file(victim, "keep me\n");
  // Old predictable temp names, planted as links to the victim: not used.
  for (int pid = 1; pid < 64; ++pid)
    std::filesystem::create_symlink(victim, dir.path() / ("r.txt.tmp." + std::to_string(pid)));
  Outcome o = run_cli(dir.path(), {"run", "--out", "r.txt"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(testing::read_all(victim), "keep me\n");
  EXPECT_NE(testing::read_all(dir.path() / "r.txt").find("order-status"), std::string::npos);
  // --out through a symlink writes its target and keeps the link a link.
  write_file(dir.path() / "target", "old\n");
  ::chmod((dir.path() / "target").c_str(), 0640);
  std::filesystem::create_symlink("target", dir.path() / "link");
  o = run_cli(dir.path(), {"run", "--out", "link"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path() / "link"));
  EXPECT_NE(testing::read_all(dir.path() / "target").find("order-status"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "target").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u) << "the file keeps its permissions";
}

TEST(HostileOut, LogWritesBothFilesOrNeither) {
  TempDir dir("log-pair");
  // events.jsonl cannot be written (a directory is in the way): nothing else
  // may appear, and the message names --log.
  std::filesystem::create_directories(dir.path() / "logs" / "events.jsonl");
  Outcome o = run_cli(dir.path(), {"run", "--preset", "scheduler-normal-day", "--log", "logs"});
  expect_refused(o, {"--log", "events.jsonl"});
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "logs" / "sessions.csv"));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "logs")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
  // A file where the directory should be.
  write_file(dir.path() / "plain", "x");
  expect_refused(run_cli(dir.path(), {"run", "--preset", "scheduler-normal-day", "--log", "plain"}),
                 {"--log", "plain"});
}

}  // namespace
}  // namespace retrystorm
