// The HTTP API of `retrystorm serve` (docs/http-api.md): the real
// server started in-process on a free loopback port, spoken to with
// httplib::Client and with raw requests; handle_api() directly; and a load
// test of POST /api/run from four concurrent clients.
#include "server/server.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "analysis/tipping.hpp"
#include "app/montecarlo_batches.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "free_port.hpp"
#include "model/keys.hpp"
#include "server/routes.hpp"
#include "systems/export.hpp"

namespace retrystorm {
namespace {

using nlohmann::json;
constexpr const char* kHost = "127.0.0.1";

using testing::free_port;

bool answers(int port) {
  httplib::Client c(kHost, port);
  c.set_connection_timeout(0, 200'000);
  auto r = c.Get("/api/presets");
  return r && r->status == 200;
}

// A server of its own with `limits` (which must outlive the program's
// tests: serve() does not return, so its thread is detached); 0 when none
// answered.
int own_server(const ServerLimits& limits) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int port = free_port();
    if (port == 0) continue;
    auto stopped = std::make_shared<std::atomic<bool>>(false);
    std::thread([port, stopped, &limits] {
      serve(kHost, port, limits);
      *stopped = true;  // could not bind: try another port
    }).detach();
    for (int i = 0; i < 250 && !*stopped; ++i) {
      if (answers(port)) return port;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return 0;
}

// The server, started once for the whole program with the default limits
// (1 MB bodies, 200,000 steps a run, 10,000 runs a sweep).
int server_port() {
  static const ServerLimits limits;
  static const int port = own_server(limits);
  return port;
}

class Server : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(server_port(), 0) << "the server did not start"; }

  static httplib::Client client() {
    httplib::Client c(kHost, server_port());
    c.set_connection_timeout(2);
    c.set_read_timeout(30);
    c.set_write_timeout(30);
    return c;
  }
  static httplib::Result post(const std::string& path, const std::string& body) {
    return client().Post(path.c_str(), body, "application/json");
  }
  static httplib::Result post(const std::string& path, const json& body) {
    return post(path, body.dump());
  }
  static httplib::Result get(const std::string& path) { return client().Get(path.c_str()); }

  // 200 and a JSON object.
  static json ok_json(const httplib::Result& r) {
    EXPECT_TRUE(r) << "no answer";
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 300);
    EXPECT_EQ(r->get_header_value("Content-Type").rfind("application/json", 0), 0u);
    json j = json::parse(r->body, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r->body.substr(0, 300);
    return j;
  }
  // An error status with {"error": "..."} that names `needle`.
  static void expect_error(const httplib::Result& r, int status, const std::string& needle) {
    ASSERT_TRUE(r) << "no answer";
    EXPECT_EQ(r->status, status) << r->body.substr(0, 300);
    json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error") && j["error"].is_string())
        << r->body.substr(0, 300);
    EXPECT_NE(j["error"].get<std::string>().find(needle), std::string::npos)
        << "the error does not name '" << needle << "': " << j["error"];
  }
};

// A request written by hand, so that nothing normalizes the path on the way;
// returns the whole response (status line, headers, body). With `half_close`
// the request is followed by end of file, so that a server waiting for more of
// a malformed request gives up at once.
std::string raw_request(int port, const std::string& request, bool half_close = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < request.size()) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    if (half_close) ::shutdown(fd, SHUT_WR);
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return response;
}

int status_of(const std::string& response) {
  // "HTTP/1.1 404 Not Found"
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.substr(9, 3).c_str());
}

// ------------------------------------------------------------- GET answers

TEST_F(Server, PresetsListsEveryPresetWithItsScenario) {
  json j = ok_json(get("/api/presets"));
  ASSERT_TRUE(j["presets"].is_array());
  std::set<std::string> names;
  for (const auto& p : j["presets"]) {
    names.insert(p["name"].get<std::string>());
    EXPECT_FALSE(p["description"].get<std::string>().empty());
    EXPECT_TRUE(p["scenario"].is_object());
    EXPECT_EQ(p["scenario"]["name"], p["name"]);
  }
  EXPECT_TRUE(names.count("order-status"));
  EXPECT_TRUE(names.count("primary-failover"));
}

TEST_F(Server, SchemaListsTheScenarioKeys) {
  json j = ok_json(get("/api/schema"));
  ASSERT_TRUE(j["keys"].is_array());
  std::set<std::string> paths;
  for (const auto& k : j["keys"]) paths.insert(k["path"].get<std::string>());
  for (const char* p : {"horizon_s", "step_s", "demand.rate_per_s", "server.capacity_per_s",
                        "client.retries", "client.backoff.jitter", "client.budget.kind"})
    EXPECT_TRUE(paths.count(p)) << p;
}

// The systems table (src/systems/system.hpp) as the page reads it: every
// system we write answers /api/export/NAME with the same extension.
TEST_F(Server, SystemsListsTheTableAndEachExportNamesItsExtension) {
  json j = ok_json(get("/api/systems"));
  ASSERT_TRUE(j["systems"].is_array());
  std::vector<std::string> written;
  for (const auto& sys : j["systems"]) {
    if (!sys["export"].get<bool>()) continue;
    std::string name = sys["name"].get<std::string>();
    written.push_back(name);
    json e = ok_json(post("/api/export/" + name, json{{"preset", "order-status"}}));
    EXPECT_EQ(e["extension"], sys["extension"]) << name;
    EXPECT_EQ(e["system"], name);
  }
  EXPECT_EQ(written, configs::export_systems());
  EXPECT_EQ(written, (std::vector<std::string>{"envoy", "grpc", "istio", "linkerd", "aws",
                                               "haproxy", "nginx"}));
  std::map<std::string, std::string> ext;
  for (const auto& sys : j["systems"])
    ext[sys["name"].get<std::string>()] = sys["extension"].get<std::string>();
  // What the page used to hard-code, now the server's.
  EXPECT_EQ(ext, (std::map<std::string, std::string>{{"envoy", "yaml"},
                                                     {"grpc", "json"},
                                                     {"istio", "yaml"},
                                                     {"linkerd", "yaml"},
                                                     {"aws", "ini"},
                                                     {"haproxy", "cfg"},
                                                     {"nginx", "conf"},
                                                     {"retrystorm", "yaml"}}));
}

TEST_F(Server, HeadOnAGetPathIsAllowed) {
  auto r = client().Head("/api/presets");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// ------------------------------------------------------------ POST answers

TEST_F(Server, RunAnswersTheContractFields) {
  json j = ok_json(post("/api/run", json{{"preset", "primary-failover"}}));
  for (const char* f : {"scenario", "metrics", "series", "trace"}) EXPECT_TRUE(j.contains(f)) << f;
  const json& m = j["metrics"];
  for (const char* f :
       {"user_requests", "failed", "failed_fraction", "wasted_fraction", "peak_amplification",
        "goodput_recovery_s", "failure_recovery_s", "backlog_growing", "last_window", "bound"})
    EXPECT_TRUE(m.contains(f)) << f;
  for (const char* f : {"seconds", "goodput_per_s", "utilization", "attempts_per_request"})
    EXPECT_TRUE(m["last_window"].contains(f)) << f;
  for (const char* f : {"max_amplification", "safe_load_below"})
    EXPECT_TRUE(m["bound"].contains(f)) << f;
  EXPECT_EQ(m["user_requests"], 72000.0);
  EXPECT_NEAR(m["failed"].get<double>(), 64170, 1e-6);
  EXPECT_EQ(m["failure_recovery_s"], nullptr);
  EXPECT_EQ(m["backlog_growing"], true);
  EXPECT_EQ(m["bound"]["max_amplification"], 3.0);
  for (const char* f : {"t_s", "capacity", "first_attempts", "retries", "goodput", "served_late",
                        "failed", "shed", "rejected", "backlog"}) {
    ASSERT_TRUE(j["series"][f].is_array()) << f;
    EXPECT_EQ(j["series"][f].size(), 2400u) << f;  // 120 s / 0.05 s
  }
  ASSERT_TRUE(j["trace"].is_array());
  ASSERT_FALSE(j["trace"].empty());
  EXPECT_TRUE(j["trace"][0].contains("t_s"));
  EXPECT_TRUE(j["trace"][0]["text"].is_string());
  EXPECT_EQ(j["scenario"]["name"], "primary-failover");
  EXPECT_EQ(j["scenario"]["step_s"], 0.05);
}

TEST_F(Server, OrderStatusWithoutRetriesRecoversIn19Seconds) {
  json j =
      ok_json(post("/api/run", json{{"preset", "order-status"}, {"set", {{"client.retries", 0}}}}));
  EXPECT_EQ(j["metrics"]["goodput_recovery_s"], 19.0);
  EXPECT_EQ(j["scenario"]["client"]["retries"], 0);
}

TEST_F(Server, RunTakesAWholeScenarioObject) {
  json scenario = {{"name", "tiny"},
                   {"horizon_s", 60},
                   {"demand", {{"rate_per_s", 10}}},
                   {"server", {{"capacity_per_s", 20}}},
                   {"incident", {{"start_s", 10}, {"duration_s", 5}, {"capacity_factor", 0.5}}},
                   {"client", {{"timeout_s", 2}, {"retries", 1}}}};
  json j = ok_json(post("/api/run", json{{"scenario", scenario}}));
  EXPECT_EQ(j["scenario"]["name"], "tiny");
  EXPECT_EQ(j["series"]["t_s"].size(), 60u);
  EXPECT_EQ(j["metrics"]["user_requests"], 600.0);
  EXPECT_EQ(j["scenario"]["client"]["backoff"]["multiplier"], 2.0);  // defaults filled in
}

TEST_F(Server, LadderAnswersThePresetsRows) {
  json j = ok_json(post("/api/ladder", json{{"preset", "primary-failover"}}));
  ASSERT_EQ(j["rows"].size(), 5u);
  EXPECT_EQ(j["rows"][0]["name"], "No retries");
  EXPECT_TRUE(j["rows"][0]["change"].is_string());
  EXPECT_NEAR(j["rows"][0]["metrics"]["failure_recovery_s"].get<double>(), 21.05, 1e-9);
  EXPECT_EQ(j["rows"][2]["metrics"]["failure_recovery_s"], nullptr);
  EXPECT_NEAR(j["rows"][4]["metrics"]["failure_recovery_s"].get<double>(), 0.1, 1e-9);
}

// Issue 17: what the page needs to never show a result that is not its inputs'.
TEST_F(Server, LadderRowsCarryAGoodputSparkline) {
  json j = ok_json(post("/api/ladder", json{{"preset", "order-status"}}));
  for (const json& row : j["rows"]) {
    ASSERT_TRUE(row["goodput_per_s"].is_array());
    EXPECT_GT(row["goodput_per_s"].size(), 10u);
    EXPECT_LE(row["goodput_per_s"].size(), kLadderSparkPoints);
    // Before the incident every request is served on time: goodput is the row's demand.
    EXPECT_NEAR(row["goodput_per_s"][0].get<double>(),
                row["scenario"]["demand"]["rate_per_s"].get<double>(), 1e-9);
  }
}

TEST_F(Server, IncidentAfterTheRunIsRefused) {
  expect_error(
      post("/api/run", json{{"preset", "order-status"}, {"set", {{"incident.start_s", 400}}}}), 400,
      "incident.start_s");
  // Starting inside the run and lasting past its end stays allowed.
  ok_json(post("/api/run", json{{"preset", "order-status"}, {"set", {{"incident.start_s", 290}}}}));
}

TEST_F(Server, SchemaNamesKeysCountedInSteps) {
  json j = ok_json(get("/api/schema"));
  std::set<std::string> stepped;
  for (const json& k : j["keys"])
    if (k.contains("multiple_of")) stepped.insert(k["path"].get<std::string>());
  EXPECT_EQ(stepped, (std::set<std::string>{"horizon_s", "client.timeout_s",
                                            "client.budget.window_s", "client.budget.ttl_s"}));
}

TEST_F(Server, RunWithoutAdviceThenAdviceAlone) {
  json body = {{"preset", "order-status"},
               {"set", {{"engine", "agent"}, {"runs", 4}}},
               {"trace", false},
               {"advice", false}};
  json run = ok_json(post("/api/run", body));
  EXPECT_TRUE(run["advice"].empty());
  EXPECT_FALSE(run.contains("tipping"));
  EXPECT_EQ(run["montecarlo"]["runs"], 4);
  // Replication 0 is the run shown: the same numbers as a run with advice.
  body.erase("advice");
  json full = ok_json(post("/api/run", body));
  EXPECT_EQ(run["metrics"], full["metrics"]);
  EXPECT_EQ(run["montecarlo"], full["montecarlo"]);
  json advice = ok_json(post("/api/advice", json{{"preset", "order-status"}}));
  ASSERT_FALSE(advice["advice"].empty());
  EXPECT_TRUE(advice["advice"][0]["title"].is_string());
  EXPECT_TRUE(advice["tipping"].is_object());
}

TEST_F(Server, TippingOnAHalfSecondGrid) {
  json j = ok_json(post("/api/tipping", json{{"preset", "primary-failover"}, {"grid_s", 0.5}}));
  EXPECT_EQ(j["grid_s"], 0.5);
  EXPECT_EQ(j["on_grid_s"], 1.5);
  ASSERT_TRUE(j["exact_s"].is_number());
  EXPECT_GT(j["exact_s"].get<double>(), 1.0);
  EXPECT_LE(j["exact_s"].get<double>(), 1.5);
}

// Grid 50 s: incidents of 50 to 200 s, all absorbed by 1000/s. (An incident
// lasting to the end of the run, 240 s, would never count as recovered.)
TEST_F(Server, TippingNullWhenEveryDurationRecovers) {
  json j = ok_json(post("/api/tipping", json{{"preset", "order-status"},
                                             {"set", {{"server.capacity_per_s", 1000}}},
                                             {"grid_s", 50}}));
  EXPECT_EQ(j["on_grid_s"], nullptr);
  EXPECT_EQ(j["exact_s"], nullptr);
}

TEST_F(Server, SweepAnswersOneRowPerGridPoint) {
  json body = {{"preset", "order-status"},
               {"vary", {{{"path", "client.retries"}, {"from", 0}, {"to", 3}, {"step", 1}}}}};
  json j = ok_json(post("/api/sweep", body));
  ASSERT_EQ(j["rows"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(j["rows"][i]["values"]["client.retries"], double(i));
  EXPECT_EQ(j["rows"][0]["metrics"]["goodput_recovery_s"], 19.0);
  EXPECT_EQ(j["rows"][3]["metrics"]["goodput_recovery_s"], nullptr);
}

TEST_F(Server, SweepTakesListedValues) {
  json body = {{"preset", "order-status"},
               {"vary", {{{"path", "client.retries"}, {"values", {3, 0}}}}}};
  json j = ok_json(post("/api/sweep", body));
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["values"]["client.retries"], 3.0);
  EXPECT_EQ(j["rows"][1]["metrics"]["goodput_recovery_s"], 19.0);
  for (json bad : {json::array(), json{"1"}, json{1, "x"}}) {
    body["vary"][0]["values"] = bad;
    expect_error(post("/api/sweep", body), 400, "values");
  }
}

TEST_F(Server, ExportEnvoyAnswersYaml) {
  json j = ok_json(post("/api/export/envoy", json{{"preset", "primary-failover"}}));
  ASSERT_TRUE(j["yaml"].is_string());
  std::string yaml = j["yaml"];
  EXPECT_NE(yaml.find("retry_policy"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("num_retries: 2"), std::string::npos) << yaml;
}

// A graph has one policy per call: "call" picks it, as export --call does.
TEST_F(Server, ExportOfAGraphTakesTheCall) {
  json j = ok_json(post("/api/export/envoy", json{{"preset", "three-tier-chain"}, {"call", 1}}));
  ASSERT_TRUE(j["yaml"].is_string());
  EXPECT_NE(j["yaml"].get<std::string>().find("retry_policy"), std::string::npos) << j["yaml"];
  expect_error(post("/api/export/envoy", json{{"preset", "three-tier-chain"}}), 400,
               "\"call\" field; 0 to 3");
  expect_error(post("/api/export/envoy", json{{"preset", "three-tier-chain"}, {"call", 9}}), 400,
               "call: 9 is not a call of the scenario; choose 0 to 3");
  expect_error(
      post("/api/export/envoy", json{{"preset", "three-tier-chain"}, {"call", 100000000000000LL}}),
      400, "call: 100000000000000 is not a call of the scenario; choose 0 to 3");
  // Beyond a long long: the same message with the range (it had none).
  expect_error(post("/api/export/envoy",
                    json{{"preset", "three-tier-chain"}, {"call", 18446744073709551615ULL}}),
               400, "call: 18446744073709551615 is not a call of the scenario; choose 0 to 3");
  expect_error(post("/api/export/envoy", json{{"preset", "three-tier-chain"}, {"call", "1"}}), 400,
               "call: must be the index of a call (an integer), got \"1\"; choose 0 to 3");
  expect_error(post("/api/export/envoy", json{{"preset", "primary-failover"}, {"call", 0}}), 400,
               "it has no services and calls");
}

// ------------------------------------------------------------------ errors

TEST_F(Server, MalformedJsonIs400) {
  expect_error(post("/api/run", std::string("{\"preset\": ")), 400, "JSON");
  expect_error(post("/api/ladder", std::string("not json")), 400, "JSON");
}

TEST_F(Server, UnknownTopLevelFieldIs400NamingIt) {
  expect_error(post("/api/run", json{{"presett", "order-status"}}), 400, "presett");
  expect_error(post("/api/run", json{{"preset", "order-status"}, {"grid_s", 1}}), 400, "grid_s");
}

TEST_F(Server, UnknownScenarioKeyIs400NamingIt) {
  expect_error(post("/api/run", json{{"set", {{"client.retriez", 1}}}}), 400, "client.retriez");
  expect_error(post("/api/run", json{{"scenario", {{"client", {{"retriez", 1}}}}}}), 400,
               "client.retriez");
}

TEST_F(Server, BadValuesAre400NamingTheKey) {
  expect_error(post("/api/run", json{{"set", {{"client.retries", "three"}}}}), 400,
               "client.retries");
  expect_error(post("/api/run", json{{"set", {{"demand.rate_per_s", -1}}}}), 400,
               "demand.rate_per_s");
  expect_error(post("/api/run", json{{"preset", "nope"}}), 400, "nope");
  expect_error(post("/api/run", json{{"preset", "order-status"}, {"scenario", json::object()}}),
               400, "preset");
  expect_error(post("/api/run", std::string("[1, 2]")), 400, "body");
}

TEST_F(Server, BodyOverTheLimitIs413) {
  std::string big = R"({"preset": "order-status", "pad": ")" + std::string(2 << 20, 'x') + "\"}";
  auto r = post("/api/run", big);
  ASSERT_TRUE(r) << "no answer to an oversized body";
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body.find("xxxx"), std::string::npos);
}

TEST_F(Server, HugeHorizonIs400) {
  expect_error(post("/api/run", json{{"set", {{"horizon_s", 1e6}}}}), 400, "horizon_s");
  expect_error(post("/api/run", json{{"set", {{"horizon_s", 1e7}, {"step_s", 0.01}}}}), 400,
               "horizon_s");
}

TEST_F(Server, SweepOverTheRunLimitIs400) {
  json body = {{"preset", "order-status"},
               {"vary",
                {{{"path", "incident.duration_s"}, {"from", 0}, {"to", 200}, {"step", 1}},
                 {{"path", "client.retries"}, {"from", 0}, {"to", 100}, {"step", 1}}}}};
  expect_error(post("/api/sweep", body), 400, "vary");
  expect_error(post("/api/sweep", json{{"preset", "order-status"}}), 400, "vary");
  // Each point is a run, held to /api/run's 200,000 steps (it ran the command
  // line's million).
  for (const json& axis : {json{{"path", "horizon_s"}, {"values", {1000000}}},
                           json{{"path", "step_s"}, {"values", {0.001}}}})
    expect_error(post("/api/sweep", json{{"preset", "order-status"}, {"vary", {axis}}}), 400,
                 "the limit is 200000");
}

// POST /api/risk: `retrystorm risk` in JSON; the map with vary; bad fields 400.
TEST_F(Server, RiskAnswersPerLoadAndAsAMap) {
  json random = {
      {"engine", "agent"},        {"demand.process", "poisson"}, {"server.service", "exponential"},
      {"server.queue_limit", 10}, {"incident.duration_s", 0},    {"horizon_s", 120}};
  json j = ok_json(
      post("/api/risk",
           json{{"preset", "order-status"}, {"set", random}, {"loads", {0.5, 1}}, {"runs", 3}}));
  ASSERT_EQ(j["levels"].size(), 2u);
  EXPECT_EQ(j["levels"][0]["tipped_within_horizon"]["n"], 3);
  EXPECT_TRUE(j["stuck_rule"]["text"].is_string());
  json m = ok_json(post("/api/risk", json{{"preset", "order-status"},
                                          {"set", random},
                                          {"loads", {1}},
                                          {"runs", 2},
                                          {"exact", false},
                                          {"vary", "client.retries=0,3"}}));
  EXPECT_EQ(m["knob"], "client.retries");
  EXPECT_EQ(m["rows"].size(), 2u);
  expect_error(post("/api/risk", json{{"preset", "order-status"}}), 400, "random");
  expect_error(post("/api/risk", json{{"preset", "order-status"}, {"set", random}, {"runs", -1}}),
               400, "runs");
  expect_error(post("/api/risk", json{{"preset", "order-status"}, {"set", random}, {"loads", "x"}}),
               400, "loads");
  expect_error(post("/api/risk", json{{"preset", "order-status"},
                                      {"set", random},
                                      {"runs", 100000},
                                      {"horizon_s", 100000}}),
               400, "risk");
  json split = ok_json(post("/api/risk", json{{"preset", "order-status"},
                                              {"set", random},
                                              {"runs", 2},
                                              {"exact", false},
                                              {"splitting", true},
                                              {"split_effort", 4},
                                              {"split_runs", 2},
                                              {"split_levels", 2}}));
  EXPECT_EQ(split["levels"][0]["splitting"]["effort"], 4);
  EXPECT_EQ(split["levels"][0]["splitting"]["levels"].size(), 2u);
  expect_error(post("/api/risk", json{{"preset", "order-status"},
                                      {"set", random},
                                      {"splitting", true},
                                      {"split_effort", 1.5}}),
               400, "split_effort");
  expect_error(post("/api/risk", json{{"preset", "order-status"},
                                      {"set", random},
                                      {"splitting", true},
                                      {"vary", "client.retries=0,3"}}),
               400, "not a map");
}

TEST_F(Server, StepDownAnswersTheLoop) {
  json random = {{"engine", "agent"},
                 {"demand.process", "poisson"},
                 {"demand.rate_per_s", 9.5},
                 {"server.capacity_per_s", 10},
                 {"server.service", "exponential"},
                 {"server.queue_limit", 99},
                 {"client.timeout_s", 3},
                 {"client.retries", 4},
                 {"client.backoff.base_s", 0.2}};
  json j = ok_json(post(
      "/api/step-down",
      json{{"preset", "order-status"}, {"set", random}, {"from", 0.1}, {"to", 1.2}, {"runs", 3}}));
  EXPECT_EQ(j["runs"].size(), 3u);
  EXPECT_EQ(j["loads"].size(), 23u);
  EXPECT_TRUE(j["series"]["backlog"].is_array());
  expect_error(post("/api/step-down", json{{"preset", "order-status"}, {"step", 0}}), 400, "step");
  expect_error(post("/api/step-down", json{{"preset", "order-status"}, {"runs", 0.5}}), 400,
               "runs");
  expect_error(post("/api/step-down", json{{"preset", "order-status"}, {"stairs", 3}}), 400,
               "stairs");
  // The server's limit on a run's steps holds for the staircase's run too
  // (it allowed the command line's million: answers of 70 MB), named by hold_s.
  expect_error(
      post("/api/step-down", json{{"preset", "order-status"}, {"hold_s", 47000}}), 400,
      "21 loads held 47000 s each (hold_s) make a run of 987000 s, 987000 steps; the limit is "
      "200000 steps");
}

TEST_F(Server, TippingGridTooFineIs400) {
  expect_error(post("/api/tipping", json{{"preset", "order-status"}, {"grid_s", 0.001}}), 400,
               "grid_s");
  expect_error(post("/api/tipping", json{{"preset", "order-status"}, {"grid_s", -1}}), 400,
               "grid_s: -1 is not a grid");
  // Beyond the key's range: "every length recovers" on a grid longer than any run.
  expect_error(post("/api/tipping", json{{"preset", "order-status"}, {"grid_s", 1e308}}), 400,
               "up to 10000000 (leave grid_s out");
  expect_error(post("/api/tipping", json{{"preset", "order-status"}, {"grid_s", 1000}}), 400,
               "no incident length would be tried");
}

// An error quotes the bad value, clipped: a megabyte of key name came back
// as a megabyte of error.
TEST_F(Server, AnErrorQuotesAHugeValueClipped) {
  const std::string key(300000, 'A');
  auto r = post("/api/run", json{{"set", {{key, 1}}}});
  expect_error(r, 400, "unknown key 'AAAA");
  ASSERT_TRUE(r);
  EXPECT_LT(r->body.size(), 2100u);
}

// Refused by the transport before any route: said in words, not "HTTP 400 ()".
TEST_F(Server, AnUnknownMethodAndALongUriAreNamed) {
  httplib::Request unknown;
  unknown.method = "FOO";
  unknown.path = "/api/run";
  expect_error(client().send(unknown), 400, "method FOO; GET and POST are served");
  expect_error(get("/api/" + std::string(60000, 'a')), 414, "the URI is longer");
}

TEST_F(Server, WrongMethodIs405) {
  auto r = get("/api/run");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = post("/api/presets", json::object());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET");
  r = post("/api/schema", json::object());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = client().Delete("/api/run");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = client().Put("/api/sweep", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

// The page's paths are read with GET (or HEAD): another method there is 405
// with Allow, as on the API's paths (TRACE / answered 404).
TEST_F(Server, WrongMethodOnThePageIs405) {
  for (const char* method : {"TRACE", "DELETE", "PUT", "POST", "OPTIONS"}) {
    std::string response = raw_request(server_port(), std::string(method) +
                                                          " / HTTP/1.1\r\nHost: localhost\r\n"
                                                          "Content-Length: 0\r\n"
                                                          "Connection: close\r\n\r\n");
    EXPECT_EQ(response.rfind("HTTP/1.1 405", 0), 0u) << method << ": " << response.substr(0, 80);
    EXPECT_NE(response.find("Allow: GET"), std::string::npos) << method;
  }
}

TEST_F(Server, UnknownPathIs404) {
  for (const char* p : {"/api/nope", "/api/run/extra", "/nope.txt", "/api"}) {
    auto r = get(p);
    ASSERT_TRUE(r) << p;
    if (std::string(p) == "/api") continue;  // a client-side route may show the page
    EXPECT_EQ(r->status, 404) << p;
  }
  auto r = post("/api/nope", json::object());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(Server, PathTraversalFindsNoFile) {
  const char* paths[] = {"/../../etc/passwd",
                         "/%2e%2e/%2e%2e/etc/passwd",
                         "/assets/../../CMakeLists.txt",
                         "/..%2f..%2fetc%2fpasswd",
                         "/%2e%2e%2f%2e%2e%2fCMakeLists.txt",
                         "/assets/%2e%2e/%2e%2e/CMakeLists.txt",
                         "/....//....//etc/passwd"};
  for (const char* p : paths) {
    std::string response = raw_request(server_port(), std::string("GET ") + p +
                                                          " HTTP/1.1\r\nHost: localhost\r\n"
                                                          "Connection: close\r\n\r\n");
    int status = status_of(response);
    EXPECT_GE(status, 400) << p << "\n" << response.substr(0, 300);
    EXPECT_LT(status, 500) << p;
    EXPECT_EQ(response.find("root:"), std::string::npos) << p;
    EXPECT_EQ(response.find("cmake_minimum_required"), std::string::npos) << p;
  }
  // A path without a dot may be a client-side route and get the page, but
  // never a file from the disk.
  for (const char* p :
       {"//etc/passwd", "/etc/passwd", "/%2fetc%2fpasswd", "/%252e%252e/%252e%252e/etc/passwd"}) {
    std::string response = raw_request(server_port(), std::string("GET ") + p +
                                                          " HTTP/1.1\r\nHost: localhost\r\n"
                                                          "Connection: close\r\n\r\n");
    EXPECT_NE(status_of(response), 0) << p;
    EXPECT_EQ(response.find("root:"), std::string::npos) << p;
  }
  // The same through the client library.
  for (const char* p : {"/../../etc/passwd", "/assets/../../CMakeLists.txt"}) {
    auto r = get(p);
    if (!r) continue;  // refusing to send is fine too
    EXPECT_GE(r->status, 400) << p;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << p;
    EXPECT_EQ(r->body.find("cmake_minimum_required"), std::string::npos) << p;
  }
}

TEST_F(Server, GarbageRequestsDoNotStopTheServer) {
  for (const char* request : {"\r\n\r\n", "GET\r\n\r\n", "BREW /api/run HTTP/1.1\r\n\r\n",
                              "POST /api/run HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
                              "POST /api/run HTTP/1.1\r\nContent-Length: -5\r\n\r\n{}",
                              "GET /api/presets HTTP/9.9\r\n\r\n"})
    raw_request(server_port(), request, true);
  // After all of the above (and the tests before), the server still answers.
  json j = ok_json(get("/api/presets"));
  EXPECT_TRUE(j["presets"].is_array());
  json run = ok_json(post("/api/run", json{{"preset", "order-status"}}));
  EXPECT_EQ(run["metrics"]["goodput_recovery_s"], nullptr);
}

// --------------------------------------------------------------- load test

TEST_F(Server, LoadThousandRunsFromFourClients) {
  const std::vector<std::string> presets = {"order-status", "primary-failover",
                                            "brief-outage", "partial-brownout",
                                            "load-surge",   "two-layer-stack"};
  constexpr int kClients = 4, kPerClient = 250;
  std::atomic<int> ok{0}, failed{0};
  std::atomic<size_t> bytes{0};
  std::vector<std::string> errors(kClients);
  auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client cli(kHost, server_port());
      cli.set_keep_alive(true);
      cli.set_read_timeout(60);
      for (int i = 0; i < kPerClient; ++i) {
        json body = {{"preset", presets[static_cast<size_t>(c + i) % presets.size()]}};
        if (i % 5 == 0) body["set"] = {{"client.retries", i % 4}};
        auto r = cli.Post("/api/run", body.dump(), "application/json");
        if (r && r->status == 200 && r->body.size() > 1000 && r->body.front() == '{' &&
            r->body.find("\"metrics\"") != std::string::npos) {
          ++ok;
          bytes += r->body.size();
        } else {
          ++failed;
          if (errors[c].empty())
            errors[c] = r ? std::to_string(r->status) + " " + r->body.substr(0, 200)
                          : "error " + httplib::to_string(r.error());
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(ok.load(), kClients * kPerClient);
  EXPECT_EQ(failed.load(), 0);
  for (const auto& e : errors) EXPECT_TRUE(e.empty()) << e;
  std::cout << "[ load     ] " << ok.load() << " POST /api/run from " << kClients << " clients in "
            << seconds << " s: " << (ok.load() / seconds) << " requests per second ("
            << bytes.load() / (1 << 20) << " MB of JSON)" << std::endl;
}

// ------------------------------------------------------ handle_api directly

TEST(HandleApi, RunsOneCallWithoutHttp) {
  ApiAnswer a =
      handle_api("/api/run", R"({"preset": "order-status", "set": {"client.retries": 0}})");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body["metrics"]["goodput_recovery_s"], 19.0);
  // An empty body is the default preset.
  a = handle_api("/api/run", "");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body["scenario"]["name"], "order-status");
  a = handle_api("/api/presets", "");
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.body["presets"].is_array());
}

TEST(HandleApi, ErrorsAre400WithAMessageNamingTheField) {
  struct Case {
    const char* path;
    std::string body;
    const char* needle;
  };
  const Case cases[] = {
      {"/api/run", "{bad", "JSON"},
      {"/api/run", R"({"set": 5})", "set"},
      {"/api/run", R"({"preset": 7})", "preset"},
      {"/api/run", R"({"set": {"client.layers": 0}})", "client.layers"},
      {"/api/run", R"({"set": {"client.retries": null}})", "client.retries"},
      {"/api/run", R"({"set": {"server.shed_abandoned": "yes"}})", "server.shed_abandoned"},
      {"/api/run", R"({"set": {"client.timeout_s": 2.5}})", "client.timeout_s"},
      {"/api/run", R"({"scenario": [1]})", "scenario"},
      {"/api/sweep", R"({"vary": [{"path": "client.retries", "from": 0, "to": "3"}]})", "to"},
      {"/api/sweep", R"({"vary": [{"path": "client.backoff.jitter", "from": 0, "to": 1}]})",
       "client.backoff.jitter"},
      {"/api/sweep", R"({"vary": [{"path": "client.retries", "from": 3, "to": 0}]})",
       "client.retries"},
      // A long bad value is clipped, so that what is allowed stays in the message.
      {"/api/run", R"({"set": {"client.backoff.jitter": ")" + std::string(2100, 'x') + R"("}})",
       "choose one of none"},
      {"/api/run", R"({"set": {"client.retries": ")" + std::string(2100, 'x') + R"("}})",
       "is not a number"},
      // A field left out is no default (the axis ran at 0, or from 0, unsaid).
      {"/api/sweep", R"({"vary": [{"path": "client.retries", "to": 2}]})", "from and to"},
      {"/api/sweep", R"({"vary": [{"path": "client.retries"}]})", "from and to"},
      {"/api/sweep", R"({"vary": [{"from": 1, "to": 2, "step": 1}]})", "vary[].path"},
      {"/api/sweep", R"({"vary": [{"path": "client.retries", "from": 0, "to": 3, "step": 0}]})",
       "step"},
      {"/api/sweep",
       R"({"vary": [{"path": "client.retries", "values": [1], "from": 1, "to": 3, "step": 1}]})",
       "give values, or from, to and step, not both"},
      {"/api/sweep", R"({"vary": [{"path": "client.retries", "values": [1]},
                                  {"path": "client.retries", "values": [2]}]})",
       "varied twice"},
      {"/api/import", R"({"files": [{"name": "a.yaml", "text": "x", "extra": 1}]})",
       "files[].extra: unknown field"},
      {"/api/import", R"({"files": [{"name": 1, "text": "x"}]})", "files[].name"},
      {"/api/run", R"({"set": {"client.timeout_s": 1e-10}})", "whole number of steps"},
      {"/api/run", R"({"scenario": {"foo": {}}})", "unknown key 'foo'"},
      {"/api/tipping", R"({"grid_s": "1"})", "grid_s"},
      {"/api/ladder", R"({"scenario": {"ladder": {"rows": [{"set": {"x.y": 1}}]}}})", "x.y"},
      {"/api/export/envoy", R"({"set": {"client.budget.kind": "leaky"}})", "client.budget.kind"},
  };
  for (const auto& c : cases) {
    ApiAnswer a = handle_api(c.path, c.body);
    EXPECT_EQ(a.status, 400) << c.path << " " << c.body;
    ASSERT_TRUE(a.body.contains("error")) << c.body;
    EXPECT_NE(a.body["error"].get<std::string>().find(c.needle), std::string::npos)
        << c.body << " -> " << a.body["error"];
  }
}

TEST(HandleApi, LimitsComeFromTheCaller) {
  ServerLimits tight;
  tight.max_steps = 100;
  tight.max_sweep_runs = 3;
  ApiAnswer a = handle_api("/api/run", R"({"preset": "order-status"})", tight);  // 300 steps
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body["error"].get<std::string>().find("horizon_s"), std::string::npos);
  a = handle_api("/api/run", R"({"preset": "order-status", "set": {"horizon_s": 100}})", tight);
  EXPECT_EQ(a.status, 200);
  a = handle_api(
      "/api/sweep",
      R"({"set": {"horizon_s": 100}, "vary": [{"path": "client.retries", "from": 0, "to": 3}]})",
      tight);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body["error"].get<std::string>().find("vary"), std::string::npos);
  a = handle_api(
      "/api/sweep",
      R"({"set": {"horizon_s": 100}, "vary": [{"path": "client.retries", "from": 0, "to": 2}]})",
      tight);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body["rows"].size(), 3u);
}

// The server caches tipping points across requests: each answer must still
// be the tipping point of its own scenario, in any order.
TEST(HandleApi, TippingInRunAnswersFollowTheirScenario) {
  struct Req {
    const char* preset;
    const char* path;
    double value;
  };
  const Req reqs[] = {{"order-status", "client.retries", 3},
                      {"order-status", "client.retries", 1},
                      {"order-status", "incident.capacity_factor", 0.2},
                      {"primary-failover", "client.retries", 2},
                      {"order-status", "client.retries", 3},
                      {"primary-failover", "client.retries", 1},
                      {"order-status", "incident.duration_s", 5}};
  for (const auto& r : reqs) {
    json body = {{"preset", r.preset}, {"set", {{r.path, r.value}}}};
    ApiAnswer a = handle_api("/api/run", body.dump());
    ASSERT_EQ(a.status, 200) << body;
    Scenario s = preset_or_throw(r.preset).scenario;
    set_key(s, r.path, r.value);
    EXPECT_EQ(a.body["tipping"], tipping_json(tipping_point(s))) << body;
  }
  // order-status as published: 12 s on its 1 s grid, whatever its own duration.
  ApiAnswer a = handle_api("/api/run", R"({"set": {"incident.duration_s": 5}})");
  EXPECT_EQ(a.body["tipping"]["on_grid_s"], 12.0);
}

TEST(HandleApi, SameRequestSameBytes) {
  const char* body = R"({"preset": "primary-failover", "set": {"client.budget.kind": "window"}})";
  EXPECT_EQ(handle_api("/api/run", body).body.dump(), handle_api("/api/run", body).body.dump());
}

// Regression (fixed): POST /api/run always computes the tipping point (make_report with
// tipping), on a grid of ten steps over the whole run: (horizon - start) /
// (10 steps) runs of the whole horizon, quadratic in the run length, and not
// bounded by ServerLimits::max_sweep_runs. A run of 20,000 steps (a tenth of
// the server's 200,000-step limit) where every incident length recovers takes
// about 30 s of CPU (about 2,000 runs); at the limit it is about 100 times
// that, so a handful of such requests occupy every server thread. Checked
// through the binary, which runs the same make_report, under a time limit.
TEST(ServerLimits, RunWithinTheStepLimitAnswersInBoundedTime) {
  std::string cmd = std::string("timeout 5 ") + RETRYSTORM_BIN +
                    " run --set horizon_s=20000 --set server.capacity_per_s=1000"
                    " --format json --no-trace > /dev/null 2>&1";
  auto started = std::chrono::steady_clock::now();
  int raw = std::system(cmd.c_str());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0) << "did not finish in 5 s (124 = killed by timeout); took "
                                 << seconds << " s";
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// Monte Carlo of the agent engine through /api/run: intervals and the goodput band.
TEST(HandleApi, AgentRunsGiveIntervalsAndABand) {
  ApiAnswer a = handle_api("/api/run", R"({"preset": "primary-failover", "trace": false,
      "set": {"engine": "agent", "runs": 3, "demand.process": "poisson"}})");
  ASSERT_EQ(a.status, 200) << a.body.dump();
  const auto& mc = a.body["montecarlo"];
  EXPECT_EQ(mc["runs"], 3);
  EXPECT_EQ(mc["band"]["goodput_mean"].size(), a.body["series"]["goodput"].size());
  auto failed = mc["metrics"]["failed_fraction"];
  EXPECT_LE(failed["low"].get<double>(), failed["high"].get<double>());
  a = handle_api("/api/run",
                 R"({"preset": "primary-failover", "set": {"engine": "agent", "runs": 500}})");
  EXPECT_EQ(a.status, 400);
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// The page's Monte Carlo in batches (POST /api/montecarlo): the single first
// run, then batches until every replication is done; the last summary is
// /api/run's Monte Carlo, byte for byte, and every batch's is the Monte Carlo
// of that many runs.
TEST(HandleApi, MonteCarloInBatchesEndsAtTheRunsMonteCarlo) {
  const json set = {{"engine", "agent"}, {"runs", 5}, {"horizon_s", 60}};
  json one = set;
  one["runs"] = 1;
  ApiAnswer first = handle_api(
      "/api/run",
      json{{"preset", "primary-failover"}, {"set", one}, {"trace", false}, {"advice", false}}
          .dump());
  ASSERT_EQ(first.status, 200) << first.body.dump();
  int done = 1, batches = 0;
  json last;
  while (done < 5) {
    ApiAnswer b =
        handle_api("/api/montecarlo",
                   json{{"preset", "primary-failover"}, {"set", set}, {"done", done}}.dump());
    ASSERT_EQ(b.status, 200) << b.body.dump();
    EXPECT_EQ(b.body["runs"], 5);
    ASSERT_GT(b.body["done"].get<int>(), done) << "every batch makes progress";
    done = b.body["done"].get<int>();
    EXPECT_EQ(b.body["montecarlo"]["runs"], done);
    json partial = set;
    partial["runs"] = done;
    ApiAnswer whole = handle_api(
        "/api/run",
        json{{"preset", "primary-failover"}, {"set", partial}, {"trace", false}, {"advice", false}}
            .dump());
    EXPECT_EQ(b.body["montecarlo"].dump(), whole.body["montecarlo"].dump()) << done << " runs";
    last = b.body;
    ++batches;
  }
  EXPECT_EQ(done, 5);
  EXPECT_LE(batches, 4);
}

TEST(HandleApi, MonteCarloInBatchesRefusesWhatHasNone) {
  struct Case {
    const char* body;
    const char* needle;
  };
  const Case cases[] = {
      {R"({"preset": "order-status", "set": {"runs": 5}})", "agent engine"},
      {R"({"preset": "order-status", "set": {"engine": "agent", "runs": 1}})", "runs of 2"},
      {R"({"preset": "order-status", "set": {"engine": "agent", "runs": 5}, "done": 6})", "done"},
      {R"({"preset": "order-status", "set": {"engine": "agent", "runs": 5}, "done": -1})", "done"},
      {R"({"preset": "order-status", "set": {"engine": "agent", "runs": 5}, "done": 1.5})", "done"},
      {R"({"preset": "order-status", "set": {"engine": "agent", "runs": 500}})", "runs"},
  };
  for (const auto& c : cases) {
    ApiAnswer a = handle_api("/api/montecarlo", c.body);
    EXPECT_EQ(a.status, 400) << c.body;
    EXPECT_NE(a.body.value("error", "").find(c.needle), std::string::npos) << a.body.dump();
  }
}

// The cache keeps the newest scenario whole and forgets the oldest first.
TEST(ReplicationCache, ForgetsTheLeastRecentlyUsedScenario) {
  Scenario a = preset_or_throw("order-status").scenario, b = a;
  b.seed = a.seed + 100;
  app::ReplicationCache alone;
  alone.keep(b, 0, {{}, std::vector<double>(6, 2.0)});
  const size_t key = alone.values() - 6;  // what b's key counts
  ASSERT_GT(key, 0u);
  app::ReplicationCache cache(key + 10);
  cache.keep(a, 0, {{}, std::vector<double>(6, 1.0)});
  cache.keep(b, 0, {{}, std::vector<double>(6, 2.0)});
  EXPECT_EQ(cache.values(), key + 6) << "a went when b came";
  cache.keep(b, 0, {{}, std::vector<double>(6, 2.0)});
  EXPECT_EQ(cache.values(), key + 6) << "a replication kept twice counts once";
  cache.keep(b, 1, {{}, std::vector<double>(6, 2.0)});
  EXPECT_EQ(cache.values(), key + 12) << "the newest scenario stays, however large";
}

// Words change no number: a scenario's name and description are not in its
// key (each POST /api/run with a new 1 MB description kept 1 MB for good),
// and the keys' bytes count against the limit, so it holds whatever they are.
TEST(ReplicationCache, KeysAreBoundedLikeTheNumbers) {
  Scenario a = preset_or_throw("order-status").scenario, b = a;
  b.name = "other", b.description = std::string(100'000, 'x');
  app::ReplicationCache cache(100'000);
  cache.keep(a, 0, {{}, std::vector<double>(6, 1.0)});
  EXPECT_EQ(cache.kept(b, 1), 1u) << "the same run under another name";
  for (int i = 0; i < 2000; ++i) {
    Scenario c = a;
    c.seed = a.seed + 1 + i;
    c.client.backoff.base_s = 1 + i * 1e-3;  // a new key each time
    cache.keep(c, 0, {{}, std::vector<double>(6, 1.0)});
    ASSERT_LE(cache.values(), 100'000u) << i;
  }
}

// A batch is priced by the replications this server has not kept, not by
// the caller's `done`: done = 48 of 50 with nothing kept runs all 50 (it was
// priced as 2 and ran 66 s where POST /api/run refuses the same 50).
TEST(ReplicationCache, ABatchIsPricedByWhatItWillRun) {
  Scenario s = preset_or_throw("partial-brownout").scenario;
  s.engine = Engine::agent;
  s.runs = 50;
  s.horizon_s = 3000;
  s.seed = 123;
  validate(s);
  app::ReplicationCache cache;
  EXPECT_THROW(app::montecarlo_batch(s, 48, 50, cache, {}), InputError);
  EXPECT_EQ(cache.kept(s, 50), 0u) << "refused before any run";
  cache.keep(s, 0, {{}, std::vector<double>(3, 1.0)});
  cache.keep(s, 1, {{}, std::vector<double>(3, 1.0)});
  cache.keep(s, 3, {{}, std::vector<double>(3, 1.0)});
  EXPECT_EQ(cache.kept(s, 50), 2u) << "from 0 without a gap";
  // The seeds of every replication, before the first batch: refused for
  // the 50 runs, not batch by batch for the runs so far.
  Scenario late = s;
  late.seed = kMaxSeed - 10;
  try {
    app::montecarlo_batch(late, 1, 50, cache, {});
    ADD_FAILURE() << "seeds past 2^53 - 1 were run";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("with 50 replications"), std::string::npos) << e.what();
  }
}

// The page's first batch (done = 1) comes beside POST /api/run, which runs
// replication 0: the batch runs 1 .. count - 1 first and takes 0 from the
// cache when the run kept it meanwhile, instead of running it a second time.
TEST(ReplicationCache, RunsTheReplicationsTheCallerHasLastAndOnlyIfStillMissing) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.engine = Engine::agent;
  s.runs = 4;
  validate(s);
  app::ReplicationCache scratch;
  const std::vector<Replication> whole = scratch.prefix(s, 4, {});
  auto same = [](const std::vector<Replication>& a, const std::vector<Replication>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].band != b[i].band || a[i].figures.size() != b[i].figures.size()) return false;
    return true;
  };
  // Nobody kept replication 0: the batch runs it too, last.
  app::ReplicationCache alone;
  EXPECT_TRUE(same(alone.prefix(s, 4, {}, 1), whole));
  // Replication 0 kept (marked, so that a second run of it would show).
  app::ReplicationCache shared;
  Replication marked = whole[0];
  marked.band.assign(marked.band.size(), -1.0);
  shared.keep(s, 0, marked);
  std::vector<Replication> got = shared.prefix(s, 4, {}, 1);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].band, marked.band) << "replication 0 came from the cache";
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(got[i].band, whole[i].band) << i;
}

// ------------------------------------------- answers that say the range

// Finding: a call beyond a long long was refused without the range that -1
// and 9 got. Every refusal of "call" now names the calls there are.
TEST(HandleApi, EveryRefusedCallGivesTheRange) {
  const std::string chain = R"({"preset": "three-tier-chain", "call": )";
  for (const char* call :
       {"-1", "4", "9", "9223372036854775807", "9223372036854775808", "18446744073709551615",
        "-9223372036854775808", "1.5", "\"1\"", "null", "[0]"}) {
    ApiAnswer a = handle_api("/api/export/envoy", chain + call + "}");
    EXPECT_EQ(a.status, 400) << call;
    const std::string error = a.body.value("error", "");
    EXPECT_NE(error.find("choose 0 to 3"), std::string::npos) << call << " -> " << error;
  }
  // Beyond a long long the value is quoted as given, not wrapped to -1.
  ApiAnswer huge = handle_api("/api/export/envoy", chain + "18446744073709551615}");
  EXPECT_EQ(huge.body.value("error", ""),
            "call: 18446744073709551615 is not a call of the scenario; choose 0 to 3");
  // A scenario without a graph has no calls: every value says so.
  for (const char* call : {"0", "18446744073709551615", "\"0\""}) {
    ApiAnswer a =
        handle_api("/api/export/envoy",
                   std::string(R"({"preset": "primary-failover", "call": )") + call + "}");
    EXPECT_EQ(a.status, 400) << call;
    EXPECT_NE(a.body.value("error", "").find("it has no services and calls"), std::string::npos)
        << call << " -> " << a.body.dump();
  }
  // Each call in range still exports.
  for (int call = 0; call <= 3; ++call)
    EXPECT_EQ(handle_api("/api/export/envoy", chain + std::to_string(call) + "}").status, 200)
        << call;
}

// Finding: "done": 1.5 was said to range to 1000000, while 100 was said to
// range to runs. Whatever is wrong with done, the message gives the
// scenario's runs as its upper end.
TEST(HandleApi, MonteCarloDoneIsCheckedAgainstTheScenariosRuns) {
  for (const char* done : {"1.5", "-1", "9", "100", "1000001", "1e300", "\"2\"", "null", "true"}) {
    ApiAnswer a =
        handle_api("/api/montecarlo",
                   std::string(R"({"set": {"engine": "agent", "runs": 8}, "done": )") + done + "}");
    EXPECT_EQ(a.status, 400) << done;
    const std::string error = a.body.value("error", "");
    EXPECT_NE(error.find("body.done: "), std::string::npos) << done << " -> " << error;
    EXPECT_NE(error.find("must be a whole number, 0 to runs (8)"), std::string::npos)
        << done << " -> " << error;
  }
  ApiAnswer a =
      handle_api("/api/montecarlo", R"({"set": {"engine": "agent", "runs": 8}, "done": 1.5})");
  EXPECT_EQ(a.body.value("error", ""), "body.done: 1.5 must be a whole number, 0 to runs (8)");
}

// ------------------------------------------------------------ Retry-After

// The body of a run the request deadline stops: far more work than 0.5 s.
constexpr const char* kRunPastTheDeadline =
    R"({"preset": "primary-failover", "set": {"engine": "agent", "horizon_s": 600,
        "demand.rate_per_s": 500, "runs": 50}})";

// Finding: every 503 of a route said Retry-After, the run deadline's too,
// though the same request stops at the same deadline again. Only an answer
// worth repeating asks for the repeat.
TEST(HandleApi, OnlyAnswersWorthRepeatingSayRetryAfter) {
  ServerLimits deadline;
  deadline.run_deadline_s = 0.5;
  http::RoutedAnswer stopped = http::answer_call("/api/run", kRunPastTheDeadline, deadline);
  EXPECT_EQ(stopped.answer.status, 503) << stopped.answer.body.dump();
  EXPECT_NE(stopped.answer.body.dump().find("stopped after 0.5 s"), std::string::npos);
  EXPECT_EQ(stopped.retry_after_s, 0) << "the same run meets the same deadline";
  // A client that has gone reads nothing, a Retry-After least of all.
  ServerLimits gone;
  gone.run_deadline_s = 0;
  gone.cancelled = [] { return true; };
  http::RoutedAnswer dropped = http::answer_call("/api/run", kRunPastTheDeadline, gone);
  EXPECT_EQ(dropped.answer.status, 503) << dropped.answer.body.dump();
  EXPECT_EQ(dropped.retry_after_s, 0);
  // Nor a refusal, nor an answer.
  EXPECT_EQ(http::answer_call("/api/run", "{bad", {}).retry_after_s, 0);
  EXPECT_EQ(http::answer_call("/api/presets", "", {}).retry_after_s, 0);
  // handle_api answers as before.
  EXPECT_EQ(handle_api("/api/run", kRunPastTheDeadline, deadline).status, 503);
}

// One POST's answer as far as Retry-After goes.
struct Seen503 {
  int status = 0;
  bool busy = false;
  bool has_retry_after = false;
  std::string retry_after, error;
};

Seen503 post_for_retry(int port, const std::string& path, const std::string& body) {
  httplib::Client c(kHost, port);
  c.set_connection_timeout(2);
  c.set_read_timeout(30);
  Seen503 seen;
  auto r = c.Post(path.c_str(), body, "application/json");
  if (!r) return seen;
  seen.status = r->status;
  seen.has_retry_after = r->has_header("Retry-After");
  seen.retry_after = r->get_header_value("Retry-After");
  json j = json::parse(r->body, nullptr, false);
  if (j.is_object()) {
    seen.busy = j.value("busy", false);
    seen.error = j.value("error", "");
  }
  return seen;
}

// Over HTTP, with one work slot held by runs the deadline stops while quick
// requests ask for it: the busy 503 says Retry-After: 2 (the slot comes
// free), the deadline's 503 says none (the run would stop again).
TEST(ServerRetryAfter, BusyHasItTheRunDeadlineHasNot) {
  static const ServerLimits limits = [] {
    ServerLimits l;
    l.max_work = 1;
    l.work_wait_s = 0.1;
    l.run_deadline_s = 0.5;
    return l;
  }();
  const int port = own_server(limits);
  ASSERT_NE(port, 0) << "the server did not start";
  std::atomic<bool> stop{false};
  std::vector<Seen503> held;  // the holder's answers, read after it is joined
  std::thread holder([&] {
    while (!stop) held.push_back(post_for_retry(port, "/api/run", kRunPastTheDeadline));
  });
  Seen503 busy;
  const auto started = std::chrono::steady_clock::now();
  while (!busy.busy && std::chrono::steady_clock::now() - started < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    busy = post_for_retry(port, "/api/run",
                          R"({"preset": "order-status", "trace": false, "advice": false})");
  }
  stop = true;
  holder.join();
  ASSERT_TRUE(busy.busy) << "no quick request found the slot taken in 20 s";
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.retry_after, "2");
  int deadlines = 0;
  for (const Seen503& s : held) {
    EXPECT_EQ(s.status, 503) << s.error;
    // A holder that found the slot taken by a quick request was busy itself.
    EXPECT_EQ(s.has_retry_after, s.busy) << s.error;
    deadlines += s.error.find("stopped after 0.5 s") != std::string::npos;
  }
  EXPECT_GT(deadlines, 0) << "no run met the deadline";
}

// ----------------------------------------------------------------- the docs

// Finding: the docs' table of expensive requests left out montecarlo, risk
// and step-down. It names exactly the routes that hold a work slot.
TEST(ServerDocs, TheExpensiveRequestsAreTheRoutesThatHoldAWorkSlot) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/docs/http-api.md");
  ASSERT_TRUE(in) << "docs/http-api.md";
  std::string line, row;
  while (std::getline(in, line))
    if (line.rfind("| expensive requests at once (", 0) == 0) row = line;
  ASSERT_FALSE(row.empty()) << "no row of expensive requests";
  // The names in backquotes up to "not", each "/api/NAME" or "NAME".
  std::string listed = row.substr(0, row.find("; not "));
  std::set<std::string> documented;
  size_t open = listed.find('`');
  while (open != std::string::npos) {
    const size_t close = listed.find('`', open + 1);
    if (close == std::string::npos) break;
    const std::string name = listed.substr(open + 1, close - open - 1);
    documented.insert(name.rfind("/api/", 0) == 0 ? name : "/api/" + name);
    open = listed.find('`', close + 1);
  }
  std::set<std::string> expensive;
  for (const http::Route& r : http::routes())
    if (r.expensive) expensive.insert(r.path);
  EXPECT_EQ(documented, expensive);
}

// The banner's address opens in a browser: an IPv6 literal in brackets.
TEST(ServerBanner, ThePagesAddressOpens) {
  EXPECT_EQ(page_url("127.0.0.1", 8080), "http://127.0.0.1:8080/");
  EXPECT_EQ(page_url("0.0.0.0", 8080), "http://127.0.0.1:8080/");
  EXPECT_EQ(page_url("localhost", 80), "http://localhost:80/");
  EXPECT_EQ(page_url("::1", 8080), "http://[::1]:8080/");
  EXPECT_EQ(page_url("::", 8080), "http://[::1]:8080/");
  EXPECT_EQ(page_url("fe80::1%eth0", 8080), "http://[fe80::1%25eth0]:8080/");
}

}  // namespace
}  // namespace retrystorm
