#include "analysis/run_montecarlo.hpp"

#include <string>
#include <utility>

#include "engines/engine.hpp"

namespace retrystorm {

std::vector<Figure> montecarlo_figures(const Metrics& m) {
  std::vector<Figure> out;
  for (const MetricField& field : metric_fields())
    if (!field.montecarlo_name.empty())
      out.push_back({std::string(field.montecarlo_name), field.get(m)});
  return out;
}

MonteCarloResult run_montecarlo(const Scenario& s, int runs, unsigned threads) {
  MonteCarloResult r;
  r.runs = replication_count(s, runs);
  r.seed = s.seed;
  r.replications.resize(static_cast<size_t>(r.runs));
  Replicated all = replicate(s, r.runs, threads, [&](size_t i, const Scenario& replica) {
    RunResult run = run_engine(replica);
    r.replications[i] = compute_metrics(run);
    Replication out{montecarlo_figures(r.replications[i]),
                    {run.series.goodput.begin(), run.series.goodput.end()}};
    if (i == 0) r.first = std::move(run);
    return out;
  });
  r.metrics = std::move(all.metrics);
  r.goodput = std::move(all.band);
  return r;
}

}  // namespace retrystorm
