// `retrystorm lab` (docs/lab.md). The fast cases (label unit) check the
// options, the refusals and the scaling. The real runs start the backend,
// HAProxy or nginx and the load generator on 127.0.0.1 for ~20 s each; they
// run under the `lab` label (RETRYSTORM_LAB=1, set by tests/CMakeLists.txt)
// and are skipped elsewhere.
#include "lab/lab.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "engines/series.hpp"
#include "formats/scenario_io.hpp"
#include "lab/backend.hpp"
#include "lab/lab_parts.hpp"
#include "lab/lab_report.hpp"
#include "lab/proxy.hpp"
#include "model/graph.hpp"

namespace {

using nlohmann::json;
using retrystorm::testing::run_cli;
using retrystorm::testing::TempDir;

// A short primary-failover: 3 s calm, a 6 s outage, 9 s after; rates and
// capacity x0.1 (60 requests/s against 100/s). Long enough for the backlog
// to collapse or drain, short enough for a test.
const std::vector<std::string> kShort = {
    "--preset", "primary-failover",      "--scale",  "0.1",
    "--set",    "horizon_s=18",          "--set",    "incident.start_s=3",
    "--set",    "incident.duration_s=6", "--format", "json"};

std::vector<std::string> lab_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"lab"};
  a.insert(a.end(), kShort.begin(), kShort.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

bool real_runs() {
  const char* v = std::getenv("RETRYSTORM_LAB");
  return v && std::string(v) == "1";
}

bool process_gone(int pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

// A machine that could not keep time makes the comparison void: say so, once,
// instead of a list of disagreements that would look like the model's. The
// lab's own judgement (time_keeping), on the figures its report gives.
bool kept_time(const json& j) {
  const json& l = j["lab"];
  auto k = retrystorm::lab::time_keeping(l["timing_error"]["generator"]["p99_s"].get<double>(),
                                         l["timing_error"]["backend"]["p99_s"].get<double>(),
                                         l["time_keeping"]["worst_lateness_s"].get<double>(),
                                         l["time_keeping"]["worst_lateness_limit_s"].get<double>());
  if (k.kept) return true;
  ADD_FAILURE() << k.why << ", so the comparison says nothing about the model";
  return false;
}

// The report's shape, every process stopped, and measured vs predicted
// within the tolerances of docs/lab.md.
// `fluid_runs`: false where the fluid engine refuses the scenario (the
// client's breaker or throttle), whose column is then null.
json run_and_check(const std::string& name, const std::vector<std::string>& extra, bool recovers,
                   bool fluid_runs = true) {
  TempDir dir(name);
  auto o = run_cli(dir.path(), lab_args(extra));
  EXPECT_EQ(o.status, 0) << o.err;
  json j = json::parse(o.out);
  for (const char* block : {"measured", "predicted"}) {
    EXPECT_TRUE(j[block].contains("metrics")) << block;
    EXPECT_TRUE(j[block]["metrics"].contains("failed_fraction"));
    EXPECT_TRUE(j[block]["metrics"].contains("peak_amplification"));
    EXPECT_EQ(j[block]["series"]["goodput"].size(), 36u);  // 18 s in 0.5 s bins
  }
  if (fluid_runs) {
    EXPECT_TRUE(j["predicted_fluid"]["metrics"].contains("failed_fraction"));
  } else {
    EXPECT_TRUE(j["predicted_fluid"].is_null());
  }
  if (!kept_time(j)) return j;
  for (const auto& pid : j["lab"]["pids"]) EXPECT_TRUE(process_gone(pid.get<int>())) << pid;
  const auto &m = j["measured"]["metrics"], &p = j["predicted"]["metrics"];
  EXPECT_EQ(m["recovered"], recovers);
  EXPECT_EQ(p["recovered"], recovers);
  EXPECT_NEAR(m["failed_fraction"].get<double>(), p["failed_fraction"].get<double>(), 0.05);
  EXPECT_NEAR(m["peak_amplification"].get<double>(), p["peak_amplification"].get<double>(),
              0.25 * p["peak_amplification"].get<double>());
  EXPECT_TRUE(j["agreement"]["verdict"]);
  EXPECT_TRUE(j["agreement"]["recovery"]);
  // The delays between caller and backend, measured and handed to the model.
  EXPECT_LT(std::abs(j["lab"]["give_up_gap_s"].get<double>()), 0.05);
  EXPECT_GT(j["lab"]["answer_way_back_s"].get<double>(), 0);
  EXPECT_LT(j["lab"]["answer_way_back_s"].get<double>(), 0.05);
  EXPECT_GE(j["lab"]["predicted_with"]["server.answer_delay_s"].get<double>(), 0);
  EXPECT_GE(j["lab"]["predicted_with"]["server.shed_lag_s"].get<double>(), 0);
  EXPECT_NEAR(m["user_requests"].get<double>(), p["user_requests"].get<double>(), 2);
  return j;
}

}  // namespace

// --- fast: options, refusals, scaling (label unit) ---------------------------

namespace {

// order-status's recovery criterion on a small run: 80 requests/s in 0.5 s
// bins (90% of demand is 36 a bin), the incident ending at 2 s (bin 4).
retrystorm::RunResult goodput_run(const std::vector<double>& goodput) {
  retrystorm::RunResult r;
  auto& s = r.scenario;
  s.demand.rate_per_s = 80;
  s.step_s = 0.5;
  s.horizon_s = 0.5 * static_cast<double>(goodput.size());
  s.incident.start_s = 1;
  s.incident.duration_s = 1;
  s.recovery.criterion = retrystorm::RecoveryCriterion::goodput;
  s.recovery.goodput_fraction = 0.9;
  r.series.resize(goodput.size());
  for (size_t i = 0; i < goodput.size(); ++i) r.series.goodput[i] = goodput[i];
  return r;
}

}  // namespace

// A stall of the machine moves a bin's completions into the next bin; the
// measured recovery leaves that bin out, and only that bin (docs/lab.md,
// "Stalls of the machine").
TEST(LabStalls, ADisturbedBinDoesNotCountAsNotRecovered) {
  using retrystorm::lab::goodput_recovery_between_stalls;
  auto run = goodput_run({0, 0, 0, 0, 40, 40, 30, 50, 40, 40});
  std::vector<bool> none(10, false), bin6(10, false), bin4(10, false);
  bin6[6] = bin4[4] = true;
  // Without stalls it is exactly run's definition.
  EXPECT_EQ(goodput_recovery_between_stalls(run, none),
            retrystorm::compute_metrics(run).goodput_recovery_s);
  EXPECT_EQ(goodput_recovery_between_stalls(run, none), 1.5);
  EXPECT_EQ(goodput_recovery_between_stalls(run, bin6), 0.0);
  // A short bin the machine did not disturb still counts.
  EXPECT_EQ(goodput_recovery_between_stalls(run, bin4), 1.5);
  // Nor does a disturbed bin start a recovery.
  auto late = goodput_run({0, 0, 0, 0, 20, 40, 40, 40, 40, 40});
  EXPECT_EQ(goodput_recovery_between_stalls(late, bin4), 0.5);
  auto stuck = goodput_run({0, 0, 0, 0, 40, 40, 30, 30, 30, 30});
  EXPECT_EQ(goodput_recovery_between_stalls(stuck, bin6), std::nullopt);
}

TEST(LabStalls, MarksEveryBinFromWhereATimerWasDueToWhereItFired) {
  retrystorm::lab::BinLateness late(8, 0.5);
  late.add(1.2, 1.21);  // 10 ms: within kStallBinFraction of a bin (25 ms)
  late.add(2.4, 2.6);   // a 200 ms stall across the bins of 2 s and 2.5 s
  auto d = retrystorm::lab::disturbed_bins(late.max_s(), std::vector<double>(8, 0.0), 0.5);
  EXPECT_EQ(d, (std::vector<bool>{false, false, false, false, true, true, false, false}));
}

namespace {

// A lab result over recorded bins: goodput_run's scenario measured and
// predicted, the prediction recovering at once.
retrystorm::lab::LabResult recorded_result(const std::vector<double>& measured_goodput) {
  retrystorm::lab::LabResult r;
  auto measured = goodput_run(measured_goodput);
  auto predicted = goodput_run(std::vector<double>(measured_goodput.size(), 40));
  r.scaled = measured.scenario;
  r.bin_s = 0.5;
  r.worst_lateness_limit_s = retrystorm::lab::worst_lateness_allowed_s(r.scaled, r.bin_s);
  r.measured = retrystorm::lab::view(std::move(measured));
  r.predicted = retrystorm::lab::view(std::move(predicted));
  r.fluid_ran = false;
  return r;
}

}  // namespace

// Interrupted at 1.2 s, before the incident ended at 2 s: what was measured
// stays, no verdict, recovery or agreement is made of it.
TEST(LabJudgement, AnInterruptedRunIsNotJudged) {
  auto run = goodput_run({40, 40, 40, 0, 0, 0, 0, 0, 0, 0});
  retrystorm::lab::keep_until_interrupt(run, 1.2, 0.5);
  EXPECT_EQ(run.series.size(), 3u);
  EXPECT_EQ(run.series.goodput[2], 40);
  auto r = recorded_result({40, 40, 40, 0, 0, 0, 0, 0, 0, 0});
  r.measured = retrystorm::lab::view(std::move(run));
  r.interrupted = true;
  r.interrupted_at_s = 1.2;
  EXPECT_EQ(retrystorm::lab::not_judged_why(r), "the run was interrupted at 1.2 s");
  json j = retrystorm::lab::lab_json(r);
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_EQ(j["judged"], false);
  EXPECT_EQ(j["agreement"]["judged"], false);
  for (const char* k : {"verdict", "failed_share", "recovery"})
    EXPECT_TRUE(j["agreement"][k].is_null()) << k;
  EXPECT_TRUE(j["measured"]["verdict"]["recovered"].is_null());
  EXPECT_TRUE(j["measured"]["metrics"]["recovered"].is_null());
  EXPECT_EQ(j["measured"]["series"]["goodput"].size(), 3u);
  EXPECT_EQ(j["predicted"]["series"]["goodput"].size(), 10u);
  std::string text = retrystorm::lab::lab_text(r);
  EXPECT_NE(text.find("INTERRUPTED"), std::string::npos) << text;
  EXPECT_NE(text.find("not judged, because the run was interrupted at 1.2 s"), std::string::npos)
      << text;
  // The prediction keeps its verdict; the measurement has none.
  EXPECT_EQ(text.find("measured: Absorbed"), std::string::npos) << text;
  EXPECT_NE(text.find("measured: not judged"), std::string::npos) << text;
  EXPECT_EQ(text.find("agreement (docs/lab.md): verdict"), std::string::npos) << text;
  // The CSV keeps every predicted bin; the measured cells end at the interrupt.
  std::string csv = retrystorm::lab::lab_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 11);
}

// The bound on the worst lateness: a quarter of the shortest timeout or a
// bin, whichever is less; beyond it, or a p99 above 50 ms, the machine did
// not keep time.
TEST(LabJudgement, ALateTimerMeansTheMachineDidNotKeepTime) {
  using retrystorm::lab::time_keeping;
  retrystorm::Scenario s;
  s.client.timeout_s = 1;
  EXPECT_DOUBLE_EQ(retrystorm::lab::worst_lateness_allowed_s(s, 0.5), 0.25);
  s.client.timeout_s = 5;
  EXPECT_DOUBLE_EQ(retrystorm::lab::worst_lateness_allowed_s(s, 0.5), 0.5);
  EXPECT_TRUE(time_keeping(0.0005, 0.0008, 0.006, 0.25).kept);
  EXPECT_FALSE(time_keeping(0.0005, 0.0008, 1.0, 0.25).kept);  // kill -STOP for 1 s
  EXPECT_FALSE(time_keeping(0.06, 0.0008, 0.07, 0.25).kept);
  EXPECT_NE(time_keeping(0.0005, 0.0008, 1.0, 0.25).why.find("could not keep time"),
            std::string::npos);

  // A 1 s stall after the incident: the measured recovery is kept, the
  // comparison is void.
  auto r = recorded_result({0, 0, 0, 0, 40, 0, 0, 40, 40, 40});
  r.backend_error = {0.0001, 0.0008, 1.0, 100};
  r.worst_lateness_s = 1.0;
  json j = retrystorm::lab::lab_json(r);
  EXPECT_EQ(j["kept_time"], false);
  EXPECT_EQ(j["judged"], false);
  EXPECT_EQ(j["lab"]["time_keeping"]["kept"], false);
  EXPECT_TRUE(j["agreement"]["recovery"].is_null());
  EXPECT_EQ(j["agreement"]["kept_time"], false);
  EXPECT_FALSE(j["measured"]["verdict"]["recovered"].is_null());
  std::string text = retrystorm::lab::lab_text(r);
  EXPECT_NE(text.find("could not keep time"), std::string::npos) << text;
  EXPECT_NE(text.find("agreement (docs/lab.md): not judged"), std::string::npos) << text;
  // The same run on a machine that kept time is judged.
  r.worst_lateness_s = 0.004;
  r.backend_error.max_s = 0.004;
  EXPECT_EQ(retrystorm::lab::lab_json(r)["judged"], true);
  EXPECT_FALSE(retrystorm::lab::lab_json(r)["agreement"]["recovery"].is_null());
}

// nginx refuses a directive's value: the message names the user's file and
// the line with the same words, and quotes nginx.
TEST(LabProxy, ARefusedConfigNamesTheUsersLine) {
  std::string user =
      "upstream app {\n    server 10.0.0.1:8080;\n}\nserver {\n  listen 80;\n  location / {\n"
      "    proxy_pass http://app;  # the app\n    proxy_buffering maybe;\n  }\n}\n";
  std::string generated =
      "worker_processes 1;\nhttp {\nupstream app {\n    server 127.0.0.1:1;\n}\nserver {\n"
      "    listen 127.0.0.1:9;\n    location / {\n        proxy_pass http://app;\n"
      "        proxy_buffering maybe;\n    }\n}\n}\n";
  std::string log =
      "nginx: [emerg] invalid value \"maybe\" in /tmp/retrystorm-lab-x/nginx.conf:10\n";
  std::string m = retrystorm::lab::proxy_refusal("nginx", log, generated, "my.conf", user);
  EXPECT_NE(m.find("--config my.conf"), std::string::npos) << m;
  EXPECT_NE(m.find("[emerg] invalid value \"maybe\""), std::string::npos) << m;
  EXPECT_NE(m.find("my.conf:8: proxy_buffering maybe;"), std::string::npos) << m;
  // A line the lab rewrote (the server's address): the generated line's text.
  log = "nginx: [emerg] host not found in upstream in /tmp/x/nginx.conf:4\n";
  m = retrystorm::lab::proxy_refusal("nginx", log, generated, "my.conf", user);
  EXPECT_NE(m.find("line 4 of the file the lab generated from it: server 127.0.0.1:1;"),
            std::string::npos)
      << m;
  // HAProxy's parser; and a log without a refusal (a taken port is retried).
  m = retrystorm::lab::proxy_refusal(
      "haproxy",
      "[NOTICE]   (1) : haproxy version is 2.6.12\n"
      "[ALERT]    (1) : config : parsing [/tmp/x/haproxy.cfg:3] : unexpected character 'x' in "
      "'timeout server'\n",
      "global\nbackend b\n    timeout server 1x\n", "h.cfg", "backend b\n  timeout server 1x\n");
  EXPECT_NE(m.find("h.cfg:2: timeout server 1x"), std::string::npos) << m;
  EXPECT_EQ(retrystorm::lab::proxy_refusal("nginx", "2024/01/01 [notice] 1#0: start\n", generated,
                                           "my.conf", user),
            "");
}

TEST(LabCommand, IsListedInHelpAndItsBackendIsNot) {
  TempDir dir("lab_help");
  auto o = run_cli(dir.path(), {"--help"});
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("lab"), std::string::npos);
  EXPECT_EQ(o.out.find("lab-backend"), std::string::npos);
  auto h = run_cli(dir.path(), {"lab", "--help"});
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--through"), std::string::npos);
  EXPECT_NE(h.out.find("--scale"), std::string::npos);
}

// `retrystorm lab` runs in retrystorm-lab (docs/lab.md): the other commands
// start without grpc++'s libraries, and the lab's answers and exit statuses
// come through unchanged (the refusals below, and the lab runs, go that way).
TEST(LabCommand, RunsInItsOwnProgramSoTheOthersLoadNoGrpc) {
  TempDir dir("lab_program");
  std::string ldd = "ldd " + std::string(RETRYSTORM_BIN) + " > " + (dir.path() / "ldd").string();
  ASSERT_EQ(std::system(ldd.c_str()), 0);
  std::string libraries = retrystorm::testing::read_all(dir.path() / "ldd");
  EXPECT_NE(libraries.find("libstdc++"), std::string::npos) << libraries;
  EXPECT_EQ(libraries.find("libgrpc"), std::string::npos) << libraries;
  auto v = run_cli(dir.path(), {"lab-backend", "--help"});  // hidden, but there
  EXPECT_EQ(v.status, 0);
  EXPECT_NE(v.out.find("--capacity"), std::string::npos);
}

TEST(LabCommand, RefusesAnUnknownLayer) {
  TempDir dir("lab_bad_through");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--through", "envoy"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--through: 'envoy' is not one of direct, haproxy, nginx, grpc"),
            std::string::npos)
      << o.err;
}

// gRPC's own validator (grpc::experimental::ValidateServiceConfigJSON) runs
// on --config before anything starts: C-core 1.51 refuses maxAttempts 1
// (retry_service_config.cc, "should be at least 2").
TEST(LabCommand, RefusesAServiceConfigThatGrpcRefuses) {
  TempDir dir("lab_grpc_bad_config");
  retrystorm::testing::write_file(
      dir.path() / "sc.json",
      R"({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 1,
          "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--scale", "0.1",
                                "--through", "grpc", "--config", "sc.json"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--through grpc: the service config is refused by gRPC"), std::string::npos)
      << o.err;
}

// A layer with no timeout at all waits as long as the backend takes, which
// the prediction does not follow: refused before anything starts (the lab's
// own settings had filled the gap with a 9 s server timeout).
TEST(LabCommand, RefusesAConfigThatSetsNoTimeout) {
  TempDir dir("lab_no_timeout");
  retrystorm::testing::write_file(dir.path() / "b.cfg",
                                  "backend b\n  mode http\n  retries 2\n  retry-on 503\n"
                                  "  server s1 127.0.0.1:9000\n");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--scale", "0.1",
                                "--through", "haproxy", "--config", "b.cfg"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("set no timeout"), std::string::npos) << o.err;
}

TEST(LabCommand, RefusesConfigWithoutAProxy) {
  TempDir dir("lab_config_direct");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--config", "x.cfg"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--config: needs --through haproxy, nginx or grpc"), std::string::npos)
      << o.err;
}

// The client's breaker, throttle and max_requests run in the lab's own
// client; a proxy in front would retry past them.
TEST(LabCommand, RefusesClientGuardsBehindAProxy) {
  TempDir dir("lab_guards_proxy");
  for (const char* key :
       {"client.breaker=consecutive", "client.throttle_k=2", "client.max_requests=5"}) {
    auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--through", "haproxy",
                                  "--set", "engine=agent", "--set", key});
    EXPECT_EQ(o.status, 2) << key;
    std::string name = std::string(key).substr(0, std::string(key).find('='));
    EXPECT_NE(o.err.find("lab: " + name + " runs in the lab's own client (--through direct)"),
              std::string::npos)
        << o.err;
  }
}

// The backend's counts and the run the lab builds from them share one table:
// each count has the run's series of its name, so none is dropped on the way.
TEST(LabBackend, EveryCountIsASeriesOfTheRun) {
  for (const retrystorm::lab::BackendField& f : retrystorm::lab::kBackendFields) {
    bool found = false;
    for (const retrystorm::SeriesField& field : retrystorm::kSeriesFields)
      found = found || field.name == f.name;
    EXPECT_TRUE(found) << f.name;
  }
  retrystorm::lab::BackendSeries b;
  b.resize(7);
  for (const retrystorm::lab::BackendField& f : retrystorm::lab::kBackendFields)
    EXPECT_EQ((b.*f.member).size(), 7u);
}

// The load generator makes no bursts: a bursty scenario was run as even
// arrivals and compared with a bursty prediction.
TEST(LabCommand, RefusesBurstyDemandItCannotGenerate) {
  TempDir dir("lab_bursty");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--set",
                                "demand.process=bursty", "--set", "engine=agent"});
  EXPECT_EQ(o.status, 2) << o.err;
  EXPECT_NE(o.err.find("demand.process bursty"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty());
}

// A concurrency limiter and injected errors run in the engines only: the lab
// would measure a backend without them beside a prediction with them.
TEST(LabCommand, RefusesALimiterAndErrorsItsBackendDoesNotHave) {
  TempDir dir("lab_limiter");
  for (const char* set : {"server.adaptive_concurrency=vegas", "server.error_share=0.1"}) {
    auto o = run_cli(
        dir.path(), {"lab", "--preset", "primary-failover", "--set", set, "--set", "engine=agent"});
    EXPECT_EQ(o.status, 2) << set << ": " << o.err;
    EXPECT_NE(o.err.find("the agent engine"), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty());
  }
}

// primary-failover at scale 2 asks 1,200 requests/s x 3 attempts = 3,600
// attempts/s, above what this machine sustains (2,500): refused at once,
// naming a scale that fits (2 x 2500 / 3600 = 1.39, rounded down to 1.3).
TEST(LabCommand, RefusesAScenarioFasterThanTheMachineAndSuggestsAScale) {
  TempDir dir("lab_too_fast");
  auto o = run_cli(dir.path(), {"lab", "--preset", "primary-failover", "--scale", "2"});
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("3600 attempts/s"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("try --scale 1.3"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty());
}

// The delays the lab measures between caller and backend, and the keys the
// prediction gets (docs/lab.md, "Who knows when the caller gives up").
TEST(LabDelays, MeasuredDelaysBecomeTheModelsKeys) {
  retrystorm::lab::LabResult r;
  r.backend_error.p50_s = 0.00004;
  r.answer_transit.p50_s = 0.0002;
  r.give_up_lead.p50_s = -0.0006;  // the leaving arrived after the backend's instant
  r.grpc_transit.p50_s = 0.0003;

  r.through = "direct";  // the backend has the caller's instant
  retrystorm::lab::measure_delays(r);
  EXPECT_DOUBLE_EQ(r.give_up_gap_s, 0);
  EXPECT_DOUBLE_EQ(r.answer_way_back_s, 0.00024);

  r.through = "haproxy";  // the caller is the proxy: half the generator's way back
  retrystorm::lab::measure_delays(r);
  EXPECT_DOUBLE_EQ(r.give_up_gap_s, -0.0006 + 0.0001);
  EXPECT_DOUBLE_EQ(r.answer_way_back_s, 0.0001 + 0.00004);
  retrystorm::Scenario s;
  retrystorm::lab::apply_delays(r, s);  // gives up before the proxy: no lag, no way back
  EXPECT_DOUBLE_EQ(s.server.shed_lag_s, 0);
  EXPECT_DOUBLE_EQ(s.server.answer_delay_s, 0);

  r.through = "grpc";
  r.give_up_lead.p50_s = 0.00002;  // C-core's cancellation: just before the backend's instant
  retrystorm::lab::measure_delays(r);
  EXPECT_DOUBLE_EQ(r.give_up_gap_s, 0.00002 + 0.0003);
  retrystorm::lab::apply_delays(r, s);
  EXPECT_DOUBLE_EQ(s.server.shed_lag_s, 0.00032);
  EXPECT_DOUBLE_EQ(s.server.answer_delay_s, 0.00024);

  r.give_up_gap_s = -0.0001;  // a little before: the way back shrinks by as much
  retrystorm::lab::apply_delays(r, s);
  EXPECT_DOUBLE_EQ(s.server.shed_lag_s, 0);
  EXPECT_NEAR(s.server.answer_delay_s, 0.00014, 1e-12);
}

TEST(LabScale, MultipliesRatesAndCapacitiesAndKeepsTimes) {
  auto s = retrystorm::preset_or_throw("primary-failover").scenario;
  s.server.queue_limit = 50;
  auto x = retrystorm::lab::scale_scenario(s, 0.1);
  EXPECT_DOUBLE_EQ(x.demand.rate_per_s, 60);
  EXPECT_DOUBLE_EQ(x.server.capacity_per_s, 100);
  EXPECT_DOUBLE_EQ(x.server.queue_limit, 5);
  EXPECT_EQ(x.client.timeout_s, s.client.timeout_s);
  EXPECT_EQ(x.incident.start_s, s.incident.start_s);
  EXPECT_EQ(x.horizon_s, s.horizon_s);
  EXPECT_DOUBLE_EQ(retrystorm::lab::peak_attempt_rate(x), 180);
}

// --- a chain of services (docs/lab.md, "A chain of services") -----------------

// The three-tier chain at a tenth, with a fixed service time (the backend's),
// 3 s calm, a 6 s drop of the database, 9 s after; 0.1 s bins (the calls'
// timeouts are whole bins).
namespace {

const std::vector<std::string> kChain = {"--preset", "three-tier-chain",
                                         "--set",    "server.service=deterministic",
                                         "--scale",  "0.1",
                                         "--bin",    "0.1",
                                         "--set",    "horizon_s=18",
                                         "--set",    "incident.start_s=3",
                                         "--set",    "incident.duration_s=6",
                                         "--format", "json"};

std::vector<std::string> chain_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"lab"};
  a.insert(a.end(), kChain.begin(), kChain.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST(LabChain, RefusesWhatTheLabDoesNotRun) {
  TempDir dir("lab_chain_refusals");
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<Case> cases = {
      {chain_args({"--through", "haproxy"}),
       "--through haproxy is for a scenario without services"},
      {{"lab", "--preset", "fan-out-page", "--set", "server.service=deterministic"},
       "services.page makes 5 calls"},
      {chain_args({"--set", "calls[2].hedging=grpc"}), "calls[2]: hedging and rate_limiter"},
      {chain_args({"--set", "calls[1].propagate_deadline=true"}), "calls[1]: the lab runs plain"},
      {chain_args({"--set", "services.db.discipline=lifo"}), "services.db.*: the backend serves"},
      {chain_args({"--set", "incident.call=1", "--set", "incident.delay_s=1"}),
       "incident.call (a fault on a call)"},
  };
  for (const Case& c : cases) {
    auto o = run_cli(dir.path(), c.args);
    EXPECT_EQ(o.status, 2) << c.says << ": " << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << o.err;
    EXPECT_TRUE(o.out.empty());
  }
}

// Every service's capacity and queue limit scale with the demand; the peak a
// chain can ask is every process's worst case: 15 requests/s x (1 + 3 + 9 + 27).
TEST(LabChain, ScalesEveryServiceAndCountsEveryProcessesAttempts) {
  auto s = retrystorm::preset_or_throw("three-tier-chain").scenario;
  retrystorm::set_graph_key(s, "services.db.queue_limit", retrystorm::KeyValue{200.0});
  auto x = retrystorm::lab::scale_scenario(s, 0.1);
  auto capacity = [&](const char* name) {
    return std::get<double>(
        retrystorm::graph_key_value(x, std::string("services.") + name + ".capacity_per_s"));
  };
  EXPECT_DOUBLE_EQ(capacity("db"), 50);
  EXPECT_DOUBLE_EQ(capacity("gateway"), 2000);
  EXPECT_DOUBLE_EQ(std::get<double>(retrystorm::graph_key_value(x, "services.db.queue_limit")), 20);
  EXPECT_DOUBLE_EQ(retrystorm::lab::peak_attempt_rate(x), 15.0 * 40);
}

// --- real runs (label lab) ------------------------------------------------------

// Retries with backoff through the generator (ClientPolicy): the backlog of
// the outage times every attempt out and retries hold the load at ~3x.
TEST(LabRun, DirectCollapseAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  run_and_check("lab_direct_collapse", {}, false);
}

// + 10% window budget + shed abandoned work: recovers within a second.
TEST(LabRun, DirectRecoveryAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check(
      "lab_direct_recover",
      {"--set", "client.budget.kind=window", "--set", "server.shed_abandoned=true"}, true);
  EXPECT_GT(j["measured"]["metrics"]["shed"].get<double>(), 0);
}

// HAProxy 2.6 retries (the export: retries 2, at once, on response-timeout
// and 503); the prediction reads the same settings back.
TEST(LabRun, HaproxyCollapseAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_haproxy_collapse", {"--through", "haproxy"}, false);
  EXPECT_NE(j["lab"]["layer_config"].get<std::string>().find("retries 2"), std::string::npos);
  EXPECT_NE(j["lab"]["imported_policy"].get<std::string>().find("client.backoff.base_s = 0"),
            std::string::npos);
}

// A HAProxy backend without a mode line runs in mode tcp, as the importer
// reads it: only failed connections are retried, so the outage's timeouts
// are not (the lab's own defaults had made it mode http: 540 retries where
// the prediction had none).
TEST(LabRun, HaproxyWithoutAModeRunsAsTheImporterReadsIt) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  TempDir dir("lab_haproxy_no_mode");
  retrystorm::testing::write_file(
      dir.path() / "nomode.cfg",
      "backend b\n  retries 2\n  retry-on conn-failure empty-response response-timeout 503\n"
      "  timeout connect 1000ms\n  timeout server 1000ms\n  server s1 127.0.0.1:9000\n");
  auto o = run_cli(dir.path(), lab_args({"--through", "haproxy", "--config", "nomode.cfg"}));
  ASSERT_EQ(o.status, 0) << o.err;
  json j = json::parse(o.out);
  EXPECT_NE(j["lab"]["layer_config"].get<std::string>().find("mode tcp"), std::string::npos);
  if (!kept_time(j)) return;
  // conn-failure is listed: a connection that fails in the outage may be
  // retried (one was, in a run); the lab's defaults had made 540 retries.
  double retries = 0;
  for (double r : j["measured"]["series"]["retries"]) retries += r;
  EXPECT_LT(retries, 10);
}

// HAProxy without retries and with shedding: the backlog drains.
TEST(LabRun, HaproxyRecoveryAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  run_and_check(
      "lab_haproxy_recover",
      {"--through", "haproxy", "--set", "client.retries=0", "--set", "server.shed_abandoned=true"},
      true);
}

// nginx 1.22: three upstream entries, proxy_next_upstream_tries 3.
TEST(LabRun, NginxCollapseAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_nginx_collapse", {"--through", "nginx"}, false);
  EXPECT_NE(j["lab"]["layer_config"].get<std::string>().find("proxy_next_upstream_tries 3"),
            std::string::npos);
}

// gRPC C-core 1.51 retries (the export: maxAttempts 3, backoff 100 ms x2 up
// to 2 s, perAttemptRecvTimeout 1 s on a channel with
// grpc.experimental.enable_hedging); the generator makes one call per request
// and the backend serves them over gRPC; the prediction reads the service
// config back (retryPolicy as C-core draws it).
TEST(LabRun, GrpcCollapseAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_grpc_collapse", {"--through", "grpc"}, false);
  EXPECT_NE(j["lab"]["layer_config"].get<std::string>().find("\"perAttemptRecvTimeout\": \"1s\""),
            std::string::npos);
  EXPECT_NE(j["lab"]["imported_policy"].get<std::string>().find("client.backoff.jitter = grpc"),
            std::string::npos);
  EXPECT_GT(j["measured"]["metrics"]["peak_amplification"].get<double>(), 2);  // gRPC retried
}

// The export maps a grpc_throttling budget to retryThrottling (10 tokens,
// ratio 0.1; C-core keeps the tokens per channel, the lab has one), and the
// backend sheds by the attempt's deadline: the backlog drains within a second.
TEST(LabRun, GrpcThrottlingRecoveryAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_grpc_recover",
                         {"--through", "grpc", "--set", "client.budget.kind=grpc_throttling",
                          "--set", "server.shed_abandoned=true"},
                         true);
  EXPECT_NE(j["lab"]["layer_config"].get<std::string>().find("\"retryThrottling\""),
            std::string::npos);
  EXPECT_NE(
      j["lab"]["imported_policy"].get<std::string>().find("client.budget.kind = grpc_throttling"),
      std::string::npos);
}

// The client's own guards in the lab's direct client, through the same
// state machines the agent engine runs (policies/client_guards.hpp): where
// retries alone keep primary-failover stuck (DirectCollapse above), they
// refuse attempts locally and the backlog drains. Refused attempts are
// counted by the generator (they never reach the backend) and agree with the
// prediction within 10%.
void check_refused(const json& j) {
  auto total = [&](const char* block) {
    double sum = 0;
    for (const auto& v : j[block]["series"]["refused_locally"]) sum += v.get<double>();
    return sum;
  };
  EXPECT_GT(total("predicted"), 0);
  EXPECT_NEAR(total("measured"), total("predicted"), 0.1 * total("predicted"));
}

// A consecutive-failure breaker (cockatiel's ConsecutiveBreaker,
// src/breaker/ConsecutiveBreaker.ts: open on the 5th failure in a row; one
// trial call after halfOpenAfter), 4 clients, open 1 s.
TEST(LabRun, DirectBreakerRecoveryAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_direct_breaker",
                         {"--set", "engine=agent", "--set", "client.breaker=consecutive", "--set",
                          "client.budget.clients=4", "--set", "client.breaker_open_s=1"},
                         true, false);
  check_refused(j);
}

// Client-side adaptive throttling (the SRE book's rule as grpc-go's
// balancer/rls/internal/adaptive/adaptive.go ShouldThrottle draws it): K = 2
// over a 1 s window, one client.
TEST(LabRun, DirectThrottleRecoveryAgreesWithTheAgentEngine) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_and_check("lab_direct_throttle",
                         {"--set", "engine=agent", "--set", "client.throttle_k=2", "--set",
                          "client.budget.clients=1", "--set", "client.throttle_window_s=1"},
                         true, false);
  check_refused(j);
}

// Ctrl-C mid-run: the report so far, exit 130, backend and proxy stopped.
TEST(LabRun, CtrlCStopsEveryProcess) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  TempDir dir("lab_ctrl_c");
  std::string cmd = "cd " + retrystorm::testing::shell_quote(dir.path().string()) +
                    " && timeout --preserve-status -s INT 5 " RETRYSTORM_BIN " lab";
  for (const auto& a : kShort) cmd += " " + retrystorm::testing::shell_quote(a);
  cmd += " --through nginx > out.json 2> err.txt < /dev/null";
  int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 130) << retrystorm::testing::read_all(dir.path() / "err.txt");
  json j = json::parse(retrystorm::testing::read_all(dir.path() / "out.json"));
  EXPECT_TRUE(j["lab"]["interrupted"]);
  ASSERT_EQ(j["lab"]["pids"].size(), 2u);
  for (const auto& pid : j["lab"]["pids"]) EXPECT_TRUE(process_gone(pid.get<int>())) << pid;
}

// The chain on four processes (ingress, a proxy; gateway, api and db, each a
// server calling the next with its call's policy) and the load generator:
// retries at three hops multiply at the database and hold it down after the
// drop; measured against the graph's agent run, service by service.
namespace {

json run_chain(const std::string& name, const std::vector<std::string>& extra, bool recovers) {
  TempDir dir(name);
  auto o = run_cli(dir.path(), chain_args(extra));
  EXPECT_EQ(o.status, 0) << o.err;
  json j = json::parse(o.out);
  for (const char* block : {"measured", "predicted"}) {
    EXPECT_EQ(j[block]["series"]["goodput"].size(), 180u) << block;  // 18 s in 0.1 s bins
    EXPECT_EQ(j[block]["graph"]["services"].size(), 4u) << block;
    EXPECT_EQ(j[block]["graph"]["edges"].size(), 4u) << block;
  }
  EXPECT_TRUE(j["predicted_fluid"].is_null());  // the fluid engine runs no graph
  for (const auto& pid : j["lab"]["pids"]) EXPECT_TRUE(process_gone(pid.get<int>())) << pid;
  EXPECT_EQ(j["lab"]["pids"].size(), 4u);
  if (!kept_time(j)) return j;
  const auto &m = j["measured"]["metrics"], &p = j["predicted"]["metrics"];
  EXPECT_EQ(m["recovered"], recovers);
  EXPECT_EQ(p["recovered"], recovers);
  EXPECT_NEAR(m["failed_fraction"].get<double>(), p["failed_fraction"].get<double>(), 0.05);
  EXPECT_TRUE(j["agreement"]["verdict"]);
  EXPECT_TRUE(j["agreement"]["recovery"]);
  EXPECT_NEAR(m["user_requests"].get<double>(), p["user_requests"].get<double>(), 2);
  EXPECT_EQ(j["agreement"]["hops"].size(), 4u);
  for (const auto& h : j["agreement"]["hops"]) {
    EXPECT_TRUE(h["attempts"]) << h.dump();
    EXPECT_TRUE(h["served"]) << h.dump();
  }
  return j;
}

}  // namespace

TEST(LabRun, ThreeServiceChainCollapseAgreesHopByHop) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  auto j = run_chain("lab_chain_collapse", {}, false);
  // The retries multiplied: more than 9 attempts per user request at the database.
  for (const auto& h : j["agreement"]["hops"])
    if (h["service"] == "db") {
      EXPECT_GT(h["measured_per_request"].get<double>(), 9) << h.dump();
    }
}

// Retries at one hop only (the database's caller) and shedding at the
// database: the backlog drains soon after the drop.
TEST(LabRun, ThreeServiceChainWithRetriesAtOneHopRecovers) {
  if (!real_runs()) GTEST_SKIP() << "real run: ctest -L lab";
  run_chain("lab_chain_recover",
            {"--set", "calls[1].retries=0", "--set", "calls[2].retries=0", "--set",
             "services.db.shed_abandoned=true"},
            true);
}
