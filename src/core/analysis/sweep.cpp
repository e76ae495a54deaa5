#include "analysis/sweep.hpp"

#include <cmath>

#include "engines/engine.hpp"
#include "model/keys.hpp"
#include "parallel/thread_pool.hpp"

namespace retrystorm {

namespace {
// Grid values are rounded so 0.1 + 0.2 reads 0.3 in output and validation.
double tidy(double v) {
  return std::round(v * 1e9) / 1e9;
}
}  // namespace

std::vector<double> SweepAxis::values() const {
  std::vector<double> out;
  long n = static_cast<long>(std::floor((to - from) / step + 1e-9));
  for (long i = 0; i <= n; ++i) out.push_back(tidy(from + i * step));
  return out;
}

SweepAxis parse_axis(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos)
    throw InputError("--vary: '" + text + "' must look like PATH=FROM:TO:STEP");
  SweepAxis axis;
  axis.path = text.substr(0, eq);
  std::string range = text.substr(eq + 1);
  double parts[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t colon = i < 2 ? range.find(':', pos) : range.size();
    if (colon == std::string::npos)
      throw InputError("--vary " + axis.path + ": '" + range + "' must be FROM:TO:STEP");
    std::string part = range.substr(pos, colon - pos);
    try {
      size_t used = 0;
      parts[i] = std::stod(part, &used);
      if (used != part.size() || !std::isfinite(parts[i])) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw InputError("--vary " + axis.path + ": '" + part + "' is not a number");
    }
    pos = colon + 1;
  }
  axis.from = parts[0];
  axis.to = parts[1];
  axis.step = parts[2];
  return axis;
}

std::vector<SweepRow> run_sweep(const Scenario& base, const std::vector<SweepAxis>& axes,
                                const SweepOptions& options) {
  require_step_run(base);  // fails before any grid point is built
  if (axes.empty()) throw InputError("vary: give at least one key to vary");
  std::vector<std::vector<double>> values;
  size_t total = 1;
  for (const SweepAxis& a : axes) {
    const KeySpec& k = key_or_throw(a.path);
    if (k.type != KeyType::number && k.type != KeyType::integer)
      throw InputError("vary " + a.path + ": only numeric keys can be varied");
    if (!(a.step > 0))
      throw InputError("vary " + a.path + ": step " + to_string(KeyValue{a.step}) +
                       " must be above 0");
    if (a.to < a.from)
      throw InputError("vary " + a.path + ": 'to' " + to_string(KeyValue{a.to}) +
                       " is below 'from' " + to_string(KeyValue{a.from}));
    values.push_back(a.values());
    total *= values.back().size();
    if (total > options.max_runs)
      throw InputError("vary: the grid has more than " + std::to_string(options.max_runs) +
                       " points; the limit is " + std::to_string(options.max_runs));
  }

  // Build and validate every grid point first, so bad input fails before work.
  std::vector<Scenario> points(total, base);
  std::vector<SweepRow> rows(total);
  for (size_t i = 0; i < total; ++i) {
    size_t rest = i;
    for (size_t a = axes.size(); a-- > 0;) {
      double v = values[a][rest % values[a].size()];
      rest /= values[a].size();
      set_key(points[i], axes[a].path, v);
      rows[i].values.insert(rows[i].values.begin(), v);
    }
    validate(points[i]);
  }

  auto run_point = [&](size_t i) { rows[i].metrics = compute_metrics(run_engine(points[i])); };
  if (!for_each_index(total, run_point, {options.threads, options.progress, options.cancelled}))
    throw Cancelled();
  return rows;
}

}  // namespace retrystorm
