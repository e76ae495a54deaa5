// The agent engine against queueing theory: M/M/1 mean time in system,
// M/M/c against Erlang C, M/G/1 against Pollaczek-Khinchine, and Little's law.
// Seeds are fixed. Each check pools four replications (seeds 1 to 4); over
// seeds 1 to 6 single replications of these sizes stayed within about 1% to 2.6%
// of theory at load 0.9, so four keep the error near a third of the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/metrics.hpp"
#include "engines/agent/agent.hpp"
#include "engines/fluid.hpp"
#include "model/keys.hpp"
#include "open_queue.hpp"

namespace retrystorm {
namespace {

// A stable queue with no incident, no retries and timeouts far beyond any wait.
Scenario queue(double lambda, double mu_total, int slots, double customers) {
  Scenario s = testing::open_queue(lambda, mu_total, std::ceil(customers / lambda));
  s.name = "theory";
  s.step_s = 1;
  s.server.slots = slots;
  s.seed = 7;
  validate(s);
  return s;
}

struct Measured {
  double mean_time_s;  // W
  double mean_number;  // L (time average)
  double throughput;   // served per second
  AgentStats stats;
};

// Pools `reps` replications (seeds 1, 2, ...).
Measured measure(Scenario s, int reps = 4) {
  Measured m{};
  for (int r = 1; r <= reps; ++r) {
    s.seed = r;
    AgentStats one;
    run_agent(s, {nullptr, &one});
    m.stats.completed += one.completed;
    m.stats.sojourn_sum_s += one.sojourn_sum_s;
    m.stats.area_in_system += one.area_in_system;
    m.stats.peak_calls = std::max(m.stats.peak_calls, one.peak_calls);
  }
  double time = s.horizon_s * reps;
  m.mean_time_s = m.stats.sojourn_sum_s / static_cast<double>(m.stats.completed);
  m.mean_number = m.stats.area_in_system / time;
  m.throughput = static_cast<double>(m.stats.completed) / time;
  return m;
}

double erlang_c(int c, double a) {  // probability of waiting, offered load a = lambda / mu
  double term = 1, sum = 1;
  for (int k = 1; k < c; ++k) {
    term *= a / k;
    sum += term;
  }
  double last = term * a / c / (1 - a / c);
  return last / (sum + last);
}

TEST(AgentTheory, MM1MeanTimeInSystem) {
  const double mu = 100;
  // Customers per load: the error of the mean grows as 1 / (1 - rho).
  const std::pair<double, double> loads[] = {{0.5, 2e5}, {0.8, 6e5}, {0.9, 1.5e6}};
  for (auto [rho, customers] : loads) {
    Measured m = measure(queue(rho * mu, mu, 1, customers));
    double theory = 1 / (mu - rho * mu);
    double err = m.mean_time_s / theory - 1;
    RecordProperty("rho_" + std::to_string(rho), std::to_string(err));
    // Memory is bounded by what is in flight, not by the customers served.
    EXPECT_LT(m.stats.peak_calls, 1000u);
    EXPECT_LT(std::fabs(err), 0.02) << "rho " << rho << ": W " << m.mean_time_s << " vs " << theory;
  }
}

TEST(AgentTheory, MMcAgainstErlangC) {
  const double mu = 25;  // per slot
  for (int c : {2, 4}) {
    double rho = 0.8, lambda = rho * c * mu;
    Measured m = measure(queue(lambda, c * mu, c, 4e5));
    double theory = erlang_c(c, lambda / mu) / (c * mu - lambda) + 1 / mu;
    double err = m.mean_time_s / theory - 1;
    EXPECT_LT(std::fabs(err), 0.02) << "c " << c << ": W " << m.mean_time_s << " vs " << theory;
  }
}

TEST(AgentTheory, LittlesLaw) {
  for (double rho : {0.5, 0.9}) {
    Measured m = measure(queue(rho * 100, 100, 1, 2e5), 1);
    double little = m.throughput * m.mean_time_s;
    EXPECT_LT(std::fabs(m.mean_number / little - 1), 0.01)
        << "rho " << rho << ": L " << m.mean_number << " vs lambda W " << little;
  }
}

TEST(AgentTheory, MG1PollaczekKhinchine) {
  // Two-point service (mean 10 ms, values 5 and 15 ms): E[S^2] = 1.25 mean^2.
  Scenario s = queue(70, 100, 1, 4e5);
  s.server.service = ServiceDist::two_point;
  s.server.service_sigma = 0.5;
  Measured m = measure(s);
  double mean = 0.01, es2 = 1.25 * mean * mean, lambda = 70, rho = 0.7;
  double theory = lambda * es2 / (2 * (1 - rho)) + mean;
  EXPECT_LT(std::fabs(m.mean_time_s / theory - 1), 0.02) << m.mean_time_s << " vs " << theory;
}

TEST(AgentTheory, LifoHasTheSameMeanAsFifo) {
  // Non-preemptive LIFO changes who waits, not the mean (M/M/1).
  Scenario s = queue(80, 100, 1, 6e5);
  s.server.discipline = QueueDiscipline::lifo;
  Measured m = measure(s);
  EXPECT_LT(std::fabs(m.mean_time_s / (1 / 20.0) - 1), 0.03) << m.mean_time_s;
}

}  // namespace
}  // namespace retrystorm

namespace retrystorm {
namespace {

// Latency percentiles of successful requests: M/M/1 time in system is
// exponential with mean 1/(mu - lambda), so its p-quantile is -ln(1-p)/(mu - lambda).
TEST(AgentTheory, SuccessLatencyPercentilesOfMM1) {
  const double mu = 100, lambda = 80;
  Scenario s = queue(lambda, mu, 1, 1e6);
  Metrics m = compute_metrics(run_agent(s));
  double rate = mu - lambda;
  ASSERT_TRUE(m.latency_p50_s && m.latency_p90_s && m.latency_p99_s);
  for (auto [q, got] : {std::pair{0.5, *m.latency_p50_s}, std::pair{0.9, *m.latency_p90_s},
                        std::pair{0.99, *m.latency_p99_s}}) {
    double theory = -std::log(1 - q) / rate;
    EXPECT_NEAR(got, theory, 0.05 * theory) << "p" << q * 100;
  }
  // The fluid model has no per-request latency.
  s.engine = Engine::fluid;
  s.client.timeout_s = 100;
  s.horizon_s = 1000;
  EXPECT_FALSE(compute_metrics(run_fluid(s)).latency_p50_s);
}

}  // namespace
}  // namespace retrystorm
