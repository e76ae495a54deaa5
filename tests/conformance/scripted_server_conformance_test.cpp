// The scripted server itself (docs/conformance.md): schedules, hang until the
// client goes away, the record format. The other conformance tests rely on it.
#include <gtest/gtest.h>
#include <httplib.h>

#include "cli_run.hpp"
#include "harness.hpp"

namespace retrystorm::conformance {
namespace {

using nlohmann::json;
using testing::TempDir;

TEST(ScriptedServer, AnswersEachAttemptOfARequestFromTheSchedule) {
  TempDir dir("scripted_per_request");
  ScriptedServer server(dir.path(), "s",
                        json{{"answers", json::array({{{"status", 503}}, {{"status", 429}}})},
                             {"then", {{"status", 200}, {"body", "ok"}}}});
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  std::vector<int> seen;
  for (int i = 0; i < 3; ++i) {
    auto res = client.Get("/x", {{"x-rs-request", "a"}, {"x-rs-attempt", std::to_string(i + 1)}});
    ASSERT_TRUE(res);
    seen.push_back(res->status);
  }
  auto other = client.Post("/y", {{"x-rs-request", "b"}}, "", "text/plain");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 503);  // per_request: request b starts the list again
  EXPECT_EQ(seen, (std::vector<int>{503, 429, 200}));
  auto rec = server.stop_and_record();
  ASSERT_EQ(rec.size(), 4u);
  EXPECT_EQ(rec[2].request, "a");
  EXPECT_EQ(rec[2].attempt, 3);
  EXPECT_EQ(rec[2].announced, "3");
  EXPECT_EQ(rec[3].method, "POST");
  EXPECT_EQ(rec[3].path, "/y");
  EXPECT_EQ(rec[3].arrival, 4);
  EXPECT_FALSE(rec[3].announced.has_value());
  EXPECT_EQ(rec[3].answer["status"], 503);
}

TEST(ScriptedServer, GlobalModeCountsArrivalsAcrossRequests) {
  TempDir dir("scripted_global");
  ScriptedServer server(
      dir.path(), "s",
      json{{"mode", "global"}, {"answers", json::array({{{"status", 503}}, {{"status", 504}}})}});
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  std::vector<int> seen;
  for (const char* id : {"a", "b", "c"})
    seen.push_back(client.Get("/", {{"x-rs-request", id}})->status);
  EXPECT_EQ(seen, (std::vector<int>{503, 504, 200}));
}

// A hang ends when the client goes away; end_ms records when.
TEST(ScriptedServer, HangEndsWhenTheClientGoesAway) {
  TempDir dir("scripted_hang");
  ScriptedServer server(dir.path(), "s", json{{"answers", json::array({{{"hang", true}}})}});
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(0, 300 * 1000);
  EXPECT_FALSE(client.Get("/", {{"x-rs-request", "h"}}));
  std::vector<Attempt> rec;
  for (int i = 0; i < 200 && rec.empty(); ++i) {  // written once the hang ends
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rec = server.record();
  }
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_NEAR(rec[0].end_ms - rec[0].t_ms, 300, 150);
}

TEST(ScriptedServer, DelayAndStopReleaseHangs) {
  TempDir dir("scripted_delay");
  ScriptedServer server(dir.path(), "s",
                        json{{"answers", json::array({{{"delay_ms", 200}, {"status", 201}}})},
                             {"then", {{"hang", true}}}});
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(5, 0);
  auto res = client.Get("/", {{"x-rs-request", "d"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201);
  std::thread hung([&] { client.Get("/", {{"x-rs-request", "d"}}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  auto rec = server.stop_and_record();  // the hang is released at stop
  hung.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_NEAR(rec[0].end_ms - rec[0].t_ms, 200, 60);
  EXPECT_EQ(rec[1].answer["hang"], true);
}

}  // namespace
}  // namespace retrystorm::conformance
