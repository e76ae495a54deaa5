// Hostile input, round three (docs/limits.md): a test per defect of the
// round, each failing before its fix. The server's own items (header flood,
// memory, slow clients, connection floods, slow readers) are in
// hostile_server_test.cpp; the Python ones in tests/python.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "analysis/cost.hpp"
#include "analysis/sweep.hpp"
#include "cli_run.hpp"
#include "engines/engine.hpp"
#include "engines/sessions/session_engine.hpp"
#include "formats/input_text.hpp"
#include "formats/scenario_io.hpp"
#include "free_port.hpp"
#if RETRYSTORM_WITH_LAB
#include "lab/lab.hpp"
#include "lab/process.hpp"
#endif
#include "model/keys.hpp"
#include "parallel/cancel.hpp"
#include "parallel/thread_pool.hpp"
#include "preset_scenario.hpp"
#include "server/server.hpp"
#include "systems/import.hpp"
#include "systems/prometheus/client.hpp"

namespace retrystorm {
namespace {

using nlohmann::json;
using testing::Outcome;
using testing::run_cli;
using testing::TempDir;
using testing::write_file;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void expect_refused(const Outcome& o, std::initializer_list<std::string> needles) {
  EXPECT_EQ(o.status, 2) << o.err;
  for (const auto& n : needles) EXPECT_NE(o.err.find(n), std::string::npos) << n << " in " << o.err;
  EXPECT_EQ(o.err.find("std::"), std::string::npos) << o.err;
}

// ------------------------------------------------ 1: every session run ends

TEST(HostileRound3, SessionStartsThatAreNotExactInBinaryEnd) {
  TempDir dir("session_start");
  for (const char* start : {"100.3", "60.3", "99.9"}) {
    auto t0 = Clock::now();
    Outcome o = run_cli(dir.path(), {"run", "--preset", "scheduler-429-outage", "--set",
                                     std::string("sessions.start_s=") + start, "--format", "json"});
    EXPECT_EQ(o.status, 0) << start << ": " << o.err;
    EXPECT_LT(seconds_since(t0), 25) << start;
  }
}

// The buckets' walk, over random origins, bucket widths and spans: it ends,
// and the time it spreads over the buckets is the span that falls inside.
TEST(HostileRound3, OccupancyWalkEndsForRandomOrigins) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 20000; ++i) {
    double origin = std::round(u(rng) * 4e6) / 10;  // tenths: rarely exact in binary
    double bucket = i % 2 ? 60 : 0.1 + std::round(u(rng) * 100) / 10;
    double to = origin + bucket * (1 + std::floor(u(rng) * 50));
    sessions::SessionBuckets b;
    b.resize(origin, to, bucket);
    double from = origin + (to - origin) * u(rng), until = from + (to - from) * u(rng);
    b.occupy(sessions::Occupancy::working, from, until);
    double total = 0;
    for (double v : b.occupancy[0]) total += v * bucket;
    ASSERT_NEAR(total, until - from, 1e-6 * std::max(1.0, to)) << origin << " " << bucket;
  }
}

TEST(HostileRound3, EverySessionRunEndsForRandomValidKeys) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  Scenario base = testing::preset("scheduler-429-outage");
  for (int i = 0; i < 12; ++i) {
    Scenario s = base;
    double start = std::round(u(rng) * 36000) / 10;
    set_key(s, "sessions.start_s", KeyValue{start});
    // the horizon a whole number of steps (step_s = 60), at least 10 min after the start
    set_key(s, "horizon_s",
            KeyValue{60 * (std::ceil((start + 600) / 60) + std::floor(u(rng) * 600))});
    set_key(s, "seed", KeyValue{static_cast<double>(i)});
    // The preset's focus (its second day) lies past most of these horizons,
    // which is refused: the headline's window is the whole run here.
    set_key(s, "sessions.focus_from_s", KeyValue{0.0});
    set_key(s, "sessions.focus_to_s", KeyValue{0.0});
    try {
      validate(s);
    } catch (const InputError& e) {
      FAIL() << e.what();
    }
    auto t0 = Clock::now();
    sessions::SessionRun run = sessions::run_sessions(s);
    EXPECT_LT(seconds_since(t0), 20) << "start " << start;
    EXPECT_GT(run.events, 0u);
  }
}

// Every run of the per-step engines ends, for random valid keys around
// every preset: a run that would not is stopped by a deadline and fails here
// instead of hanging the suite.
TEST(HostileRound3, EveryStepRunEndsForRandomValidKeys) {
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> u(0, 1);
  const std::vector<std::pair<const char*, std::pair<double, double>>> keys = {
      {"demand.rate_per_s", {1, 400}},      {"server.capacity_per_s", {1, 500}},
      {"client.timeout_s", {0.05, 10}},     {"client.retries", {0, 6}},
      {"incident.start_s", {0, 60}},        {"incident.duration_s", {0.1, 60}},
      {"incident.capacity_factor", {0, 1}}, {"client.backoff.base_s", {0, 2}},
      {"server.queue_limit", {0, 5000}},    {"horizon_s", {10, 300}}};
  int ran = 0;
  for (const auto& p : presets()) {
    if (!engine_facts(p.scenario).run) continue;
    for (int i = 0; i < 8; ++i) {
      Scenario s = p.scenario;
      if (i % 2) s.engine = Engine::agent;
      try {
        for (const auto& [key, range] : keys) {
          double v = range.first + (range.second - range.first) * u(rng);
          if (key_or_throw(key).type == KeyType::integer) v = std::round(v);
          if (std::string_view(key).ends_with("_s"))  // times are whole steps
            v = std::max(s.step_s, std::round(v / s.step_s) * s.step_s);
          set_key(s, key, KeyValue{v});
        }
        set_key(s, "horizon_s", KeyValue{std::ceil(s.horizon_s / s.step_s) * s.step_s});
        validate(s);
        if (run_cost(s).seconds > 5) continue;  // the cost check refuses such runs before work
      } catch (const InputError&) {
        continue;  // keys that break a rule between keys: refused, not run
      }
      auto until = Clock::now() + std::chrono::seconds(30);
      CancelCheck deadline = [until] { return Clock::now() > until; };
      CancelScope scope(deadline);
      EXPECT_NO_THROW(run_engine(s)) << p.name << " run " << i << " did not end in 30 s";
      ++ran;
    }
  }
  EXPECT_GT(ran, 20) << "too few random scenarios were valid";
}

// A request under a 0.2 s deadline whose runs would take far longer: 503
// with the reason, within seconds, and no check left on the calling thread.
void expect_stopped_by_the_deadline(const std::string& path, const std::string& body) {
  ServerLimits limits;
  limits.run_deadline_s = 0.2;
  auto t0 = Clock::now();
  ApiAnswer a = handle_api(path, body, limits);
  EXPECT_EQ(a.status, 503) << a.body.dump();
  EXPECT_NE(a.body.dump().find("stopped after 0.2 s"), std::string::npos) << a.body.dump();
  EXPECT_LT(seconds_since(t0), 5);
  // Without a scope nothing is polled: the same check outside a request stops nothing.
  EXPECT_EQ(CancelScope::current(), nullptr);
}

// No run holds a work slot past the server's deadline: its engine polls the
// request's check inside the run and the answer is 503 with the reason.
TEST(HostileRound3, ServerDeadlineStopsARunInsideIt) {
  expect_stopped_by_the_deadline("/api/run",
                                 R"({"preset": "primary-failover", "set": {"engine": "agent",
                                     "horizon_s": 600, "demand.rate_per_s": 500, "runs": 50}})");
}

// A Monte Carlo batch runs on a thread of its own at a lower priority
// (server/routes.cpp, at_lower_priority): the request's deadline goes with it.
TEST(HostileRound3, ServerDeadlineStopsAMonteCarloBatchOnItsOwnThread) {
  expect_stopped_by_the_deadline(
      "/api/montecarlo", R"({"preset": "primary-failover", "done": 0, "set": {"engine": "agent",
                             "horizon_s": 600, "demand.rate_per_s": 500, "runs": 50}})");
}

// The deadline reaches runs on the worker threads of a request too (here the
// Monte Carlo replications, whose pool has no stop check of its own).
TEST(HostileRound3, ServerDeadlineReachesWorkerThreads) {
  CancelCheck always = [] { return true; };
  CancelScope scope(always);
  std::atomic<int> stopped{0}, started{0};
  auto item = [&](size_t) {
    ++started;  // both items under way before either polls
    auto t0 = Clock::now();
    while (started < 2 && seconds_since(t0) < 5) std::this_thread::yield();
    try {
      for (;;) CancelScope::check();
    } catch (const Cancelled&) {
      ++stopped;
      throw;
    }
  };
  EXPECT_THROW(for_each_index(2, item, {2, {}, {}}), Cancelled);
  EXPECT_EQ(stopped.load(), 2) << "the worker thread polled no check";
}

// ------------------------------------------- 4: a sweep's axis is counted

TEST(HostileRound3, TinySweepStepsAreRefusedBeforeTheAxisIsListed) {
  TempDir dir("tiny_step");
  for (const char* step : {"1e-9", "1e-300"}) {
    auto t0 = Clock::now();
    Outcome o = run_cli(dir.path(), {"sweep", "--preset", "order-status", "--vary",
                                     std::string("incident.duration_s=1:2:") + step});
    expect_refused(o, {"incident.duration_s", "points"});
    EXPECT_LT(seconds_since(t0), 5) << step;
  }
  SweepAxis a{"incident.duration_s", 1, 2, 1e-300};
  EXPECT_GT(a.point_count(), 1e299);
  EXPECT_TRUE(std::isinf((SweepAxis{"x", -1e308, 1e308, 1}.point_count())));
  EXPECT_EQ((SweepAxis{"x", 1, 2, 0.5}.point_count()), 3);
}

// ------------------------------------------------ 5: YAML expansion in bytes

TEST(HostileRound3, YamlAliasesOfALongStringAreRefusedByTheirBytes) {
  std::string text = "name: &big \"" + std::string(3 << 20, 'x') + "\"\nlist: [";
  for (int i = 0; i < 1500; ++i) text += std::string(i ? ", " : "") + "*big";
  text += "]\n";
  auto t0 = Clock::now();
  try {
    parse_yaml_text(text, "bomb.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB of text"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 2);
  TempDir dir("yaml_bomb");
  write_file(dir.path() / "bomb.yaml", text);
  expect_refused(run_cli(dir.path(), {"run", "--scenario", "bomb.yaml"}), {"bomb.yaml", "MiB"});
}

// --------------------------------- 9, 10: Prometheus answers and deadlines

TEST(HostileRound3, PrometheusAnswersAboveFourMiBAreRead) {
  json values = json::array();
  for (int i = 0; i < 3601; ++i) values.push_back({1704067200 + i, std::to_string(i)});
  json result = json::array();
  for (int k = 0; k < 60; ++k)
    result.push_back({{"metric", {{"i", std::to_string(k)}}}, {"values", values}});
  std::string body =
      json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}}.dump();
  ASSERT_GT(body.size(), kMaxInputBytes);
  EXPECT_EQ(parse_query_answer(body, "q").size(), 60u);
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  try {
    parse_query_answer(deep, "q");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("200 levels"), std::string::npos) << e.what();
  }
}

// A server that accepts and then sends a byte every 300 ms: each read is in
// time, the whole request is not.
TEST(HostileRound3, PrometheusTricklingServerMeetsTheWholeRequestDeadline) {
  int port = testing::free_port();
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    int c = ::accept(listener, nullptr, nullptr);
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
    for (size_t i = 0; c >= 0 && !stop; ++i) {
      char b = i < head.size() ? head[i] : '[';
      if (::send(c, &b, 1, MSG_NOSIGNAL) <= 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    if (c >= 0) ::close(c);
  });
  PrometheusQuery q;
  q.url = "http://127.0.0.1:" + std::to_string(port);
  q.from_unix_s = 1704067200;
  q.to_unix_s = 1704067320;
  q.step_s = 1;
  q.http_timeout_s = 1.5;
  auto t0 = Clock::now();
  try {
    fetch_observed(q, builtin_mapping("envoy"));
    ADD_FAILURE() << "answered";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer within 1.5 s"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(t0), 4);
  stop = true;
  trickler.join();
  ::close(listener);
}

// ------------------------------------------------------------ 11, 17: merge

std::string shard_of(const TempDir& dir) {
  Outcome o =
      run_cli(dir.path(), {"sweep", "--preset", "order-status", "--vary",
                           "incident.duration_s=1:4:1", "--shard", "1/1", "--out", "shard.json"});
  EXPECT_EQ(o.status, 0) << o.err;
  std::ifstream in(dir.path() / "shard.json");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(HostileRound3, MergeRefusesWhatAShardNeverHolds) {
  TempDir dir("merge_hostile");
  json shard = json::parse(shard_of(dir));
  auto refused = [&](const std::string& text, std::initializer_list<std::string> needles) {
    write_file(dir.path() / "bad.json", text);
    expect_refused(run_cli(dir.path(), {"merge", "bad.json"}), needles);
  };
  refused(std::string(100000, '[') + std::string(100000, ']'), {"bad.json", "200 levels"});
  json half = shard;
  half["shard"]["index"] = 1.5;
  refused(half.dump(), {"shard.index", "1.5"});
  std::string twice = shard.dump();
  twice.insert(1, "\"format\": \"retrystorm-sweep-shard\", ");
  refused(twice, {"format", "twice"});
  json escape = shard;
  escape["csv_rows"][0] = escape["csv_rows"][0].get<std::string>() + "\n1,2,3\x1b[31m";
  refused(escape.dump(), {"control character"});
  json del = shard;  // the JSON writer escapes every control character but DEL
  del["rows"][0]["x"] = "a\x7f";
  refused(del.dump(), {"0x7F"});
  // A shard too large to merge in memory is refused from its size, unread.
  { std::ofstream big(dir.path() / "big.json"); }
  std::filesystem::resize_file(dir.path() / "big.json", 200u << 20);
  auto t0 = Clock::now();
  expect_refused(run_cli(dir.path(), {"merge", "big.json"}), {"GiB of memory", "--allow-large"});
  EXPECT_LT(seconds_since(t0), 5);
}

// ----------------------------------------------------- 7, 8: lab --config

#if RETRYSTORM_WITH_LAB  // the lab is a build option (RETRYSTORM_LAB)
TEST(HostileRound3, LabRunsOnlyTheRetrySettingsOfAHaproxyFile) {
  const std::string ok =
      "backend app\n  mode http\n  retries 2\n  retry-on conn-failure 503\n"
      "  timeout server 1s\n  server a app.internal:80 check inter 2s\n";
  configs::LabProxyConfig c = configs::lab_haproxy_config(ok, "h.cfg", "127.0.0.1:9");
  EXPECT_EQ(c.backend, "app");
  EXPECT_NE(c.text.find("server a 127.0.0.1:9 check inter 2s"), std::string::npos) << c.text;
  EXPECT_EQ(c.text.find("app.internal"), std::string::npos) << c.text;
  for (auto [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"global\n  lua-load /tmp/x.lua\nbackend app\n  server a 1.2.3.4:80\n", "h.cfg:1"},
           {"program p\n  command sleep 1000\nbackend app\n  server a 1.2.3.4:80\n", "h.cfg:1"},
           {"backend app\n  option external-check\n  server a 1.2.3.4:80\n", "h.cfg:2"},
           {"backend app\n  external-check command /bin/sh\n", "h.cfg:2"},
           {"backend app\n  http-request lua.run x\n", "h.cfg:2"},
           {"backend app\n  server a 1.2.3.4:80 agent-addr 10.0.0.1\n", "h.cfg:2"},
           {"listen x\n  bind 0.0.0.0:80\n", "h.cfg:1"}}) {
    try {
      configs::lab_haproxy_config(text, "h.cfg", "127.0.0.1:9");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  // A 30,000-character backend name: no regular expression recurses over it.
  std::string name(30000, 'b');
  EXPECT_EQ(
      configs::lab_haproxy_config("backend " + name + "\n  retries 1\n", "h.cfg", "x").backend,
      name);
}

TEST(HostileRound3, LabRunsOnlyTheRetrySettingsOfAnNginxFile) {
  const std::string ok =
      "upstream up { server 10.0.0.1:80 max_fails=0; }\n"
      "server { listen 0.0.0.0:80 default_server; location / { proxy_pass http://up; "
      "proxy_next_upstream error timeout; } }\n";
  configs::LabProxyConfig c = configs::lab_nginx_config(ok, "n.conf", "127.0.0.1:9", 4242);
  EXPECT_NE(c.text.find("listen 127.0.0.1:4242;"), std::string::npos) << c.text;
  EXPECT_EQ(c.text.find("0.0.0.0"), std::string::npos) << c.text;
  EXPECT_EQ(c.text.find("default_server"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("server 127.0.0.1:9 max_fails=0;"), std::string::npos) << c.text;
  for (const std::string text :
       {"access_log /etc/passwd;\nserver { location / { proxy_pass http://x; } }\n",
        "include /etc/shadow;\nserver { location / { proxy_pass http://x; } }\n",
        "server { location / { proxy_pass http://x; } }\nserver { location / { autoindex on; } }\n",
        "server { location / { root /; } }\n"}) {
    try {
      configs::lab_nginx_config(text, "n.conf", "127.0.0.1:9", 1);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("n.conf:"), std::string::npos) << e.what();
    }
  }
  // Through the command, refused before any process starts.
  TempDir dir("lab_config");
  write_file(dir.path() / "evil.cfg",
             "program p\n  command sleep 1000\nbackend app\n  retries 1\n");
  auto t0 = Clock::now();
  expect_refused(run_cli(dir.path(), {"lab", "--through", "haproxy", "--config", "evil.cfg",
                                      "--preset", "primary-failover", "--scale", "0.1"}),
                 {"evil.cfg:1", "program"});
  EXPECT_LT(seconds_since(t0), 5);
}

// ----------------------------------------------- 14, 15, 17, 19: the lab

TEST(HostileRound3, LabRefusesScenariosOverTheOpenFileLimit) {
  TempDir dir("lab_nofile");
  std::string cmd = "cd " + testing::shell_quote(dir.path().string()) +
                    " && ulimit -n 150 && timeout 20 " RETRYSTORM_BIN
                    " lab --preset order-status > .out 2> .err; echo $? > .status";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream status(dir.path() / ".status"), err(dir.path() / ".err");
  std::string e((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  int code = -1;
  status >> code;
  EXPECT_EQ(code, 2) << e;
  EXPECT_NE(e.find("open files"), std::string::npos) << e;
}

TEST(HostileRound3, LabFlagsAreCheckedBeforeTheRun) {
  TempDir dir("lab_flags");
  for (const char* seed : {"-1", "1e300"})
    expect_refused(run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--seed", seed}),
                   {"seed"});
  auto t0 = Clock::now();
  expect_refused(
      run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--out", "no-such-dir/lab.json"}),
      {"--out", "no-such-dir"});
  EXPECT_LT(seconds_since(t0), 5) << "refused only after the run";
}

TEST(HostileRound3, HangupAndQuitEndTheLabLikeCtrlC) {
  for (int sig : {SIGHUP, SIGQUIT, SIGINT, SIGTERM}) {
    lab::InterruptGuard guard;
    EXPECT_FALSE(lab::interrupted());
    ::raise(sig);
    EXPECT_TRUE(lab::interrupted()) << sig;
  }
}

TEST(HostileRound3, StaleLabDirectoriesOfDeadLabsAreRemoved) {
  namespace fs = std::filesystem;
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  fs::path stale = fs::temp_directory_path() / "retrystorm-lab-stale-test";
  fs::path alive = fs::temp_directory_path() / "retrystorm-lab-alive-test";
  fs::create_directories(stale);
  fs::create_directories(alive);
  std::ofstream(stale / "owner.pid") << dead << "\n";
  std::ofstream(alive / "owner.pid") << ::getpid() << "\n";
  lab::remove_stale_work_dirs();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));
  fs::remove_all(alive);
}

// ---------------------------------------------- 17, 18, 19: the command line

#endif

TEST(HostileRound3, SilentlyAcceptedInputsAreRefused) {
  TempDir dir("silent");
  write_file(dir.path() / "two.yaml", "name: one\n---\nname: two\n");
  expect_refused(run_cli(dir.path(), {"run", "--scenario", "two.yaml"}),
                 {"two.yaml:2", "second YAML document"});
  write_file(dir.path() / "one.yaml", "---\nname: one\n");
  EXPECT_EQ(run_cli(dir.path(), {"run", "--scenario", "one.yaml"}).status, 0);
  Outcome logs = run_cli(dir.path(), {"run", "--preset", "scheduler-429-outage", "--log", "logs"});
  ASSERT_EQ(logs.status, 0) << logs.err;
  std::ifstream in(dir.path() / "logs" / "sessions.csv");
  std::string header, rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  header = rest.substr(0, rest.find('\n'));
  std::string first = header.substr(0, header.find(','));
  write_file(dir.path() / "dup.csv", header + "," + first + rest.substr(rest.find('\n')));
  expect_refused(run_cli(dir.path(), {"analyze", "dup.csv"}), {"dup.csv", "appears twice"});
}

TEST(HostileRound3, ScenarioNamesReachTheTerminalWithoutControls) {
  TempDir dir("escapes");
  write_file(dir.path() / "esc.yaml", "name: \"evil\\e[2J\\e]0;title\\a\"\n");
  Outcome o = run_cli(dir.path(), {"run", "--scenario", "esc.yaml"});
  EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(o.out.find('\a'), std::string::npos);
  EXPECT_NE(o.out.find("evil"), std::string::npos);
}

TEST(HostileRound3, LostOutputIsAFailure) {
  TempDir dir("full");
  std::string cmd = "cd " + testing::shell_quote(dir.path().string()) +
                    " && " RETRYSTORM_BIN " presets > /dev/full 2> .err; echo $? > .status";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream status(dir.path() / ".status"), err(dir.path() / ".err");
  std::string e((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  int code = 0;
  status >> code;
  EXPECT_NE(code, 0);
  EXPECT_NE(e.find("cannot write the output"), std::string::npos) << e;
  cmd = "cd " + testing::shell_quote(dir.path().string()) +
        " && " RETRYSTORM_BIN " presets >&- 2> .err; echo $? > .status";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream status2(dir.path() / ".status");
  status2 >> code;
  EXPECT_NE(code, 0);
}

// A gRPC service config naming 80,000 methods imports in linear time: eight
// times the names take about eight times as long (quadratic work would take
// 64 times). Each import runs in a fresh `retrystorm import` process, because
// inside one long test process the allocator's state after earlier imports
// (glibc's consolidation of freed yaml-cpp nodes) made the ratio swing from 8
// to 25 with no change in the code. Timed against 10,000 names in the same
// minute, the better of two tries each, so that a busy machine does not fail
// it; bounded as a whole so that it never hangs.
TEST(HostileRound3, GrpcImportOfManyMethodNamesIsQuick) {
  auto config = [](int n) {
    json names = json::array();
    for (int i = 0; i < n; ++i) names.push_back({{"service", "s" + std::to_string(i)}});
    json cfg = {{"methodConfig",
                 {{{"name", names},
                   {"retryPolicy",
                    {{"maxAttempts", 3},
                     {"initialBackoff", "0.1s"},
                     {"maxBackoff", "1s"},
                     {"backoffMultiplier", 2},
                     {"retryableStatusCodes", {"UNAVAILABLE"}}}}}}}};
    return cfg.dump();
  };
  TempDir dir("many_methods");
  write_file(dir.path() / "small.json", config(10000));
  write_file(dir.path() / "large.json", config(80000));
  auto seconds = [&](const char* file) {
    double best = 1e9;
    for (int round = 0; round < 2; ++round) {
      auto t0 = Clock::now();
      Outcome o = run_cli(dir.path(), {"import", file});
      best = std::min(best, seconds_since(t0));
      EXPECT_EQ(o.status, 0) << o.err;
    }
    return best;
  };
  double a = seconds("small.json");
  double b = seconds("large.json");
  EXPECT_LT(b, 20 * a) << "80,000 method names took " << b << " s, 10,000 took " << a << " s";
  EXPECT_LT(b, 20) << "80,000 method names";
}

}  // namespace
}  // namespace retrystorm
