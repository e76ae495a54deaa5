#include "io/configs/lint.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "analysis/ladder.hpp"
#include "analysis/metrics.hpp"
#include "engines/fluid.hpp"
#include "io/configs/common.hpp"
#include "io/scenario_io.hpp"

namespace retrystorm::configs {

using nlohmann::json;

namespace {

// The names each system gives the settings a fix changes.
struct Terms {
  std::string retries, per_try, deadline, budget_fix, cap;
  bool counts_attempts = false;
};

Terms terms(const LayerPolicy& l) {
  if (l.system == "envoy")
    return {"retry_policy.num_retries",
            "retry_policy.per_try_timeout",
            "the route timeout",
            "add circuit_breakers.thresholds[].retry_budget {budget_percent: 20, "
            "min_retry_concurrency: 3} to the cluster",
            "retry_back_off.max_interval",
            false};
  if (l.system == "istio")
    return {"retries.attempts",
            "retries.perTryTimeout",
            "the route timeout",
            "add a DestinationRule with trafficPolicy.retryBudget {percent: 20, "
            "minRetryConcurrency: 3}",
            "(Istio has no backoff setting)",
            false};
  if (l.system == "grpc")
    return {
        "retryPolicy.maxAttempts", "retryPolicy.perAttemptRecvTimeout",
        "methodConfig.timeout",    "add retryThrottling {\"maxTokens\": 10, \"tokenRatio\": 0.1}",
        "retryPolicy.maxBackoff",  true};
  if (l.system == "linkerd")
    return {"retry.linkerd.io/limit",
            "retry.linkerd.io/timeout",
            "timeout.linkerd.io/request (or the ServiceProfile route timeout)",
            "move the retries to a ServiceProfile with retryBudget {retryRatio: 0.2, "
            "minRetriesPerSecond: 10, ttl: 10s}",
            "(Linkerd has no backoff)",
            false};
  if (l.system == "aws")
    return {"max_attempts",
            "the SDK client's read timeout",
            "the caller's deadline",
            "set retry_mode = standard (its retry quota stops retries when most fail)",
            "(fixed at 20 s by the SDKs)",
            true};
  return {"retries",       "timeout_s",
          "deadline_s",    "add budget: {kind: window, ratio: 0.1, window_s: 10}",
          "backoff.cap_s", false};
}

std::string count_text(const LayerPolicy& l, int retries) {
  Terms t = terms(l);
  return t.retries + " = " + std::to_string(t.counts_attempts ? retries + 1 : retries);
}

std::vector<std::pair<std::string, KeyValue>> budget_fix(const LayerPolicy& l) {
  using V = std::vector<std::pair<std::string, KeyValue>>;
  if (l.system == "envoy" || l.system == "istio")
    return V{{"client.budget.kind", std::string("envoy_concurrency")},
             {"client.budget.ratio", 0.2},
             {"client.budget.min_concurrency", 3.0}};
  if (l.system == "grpc")
    return V{{"client.budget.kind", std::string("grpc_throttling")},
             {"client.budget.max_tokens", 10.0},
             {"client.budget.token_ratio", 0.1}};
  if (l.system == "aws")
    return V{{"client.budget.kind", std::string("aws_quota")},
             {"client.budget.quota_tokens", 500.0},
             {"client.budget.retry_cost", 5.0},
             {"client.budget.timeout_cost", 10.0},
             {"client.budget.success_reward", 1.0}};
  if (l.system == "linkerd")
    return V{{"client.budget.kind", std::string("ratio_ttl")},
             {"client.budget.ratio", 0.2},
             {"client.budget.min_retries_per_s", 10.0},
             {"client.budget.ttl_s", 10.0}};
  return V{{"client.budget.kind", std::string("window")},
           {"client.budget.ratio", 0.1},
           {"client.budget.window_s", 10.0}};
}

std::string plural(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string list_durations(const std::vector<double>& v) {
  std::string out;
  for (double d : v) out += (out.empty() ? "" : ", ") + human_duration(d);
  return out;
}

// Mean delay as a share of the window, for each jitter.
double jitter_mean(const std::string& jitter) {
  if (jitter == "full") return 0.5;
  if (jitter == "equal") return 0.75;
  return 1.0;
}

struct Context {
  const ImportResult& imp;
  std::vector<const LayerPolicy*> retrying;  // outermost first
  std::vector<Finding>& out;

  // Keys that set layer `index` to `k` retries, the others unchanged.
  std::vector<std::pair<std::string, KeyValue>> retries_fix(size_t index, int k) const {
    if (retrying.size() <= 1) return {{"client.retries", static_cast<double>(k)}};
    std::string stack;
    for (size_t i = 0; i < retrying.size(); ++i)
      stack += (i ? "," : "") + std::to_string(i == index ? k : retrying[i]->retries);
    return {{"client.stack_retries", stack}};
  }
};

void rule_deadline(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.deadline_s || *l.deadline_s <= 0) return;
  double deadline = *l.deadline_s;
  std::vector<double> ladder = backoff_ladder(l);
  double total = 0;
  for (double d : ladder) total += d;
  double mean_share = l.ladder_s.empty() ? jitter_mean(l.jitter) : 1.0;
  double judged = total * mean_share;
  bool timeouts = l.retry_on_timeout && l.per_try_timeout_s && !l.per_try_timeout_unset;
  double per_try = timeouts ? *l.per_try_timeout_s : 0;
  double attempts_total = per_try * (l.retries + 1);
  Terms t = terms(l);
  json numbers = {{"ladder_s", ladder},
                  {"ladder_total_s", total},
                  {"deadline_s", deadline},
                  {"retries", l.retries},
                  {"jitter", l.jitter}};
  if (timeouts) {
    numbers["per_try_timeout_s"] = per_try;
    numbers["attempts_total_s"] = attempts_total;
  }
  if (judged > deadline) {
    // How many retries start before the deadline.
    int fits = 0;
    double sum = 0;
    for (double d : ladder) {
      if (sum + d * mean_share + per_try * (fits + 1) > deadline) break;
      sum += d * mean_share;
      ++fits;
    }
    numbers["retries_that_fit"] = fits;
    Finding f;
    f.severity = "error";
    f.rule = "ladder-exceeds-deadline";
    f.file = l.file;
    f.message = "the backoff ladder (" + list_durations(ladder) + ") adds up to " +
                human_duration(total) +
                (mean_share < 1
                     ? " (" + human_duration(judged) + " on average with " + l.jitter + " jitter)"
                     : std::string()) +
                ", longer than the " + human_duration(deadline) + " deadline" +
                (timeouts ? ", before the attempts' own " + human_duration(attempts_total) : "") +
                ": only " + std::to_string(fits) + " of " + std::to_string(l.retries) +
                " retries can start in time, the rest are work the caller never sees";
    f.fix = "keep " + std::to_string(fits) + " retries (" + count_text(l, fits) +
            "), or cap the backoff (" + t.cap + ") so the ladder fits in " +
            human_duration(deadline) + ", or raise " + t.deadline + " above " +
            human_duration(total + attempts_total);
    f.numbers = numbers;
    f.fix_keys = c.retries_fix(index, fits);
    c.out.push_back(f);
    return;
  }
  if (timeouts && attempts_total + judged > deadline) {
    int fits = 0;
    double sum = 0;
    for (int k = 1; k <= l.retries; ++k) {
      double next = sum + ladder[static_cast<size_t>(k - 1)] * mean_share;
      if (per_try * (k + 1) + next > deadline) break;
      sum = next;
      fits = k;
    }
    double suggested = (deadline - judged) / (l.retries + 1);
    numbers["retries_that_fit"] = fits;
    numbers["per_try_timeout_that_fits_s"] = std::max(0.0, suggested);
    Finding f;
    f.severity = "warning";
    f.rule = "per-try-timeouts-exceed-deadline";
    f.file = l.file;
    f.message = "(" + std::to_string(l.retries) + " + 1) x " + human_duration(per_try) +
                " per try + backoff " + human_duration(judged) + " = " +
                human_duration(attempts_total + judged) + " > " + t.deadline + " " +
                human_duration(deadline) + ": when attempts time out only " + std::to_string(fits) +
                " of " + std::to_string(l.retries) + " retries fit, the deadline cuts the rest";
    f.fix = suggested > 0 ? "set " + t.per_try + " to at most " + human_duration(suggested) +
                                ", or " + count_text(l, fits)
                          : count_text(l, fits) + ", or raise " + t.deadline;
    f.numbers = numbers;
    f.fix_keys = c.retries_fix(index, fits);
    c.out.push_back(f);
  }
}

void rule_never_retried(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.per_try_timeout_unset) return;
  Terms t = terms(l);
  double deadline = l.deadline_s.value_or(0);
  Finding f;
  f.severity = "warning";
  f.rule = "timeouts-never-retried";
  f.file = l.file;
  f.message = t.per_try + " is unset: an attempt may run until " +
              (deadline > 0 ? t.deadline + " (" + human_duration(deadline) + ")"
                            : std::string("the caller gives up (no deadline)")) +
              " and a timed-out attempt is never retried, so the " +
              plural(l.retries, "retry", "retries") + " cover only fast failures";
  double suggested = 0;
  if (deadline > 0) {
    double backoff = 0;
    for (double d : backoff_ladder(l)) backoff += d * jitter_mean(l.jitter);
    suggested = (deadline - backoff) / (l.retries + 1);
  }
  f.fix = suggested > 0 ? "set " + t.per_try + " to about " + human_duration(suggested) +
                              " so every attempt fits in " + human_duration(deadline) +
                              " (this adds load in an incident: pair it with a budget)"
                        : "set " + t.per_try + " and an overall deadline";
  f.numbers = {{"retries", l.retries}, {"deadline_s", deadline}};
  if (suggested > 0) {
    f.numbers["per_try_timeout_s"] = suggested;
    f.fix_keys = {{"client.retry_on_timeout", true}, {"client.timeout_s", suggested}};
  }
  c.out.push_back(f);
}

void rule_budget(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0) return;
  bool cap_only =
      l.budget_kind == "envoy_concurrency" && l.budget.count("ratio") && l.budget.at("ratio") == 0;
  if (l.budget_kind != "none" && !cap_only) return;
  Terms t = terms(l);
  Finding f;
  f.severity = "warning";
  f.rule = "no-retry-budget";
  f.file = l.file;
  std::string why = l.budget_from.empty() ? "no retry budget" : l.budget_from;
  f.message = cap_only ? "only a fixed cap of " + num_text(l.budget.at("min_concurrency")) +
                             " concurrent retries, no retry budget: the cap does not grow or "
                             "shrink with traffic"
                       : "no retry budget (" + why + "): in an incident every failure is retried " +
                             plural(l.retries, "time", "times") + ", up to " +
                             std::to_string(l.retries + 1) + "x the load";
  f.fix = t.budget_fix;
  f.numbers = {{"retries", l.retries}, {"budget", l.budget_kind}};
  f.fix_keys = budget_fix(l);
  c.out.push_back(f);
}

double amplification(const std::vector<const LayerPolicy*>& layers) {
  double a = 1;
  for (const auto* l : layers) a *= l->retries + 1;
  return a;
}

void rule_layers(const Context& c) {
  std::vector<size_t> with;
  for (size_t i = 0; i < c.retrying.size(); ++i)
    if (c.retrying[i]->retries > 0) with.push_back(i);
  if (with.size() < 2) return;
  std::string product, files;
  json per_layer = json::array();
  for (size_t i : with) {
    const LayerPolicy& l = *c.retrying[i];
    product += (product.empty() ? "" : " x ") + std::to_string(l.retries + 1);
    files +=
        (files.empty() ? "" : " -> ") + l.file + " (" + std::to_string(l.retries) + " retries)";
    per_layer.push_back({{"file", l.file}, {"retries", l.retries}, {"attempts", l.retries + 1}});
  }
  double a = amplification(c.retrying);
  Finding f;
  f.severity = "warning";
  f.rule = "retries-at-several-layers";
  f.file = files;
  f.message = "retries at " + std::to_string(with.size()) + " layers of one call path (" + files +
              "): attempts multiply, " + product + " = up to " + num_text(a) +
              " attempts at the bottom for one user request";
  size_t keep = with.back();
  f.fix = "retry at one layer only: keep the " + std::to_string(c.retrying[keep]->retries) +
          " retries of " + c.retrying[keep]->file + " and set " +
          (with.size() == 2
               ? count_text(*c.retrying[with.front()], 0) + " in " + c.retrying[with.front()]->file
               : std::string("the other layers to 0 retries"));
  f.numbers = {{"layers", per_layer}, {"amplification", a}};
  std::string stack;
  for (size_t i = 0; i < c.retrying.size(); ++i)
    stack += (i ? "," : "") + std::to_string(i == keep ? c.retrying[i]->retries : 0);
  f.fix_keys = {{"client.stack_retries", stack}};
  c.out.push_back(f);
}

void rule_load(const Context& c, std::optional<double> load, const std::string& load_from) {
  double a = amplification(c.retrying);
  if (a <= 1) return;
  double bound = 1 / a;
  Finding f;
  f.rule = "load-above-drain-bound";
  f.file = c.retrying.size() == 1 ? c.retrying[0]->file : std::string("the stack");
  f.numbers = {{"amplification", a}, {"safe_load_below", bound}};
  bool budget = std::any_of(c.retrying.begin(), c.retrying.end(),
                            [](const LayerPolicy* l) { return l->budget_kind != "none"; });
  std::string pct = num_text(std::round(bound * 1000) / 10) + "%";
  if (!load) {
    f.severity = "info";
    f.message = "with up to " + num_text(a) +
                " attempts per request, a backlog of late "
                "responses surely drains only below 1/" +
                num_text(a) + " = " + pct + " of capacity; pass --load to check a service's load";
    f.fix = "keep the load below " + pct + " of capacity, or bound retries with a budget";
    c.out.push_back(f);
    return;
  }
  f.numbers["load"] = *load;
  if (*load < bound) return;
  f.severity = budget ? "info" : "warning";
  int attempts = std::max(1, static_cast<int>(std::floor(1 / *load)));
  f.message = "load " + num_text(std::round(*load * 1000) / 10) + "% (" + load_from +
              ") is above 1/" + num_text(a) + " = " + pct +
              ": once every response is late, retries multiply demand by up to " + num_text(a) +
              " and the backlog need not drain after the trigger ends" +
              (budget ? "; the retry budget should bound this (see --simulate)" : "");
  f.fix = "at most " + std::to_string(attempts) + " attempt" + (attempts > 1 ? "s" : "") +
          " per request at this load (" +
          (c.retrying.size() == 1 ? count_text(*c.retrying[0], attempts - 1)
                                  : std::string("across all layers")) +
          "), or a retry budget";
  if (c.retrying.size() == 1) f.fix_keys = c.retries_fix(0, attempts - 1);
  c.out.push_back(f);
}

void rule_counting(const Context& c) {
  for (const auto* l : c.retrying)
    if (l->capped_from > 5) {
      Finding f;
      f.severity = "warning";
      f.rule = "counting-trap";
      f.file = l->file;
      f.message = "maxAttempts " + std::to_string(l->capped_from) +
                  " is silently capped to 5 by gRPC: 4 retries, not " +
                  std::to_string(l->capped_from - 1);
      f.fix = "write maxAttempts 5 (or fewer) so the file says what runs";
      f.numbers = {{"as_written", l->capped_from}, {"effective_attempts", 5}};
      c.out.push_back(f);
    }
  const LayerPolicy* by_attempts = nullptr;
  const LayerPolicy* by_retries = nullptr;
  for (const auto* l : c.retrying) {
    if (l->counting == "attempts" && !by_attempts) by_attempts = l;
    if (l->counting == "retries" && !by_retries && l->system != "retrystorm") by_retries = l;
  }
  if (!by_attempts || !by_retries) return;
  for (const auto* a : c.retrying)
    for (const auto* r : c.retrying) {
      if (a->counting != "attempts" || r->counting != "retries" || r->system == "retrystorm")
        continue;
      bool same = a->as_written == r->as_written;
      Finding f;
      f.severity = same ? "warning" : "info";
      f.rule = "counting-trap";
      f.file = a->file + ", " + r->file;
      f.message = a->count_field + " " + std::to_string(a->as_written) + " in " + a->file +
                  " counts attempts (" + std::to_string(a->retries) + " retries); " +
                  r->count_field + " " + std::to_string(r->as_written) + " in " + r->file +
                  " counts retries (" + std::to_string(r->retries + 1) + " attempts)" +
                  (same ? ": the same number means different things" : "");
      f.fix = "write both as attempts in a comment next to each setting, and check the product (" +
              std::to_string((a->retries + 1) * (r->retries + 1)) + " attempts)";
      f.numbers = {{a->count_field, a->as_written}, {r->count_field, r->as_written}};
      c.out.push_back(f);
      return;
    }
}

void rule_no_deadline(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.deadline_s || *l.deadline_s > 0) return;
  if (l.system == "aws" || l.system == "retrystorm") return;  // the caller's to set
  Finding f;
  f.severity = "info";
  f.rule = "no-deadline";
  f.file = l.file;
  f.message =
      "no overall deadline: retries go on as long as the ladder lasts, whether or not "
      "anyone still waits";
  f.fix = "set " + terms(l).deadline;
  c.out.push_back(f);
}

// ----------------------------------------------------------- simulation

void snap_timeouts(Scenario& s, json& notes) {
  double step = s.step_s;
  double t = s.client.timeout_s;
  double snapped = std::max(step, std::round(t / step) * step);
  if (std::fabs(snapped - t) > 1e-12) {
    set_key(s, "client.timeout_s", snapped);
    std::string note = "client.timeout_s " + num_text(t) + " s rounded to " + num_text(snapped) +
                       " s (a whole number of " + num_text(step) + " s steps)";
    if (std::find(notes.begin(), notes.end(), json(note)) == notes.end()) notes.push_back(note);
  }
}

json metrics_json(const Scenario& s, const Metrics& m) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  std::optional<double> rec = recovery_time(m, s);
  return {{"recovered", m.recovered},
          {"recovery_s", opt(rec)},
          {"failed_fraction", m.failed_fraction},
          {"wasted_fraction", m.wasted_fraction},
          {"peak_amplification", m.peak_amplification},
          {"backlog_growing", m.backlog_growing},
          {"safe_load_below", m.bound.safe_load_below}};
}

json run_one(Scenario s, const std::vector<std::pair<std::string, KeyValue>>& keys, json& notes) {
  for (const auto& [path, v] : keys) set_key(s, path, v);
  snap_timeouts(s, notes);
  validate(s);
  return metrics_json(s, compute_metrics(run_fluid(s)));
}

json simulate(const LintReport& r, const LintOptions& o) {
  Scenario base =
      o.base ? *o.base : preset_or_throw(o.preset.empty() ? "primary-failover" : o.preset).scenario;
  json notes = json::array();
  Scenario s = base;
  std::vector<std::pair<std::string, KeyValue>> imported;
  for (const auto& k : r.imported.keys) imported.emplace_back(k.path, k.value);
  bool has_timeout = std::any_of(imported.begin(), imported.end(),
                                 [](const auto& kv) { return kv.first == "client.timeout_s"; });
  if (!has_timeout)
    notes.push_back("the files set no per-attempt timeout; the scenario's " +
                    num_text(base.client.timeout_s) + " s is kept");
  for (const auto& [path, v] : imported) set_key(s, path, v);
  snap_timeouts(s, notes);
  try {
    validate(s);
  } catch (const InputError& e) {
    throw InputError(std::string("--simulate: the imported policy does not run: ") + e.what());
  }
  json out = {{"scenario", s.name}, {"description", s.description}};
  out["as_configured"] = metrics_json(s, compute_metrics(run_fluid(s)));
  json fixes = json::array();
  std::vector<std::pair<std::string, KeyValue>> all;
  for (const auto& f : r.findings) {
    if (f.fix_keys.empty() || f.severity == "info") continue;
    json keys = json::object();
    for (const auto& kv : f.fix_keys) {
      const std::string& path = kv.first;
      keys[path] = key_value_to_json(kv.second);
      auto it =
          std::find_if(all.begin(), all.end(), [&path](const auto& e) { return e.first == path; });
      if (it == all.end())
        all.push_back(kv);
      else
        it->second = kv.second;
    }
    json row = {{"rule", f.rule}, {"file", f.file}, {"set", keys}};
    try {
      row["metrics"] = run_one(s, f.fix_keys, notes);
    } catch (const InputError& e) {
      row["error"] = e.what();
    }
    fixes.push_back(row);
  }
  out["fixes"] = fixes;
  if (fixes.size() > 1) {
    json keys = json::object();
    for (const auto& [path, v] : all) keys[path] = key_value_to_json(v);
    json row = {{"rule", "all fixes"}, {"set", keys}};
    try {
      row["metrics"] = run_one(s, all, notes);
    } catch (const InputError& e) {
      row["error"] = e.what();
    }
    out["all_fixes"] = row;
  }
  json ladder = json::array();
  for (const auto& row : run_ladder(s))
    ladder.push_back(
        {{"name", row.row.name}, {"metrics", metrics_json(row.scenario, row.metrics)}});
  out["ladder"] = ladder;
  out["notes"] = notes;
  return out;
}

std::string outcome_text(const json& m) {
  std::ostringstream o;
  if (m.value("recovered", false))
    o << "recovers "
      << (m["recovery_s"].is_number() ? human_duration(m["recovery_s"].get<double>())
                                      : std::string("?"))
      << " after the incident";
  else
    o << "does not recover";
  o << "; failed " << num_text(std::round(m["failed_fraction"].get<double>() * 1000) / 10)
    << "%, wasted " << num_text(std::round(m["wasted_fraction"].get<double>() * 1000) / 10)
    << "%, peak amplification "
    << num_text(std::round(m["peak_amplification"].get<double>() * 100) / 100) << "x";
  return o.str();
}

}  // namespace

std::vector<double> backoff_ladder(const LayerPolicy& l) {
  if (!l.ladder_s.empty()) return l.ladder_s;
  std::vector<double> out;
  double w = l.base_s;
  for (int i = 0; i < l.retries; ++i) {
    out.push_back(l.cap_s > 0 ? std::min(w, l.cap_s) : w);
    w *= l.multiplier;
    if (!std::isfinite(w)) w = std::numeric_limits<double>::max();
  }
  return out;
}

LintReport lint_configs(const std::vector<ConfigFile>& files, const LintOptions& o) {
  LintReport r;
  r.imported = import_configs(files);
  Context c{r.imported, {}, r.findings};
  for (const auto& l : r.imported.layers)
    if (l.has_retry_policy) c.retrying.push_back(&l);
  for (size_t i = 0; i < c.retrying.size(); ++i) {
    rule_deadline(c, i);
    rule_never_retried(c, i);
    rule_budget(c, i);
    rule_no_deadline(c, i);
  }
  rule_layers(c);
  rule_counting(c);
  std::optional<double> load = o.load;
  std::string load_from = "--load";
  if (!load && (o.simulate || o.base || !o.preset.empty())) {
    Scenario base =
        o.base ? *o.base
               : preset_or_throw(o.preset.empty() ? "primary-failover" : o.preset).scenario;
    // The session model has no demand / capacity ratio: its load is sessions.
    if (base.engine != "sessions") {
      load = base.demand.rate_per_s / base.server.capacity_per_s;
      load_from = "demand / capacity of " + base.name;
    }
  }
  if (!c.retrying.empty()) rule_load(c, load, load_from);
  auto rank = [](const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; };
  std::stable_sort(r.findings.begin(), r.findings.end(), [&](const Finding& a, const Finding& b) {
    return rank(a.severity) < rank(b.severity);
  });
  for (const auto& f : r.findings) {
    if (f.severity == "error")
      ++r.errors;
    else if (f.severity == "warning")
      ++r.warnings;
    else
      ++r.infos;
  }
  if (o.simulate) r.simulation = simulate(r, o);
  return r;
}

std::string lint_text(const LintReport& r) {
  std::ostringstream o;
  o << "retrystorm lint: ";
  for (size_t i = 0; i < r.imported.formats.size(); ++i)
    o << (i ? "; " : "") << r.imported.formats[i];
  o << "\n";
  if (r.imported.layers.size() > 1) {
    o << "stack, outermost first:";
    for (const auto& l : r.imported.layers) o << " [" << l.file << "]";
    o << "\n";
  }
  o << "\n";
  for (const auto& f : r.findings) {
    o << f.severity << std::string(8 - f.severity.size(), ' ') << f.rule << "  (" << f.file
      << ")\n";
    o << "  " << f.message << "\n";
    if (!f.fix.empty()) o << "  fix: " << f.fix << "\n";
    o << "\n";
  }
  o << r.findings.size() << (r.findings.size() == 1 ? " finding" : " findings") << ": " << r.errors
    << (r.errors == 1 ? " error, " : " errors, ") << r.warnings
    << (r.warnings == 1 ? " warning, " : " warnings, ") << r.infos << " info\n";
  if (!r.simulation.is_null()) {
    const json& s = r.simulation;
    o << "\nsimulation: " << s["scenario"].get<std::string>() << " with the imported policy\n";
    o << "  as configured: " << outcome_text(s["as_configured"]) << "\n";
    for (const auto& f : s["fixes"]) {
      o << "  fix " << f["rule"].get<std::string>() << " (";
      bool first = true;
      for (const auto& [k, v] : f["set"].items()) {
        o << (first ? "" : ", ") << k << "="
          << (v.is_string()   ? v.get<std::string>()
              : v.is_number() ? num_text(v.get<double>())
                              : v.dump());
        first = false;
      }
      o << "): "
        << (f.contains("metrics") ? outcome_text(f["metrics"]) : f["error"].get<std::string>())
        << "\n";
    }
    if (s.contains("all_fixes"))
      o << "  all fixes together: "
        << (s["all_fixes"].contains("metrics") ? outcome_text(s["all_fixes"]["metrics"])
                                               : s["all_fixes"]["error"].get<std::string>())
        << "\n";
    o << "  defense ladder:\n";
    for (const auto& row : s["ladder"])
      o << "    " << row["name"].get<std::string>() << ": " << outcome_text(row["metrics"]) << "\n";
    for (const auto& n : s["notes"]) o << "  note: " << n.get<std::string>() << "\n";
  }
  return o.str();
}

json lint_json(const LintReport& r) {
  json files = json::array();
  for (const auto& f : r.imported.formats) files.push_back(f);
  json layers = json::array();
  for (const auto& l : r.imported.layers)
    layers.push_back({{"file", l.file},
                      {"format", l.format},
                      {"system", l.system},
                      {"retries", l.retries},
                      {"budget", l.budget_kind}});
  json findings = json::array();
  for (const auto& f : r.findings) {
    json keys = json::object();
    for (const auto& [path, v] : f.fix_keys) keys[path] = key_value_to_json(v);
    findings.push_back({{"severity", f.severity},
                        {"rule", f.rule},
                        {"file", f.file},
                        {"message", f.message},
                        {"fix", f.fix},
                        {"numbers", f.numbers},
                        {"fix_keys", keys}});
  }
  json out = {{"formats", files},
              {"layers", layers},
              {"keys", keys_flat(r.imported.keys)},
              {"warnings", r.imported.warnings},
              {"findings", findings},
              {"summary", {{"errors", r.errors}, {"warnings", r.warnings}, {"info", r.infos}}},
              {"exit_status", r.exit_status()}};
  if (!r.simulation.is_null()) out["simulation"] = r.simulation;
  return out;
}

}  // namespace retrystorm::configs
