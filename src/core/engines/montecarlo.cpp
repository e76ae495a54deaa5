#include "engines/montecarlo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <functional>

#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"

namespace retrystorm {

namespace {

// Two-sided 95% quantile of Student's t with df degrees of freedom, by
// Boost.Math, rounded to three decimals as printed tables are: the intervals
// written before (from such a table up to 30 degrees) stay the same bytes.
double t95(size_t df) {
  if (df == 0) return 0;
  boost::math::students_t t(static_cast<double>(df));
  return std::round(boost::math::quantile(t, 0.975) * 1000) / 1000;
}

// Min, median (the middle two averaged when n is even) and max.
void spread(MetricSummary& out, std::vector<double> sorted) {
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  out.min = sorted.front();
  out.max = sorted.back();
  out.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

}  // namespace

double floor_of(const std::vector<double>& values) {
  bool negative = std::any_of(values.begin(), values.end(), [](double v) { return v < 0; });
  return negative ? -std::numeric_limits<double>::infinity() : 0;
}

double ceiling_of(std::string_view name) {
  const bool flag = name == "recovered" || name == "backlog_growing";
  const bool share = name.ends_with("_fraction") || name.ends_with("_share");
  return flag || share ? 1 : std::numeric_limits<double>::infinity();
}

MetricSummary summarize(const std::vector<double>& values, double floor, double ceiling) {
  MetricSummary out;
  out.n = values.size();
  if (values.empty()) return out;
  spread(out, values);
  double sum = 0;
  for (double v : values) sum += v;
  // The rounded sum of n equal values over n can miss them by an ulp (three
  // of ...966 gave ...964, with an interval that was not of zero width).
  out.mean = std::clamp(sum / static_cast<double>(out.n), out.min, out.max);
  out.low = out.high = out.mean;
  if (out.n < 2) return out;
  double ss = 0;
  for (double v : values) ss += (v - out.mean) * (v - out.mean);
  double half = t95(out.n - 1) * std::sqrt(ss / static_cast<double>(out.n - 1)) /
                std::sqrt(static_cast<double>(out.n));
  out.low = std::max(out.mean - half, floor);
  out.high = std::min(out.mean + half, ceiling);
  return out;
}

int replication_count(const Scenario& s, int runs) {
  return std::max(1, runs > 0 ? runs : s.runs);
}

namespace {

// Each figure over the replications that have it, in replication order.
Summaries summarize_figures(const std::vector<Replication>& all) {
  Summaries out;
  if (all.empty()) return out;
  for (size_t k = 0; k < all[0].figures.size(); ++k) {
    std::vector<double> values;
    for (const Replication& replication : all)
      if (replication.figures[k].value) values.push_back(*replication.figures[k].value);
    const Figure& first = all[0].figures[k];
    double floor =
        first.can_be_negative ? -std::numeric_limits<double>::infinity() : floor_of(values);
    out.emplace_back(first.name, summarize(values, floor, ceiling_of(first.name)));
  }
  return out;
}

}  // namespace

void check_replication_seeds(const Scenario& s, size_t runs) {
  if (runs == 0 || s.seed + static_cast<double>(runs - 1) <= kMaxSeed) return;
  throw InputError(fmt::format(
      "seed: {:.0f} with {} replications would pass {:.0f}, past which seeds round and two "
      "replications would share one; the first seed is at most {:.0f} for {} replications",
      s.seed, runs, kMaxSeed, kMaxSeed - static_cast<double>(runs - 1), runs));
}

std::vector<Replication> run_replications(const Scenario& s, size_t first, size_t count,
                                          unsigned threads, const RunReplication& run_one) {
  check_replication_seeds(s, first + count);
  std::vector<Replication> out(count);
  auto run_replication = [&](size_t k) {
    Scenario replica = s;
    replica.seed = s.seed + static_cast<double>(first + k);
    out[k] = run_one(first + k, replica);
  };
  PoolOptions options;
  options.threads = threads;
  for_each_index(count, run_replication, options);
  return out;
}

Replicated summarize_replications(const std::vector<Replication>& all) {
  std::vector<std::vector<double>> bands;
  bands.reserve(all.size());
  for (const Replication& r : all) bands.push_back(r.band);
  return {summarize_figures(all), band_of(bands)};
}

Replicated replicate(const Scenario& s, int runs, unsigned threads, const RunReplication& run_one) {
  size_t total = static_cast<size_t>(replication_count(s, runs));
  return summarize_replications(run_replications(s, 0, total, threads, run_one));
}

Band band_of(const std::vector<std::vector<double>>& series) {
  Band band;
  size_t steps = series.empty() ? 0 : series[0].size();
  std::vector<double> values(series.size());
  for (size_t k = 0; k < steps; ++k) {
    for (size_t i = 0; i < series.size(); ++i) values[i] = series[i][k];
    MetricSummary m = summarize(values, floor_of(values));
    band.low.push_back(m.low);
    band.mean.push_back(m.mean);
    band.high.push_back(m.high);
  }
  return band;
}

Share share_of(int k, int n) {
  Share s;
  s.k = k, s.n = n;
  if (n <= 0) return s;
  const double z = 1.959963984540054, p = static_cast<double>(k) / n;
  const double centre = (p + z * z / (2 * n)) / (1 + z * z / n);
  const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / (1 + z * z / n);
  s.p = p;
  // None of n (or all of them) puts that end at 0 (or 1) exactly: the
  // formula reaches it only up to rounding (3.5e-18 for 0 of 100).
  s.low = k == 0 ? 0.0 : std::max(0.0, centre - half);
  s.high = k == n ? 1.0 : std::min(1.0, centre + half);
  return s;
}

}  // namespace retrystorm
