#include "analysis/ladder.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/graph_report.hpp"
#include "analysis/metrics.hpp"
#include "engines/engine.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"
#include "text/printable.hpp"

namespace retrystorm {

namespace {
std::string seconds_text(double s) {
  if (s < 1) return std::to_string(static_cast<int>(std::lround(s * 1000))) + " ms";
  std::string t = to_string(KeyValue{std::round(s * 100) / 100});
  return t + " s";
}
}  // namespace

Ladder generic_ladder(const Scenario& s) {
  if (!s.graph.empty()) return {LadderMode::single, graph_defenses(s)};  // one hop at a time
  int retries = std::max(s.client.retries, 2);
  // A stack of its own (client.stack_retries) wins over client.retries: the
  // rows set it, layer by layer, or "No retries" kept retrying.
  const bool stacked = !s.client.stack_retries.empty();
  std::string none_each, immediate_each;
  double attempts = 1;
  for (int r : s.layer_retries()) {
    const int immediate = std::max(r, 2);
    none_each += (none_each.empty() ? "" : ",") + std::string("0");
    immediate_each += (immediate_each.empty() ? "" : ",") + std::to_string(immediate);
    attempts *= stacked ? immediate + 1 : retries + 1;
  }
  using Settings = std::vector<std::pair<std::string, KeyValue>>;
  const Settings no_retries =
      stacked ? Settings{{"client.stack_retries", none_each}} : Settings{{"client.retries", 0.0}};
  const std::pair<std::string, KeyValue> immediate =
      stacked ? std::pair<std::string, KeyValue>{"client.stack_retries", immediate_each}
              : std::pair<std::string, KeyValue>{"client.retries", double(retries)};
  // Backoff sized from the timeout, unless the scenario already jitters.
  bool own = s.client.backoff.jitter != Jitter::none && s.client.backoff.base_s > 0;
  double base = own ? s.client.backoff.base_s : std::max(s.step_s, s.client.timeout_s / 10);
  double cap = own ? s.client.backoff.cap_s : 2 * s.client.timeout_s;
  std::string jitter = own && s.client.backoff.jitter == Jitter::equal ? "equal" : "full";
  double window = std::max(s.step_s, std::round(10 / s.step_s) * s.step_s);
  Ladder l;
  l.mode = LadderMode::cumulative;
  l.rows = {
      {"No retries", "One attempt; a failure goes straight to the user.", no_retries},
      {"Immediate retries",
       number_text(attempts) + " attempts per request, sent again at once.",
       {immediate,
        {"client.backoff.base_s", 0.0},
        {"client.backoff.cap_s", 0.0},
        {"client.backoff.jitter", std::string("none")}}},
      {"+ Backoff with jitter",
       "Exponential backoff from " + seconds_text(base) +
           (cap > 0 ? ", capped at " + seconds_text(cap) : std::string(", no cap")) + ", " +
           jitter + " jitter.",
       {{"client.backoff.base_s", base},
        {"client.backoff.cap_s", cap},
        {"client.backoff.jitter", jitter}}},
      {"+ 10% retry budget",
       "Retries limited to 10% of first attempts over a rolling window.",
       {{"client.budget.kind", std::string("window")},
        {"client.budget.ratio", 0.1},
        {"client.budget.window_s", window}}},
      {"+ Shed abandoned work",
       "The server drops queued work whose caller already gave up.",
       {{"server.shed_abandoned", true}}},
  };
  return l;
}

Ladder ladder_of(const Scenario& s) {
  return s.ladder.rows.empty() ? generic_ladder(s) : s.ladder;
}

Scenario apply_row(Scenario s, const LadderRow& row) {
  for (const auto& [path, value] : row.set) set_key(s, path, value);
  return s;
}

namespace {

using KeyTexts = std::vector<std::pair<std::string, std::string>>;  // path, value as printed

// The keys of one service or call that `now` sets otherwise than `was`: each
// key either of them sets, valued as it runs (a key set to the value it
// inherits is no change), named `prefix` + key as --set names it
// ("calls[1].retries").
void settings_left(const KeySettings& now, const Scenario& now_runs, const KeySettings& was,
                   const Scenario& was_runs, const std::string& prefix, KeyTexts& out) {
  std::vector<std::string> paths;
  for (const KeySettings* settings : {&now, &was})
    for (const auto& [path, value] : *settings)
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  for (const std::string& path : paths) {
    const KeySpec& k = key_or_throw(path);
    std::string value = to_string(k.get(now_runs));
    if (value != to_string(k.get(was_runs)))
      out.emplace_back(prefix + path.substr(path.find('.') + 1), printable(value));
  }
}

// Where a graph's shape differs (its services by name, its calls by who
// calls whom), the shape is said whole: the keys of one hop then compare
// only between the hops both have.
std::string services_text(const Graph& g) {
  std::string out;
  for (const GraphService& service : g.services) out += (out.empty() ? "" : ", ") + service.name;
  return out;
}
std::string calls_text(const Graph& g) {
  std::string out;
  for (const GraphCall& call : g.calls)
    out += (out.empty() ? "" : ", ") + call.from + " -> " + call.to;
  return out;
}

// A graph's own keys `s` sets otherwise than `preset`: a service's and a
// call's settings and fields (scenario_keys() has none of them; changed by
// --set 'calls[1].retries=0', they left the preset's description standing).
void graph_keys_left(const Scenario& s, const Scenario& preset, KeyTexts& out) {
  const Graph &g = s.graph, &p = preset.graph;
  if (services_text(g) != services_text(p))
    out.emplace_back("services", printable(clip(services_text(g))));
  if (calls_text(g) != calls_text(p)) out.emplace_back("calls", printable(clip(calls_text(g))));
  for (const GraphService& service : g.services) {
    const int at = service_index(p, service.name);
    if (at < 0) continue;
    const GraphService& was = p.services[static_cast<size_t>(at)];
    const std::string prefix = "services." + printable(service.name) + ".";
    if (service.pattern != was.pattern)
      out.emplace_back(prefix + "pattern", kCallPatternNames[static_cast<int>(service.pattern)]);
    // Valued in copies of the scenario: only where either sets keys.
    if (!service.server.empty() || !was.server.empty())
      settings_left(service.server, service_scenario(s, service), was.server,
                    service_scenario(preset, was), prefix, out);
  }
  for (size_t i = 0; i < g.calls.size() && i < p.calls.size(); ++i) {
    const GraphCall &call = g.calls[i], &was = p.calls[i];
    if (call.from != was.from || call.to != was.to) continue;
    const std::string prefix = "calls[" + std::to_string(i) + "].";
    if (call.count != was.count) out.emplace_back(prefix + "count", std::to_string(call.count));
    if (call.optional != was.optional)
      out.emplace_back(prefix + "optional", to_string(KeyValue{call.optional}));
    if (call.propagate_deadline != was.propagate_deadline)
      out.emplace_back(prefix + "propagate_deadline", to_string(KeyValue{call.propagate_deadline}));
    if (!call.client.empty() || !was.client.empty())
      settings_left(call.client, edge_scenario(s, call), was.client, edge_scenario(preset, was),
                    prefix, out);
  }
}

// The keys `s` sets otherwise than `preset`: the key table's, in its order,
// then a graph's, service by service and call by call.
KeyTexts keys_left(const Scenario& s, const Scenario& preset) {
  KeyTexts out;
  for (const KeySpec& k : scenario_keys()) {
    if (k.path == "name" || k.path == "description") continue;
    std::string now = to_string(k.get(s));
    if (now != to_string(k.get(preset))) out.emplace_back(k.path, printable(now));
  }
  graph_keys_left(s, preset, out);
  return out;
}

std::string joined(const KeyTexts& keys) {
  std::string out;
  for (const auto& [path, value] : keys) out += (out.empty() ? "" : ", ") + path + " = " + value;
  return out;
}

}  // namespace

std::string left_preset_by(const Scenario& s, const Scenario* preset) {
  return preset ? joined(keys_left(s, *preset)) : std::string();
}

std::vector<std::string> row_changes(const std::vector<LadderResult>& rows,
                                     const Scenario* preset) {
  // Each row against the preset with its rows applied as the ladder applies
  // them: the keys its own scenario sets otherwise, which a row that sets a
  // key again hides. A row with none keeps its description.
  std::vector<std::string> out;
  Scenario expected = preset ? *preset : Scenario{};
  for (const LadderResult& r : rows) {
    // The generic ladder is worded from the scenario it runs: its words hold.
    if (!preset || r.scenario.ladder.rows.empty()) {
      out.push_back(r.row.change);
      continue;
    }
    const bool cumulative = r.scenario.ladder.mode == LadderMode::cumulative;
    Scenario row_expected = apply_row(cumulative ? expected : *preset, r.row);
    const KeyTexts left = keys_left(r.scenario, row_expected);
    if (cumulative) expected = std::move(row_expected);
    if (left.empty()) {
      out.push_back(r.row.change);
      continue;
    }
    KeyTexts sets;
    for (const auto& [path, value] : r.row.set)
      sets.emplace_back(path, printable(to_string(value)));
    out.push_back((sets.empty() ? std::string("no change") : "sets " + joined(sets)) +
                  " (its own description no longer applies: the preset with " + joined(left) + ")");
  }
  return out;
}

namespace {

// Goodput per second in at most kLadderSparkPoints equal buckets of steps.
std::vector<double> spark_of(const RunResult& run) {
  const auto& g = run.series.goodput;
  size_t n = g.size();
  size_t buckets = std::min(n, kLadderSparkPoints);
  std::vector<double> out(buckets, 0.0);
  for (size_t b = 0; b < buckets; ++b) {
    size_t from = b * n / buckets, to = (b + 1) * n / buckets;
    double sum = 0;
    for (size_t i = from; i < to; ++i) sum += g[i];
    out[b] = sum / (static_cast<double>(to - from) * run.scenario.step_s);
  }
  return out;
}

}  // namespace

std::vector<LadderResult> run_ladder(const Scenario& s, const CancelCheck& cancelled) {
  require_scripted_incident(s, "the ladder of defenses");
  Ladder ladder = ladder_of(s);
  std::vector<LadderResult> out;
  Scenario current = s;
  for (const LadderRow& row : ladder.rows) {
    throw_if_cancelled(cancelled);
    Scenario next = apply_row(ladder.mode == LadderMode::cumulative ? current : s, row);
    validate(next);
    if (ladder.mode == LadderMode::cumulative) current = next;
    RunResult run = run_engine(next);
    out.push_back({row, next, compute_metrics(run), spark_of(run)});
  }
  return out;
}

}  // namespace retrystorm
