#include "analysis/run_montecarlo.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "analysis/cost.hpp"
#include "engines/engine.hpp"

namespace retrystorm {

std::vector<Figure> montecarlo_figures(const Metrics& m) {
  std::vector<Figure> out;
  for (const MetricField& field : metric_fields())
    if (!field.montecarlo_name.empty())
      out.push_back({std::string(field.montecarlo_name), field.get(m)});
  return out;
}

Replication replication_of(const Metrics& m, const RunResult& run) {
  return {montecarlo_figures(m), {run.series.goodput.begin(), run.series.goodput.end()}};
}

MonteCarloResult run_montecarlo(const Scenario& s, int runs, unsigned threads) {
  MonteCarloResult r;
  r.runs = replication_count(s, runs);
  r.seed = s.seed;
  r.replications.resize(static_cast<size_t>(r.runs));
  // By default as many side by side as run_cost priced, at most one a core.
  if (threads == 0)
    threads = std::min(replications_at_once(s), std::max(1u, std::thread::hardware_concurrency()));
  Replicated all = replicate(s, r.runs, threads, [&](size_t i, const Scenario& replica) {
    RunResult run = run_engine(replica);
    r.replications[i] = compute_metrics(run);
    Replication out = replication_of(r.replications[i], run);
    if (i == 0) r.first = std::move(run);
    return out;
  });
  r.metrics = std::move(all.metrics);
  r.goodput = std::move(all.band);
  return r;
}

std::vector<Replication> montecarlo_part(const Scenario& s, size_t first, size_t count,
                                         unsigned threads) {
  return run_replications(s, first, count, threads, [](size_t, const Scenario& replica) {
    RunResult run = run_engine(replica);
    return replication_of(compute_metrics(run), run);
  });
}

MonteCarloResult montecarlo_of_parts(const Scenario& s, const std::vector<Replication>& all) {
  MonteCarloResult r;
  r.runs = static_cast<int>(all.size());
  r.seed = s.seed;
  Replicated summaries = summarize_replications(all);
  r.metrics = std::move(summaries.metrics);
  r.goodput = std::move(summaries.band);
  return r;
}
}  // namespace retrystorm
