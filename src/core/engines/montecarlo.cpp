#include "engines/montecarlo.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <optional>
#include <thread>

#include "engines/engine.hpp"

namespace retrystorm {

namespace {

// Two-sided 95% quantile of Student's t with df degrees of freedom.
double t95(size_t df) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return 0;
  if (df <= 30) return table[df - 1];
  return 1.96 + 2.5 / static_cast<double>(df);  // within 0.002 of the exact value
}

using Getter = std::function<std::optional<double>(const Metrics&)>;

const std::vector<std::pair<std::string, Getter>>& metric_getters() {
  static const std::vector<std::pair<std::string, Getter>> all = {
      {"user_requests", [](const Metrics& m) { return m.user_requests; }},
      {"failed", [](const Metrics& m) { return m.failed; }},
      {"failed_fraction", [](const Metrics& m) { return m.failed_fraction; }},
      {"succeeded", [](const Metrics& m) { return m.succeeded; }},
      {"in_flight", [](const Metrics& m) { return m.in_flight; }},
      {"served", [](const Metrics& m) { return m.served; }},
      {"served_late", [](const Metrics& m) { return m.served_late; }},
      {"shed", [](const Metrics& m) { return m.shed; }},
      {"rejected", [](const Metrics& m) { return m.rejected; }},
      {"budget_denied", [](const Metrics& m) { return m.budget_denied; }},
      {"wasted_fraction", [](const Metrics& m) { return m.wasted_fraction; }},
      {"peak_amplification", [](const Metrics& m) { return m.peak_amplification; }},
      {"recovered", [](const Metrics& m) { return m.recovered ? 1.0 : 0.0; }},
      {"goodput_recovery_s", [](const Metrics& m) { return m.goodput_recovery_s; }},
      {"failure_recovery_s", [](const Metrics& m) { return m.failure_recovery_s; }},
      {"last_window_goodput_per_s", [](const Metrics& m) { return m.last_window.goodput_per_s; }},
      {"latency_p50_s", [](const Metrics& m) { return m.latency_p50_s; }},
      {"latency_p90_s", [](const Metrics& m) { return m.latency_p90_s; }},
      {"latency_p99_s", [](const Metrics& m) { return m.latency_p99_s; }},
      {"last_window_attempts_per_request",
       [](const Metrics& m) { return m.last_window.attempts_per_request; }},
  };
  return all;
}

}  // namespace

namespace {

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

MetricSummary summarize(const std::vector<double>& values, double floor) {
  MetricSummary out;
  out.n = values.size();
  if (values.empty()) return out;
  spread(out, values);
  double sum = 0;
  for (double v : values) sum += v;
  out.mean = sum / static_cast<double>(out.n);
  out.low = out.high = out.mean;
  if (out.n < 2) return out;
  double ss = 0;
  for (double v : values) ss += (v - out.mean) * (v - out.mean);
  double half = t95(out.n - 1) * std::sqrt(ss / static_cast<double>(out.n - 1)) /
                std::sqrt(static_cast<double>(out.n));
  out.low = std::max(out.mean - half, floor);
  out.high = out.mean + half;
  return out;
}

void for_each_replication(size_t total, unsigned threads, const std::function<void(size_t)>& work) {
  threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(total, 1)));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto loop = [&] {
    try {
      for (size_t i; !failed && (i = next.fetch_add(1)) < total;) work(i);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

MonteCarloResult run_montecarlo(const Scenario& s, int runs, unsigned threads) {
  MonteCarloResult r;
  r.runs = std::max(1, runs > 0 ? runs : s.runs);
  r.seed = s.seed;
  r.replications.resize(static_cast<size_t>(r.runs));
  size_t total = r.replications.size();
  std::vector<std::vector<double>> goodput(total);
  for_each_replication(total, threads, [&](size_t i) {
    Scenario rep = s;
    rep.seed = s.seed + static_cast<double>(i);
    RunResult run = run_engine(rep);
    r.replications[i] = compute_metrics(run);
    goodput[i].assign(run.series.goodput.begin(), run.series.goodput.end());
    if (i == 0) r.first = std::move(run);
  });
  r.goodput = band_of(goodput);
  for (const auto& [name, get] : metric_getters()) {
    std::vector<double> values;
    for (const Metrics& m : r.replications)
      if (auto v = get(m)) values.push_back(*v);
    r.metrics.emplace_back(name, summarize(values, floor_of(values)));
  }
  return r;
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

std::string montecarlo_text(const MonteCarloResult& r) {
  return summaries_text(r.runs, r.seed, r.metrics);
}

std::string summaries_text(int runs, double seed,
                           const std::vector<std::pair<std::string, MetricSummary>>& metrics) {
  char line[256];
  std::snprintf(line, sizeof line,
                "\nMonte Carlo: %d runs from seed %.0f (mean, 95%% interval of the mean; per "
                "seed min / median / max)\n",
                runs, seed);
  std::string out = line;
  for (const auto& [name, m] : metrics) {
    if (m.n == 0) {
      std::snprintf(line, sizeof line, "  %-34s never\n", name.c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-34s %.6g  [%.6g, %.6g]  %.6g / %.6g / %.6g%s\n",
                    name.c_str(), m.mean, m.low, m.high, m.min, m.median, m.max,
                    m.n < static_cast<size_t>(runs)
                        ? (" in " + std::to_string(m.n) + (m.n == 1 ? " run" : " runs")).c_str()
                        : "");
    }
    out += line;
  }
  return out;
}

}  // namespace retrystorm
