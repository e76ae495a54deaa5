// The graph engine's target (docs/graph.md, "Speed"): a graph of 10 services
// at 5,000 user requests per second for 10 simulated minutes, at least 20 M
// events per second on one core, memory bounded by the attempts in flight
// (peak_calls). Its baseline, in the same run: BM_AgentEventRate, the
// engine of one server.
#include <benchmark/benchmark.h>

#include "engine_counters.hpp"
#include "engines/graph/graph_engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/keys.hpp"

using namespace retrystorm;

namespace {

// An ingress proxy, a gateway that calls five services at once, and four
// services below them; every call retries twice. About 50% load at the
// busiest servers and an incident that takes no capacity (without one, the
// default incident would tip the graph into a storm): the steady cost of a
// request through the graph.
constexpr const char* kTenServices = R"(
engine: agent
horizon_s: 600
step_s: 0.01
demand: {rate_per_s: 5000}
server: {service: exponential}
client:
  retries: 2
  timeout_s: 0.5
  backoff: {base_s: 0.05, multiplier: 2, cap_s: 1, jitter: full}
services:
  ingress: {}
  gateway: {capacity_per_s: 20000, slots: 64, pattern: parallel}
  auth: {capacity_per_s: 10000, slots: 16}
  users: {capacity_per_s: 10000, slots: 16}
  catalog: {capacity_per_s: 10000, slots: 16}
  cart: {capacity_per_s: 10000, slots: 16}
  search: {capacity_per_s: 10000, slots: 16}
  cache: {capacity_per_s: 10000, slots: 16}
  db: {capacity_per_s: 20000, slots: 32}
  index: {capacity_per_s: 10000, slots: 16}
calls:
  - {from: user, to: ingress, retries: 0, timeout_s: 5}
  - {from: ingress, to: gateway, timeout_s: 2}
  - {from: gateway, to: auth}
  - {from: gateway, to: users}
  - {from: gateway, to: catalog}
  - {from: gateway, to: cart}
  - {from: gateway, to: search}
  - {from: users, to: cache}
  - {from: catalog, to: db}
  - {from: cart, to: db}
  - {from: search, to: index}
incident: {service: db, start_s: 300, duration_s: 1, capacity_factor: 1}
)";

}  // namespace

static void BM_GraphTenServices(benchmark::State& state) {
  Scenario s = scenario_from_text(kTenServices, "ten-services");
  RunLimits limits;
  limits.max_agent_requests = 1e9;
  validate(s, limits);
  AgentStats stats;
  for (auto _ : state) {
    stats = {};
    benchmark::DoNotOptimize(run_graph(s, {nullptr, &stats}));
  }
  engine_counters(state, stats);
}
BENCHMARK(BM_GraphTenServices)->Unit(benchmark::kMillisecond)->Iterations(1);
