// Circuit breakers against the real libraries (issue 29, part 1;
// docs/conformance.md, "Circuit breakers"): opossum and cockatiel from npm
// (tests/conformance/node, breaker_driver.mjs) play scripts of calls and
// outcomes on a fake clock, and the project's CircuitBreaker
// (policies/circuit_breaker.hpp) plays the same scripts: every call let
// through or refused, and the state after every event, must be the same.
// Times are in milliseconds on both sides, so instants compare exactly.
// cockatiel makes a call that comes during a half-open trial wait for the
// trial's verdict, where the model refuses it (docs/policies.md): a script
// is compared up to the first such call.
#include <gtest/gtest.h>

#include <random>

#include "cli_run.hpp"
#include "harness.hpp"
#include "policies/circuit_breaker.hpp"

namespace retrystorm::conformance {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kNodeDir = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/conformance/node";

bool have_libraries() {
  return fs::exists(kNodeDir + "/node_modules/opossum/package.json") &&
         fs::exists(kNodeDir + "/node_modules/cockatiel/package.json");
}

// Calls every few ms, each ending after a random latency (short for
// cockatiel, so that fewer calls come during a trial); failures come in
// spells (a bad patch of the dependency), so the breaker opens and closes.
json script(uint64_t seed, int calls, int max_latency_ms) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> gap(1, 40), latency(1, max_latency_ms), spell(0, 9);
  std::vector<std::tuple<int, int, int, bool>> events;  // t, order, id, ok
  int t = 0;
  double fail_share = 0.1;
  for (int id = 1; id <= calls; ++id) {
    t += gap(rng);
    if (spell(rng) == 0) fail_share = fail_share > 0.5 ? 0.05 : 0.9;
    bool ok = std::uniform_real_distribution<>(0, 1)(rng) >= fail_share;
    events.emplace_back(t, 2 * id, id, true);
    events.emplace_back(t + latency(rng), 2 * id + 1, id, ok);
  }
  std::sort(events.begin(), events.end());
  json out = json::array();
  for (const auto& [at, order, id, ok] : events) {
    bool call = order % 2 == 0;
    json e = {{"t_ms", at}, {"op", call ? "call" : "end"}, {"id", id}};
    if (!call) e["ok"] = ok;
    out.push_back(e);
  }
  return out;
}

json run_driver(const json& spec) {
  retrystorm::testing::TempDir dir("breaker_driver");
  fs::path err = dir.path() / "breaker.stderr";
  Child node({"node", kNodeDir + "/breaker_driver.mjs", spec.dump()}, {}, err);
  std::string text = node.read_all(std::chrono::milliseconds(30000));
  node.wait(std::chrono::milliseconds(5000));
  json out = json::parse(text, nullptr, false);
  if (out.is_discarded() || !out.is_array())
    ADD_FAILURE() << "the breaker driver printed no JSON; stderr:\n"
                  << retrystorm::testing::read_all(err);
  return out.is_array() ? out : json::array();
}

struct Compared {
  size_t events = 0, refused = 0, opened = 0;
  bool stopped_at_wait = false;
};

// Plays the script through the model and compares it with the library's run.
Compared compare(const BreakerSettings& settings, const json& events, const json& real) {
  CircuitBreaker model(settings, 0);
  std::map<int, uint32_t> tickets;
  Compared c;
  for (size_t i = 0; i < events.size() && i < real.size(); ++i) {
    const json& e = events[i];
    double t = e["t_ms"].get<double>();
    int id = e["id"].get<int>();
    if (e["op"] == "call") {
      if (real[i]["call"] == "waits") {
        c.stopped_at_wait = true;
        break;
      }
      uint32_t ticket = model.admit(t);
      tickets[id] = ticket;
      EXPECT_EQ(ticket != 0, real[i]["call"] == "ran")
          << "event " << i << " t " << t << " call " << id;
      c.refused += ticket == 0;
    } else if (tickets[id] != 0) {
      model.on_outcome(t, e["ok"].get<bool>(), tickets[id]);
    }
    EXPECT_EQ(breaker_state_name(model.state_at(t)), real[i]["state"].get<std::string>())
        << "event " << i << " t " << t << " " << e.dump();
    if (::testing::Test::HasFailure()) break;
    ++c.events;
  }
  c.opened = static_cast<size_t>(model.opened());
  return c;
}

TEST(BreakerConformance, OpossumCallByCall) {
  if (!have_libraries()) GTEST_SKIP() << "npm ci in tests/conformance/node (scripts/setup.sh)";
  BreakerSettings s{.kind = BreakerKind::opossum,
                    .failure_rate = 0.5,
                    .window_s = 1000,
                    .buckets = 10,
                    .min_calls = 5,
                    .open_s = 300,
                    .trials = 1};
  size_t refused = 0, opened = 0, events = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    json events_json = script(seed, 300, 120);
    json spec = {{"library", "opossum"},
                 {"settings",
                  {{"open_ms", s.open_s},
                   {"failure_rate", s.failure_rate},
                   {"window_ms", s.window_s},
                   {"buckets", s.buckets},
                   {"min_calls", s.min_calls}}},
                 {"events", events_json}};
    Compared c = compare(s, events_json, run_driver(spec));
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    EXPECT_EQ(c.events, events_json.size()) << "seed " << seed;
    refused += c.refused, opened += c.opened, events += c.events;
  }
  std::printf("  opossum: %zu events, %zu calls refused, opened %zu times: the same\n", events,
              refused, opened);
  EXPECT_GT(refused, 50u);
  EXPECT_GT(opened, 10u);
}

TEST(BreakerConformance, CockatielConsecutiveBreakerCallByCall) {
  if (!have_libraries()) GTEST_SKIP() << "npm ci in tests/conformance/node (scripts/setup.sh)";
  BreakerSettings s{.kind = BreakerKind::consecutive, .failures = 3, .open_s = 250, .trials = 1};
  size_t refused = 0, opened = 0, events = 0, waits = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    json events_json = script(100 + seed, 300, 25);
    json spec = {{"library", "cockatiel"},
                 {"settings", {{"open_ms", s.open_s}, {"failures", s.failures}}},
                 {"events", events_json}};
    Compared c = compare(s, events_json, run_driver(spec));
    ASSERT_FALSE(HasFailure()) << "seed " << seed;
    refused += c.refused, opened += c.opened, events += c.events, waits += c.stopped_at_wait;
  }
  std::printf(
      "  cockatiel ConsecutiveBreaker: %zu events, %zu calls refused, opened %zu times: the same "
      "(%zu of 12 scripts up to a call held during a trial)\n",
      events, refused, opened, waits);
  EXPECT_GT(refused, 50u);
  EXPECT_GT(opened, 10u);
}

}  // namespace
}  // namespace retrystorm::conformance
