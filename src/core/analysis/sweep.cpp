#include "analysis/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "analysis/run_montecarlo.hpp"
#include "engines/engine.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"
#include "text/number.hpp"

namespace retrystorm {

namespace {
// Grid values are rounded so 0.1 + 0.2 reads 0.3 in output and validation.
double tidy(double v) {
  return std::round(v * 1e9) / 1e9;
}
}  // namespace

double SweepAxis::point_count() const {
  if (!listed.empty()) return static_cast<double>(listed.size());
  double n = std::floor((to - from) / step + 1e-9) + 1;
  return std::isfinite(n) ? n : std::numeric_limits<double>::infinity();
}

std::vector<double> SweepAxis::values() const {
  if (!listed.empty()) return listed;
  std::vector<double> out;
  auto n = static_cast<size_t>(point_count());  // checked by sweep_grid first
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(tidy(from + static_cast<double>(i) * step));
  return out;
}

double SweepAxis::lowest() const {
  return listed.empty() ? from : *std::min_element(listed.begin(), listed.end());
}

double SweepAxis::highest() const {
  return listed.empty() ? to : *std::max_element(listed.begin(), listed.end());
}

std::optional<double> sweep_figure(const SweepRow& row, const MetricField& field) {
  if (row.montecarlo.empty()) return field.get(row.metrics);
  for (const auto& [name, summary] : row.montecarlo)
    if (name == field.name) return summary.n ? std::optional<double>(summary.mean) : std::nullopt;
  return std::nullopt;
}

namespace {

// One number of an axis, read as every number of text input is (parse_decimal).
double axis_number(const std::string& path, const std::string& part) {
  double v = 0;
  if (parse_decimal(part, v) != NumberText::ok || !std::isfinite(v))
    throw InputError("--vary " + path + ": '" + part + "' is not a number");
  return v;
}

// "a,b,c" -> its numbers (a single "a" is a list of one).
std::vector<double> listed_values(const std::string& path, const std::string& text) {
  std::vector<double> out;
  std::string bad;
  if (!parse_number_list(text, out, bad))
    throw InputError("--vary " + path + ": '" + bad + "' is not a number");
  if (out.empty())
    throw InputError("--vary " + path + ": no values; give FROM:TO:STEP or V1,V2,...");
  return out;
}

}  // namespace

SweepAxis parse_axis(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError("--vary: '" + text + "' must look like PATH=FROM:TO:STEP or PATH=V1,V2,...");
  SweepAxis axis;
  axis.path = text.substr(0, eq);
  std::string range = text.substr(eq + 1);
  if (range.find(':') == std::string::npos) {
    axis.listed = listed_values(axis.path, range);
    return axis;
  }
  double parts[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t colon = i < 2 ? range.find(':', pos) : range.size();
    if (colon == std::string::npos)
      throw InputError("--vary " + axis.path + ": '" + range +
                       "' must be FROM:TO:STEP or V1,V2,...");
    parts[i] = axis_number(axis.path, range.substr(pos, colon - pos));
    pos = colon + 1;
  }
  axis.from = parts[0];
  axis.to = parts[1];
  axis.step = parts[2];
  return axis;
}

namespace {

// Checks one axis before its values are listed.
void check_axis(const SweepAxis& a) {
  // Every point runs the sweep's replications (run_point reads options.runs,
  // not the point's key): an axis of runs would label rows with counts that
  // never ran.
  if (a.path == "runs")
    throw InputError(
        "vary runs: every point runs the sweep's own replications; give them with --runs N "
        "(one sweep per count to compare counts)");
  KeyType type = is_graph_path(a.path) ? graph_key_type(a.path) : key_or_throw(a.path).type;
  if (type != KeyType::number && type != KeyType::integer)
    throw InputError("vary " + a.path + ": only numeric keys can be varied");
  if (!a.listed.empty()) {
    for (double v : a.listed)
      if (!std::isfinite(v))
        throw InputError("vary " + a.path + ": the value " + to_string(KeyValue{v}) +
                         " is not a finite number");
    return;  // each value is then validated at its grid points
  }
  if (!(a.step > 0))
    throw InputError("vary " + a.path + ": step " + to_string(KeyValue{a.step}) +
                     " must be above 0");
  if (a.to < a.from)
    throw InputError("vary " + a.path + ": 'to' " + to_string(KeyValue{a.to}) +
                     " is below 'from' " + to_string(KeyValue{a.from}));
}

std::string axis_text(const SweepAxis& a) {
  if (!a.listed.empty()) return std::to_string(a.listed.size()) + " listed values";
  return "step " + to_string(KeyValue{a.step}) + " from " + to_string(KeyValue{a.from}) + " to " +
         to_string(KeyValue{a.to});
}

// The grid's last seed, S + points x runs - 1 (point i's replication r runs
// at S + i x runs + r), at most kMaxSeed: past it seeds round and two runs
// would share one. Checked for the whole grid, so that every shard and task
// refuses before any work, not only the one that holds the last points.
void check_grid_seeds(double seed, size_t points, int runs) {
  const double seeds = static_cast<double>(points) * std::max(runs, 1);
  if (seed + (seeds - 1) <= kMaxSeed) return;
  throw InputError(fmt::format(
      "--seed: {:.0f} with {} points x {} runs would reach seed {:.0f}, past {:.0f}, where seeds "
      "round and two runs would share one; this grid allows a base seed of at most {:.0f}",
      seed, points, std::max(runs, 1), seed + (seeds - 1), kMaxSeed, kMaxSeed - (seeds - 1)));
}

// Replications and the base seed, checked with the keys' own ranges.
void check_replications(const Scenario& base, const std::vector<SweepAxis>& axes,
                        const SweepOptions& options, size_t points) {
  Scenario probe = base;
  set_key(probe, "runs", KeyValue{static_cast<double>(options.runs)});
  if (!options.seed) return;
  set_key(probe, "seed", KeyValue{*options.seed});
  if (*options.seed != std::floor(*options.seed))  // every engine: seeds S + i * runs + r
    throw InputError("seed: " + to_string(KeyValue{*options.seed}) +
                     " must be a whole number (the base seed of the sweep)");
  for (const SweepAxis& a : axes)
    if (a.path == "seed")
      throw InputError("vary seed: a sweep with a base seed derives each point's seed itself");
  check_grid_seeds(*options.seed, points, options.runs);
}

// One point's row: a run, or run_montecarlo's replications (one thread: the
// sweep's pool already runs points side by side).
void run_point(const Scenario& s, int runs, SweepRow& row) {
  if (runs <= 1) {
    row.metrics = compute_metrics(run_engine(s));
    return;
  }
  MonteCarloResult mc = run_montecarlo(s, runs, 1);
  row.montecarlo = std::move(mc.metrics);
  // The top-level figures Monte Carlo leaves out (backlog_growing, ...), so
  // every column of the sweep has its mean.
  for (const MetricField& field : metric_fields()) {
    if (!field.montecarlo_name.empty() || !field.group.empty()) continue;
    std::vector<double> values;
    for (const Metrics& m : mc.replications)
      if (std::optional<double> v = field.get(m)) values.push_back(*v);
    row.montecarlo.emplace_back(std::string(field.name),
                                summarize(values, floor_of(values), ceiling_of(field.name)));
  }
  row.metrics = std::move(mc.replications.front());
}

}  // namespace

std::vector<double> SweepGrid::point_values(size_t point) const {
  std::vector<double> out(values.size());
  for (size_t a = values.size(); a-- > 0;) {
    out[a] = values[a][point % values[a].size()];
    point /= values[a].size();
  }
  return out;
}

SweepGrid sweep_grid(const Scenario& base, const std::vector<SweepAxis>& axes,
                     const SweepOptions& options) {
  require_step_run(base);  // fails before any grid point is built
  if (axes.empty()) throw InputError("vary: give at least one key to vary");
  SweepGrid grid;
  double points = 1;  // counted before any axis is listed
  for (size_t i = 0; i < axes.size(); ++i) {
    const SweepAxis& a = axes[i];
    // A key varied twice: the later axis would overwrite the earlier one's
    // values in every row, and its columns would disagree with the runs.
    for (size_t j = 0; j < i; ++j)
      if (axes[j].path == a.path)
        throw InputError("vary " + a.path + ": varied twice; give each key one axis");
    check_axis(a);
    points *= a.point_count();
    if (!(points <= static_cast<double>(options.max_runs))) {
      // Every axis so far is named: the product is too large, not the last one.
      std::string product = axis_text(a);
      if (i > 0) {
        product.clear();
        for (size_t j = 0; j <= i; ++j)
          product += (j ? " x " : "") + axes[j].path + " " + axis_text(axes[j]);
      }
      throw InputError("vary " + a.path + ": the grid has more than " +
                       std::to_string(options.max_runs) + " points (" + product +
                       "); the limit is " + std::to_string(options.max_runs));
    }
  }
  for (const SweepAxis& a : axes) {
    grid.values.push_back(a.values());
    grid.points *= grid.values.back().size();
  }
  check_replications(base, axes, options, grid.points);
  // Every grid point is built and validated first, so bad input fails before work.
  if (options.validate_grid) {
    Scenario point;
    for (size_t i = 0; i < grid.points; ++i) {
      sweep_point_into(point, base, axes, grid, i, options);
      validate(point, options.limits);
    }
  }
  return grid;
}

namespace {

// The point's values (and its seed) set on a copy of the base.
void set_point_keys(Scenario& s, const std::vector<SweepAxis>& axes, const SweepGrid& grid,
                    size_t i, const SweepOptions& options) {
  std::vector<double> values = grid.point_values(i);
  for (size_t a = 0; a < axes.size(); ++a) set_key(s, axes[a].path, KeyValue{values[a]});
  if (options.seed)
    set_key(s, "seed",
            KeyValue{*options.seed + static_cast<double>(i) * static_cast<double>(options.runs)});
}

}  // namespace

Scenario sweep_point(const Scenario& base, const std::vector<SweepAxis>& axes,
                     const SweepGrid& grid, size_t i, const SweepOptions& options) {
  Scenario s = base;
  set_point_keys(s, axes, grid, i, options);
  return s;
}

void sweep_point_into(Scenario& out, const Scenario& base, const std::vector<SweepAxis>& axes,
                      const SweepGrid& grid, size_t i, const SweepOptions& options) {
  out = base;
  set_point_keys(out, axes, grid, i, options);
}

namespace {

// Where range k's share of the total cost ends.
double share_end(double total, size_t parts, size_t k) {
  return total * static_cast<double>(k + 1) / parts;
}

// The first range from k on that does not end at a point whose cost's middle
// is `middle` (the last range ends at the grid's end). The share ends climb
// with k, so a bisection finds it: stepping through them one by one took a
// billion steps for --shard 1/1000000000.
size_t first_open_range(double total, size_t parts, size_t k, double middle) {
  size_t high = parts - 1;
  while (k < high) {
    const size_t mid = k + (high - k) / 2;
    if (middle >= share_end(total, parts, mid))
      k = mid + 1;
    else
      high = mid;
  }
  return k;
}

// The cut of the points into `parts` ranges of about equal cost, as
// `mark(from, to, at)`: ranges [from, to) end at point `at` (the next range
// starts there). Range k ends at the first point whose cost, summed from the
// start, reaches (k + 1) / parts of the total: a point belongs to the range
// its first half falls in. Without an estimate, equal counts.
template <typename Mark>
void walk_cuts(const std::vector<double>& costs, size_t parts, Mark mark) {
  const size_t n = costs.size();
  double total = 0;
  for (double c : costs) total += c;
  if (!(total > 0) || !std::isfinite(total)) {
    for (size_t k = 0; k < parts; ++k) mark(k, k + 1, (k + 1) * n / parts);
    return;
  }
  double sum = 0;
  size_t k = 0;  // the first range not yet ended
  for (size_t i = 0; i < n; ++i) {
    const size_t next = first_open_range(total, parts, k, sum + costs[i] / 2);
    if (next > k) mark(k, next, i);
    k = next;
    sum += costs[i];
  }
  mark(k, parts, n);
}

}  // namespace

std::vector<std::pair<size_t, size_t>> cost_balanced_ranges(const std::vector<double>& costs,
                                                            size_t parts) {
  parts = std::max<size_t>(parts, 1);
  std::vector<size_t> ends(parts);
  walk_cuts(costs, parts, [&](size_t from, size_t to, size_t at) {
    for (size_t k = from; k < to; ++k) ends[k] = at;
  });
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t k = 0, first = 0; k < parts; first = ends[k++])
    out.emplace_back(first, ends[k] - first);
  return out;
}

std::pair<size_t, size_t> cost_balanced_range(const std::vector<double>& costs, size_t parts,
                                              size_t part) {
  parts = std::max<size_t>(parts, 1);
  size_t first = 0, end = 0;  // range `part`'s, kept as the walk ends each range
  walk_cuts(costs, parts, [&](size_t from, size_t to, size_t at) {
    if (from <= part && part < to) end = at;
    if (part > 0 && from <= part - 1 && part - 1 < to) first = at;
  });
  return {first, end - first};
}

size_t sweep_range_end(size_t points, const SweepOptions& options) {
  size_t first = std::min(options.first, points);
  return points - first < options.count ? points : first + options.count;
}

std::vector<SweepRow> run_sweep(const Scenario& base, const std::vector<SweepAxis>& axes,
                                const SweepOptions& options) {
  SweepGrid grid = sweep_grid(base, axes, options);
  size_t first = std::min(options.first, grid.points);
  size_t total = sweep_range_end(grid.points, options) - first;
  std::vector<Scenario> points;
  std::vector<SweepRow> rows(total);
  points.reserve(total);
  for (size_t i = 0; i < total; ++i) {
    points.push_back(sweep_point(base, axes, grid, first + i, options));
    if (!options.validate_grid) validate(points.back(), options.limits);
    rows[i].point = first + i;
    rows[i].values = grid.point_values(first + i);
  }
  auto run_one = [&](size_t i) { run_point(points[i], options.runs, rows[i]); };
  if (!for_each_index(total, run_one, {options.threads, options.progress, options.cancelled}))
    throw Cancelled();
  return rows;
}

}  // namespace retrystorm
