// Invariants of both per-step engines over a few hundred varied scenarios,
// drawn deterministically from a seeded generator. The fluid engine:
// conservation of user requests and of attempts, capacity respected, no
// negative amounts, metrics in range, budgets respected, byte-identical JSON
// for the same input, shedding never adding late work, and no retries when
// there are none to send. The agent engine (the same scenarios with the agent
// keys drawn too): every request ends as success, failure or in flight, every
// attempt sent is served (on time or late), shed, rejected or still at the
// server, served = on time + late, and the same seed gives the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "engines/fluid.hpp"
#include "engines/series.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm {
namespace {

constexpr int kScenarios = 320;
constexpr unsigned kSeed = 20'240'611;

double tidy(double v) {
  return std::round(v * 1e9) / 1e9;
}

// Close in relative terms (absolute near zero).
bool close(double a, double b, double rel = 1e-9) {
  return std::fabs(a - b) <= rel * std::max({1.0, std::fabs(a), std::fabs(b)});
}

std::vector<std::string> choices_of(const std::string& path) {
  const KeySpec* k = find_key(path);
  return k ? k->choices : std::vector<std::string>{};
}

// Draws from the generator, in the order the calls are made.
struct Draws {
  std::mt19937& rng;
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  template <typename List>
  auto pick(const List& list) {
    return list[uniform_int(0, int(std::size(list)) - 1)];
  }
};

// One scenario drawn from `rng`, set key by key through the key table so that
// every value is one the table accepts.
Scenario draw(std::mt19937& rng, int index) {
  Draws d{rng};
  auto uniform_int = [&](int lo, int hi) { return d.uniform_int(lo, hi); };
  auto uniform = [&](double lo, double hi) { return d.uniform(lo, hi); };
  auto pick = [&](const auto& list) { return d.pick(list); };

  Scenario s;
  auto set = [&](const std::string& path, KeyValue v) { set_key(s, path, v); };
  set("name", std::string("generated-") + std::to_string(index));
  const double steps_of[] = {0.05, 0.1, 0.25, 0.5, 1.0};
  double step = pick(steps_of);
  int steps = uniform_int(40, 400);
  set("step_s", step);
  set("horizon_s", tidy(steps * step));
  set("service_completes", std::string(index % 2 ? "end" : "start"));  // both, evenly

  double demand = std::round(uniform(5, 500) * 4) / 4;
  set("demand.rate_per_s", demand);
  set("server.capacity_per_s", std::round(demand / uniform(0.2, 1.1) * 4) / 4);
  bool limited = uniform_int(0, 2) == 0;
  set("server.queue_limit", limited ? std::round(demand * step * uniform(0.5, 20)) : 0.0);
  set("server.shed_abandoned", uniform_int(0, 1) == 1);

  set("incident.start_s", tidy(uniform_int(0, steps / 2) * step));
  set("incident.duration_s", tidy(uniform_int(0, steps / 2) * step));
  const double capacity_factors[] = {0, 0, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5};
  set("incident.capacity_factor", pick(capacity_factors));
  const double demand_factors[] = {1, 1, 1, 0.5, 1.5, 3};
  set("incident.demand_factor", pick(demand_factors));

  set("client.timeout_s", tidy(uniform_int(1, 8) * step));  // K whole steps
  set("client.retries", double(uniform_int(0, 4)));
  set("client.layers", double(uniform_int(1, 3)));
  const double bases[] = {0, step, 2.5 * step, 0.1, 0.5, 1, 3};
  set("client.backoff.base_s", pick(bases));
  const double multipliers[] = {1, 1.5, 2, 3};
  set("client.backoff.multiplier", pick(multipliers));
  const double caps[] = {0, 0, 0.2, 1, 5};
  set("client.backoff.cap_s", pick(caps));
  auto jitters = choices_of("client.backoff.jitter");
  set("client.backoff.jitter", jitters[static_cast<size_t>(index) % jitters.size()]);
  auto kinds = choices_of("client.budget.kind");
  set("client.budget.kind", kinds[static_cast<size_t>(index / 2) % kinds.size()]);
  const double ratios[] = {0, 0.05, 0.1, 0.5, 1, 2};
  set("client.budget.ratio", pick(ratios));
  set("client.budget.window_s", tidy(uniform_int(1, 60) * step));
  const double fractions[] = {0.5, 0.9, 1.0};
  set("recovery.goodput_fraction", pick(fractions));
  return s;
}

struct Case {
  Scenario scenario;
  RunResult run;
  Metrics metrics;
};

// kScenarios scenarios drawn by `draw` from the seed, each run by the engine it names.
std::vector<Case> run_cases(unsigned seed, Scenario (*draw)(std::mt19937&, int)) {
  std::mt19937 rng(seed);
  std::vector<Case> out;
  for (int i = 0; i < kScenarios; ++i) {
    Scenario s = draw(rng, i);
    validate(s);  // by construction; a throw fails every test with its message
    RunResult r = run_engine(s);
    Metrics m = compute_metrics(r);
    out.push_back({s, std::move(r), m});
  }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = run_cases(kSeed, draw);
  return all;
}

// The agent engine moves every request one by one: the scenarios are drawn
// the same way, then scaled to at most kAgentRequests user requests (demand,
// capacity and queue limit by one factor, so the load stays the same).
constexpr double kAgentRequests = 4000;

Scenario draw_agent(std::mt19937& rng, int index) {
  Scenario s = draw(rng, index);
  Draws d{rng};
  double requests = s.demand.rate_per_s * s.horizon_s * std::max(1.0, s.incident.demand_factor);
  double f = std::min(1.0, kAgentRequests / requests);
  auto set = [&](const std::string& path, KeyValue v) { set_key(s, path, v); };
  set("engine", std::string("agent"));
  set("demand.rate_per_s", std::round(s.demand.rate_per_s * f * 4) / 4 + 0.25);
  set("server.capacity_per_s", std::round(s.server.capacity_per_s * f * 4) / 4 + 0.25);
  if (s.server.queue_limit > 0)
    set("server.queue_limit", std::max(1.0, std::round(s.server.queue_limit * f)));
  auto pick = [&](const std::string& path, int i) {
    auto list = choices_of(path);
    set(path, list[static_cast<size_t>(i) % list.size()]);
  };
  pick("demand.process", index);
  pick("server.service", index / 3);
  pick("server.discipline", index / 4);
  set("server.slots", double(d.uniform_int(0, 4)));
  const double contention[] = {0, 0, 0.01, 0.1};
  set("server.contention", contention[d.uniform_int(0, 3)]);
  set("seed", double(index + 1));
  return s;
}

// The same scenarios with every layer hedging, gRPC's way and Envoy's in
// turn (docs/policies.md, "Hedging"): the invariants hold for them as well.
Scenario draw_hedged(std::mt19937& rng, int index) {
  Scenario s = draw_agent(rng, index);
  set_key(s, "client.hedging", std::string(index % 2 ? "grpc" : "envoy"));
  return s;
}

// The same scenarios behind the client's guards (docs/policies.md): Envoy's
// connection pool with a little or no room to wait, max_requests, a breaker
// or a throttle in turn, and a route timeout in one of two, so that requests
// also end while they wait for a connection.
Scenario draw_guarded(std::mt19937& rng, int index) {
  Scenario s = draw_agent(rng, index);
  Draws d{rng};
  auto set = [&](const std::string& path, KeyValue v) { set_key(s, path, v); };
  set("client.budget.clients", double(d.uniform_int(1, 8)));
  switch (index % 4) {
    case 0:
      set("client.max_connections", double(d.uniform_int(1, 6)));
      set("client.max_pending_requests", double(d.uniform_int(0, 20)));
      break;
    case 1:
      set("client.max_requests", double(d.uniform_int(1, 6)));
      break;
    case 2:
      set("client.breaker", std::string(index % 8 == 2 ? "consecutive" : "opossum"));
      set("client.breaker_open_s", 1.0);
      break;
    default:
      set("client.throttle_k", 2.0);
      set("client.throttle_window_s", 5.0);
  }
  if ((index / 4) % 2) set("client.deadline_s", tidy(3 * s.client.timeout_s));
  return s;
}

enum class AgentSet { retrying, hedging, guarded };

const std::vector<Case>& agent_cases(AgentSet set = AgentSet::retrying) {
  static const std::vector<Case> retrying = run_cases(kSeed + 1, draw_agent);
  if (set == AgentSet::retrying) return retrying;
  if (set == AgentSet::guarded) {
    static const std::vector<Case> guarded = run_cases(kSeed + 1, draw_guarded);
    return guarded;
  }
  static const std::vector<Case> hedging = run_cases(kSeed + 1, draw_hedged);
  return hedging;
}

std::string describe(const Case& c) {
  return scenario_to_json(c.scenario).dump();
}

// Reports the first few violations in full, then only counts them.
class Violations {
 public:
  explicit Violations(const char* what) : what_(what) {}
  ~Violations() { EXPECT_EQ(count_, 0) << count_ << " violations of: " << what_; }
  // `detail` is text, or a function returning it (only called on a violation).
  template <typename Detail>
  void check(bool ok, const Case& c, const Detail& detail) {
    if (ok) return;
    if (++count_ > 3) return;
    std::string text;
    if constexpr (std::is_invocable_v<Detail>)
      text = detail();
    else
      text = detail;
    ADD_FAILURE() << what_ << ": " << text << "\n  scenario: " << describe(c);
  }

 private:
  const char* what_;
  int count_ = 0;
};

double sum(std::span<const double> v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

std::string at(size_t step, double got, double want) {
  std::ostringstream o;
  o.precision(17);
  o << "step " << step << ": " << got << " vs " << want;
  return o.str();
}

// Attempts that left the clients: those the client's guards refused never
// reach the server (series.hpp, attempts_sent), nor those still waiting for
// a connection at the end.
double attempts_sent(const Series& x) {
  double waiting = x.size() ? x.pooled[x.size() - 1] : 0;
  return sum(x.first_attempts) + sum(x.retries) - sum(x.refused_locally) - waiting;
}

// Served (on time or late), shed, rejected, or at the server at the end.
double attempts_accounted_for(const Series& x) {
  return sum(x.goodput) + sum(x.served_late) + sum(x.shed) + sum(x.rejected) +
         (x.size() ? x.backlog[x.size() - 1] : 0);
}

TEST(Invariants, GeneratedScenariosAreVariedAndValid) {
  const auto& all = cases();
  ASSERT_GE(all.size(), 300u);
  std::set<std::string> jitters, kinds, completes;
  int shedding = 0, limited = 0, no_retries = 0, multi_layer = 0, stormy = 0;
  for (const auto& c : all) {
    EXPECT_NO_THROW(validate(c.scenario));
    const auto& cl = c.scenario.client;
    jitters.insert(std::get<std::string>(find_key("client.backoff.jitter")->get(c.scenario)));
    kinds.insert(std::get<std::string>(find_key("client.budget.kind")->get(c.scenario)));
    completes.insert(std::get<std::string>(find_key("service_completes")->get(c.scenario)));
    shedding += c.scenario.server.shed_abandoned;
    limited += c.scenario.server.queue_limit > 0;
    no_retries += cl.retries == 0;
    multi_layer += cl.layers > 1;
    stormy += c.metrics.failed > 0 && sum(c.run.series.retries) > 0;
  }
  EXPECT_EQ(jitters.size(), choices_of("client.backoff.jitter").size());
  EXPECT_EQ(kinds.size(), choices_of("client.budget.kind").size());
  EXPECT_EQ(completes.size(), 2u);
  EXPECT_GT(shedding, 50);
  EXPECT_GT(limited, 50);
  EXPECT_GT(no_retries, 30);
  EXPECT_GT(multi_layer, 100);
  EXPECT_GT(stormy, 30) << "too few scenarios exercise retries that fail";
}

TEST(Invariants, EveryUserRequestIsSucceededFailedOrInFlight) {
  Violations v("user_requests == succeeded + failed + in_flight");
  Violations first("user_requests == sum of first attempts");
  for (const auto& c : cases()) {
    const RunResult& r = c.run;
    v.check(close(r.user_requests, r.succeeded + r.failed + r.in_flight), c, [&] {
      return std::string(at(0, r.user_requests, r.succeeded + r.failed + r.in_flight));
    });
    first.check(close(r.user_requests, sum(r.series.first_attempts)), c,
                [&] { return std::string(at(0, r.user_requests, sum(r.series.first_attempts))); });
  }
}

TEST(Invariants, ServedIsGoodputPlusLateAndWithinCapacity) {
  Violations v("goodput + served_late <= capacity");
  Violations m("metrics.served == goodput + served_late");
  for (const auto& c : cases()) {
    const Series& x = c.run.series;
    for (size_t t = 0; t < x.size(); ++t) {
      double served = x.goodput[t] + x.served_late[t];
      v.check(served <= x.capacity[t] * (1 + 1e-12) + 1e-9, c,
              [&] { return std::string(at(t, served, x.capacity[t])); });
    }
    m.check(close(c.metrics.served, sum(x.goodput) + sum(x.served_late)) &&
                close(c.metrics.served_on_time, sum(x.goodput)),
            c, [&] {
              return std::string(at(0, c.metrics.served, sum(x.goodput) + sum(x.served_late)));
            });
  }
}

TEST(Invariants, CapacityAndTimeFollowTheScenario) {
  Violations v("capacity and t_s per step");
  for (const auto& c : cases()) {
    const Scenario& s = c.scenario;
    const Series& x = c.run.series;
    v.check(x.size() == size_t(s.steps()), c, "steps");
    for (size_t t = 0; t < x.size(); ++t) {
      double cap = s.server.capacity_per_s * s.step_s *
                   (s.in_incident(int(t)) ? s.incident.capacity_factor : 1.0);
      double first =
          s.demand.rate_per_s * s.step_s * (s.in_incident(int(t)) ? s.incident.demand_factor : 1.0);
      v.check(close(x.capacity[t], cap) && close(x.first_attempts[t], first) &&
                  close(x.t_s[t], double(t) * s.step_s),
              c, [&] { return std::string(at(t, x.capacity[t], cap)); });
    }
  }
}

TEST(Invariants, NoSeriesHoldsANegativeAmount) {
  Violations v("every series >= 0");
  Violations b("backlog >= 0");
  for (const auto& c : cases()) {
    for (const auto& [name, member] : kSeriesFields) {
      std::span<const double> series = c.run.series.*member;
      Violations& which = name == "backlog" ? b : v;
      for (size_t t = 0; t < series.size(); ++t)
        which.check(series[t] >= 0, c,
                    [&] { return std::string(name) + " " + at(t, series[t], 0); });
    }
    v.check(c.run.in_flight >= 0 && c.run.failed >= 0 && c.run.succeeded >= 0, c, "totals");
  }
}

TEST(Invariants, FailedSeriesSumsToFailed) {
  Violations v("sum(series.failed) == failed");
  Violations g("sum(series.goodput) == succeeded");
  for (const auto& c : cases()) {
    v.check(close(sum(c.run.series.failed), c.run.failed), c,
            [&] { return std::string(at(0, sum(c.run.series.failed), c.run.failed)); });
    v.check(close(c.metrics.failed, c.run.failed), c, "metrics.failed");
    g.check(close(sum(c.run.series.goodput), c.run.succeeded), c,
            [&] { return std::string(at(0, sum(c.run.series.goodput), c.run.succeeded)); });
  }
}

// Every attempt admitted to the queue is served, shed, or still queued at the
// end; the rest were rejected. Per step, the backlog moves by exactly that.
TEST(Invariants, AttemptsAreConservedThroughTheQueue) {
  Violations total("first + retries == served + shed + rejected + final backlog");
  Violations step("backlog[t] == backlog[t-1] + sent - rejected - served - shed");
  for (const auto& c : cases()) {
    const Series& x = c.run.series;
    double sent = attempts_sent(x), gone = attempts_accounted_for(x);
    total.check(close(sent, gone), c, [&] { return std::string(at(x.size(), sent, gone)); });
    double before = 0;
    for (size_t t = 0; t < x.size(); ++t) {
      double want = before + x.first_attempts[t] + x.retries[t] - x.rejected[t] - x.goodput[t] -
                    x.served_late[t] - x.shed[t];
      step.check(std::fabs(x.backlog[t] - want) <= 1e-9 * std::max(1.0, sent), c,
                 [&] { return std::string(at(t, x.backlog[t], want)); });
      before = x.backlog[t];
    }
  }
}

TEST(Invariants, MetricFractionsAreWithinZeroAndOne) {
  Violations v("fractions in [0, 1]");
  for (const auto& c : cases()) {
    const Metrics& m = c.metrics;
    auto in01 = [](double f) { return f >= 0 && f <= 1 + 1e-12; };
    v.check(in01(m.failed_fraction), c,
            [&] { return std::string("failed_fraction " + std::to_string(m.failed_fraction)); });
    v.check(in01(m.wasted_fraction), c,
            [&] { return std::string("wasted_fraction " + std::to_string(m.wasted_fraction)); });
    v.check(in01(m.last_window.utilization), c, [&] {
      return std::string("last_window.utilization " + std::to_string(m.last_window.utilization));
    });
    v.check(in01(m.bound.safe_load_below) && m.bound.safe_load_below > 0, c, "safe_load_below");
    v.check(close(m.bound.max_amplification * m.bound.safe_load_below, 1), c, "bound");
    v.check(m.peak_amplification >= 1 - 1e-12, c, "peak_amplification");
  }
}

// Immediate retries (base 0) with an uncapped multiplier and more than a
// thousand attempts: every retry must still land somewhere.
// Regression (fixed): backoff_window_s() computes base_s * pow(multiplier, k - 1), which is
// 0 * inf = NaN once 2^(k-1) overflows (k > 1024); the NaN delay lands in no
// step, so those retries vanish: user_requests != succeeded + failed +
// in_flight (10240 of 15000 here), and attempts above 1025 are never sent.
TEST(Invariants, ThousandsOfImmediateRetriesConserveRequests) {
  Scenario s;
  s.horizon_s = 1500;
  s.step_s = 1;
  s.service_completes = ServiceCompletes::end;  // give up and retry every step
  s.demand.rate_per_s = 10;
  s.server.capacity_per_s = 20;
  s.incident.start_s = 0;  // an outage for the whole run
  s.incident.duration_s = 1500;
  s.incident.capacity_factor = 0;
  s.incident.demand_factor = 1;
  s.client.timeout_s = 1;
  s.client.retries = 40;
  s.client.layers = 2;  // 1681 attempts
  s.client.backoff = {0, 2, 0, Jitter::none};
  validate(s);
  RunResult r = run_fluid(s);
  EXPECT_NEAR(r.user_requests, 15000, 1e-6);
  EXPECT_NEAR(r.succeeded + r.failed + r.in_flight, r.user_requests, 1e-6)
      << "succeeded " << r.succeeded << " failed " << r.failed << " in flight " << r.in_flight;
  // An attempt a step per cohort: the first cohort sends attempt 1500 in the
  // last step, and every earlier cohort retries in it too.
  EXPECT_NEAR(r.series.retries[1499], 10 * 1499, 1e-6);
}

// Regression (fixed): goodput_recovery_s is "the smallest s >= incident end ... reported as
// s - incident end", so never negative; but with an incident end that is not
// exact in binary (3.2 + 5.4 = 8.600000000000001) the first step at or after
// it (step 86, 8.6 s) is found with a tolerance and the difference reported
// as -1.7763568394002505e-15. failure_recovery_s clamps at 0; this does not.
TEST(Invariants, RecoveryTimesAreNeverNegative) {
  Violations v("goodput_recovery_s and failure_recovery_s >= 0");
  for (const auto& c : cases()) {
    const Metrics& m = c.metrics;
    if (m.goodput_recovery_s)
      v.check(*m.goodput_recovery_s >= 0, c,
              [&] { return "goodput_recovery_s " + std::to_string(*m.goodput_recovery_s); });
    if (m.failure_recovery_s)
      v.check(*m.failure_recovery_s >= 0, c,
              [&] { return "failure_recovery_s " + std::to_string(*m.failure_recovery_s); });
  }
}

// Regression (fixed): the same, in one scenario: an absorbed incident from 3.2 s for 5.4 s.
TEST(Invariants, GoodputRecoveryIsNeverNegative) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.step_s = 0.1;
  s.incident.start_s = 3.2;
  s.incident.duration_s = 5.4;
  s.server.capacity_per_s = 1000;  // absorbed: goodput never drops
  validate(s);
  Metrics m = compute_metrics(run_fluid(s));
  ASSERT_TRUE(m.goodput_recovery_s.has_value());
  EXPECT_GE(*m.goodput_recovery_s, 0.0);
  EXPECT_EQ(m.failure_recovery_s, 0.0);
}

// Regression (fixed): fluid-model.md says failure_recovery_s is null "when failures reach the
// last step or the backlog is still growing", but failure_recovery() returns 0
// for a run in which nothing has failed yet before it looks at the backlog: an
// overloaded run (load above 1, backlog growing, no timeout reached yet) reads
// "recovered +0 s". See also BacklogGrowingWithoutFailuresIsNotRecovered.
TEST(Invariants, AGrowingBacklogIsNeverRecoveredByFailures) {
  Violations v("backlog_growing implies failure_recovery_s == null");
  for (const auto& c : cases()) {
    const Metrics& m = c.metrics;
    if (m.backlog_growing)
      v.check(!m.failure_recovery_s, c, [&] {
        return std::string("failure_recovery_s " +
                           std::to_string(m.failure_recovery_s.value_or(-1)) + " with failed " +
                           std::to_string(m.failed));
      });
  }
}

// Regression (fixed): the smallest case of the one above: demand 101/s on capacity 100/s and
// no incident. The backlog grows by 1 a second and never drains, yet no
// attempt waits the 5 s timeout within 300 s, so failure_recovery_s is 0.
TEST(Invariants, BacklogGrowingWithoutFailuresIsNotRecovered) {
  Scenario s = preset_or_throw("order-status").scenario;
  s.demand.rate_per_s = 101;
  s.incident.duration_s = 0;
  s.recovery.criterion = RecoveryCriterion::failures;
  validate(s);
  Metrics m = compute_metrics(run_fluid(s));
  EXPECT_EQ(m.failed, 0);
  EXPECT_TRUE(m.backlog_growing);
  EXPECT_FALSE(m.failure_recovery_s.has_value()) << *m.failure_recovery_s;
  EXPECT_FALSE(m.recovered);
}

TEST(Invariants, WithoutRetriesNothingIsRetried) {
  Violations v("retries 0: no retries, every failed attempt fails its user");
  int seen = 0;
  for (const auto& c : cases()) {
    if (c.scenario.client.retries != 0) continue;
    ++seen;
    const Series& x = c.run.series;
    v.check(sum(x.retries) == 0, c,
            [&] { return std::string("retries sent " + std::to_string(sum(x.retries))); });
    v.check(sum(x.budget_denied) == 0, c, "budget_denied");
    v.check(close(c.run.failed, sum(x.gave_up) + sum(x.rejected)), c,
            [&] { return std::string(at(0, c.run.failed, sum(x.gave_up) + sum(x.rejected))); });
    v.check(close(c.metrics.peak_amplification, 1), c, "peak_amplification");
  }
  EXPECT_GT(seen, 30);
}

TEST(Invariants, RetriesNeverExceedTheAttemptsAllowed) {
  Violations v("retries <= (attempts - 1) x user_requests");
  for (const auto& c : cases()) {
    double allowed = (c.scenario.attempts() - 1) * c.run.user_requests;
    v.check(sum(c.run.series.retries) <= allowed * (1 + 1e-9) + 1e-9, c,
            [&] { return std::string(at(0, sum(c.run.series.retries), allowed)); });
  }
}

TEST(Invariants, QueueLimitBoundsTheBacklog) {
  Violations v("backlog <= queue_limit");
  for (const auto& c : cases()) {
    double limit = c.scenario.server.queue_limit;
    if (limit <= 0) continue;
    const Series& x = c.run.series;
    for (size_t t = 0; t < x.size(); ++t)
      v.check(x.backlog[t] <= limit * (1 + 1e-12), c,
              [&] { return std::string(at(t, x.backlog[t], limit)); });
  }
}

TEST(Invariants, BudgetsHoldRetriesToTheirAllowance) {
  Violations none("no budget: nothing denied");
  Violations bucket("token_bucket: retries <= size + ratio x first attempts so far");
  Violations window("window: retries in window <= ratio_eff x first attempts in window");
  for (const auto& c : cases()) {
    const Scenario& s = c.scenario;
    const Series& x = c.run.series;
    const auto& b = s.client.budget;
    if (b.kind == BudgetKind::none) none.check(sum(x.budget_denied) == 0, c, "budget_denied");
    if (b.kind == BudgetKind::token_bucket) {
      double size = b.ratio * s.demand.rate_per_s * b.window_s, first = 0, retries = 0;
      for (size_t t = 0; t < x.size(); ++t) {
        first += x.first_attempts[t];
        retries += x.retries[t];
        bucket.check(retries <= (size + b.ratio * first) * (1 + 1e-9) + 1e-9, c,
                     [&] { return std::string(at(t, retries, size + b.ratio * first)); });
      }
    }
    if (b.kind == BudgetKind::window) {
      size_t w = size_t(std::lround(b.window_s / s.step_s));
      double ratio_eff = std::pow(1 + b.ratio, s.client.layers) - 1;
      for (size_t t = 0; t < x.size(); ++t) {
        if (x.retries[t] <= 0) continue;  // the rule binds when a retry is sent
        double first = 0, retries = 0;
        for (size_t u = t + 1 > w ? t + 1 - w : 0; u <= t; ++u) {
          first += x.first_attempts[u];
          retries += x.retries[u];
        }
        window.check(retries <= ratio_eff * first * (1 + 1e-9) + 1e-9, c,
                     [&] { return std::string(at(t, retries, ratio_eff * first)); });
      }
    }
  }
}

// With shedding, a given-up attempt leaves the queue when its client gives
// up, so nothing is ever served late; turning shedding on never raises the
// late share of the same scenario.
TEST(Invariants, SheddingNeverIncreasesTheLateShare) {
  Violations none_late("shed_abandoned: served_late == 0");
  Violations share("wasted_fraction(shed) <= wasted_fraction(no shed)");
  for (const auto& c : cases()) {
    Scenario with = c.scenario, without = c.scenario;
    with.server.shed_abandoned = true;
    without.server.shed_abandoned = false;
    Metrics on = compute_metrics(run_fluid(with));
    Metrics off = compute_metrics(run_fluid(without));
    none_late.check(on.served_late == 0, c,
                    [&] { return std::string("served_late " + std::to_string(on.served_late)); });
    share.check(on.wasted_fraction <= off.wasted_fraction + 1e-12, c,
                [&] { return std::string(at(0, on.wasted_fraction, off.wasted_fraction)); });
    if (!c.scenario.server.shed_abandoned)
      none_late.check(sum(run_fluid(without).series.shed) == 0, c, "shed without shedding");
  }
}

TEST(Invariants, SameInputGivesByteIdenticalJson) {
  Violations v("run_json(make_report(s)).dump() is deterministic");
  Violations round("the scenario's own JSON runs to the same bytes");
  for (const auto& c : cases()) {
    std::string a = run_json(make_report(c.scenario)).dump();
    std::string b = run_json(make_report(c.scenario)).dump();
    v.check(a == b, c, "two runs differ");
    // After a round trip through the scenario's JSON (without the tipping
    // point and advice, which the comparison above already covers).
    Scenario again = scenario_from_json(scenario_to_json(c.scenario));
    round.check(run_json(make_report(again, {.advice = false, .tipping = false})).dump() ==
                    run_json(make_report(c.scenario, {.advice = false, .tipping = false})).dump(),
                c, "round trip through JSON differs");
  }
}

// Each invariant over the retrying scenarios and over the same ones hedging.
class AgentInvariants : public ::testing::TestWithParam<AgentSet> {
 protected:
  const std::vector<Case>& all() const { return agent_cases(GetParam()); }
};

TEST_P(AgentInvariants, GeneratedScenariosAreVariedAndValid) {
  const auto& cases = all();
  ASSERT_GE(cases.size(), 300u);
  std::set<std::string> processes, services, disciplines;
  int stormy = 0, limited = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(c.scenario.engine, Engine::agent);
    for (auto [path, seen] :
         {std::pair{"demand.process", &processes}, std::pair{"server.service", &services},
          std::pair{"server.discipline", &disciplines}})
      seen->insert(std::get<std::string>(find_key(path)->get(c.scenario)));
    stormy += c.run.failed > 0 && sum(c.run.series.retries) > 0;
    limited += sum(c.run.series.rejected) > 0;
  }
  EXPECT_EQ(processes.size(), choices_of("demand.process").size());
  EXPECT_EQ(services.size(), choices_of("server.service").size());
  EXPECT_EQ(disciplines.size(), choices_of("server.discipline").size());
  EXPECT_GT(stormy, 30) << "too few scenarios exercise retries that fail";
  EXPECT_GT(limited, 20) << "too few scenarios fill a bounded queue";
}

// The guarded set exercises what it is for: attempts waiting for a
// connection, and attempts refused at the client.
TEST(GuardedInvariants, ThePoolAndTheGuardsAreExercised) {
  int waited = 0, refused = 0;
  for (const auto& c : agent_cases(AgentSet::guarded)) {
    const Series& x = c.run.series;
    waited += *std::max_element(x.pooled.begin(), x.pooled.end()) > 0;
    refused += sum(x.refused_locally) > 0;
  }
  EXPECT_GT(waited, 20) << "too few scenarios wait for a connection";
  EXPECT_GT(refused, 60) << "too few scenarios refuse attempts at the client";
}

// Whole requests: the counts are exact.
TEST_P(AgentInvariants, EveryRequestEndsAsSuccessFailureOrInFlight) {
  Violations v("user_requests == succeeded + failed + in_flight");
  Violations first("user_requests == sum of first attempts");
  Violations sums("sum(series.goodput) == succeeded, sum(series.failed) == failed");
  for (const auto& c : all()) {
    const RunResult& r = c.run;
    v.check(r.user_requests == r.succeeded + r.failed + r.in_flight, c,
            [&] { return at(0, r.user_requests, r.succeeded + r.failed + r.in_flight); });
    first.check(r.user_requests == sum(r.series.first_attempts), c,
                [&] { return at(0, r.user_requests, sum(r.series.first_attempts)); });
    sums.check(sum(r.series.goodput) == r.succeeded && sum(r.series.failed) == r.failed, c,
               [&] { return at(0, sum(r.series.goodput), r.succeeded); });
  }
}

TEST_P(AgentInvariants, ServedIsOnTimePlusLate) {
  Violations v("metrics.served == served_on_time + served_late");
  for (const auto& c : all()) {
    const Series& x = c.run.series;
    const Metrics& m = c.metrics;
    v.check(m.served == sum(x.goodput) + sum(x.served_late) && m.served_on_time == sum(x.goodput) &&
                m.served_late == sum(x.served_late),
            c, [&] { return at(0, m.served, m.served_on_time + m.served_late); });
  }
}

// Every attempt sent is served, shed or rejected, or is still at the server
// at the end (the last step's backlog).
TEST_P(AgentInvariants, AttemptsAreConservedThroughTheServer) {
  Violations v(
      "first + retries - refused locally - final pooled == served + shed + rejected + final "
      "backlog");
  for (const auto& c : all()) {
    const Series& x = c.run.series;
    double sent = attempts_sent(x), gone = attempts_accounted_for(x);
    v.check(sent == gone, c, [&] { return at(x.size(), sent, gone); });
  }
}

TEST_P(AgentInvariants, NoSeriesHoldsANegativeOrFractionalCount) {
  Violations v("every count is a whole number >= 0");
  for (const auto& c : all()) {
    for (const auto& [name, member] : kSeriesFields) {
      if (name == "t_s" || name == "capacity") continue;  // not counts
      std::span<const double> series = c.run.series.*member;
      for (size_t t = 0; t < series.size(); ++t)
        v.check(series[t] >= 0 && series[t] == std::floor(series[t]), c,
                [&] { return std::string(name) + " " + at(t, series[t], 0); });
    }
  }
}

TEST_P(AgentInvariants, RetriesStayWithinTheAttemptsAndTheQueueLimit) {
  Violations retries("retries <= (attempts - 1) x user_requests");
  Violations none("retries 0 and one layer: no retries, nothing denied");
  Violations queue("backlog <= queue_limit + slots");
  for (const auto& c : all()) {
    const Scenario& s = c.scenario;
    const Series& x = c.run.series;
    double allowed = (s.attempts() - 1) * c.run.user_requests;
    retries.check(sum(x.retries) <= allowed, c, [&] { return at(0, sum(x.retries), allowed); });
    if (s.client.retries == 0 && s.client.layers == 1)
      none.check(sum(x.retries) == 0 && sum(x.budget_denied) == 0, c,
                 [&] { return at(0, sum(x.retries), 0); });
    if (s.server.queue_limit <= 0) continue;
    double bound = s.server.queue_limit + std::max(1, s.server.slots);
    for (size_t t = 0; t < x.size(); ++t)
      queue.check(x.backlog[t] <= bound, c, [&] { return at(t, x.backlog[t], bound); });
  }
}

TEST_P(AgentInvariants, MetricFractionsAreWithinZeroAndOne) {
  Violations v("fractions in [0, 1]");
  for (const auto& c : all()) {
    const Metrics& m = c.metrics;
    auto in01 = [](double f) { return f >= 0 && f <= 1 + 1e-12; };
    v.check(in01(m.failed_fraction) && in01(m.wasted_fraction), c,
            [&] { return at(0, m.failed_fraction, m.wasted_fraction); });
  }
}

// The same seed gives the same run, to the byte.
TEST_P(AgentInvariants, SameSeedGivesByteIdenticalJson) {
  Violations v("run_json(make_report(s)).dump() is deterministic");
  const auto& cases = all();
  for (size_t i = 0; i < cases.size(); i += 8) {
    const Case& c = cases[i];
    ReportOptions plain{.advice = false, .tipping = false};
    std::string a = run_json(make_report(c.scenario, plain)).dump();
    std::string b = run_json(make_report(c.scenario, plain)).dump();
    v.check(a == b, c, "two runs differ");
  }
}

INSTANTIATE_TEST_SUITE_P(Sets, AgentInvariants,
                         ::testing::Values(AgentSet::retrying, AgentSet::hedging,
                                           AgentSet::guarded),
                         [](const auto& info) {
                           return info.param == AgentSet::retrying  ? "retrying"
                                  : info.param == AgentSet::hedging ? "hedging"
                                                                    : "guarded";
                         });

}  // namespace
}  // namespace retrystorm
