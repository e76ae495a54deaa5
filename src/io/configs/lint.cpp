#include "io/configs/lint.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
            "retries.backoff (Istio 1.26+; Envoy caps the window at 10 x it)",
            false};
  if (l.system == "grpc")
    return {
        "retryPolicy.maxAttempts", "retryPolicy.perAttemptRecvTimeout",
        "methodConfig.timeout",    "add retryThrottling {\"maxTokens\": 10, \"tokenRatio\": 0.1}",
        "retryPolicy.maxBackoff",  true};
  if (l.system == "linkerd")
    return {"retry.linkerd.io/limit",
            "retry.linkerd.io/timeout",
            "timeout.linkerd.io/request (or the route's timeout)",
            "move the retries to a ServiceProfile with retryBudget {retryRatio: 0.2, "
            "minRetriesPerSecond: 10, ttl: 10s}",
            l.format.rfind("Linkerd ServiceProfile", 0) == 0
                ? "(a ServiceProfile retries at once)"
                : "(Linkerd's backoff is fixed: 25 ms doubling to 250 ms)",
            false};
  if (l.system == "haproxy")
    return {"retries",
            "timeout server",
            "the caller's deadline (HAProxy has none per request)",
            "HAProxy has no retry budget: keep retries at 1 and bound the queue (server maxconn, "
            "timeout queue) so overload is shed, not retried",
            "(HAProxy retries at once)",
            false};
  if (l.system == "nginx")
    return {"proxy_next_upstream_tries",
            "proxy_read_timeout",
            "proxy_next_upstream_timeout",
            "nginx has no retry budget: set proxy_next_upstream_tries 2 (one retry) and "
            "proxy_next_upstream_timeout",
            "(nginx retries at once)",
            true};
  if (l.system == "aws")
    return {"max_attempts",
            "the SDK client's read timeout",
            "the caller's deadline",
            "set retry_mode = standard (its retry quota stops retries when most fail)",
            "(fixed by the SDKs: 20 s in standard mode, no cap in legacy mode)",
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
  // No budget to add: the fix (fewer retries) is in the finding's text only.
  if (l.system == "haproxy" || l.system == "nginx") return V{};
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

// Lint reasons over the ladder's distribution, not its mean (docs/configs.md,
// "Lint rules"): a finding fires when more than this share of requests whose
// attempts all fail pass the deadline, and a fix is sized so that the 99th
// percentile fits. A fix sized on the mean lets about half of them through.
constexpr double kTailShare = 0.01;
constexpr double kFitQuantile = 1 - kTailShare;

// "2.8%", "0.0028%", "51.3%", "100%": one decimal from 10%, two significant
// digits below; a share short of 1 never reads as 100%.
std::string percent_text(double p) {
  double v = p * 100;
  if (!(v > 0)) return "0%";
  if (p >= 1) return "100%";
  int decimals = std::clamp(1 - static_cast<int>(std::floor(std::log10(v))), 1, 15);
  double scale = std::pow(10.0, decimals);
  double shown = std::round(v * scale) / scale;
  return shown >= 100 ? "over 99.9%" : number_text(shown) + "%";
}

// One retrying layer's ladder against its deadline: the delays alone and with
// every attempt running to its per-try timeout (when timeouts are retried).
struct LadderView {
  std::vector<DelayRange> ranges;  // retry 1 first
  double per_try = 0;              // 0: timed-out attempts are not retried
  int retries = 0;
  LadderDistribution alone;
  LadderDistribution total;  // alone + (retries + 1) x per_try

  explicit LadderView(const LayerPolicy& l)
      : ranges(l.ladder()),
        per_try(timeouts_retried(l) ? *l.per_try_timeout_s : 0),
        retries(l.retries),
        alone(ranges),
        total(ranges, (l.retries + 1) * per_try) {}

  static bool timeouts_retried(const LayerPolicy& l) {
    return l.retry_on_timeout && l.per_try_timeout_s && !l.per_try_timeout_unset;
  }
  bool jittered() const {
    return std::any_of(ranges.begin(), ranges.end(),
                       [](const DelayRange& r) { return r.high_s > r.low_s; });
  }
  // The most retries whose ladder (plus their attempts' timeouts) fits the
  // deadline at the 99th percentile: the total only grows with k.
  int retries_that_fit(double deadline) const {
    int lo = 0, hi = retries;
    while (lo < hi) {
      int k = (lo + hi + 1) / 2;
      std::vector<DelayRange> first(ranges.begin(), ranges.begin() + k);
      if (LadderDistribution(first, (k + 1) * per_try).quantile(kFitQuantile) <= deadline)
        lo = k;
      else
        hi = k - 1;
    }
    return lo;
  }
  // "30 s, 1 min" (fixed delays) or "[0, 30 s), [0, 1 min)" (drawn).
  std::string text() const {
    std::string out;
    for (const DelayRange& r : ranges) out += (out.empty() ? "" : ", ") + range_text(r);
    return out;
  }
  static std::string range_text(const DelayRange& r) {
    if (!(r.high_s > r.low_s)) return human_duration(r.low_s);
    std::string low = r.low_s > 0 ? human_duration(r.low_s) : "0";
    return "[" + low + ", " + human_duration(r.high_s) + ")";
  }
  // "31 min 30 s" or "at most 31 min 30 s (mean 15 min 45 s, 99th percentile 27 min)".
  std::string sum_text() const {
    if (!jittered()) return human_duration(alone.max_s());
    return "at most " + human_duration(alone.max_s()) + " (mean " + human_duration(alone.mean_s()) +
           ", 99th percentile " + human_duration(alone.quantile(kFitQuantile)) + ")";
  }
  json numbers(const LayerPolicy& l, double deadline) const {
    std::vector<double> highs;
    for (const DelayRange& r : ranges) highs.push_back(r.high_s);
    json n = {{"ladder_s", highs},
              {"ladder_total_s", alone.max_s()},  // the worst case
              {"ladder_mean_s", alone.mean_s()},
              {"ladder_p99_s", alone.quantile(kFitQuantile)},
              {"deadline_s", deadline},
              {"retries", l.retries},
              {"jitter", jitter_name(l.backoff.jitter)},
              {"worst_case_s", total.max_s()},
              {"p_exceeds_deadline", total.p_exceeds(deadline)}};
    if (per_try > 0) {
      n["per_try_timeout_s"] = per_try;
      n["attempts_total_s"] = (retries + 1) * per_try;
    }
    return n;
  }
};

// A finding about one layer's ladder: its severity, rule, file and the
// ladder's numbers (each rule adds its own message, fix and numbers).
Finding ladder_finding(const char* severity, const char* rule, const LayerPolicy& l,
                       const LadderView& v, double deadline) {
  Finding f;
  f.severity = severity;
  f.rule = rule;
  f.file = l.file;
  f.numbers = v.numbers(l, deadline);
  return f;
}

void ladder_error(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  Terms t = terms(l);
  int fits = v.retries_that_fit(deadline);
  double attempts_total = (l.retries + 1) * v.per_try;
  Finding f = ladder_finding("error", "ladder-exceeds-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.message =
      "the backoff ladder (" + v.text() + ") adds up to " + v.sum_text() + ", longer than the " +
      human_duration(deadline) + " deadline" +
      (v.per_try > 0 ? ", before the attempts' own " + human_duration(attempts_total) : "") + ": " +
      percent_text(v.total.p_exceeds(deadline)) +
      " of requests whose attempts all fail pass the deadline; only " + std::to_string(fits) +
      " of " + std::to_string(l.retries) +
      " retries can start in time (99th percentile), the rest are work the caller never "
      "sees";
  f.fix = "keep " + std::to_string(fits) + " retries (" + count_text(l, fits) +
          "), or cap the backoff (" + t.cap + ") so the ladder fits in " +
          human_duration(deadline) + ", or raise " + t.deadline + " above " +
          human_duration(v.total.quantile(kFitQuantile));
  f.fix_keys = c.retries_fix(index, fits);
  c.out.push_back(f);
}

void per_try_warning(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  Terms t = terms(l);
  int fits = v.retries_that_fit(deadline);
  double p99 = v.alone.quantile(kFitQuantile);
  double suggested = (deadline - p99) / (l.retries + 1);
  Finding f = ladder_finding("warning", "per-try-timeouts-exceed-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.numbers["per_try_timeout_that_fits_s"] = std::max(0.0, suggested);
  f.message = "(" + std::to_string(l.retries) + " + 1) x " + human_duration(v.per_try) +
              " per try + backoff " + v.sum_text() + " = up to " + human_duration(v.total.max_s()) +
              " > " + t.deadline + " " + human_duration(deadline) + ": " +
              percent_text(v.total.p_exceeds(deadline)) +
              " of requests whose attempts all time out pass the deadline; only " +
              std::to_string(fits) + " of " + std::to_string(l.retries) +
              " retries fit (99th percentile), the deadline cuts the rest";
  f.fix = suggested > 0 ? "set " + t.per_try + " to at most " + human_duration(suggested) +
                              " (then 99% of those requests end in time), or " + count_text(l, fits)
                        : count_text(l, fits) + ", or raise " + t.deadline;
  f.fix_keys = c.retries_fix(index, fits);
  c.out.push_back(f);
}

// The worst case passes the deadline, but rarely: stated, not an error.
void ladder_info(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  Finding f = ladder_finding("info", "ladder-exceeds-deadline", l, v, deadline);
  f.message = "the worst case of the backoff ladder (" + v.text() + ")" +
              (v.per_try > 0 ? " with every attempt timing out" : "") + " is " +
              human_duration(v.total.max_s()) + ", longer than the " + human_duration(deadline) +
              " deadline, but only " + percent_text(v.total.p_exceeds(deadline)) +
              " of requests whose attempts all fail pass it (99th percentile " +
              human_duration(v.total.quantile(kFitQuantile)) + ")";
  c.out.push_back(f);
}

// The fix of the post-mortem is on: no session sleeps past its deadline, so
// the long ladder is stated, not an error (docs/sessions.md, "Advice and lint").
void ladder_cut_info(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  int fits = v.retries_that_fit(deadline);
  Finding f = ladder_finding("info", "ladder-exceeds-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.numbers["deadline_aware"] = true;
  f.message = "the backoff ladder (" + v.text() + ") adds up to " + v.sum_text() +
              ", longer than the " + human_duration(deadline) +
              " deadline, but the deadline-aware rule (sessions.deadline_aware) cuts it: a "
              "session fails fast instead of sleeping a step that cannot end before the "
              "deadline; " +
              std::to_string(fits) + " of " + std::to_string(l.retries) +
              " retries can start in time (99th percentile)";
  c.out.push_back(f);
}

void rule_deadline(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.deadline_s || *l.deadline_s <= 0) return;
  double deadline = *l.deadline_s;
  LadderView v(l);
  if (l.deadline_aware && v.total.max_s() > deadline)
    ladder_cut_info(c, index, v, deadline);
  else if (v.alone.p_exceeds(deadline) > kTailShare)
    ladder_error(c, index, v, deadline);
  else if (v.total.p_exceeds(deadline) > kTailShare)
    per_try_warning(c, index, v, deadline);
  else if (v.total.max_s() > deadline)
    ladder_info(c, index, v, deadline);
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
  f.numbers = {{"retries", l.retries}, {"deadline_s", deadline}};
  // Sized on the ladder's 99th percentile, not its mean: with the mean about
  // half of the requests whose attempts all time out would pass the deadline.
  double suggested = 0;
  LadderDistribution ladder(l.ladder());
  if (deadline > 0) suggested = (deadline - ladder.quantile(kFitQuantile)) / (l.retries + 1);
  if (suggested > 0) {
    double p = LadderDistribution(l.ladder(), (l.retries + 1) * suggested).p_exceeds(deadline);
    f.fix = "set " + t.per_try + " to about " + human_duration(suggested) +
            " so every attempt fits in " + human_duration(deadline) + " (" + percent_text(p) +
            " of requests whose attempts all time out would pass it; the backoff's 99th "
            "percentile is " +
            human_duration(ladder.quantile(kFitQuantile)) +
            "; this adds load in an incident: pair it with a budget)";
    f.numbers["per_try_timeout_s"] = suggested;
    f.numbers["ladder_p99_s"] = ladder.quantile(kFitQuantile);
    f.numbers["p_exceeds_deadline_with_fix"] = p;
    f.fix_keys = {{"client.retry_on_timeout", true}, {"client.timeout_s", suggested}};
  } else {
    f.fix = "set " + t.per_try + " and an overall deadline";
  }
  c.out.push_back(f);
}

// A fixed cap on concurrent retries (Envoy's max_retries, 3 when left out;
// Istio's maxRetries): Envoy takes the slot when the failure arrives and holds
// it through the backoff until the retry's outcome; a failure over the cap is
// returned at once (RetryStateImpl::shouldRetry, docs/policies.md).
std::string cap_text(const LayerPolicy& l) {
  std::string n = number_text(l.budget.min_concurrency);
  std::string where = l.system == "envoy" || l.system == "istio" ? " per Envoy instance" : "";
  return "only a fixed cap, no retry budget: " + n + " " +
         (l.budget.min_concurrency == 1 ? "retry" : "retries") + " may be in flight" + where +
         " (backoff included), and a failure above that is returned at once; the cap does not "
         "grow or shrink with traffic";
}

void rule_budget(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0) return;
  if (!l.budget_modelled) return;
  bool cap_only = l.budget.kind == BudgetKind::envoy_concurrency && l.budget.ratio == 0;
  if (l.budget.kind != BudgetKind::none && !cap_only) return;
  Terms t = terms(l);
  Finding f;
  f.severity = "warning";
  f.rule = "no-retry-budget";
  f.file = l.file;
  std::string why = l.budget_from.empty() ? "no retry budget" : l.budget_from;
  f.message = cap_only ? cap_text(l)
                       : "no retry budget (" + why + "): in an incident every failure is retried " +
                             plural(l.retries, "time", "times") + ", up to " +
                             std::to_string(l.retries + 1) + "x the load";
  f.fix = t.budget_fix;
  f.numbers = {{"retries", l.retries}, {"budget", budget_kind_name(l.budget.kind)}};
  f.fix_keys = budget_fix(l);
  c.out.push_back(f);
}

// Attempts per user request at the bottom of the stack: ClientPolicy's one
// definition (the product of retries + 1 over the layers).
double amplification(const std::vector<const LayerPolicy*>& layers) {
  ClientPolicy stack;
  for (const auto* l : layers) stack.layer_retries.push_back(l->retries);
  return stack.attempts();
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
              "): attempts multiply, " + product + " = up to " + number_text(a) +
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
  bool budget = std::any_of(c.retrying.begin(), c.retrying.end(), [](const LayerPolicy* l) {
    return l->budget.kind != BudgetKind::none;
  });
  std::string pct = number_text(std::round(bound * 1000) / 10) + "%";
  if (!load) {
    f.severity = "info";
    f.message = "with up to " + number_text(a) +
                " attempts per request, a backlog of late "
                "responses surely drains only below 1/" +
                number_text(a) + " = " + pct +
                " of capacity; pass --load to check a service's load";
    f.fix = "keep the load below " + pct + " of capacity, or bound retries with a budget";
    c.out.push_back(f);
    return;
  }
  f.numbers["load"] = *load;
  if (*load < bound) return;
  f.severity = budget ? "info" : "warning";
  int attempts = std::max(1, static_cast<int>(std::floor(1 / *load)));
  f.message = "load " + number_text(std::round(*load * 1000) / 10) + "% (" + load_from +
              ") is above 1/" + number_text(a) + " = " + pct +
              ": once every response is late, retries multiply demand by up to " + number_text(a) +
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

// gRPC perAttemptRecvTimeout: honoured by C-core only (a timer per attempt in
// its retry filter); grpc-go does not parse it and grpc-java never reads the
// value it parses (docs/policies.md, "Per system").
void rule_c_core_only(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.per_try_c_core_only || !l.per_try_timeout_s) return;
  double deadline = l.deadline_s.value_or(0);
  Finding f;
  f.severity = "warning";
  f.rule = "per-attempt-timeout-c-core-only";
  f.file = l.file;
  f.message = "retryPolicy.perAttemptRecvTimeout (" + human_duration(*l.per_try_timeout_s) +
              ") is applied only by gRPC C-core (C++, Python, Ruby, PHP, ...), and only on "
              "channels created with the argument grpc.experimental.enable_hedging; grpc-js, "
              "grpc-go and grpc-java ignore it: there an attempt runs until " +
              (deadline > 0 ? "the deadline (" + human_duration(deadline) + ")"
                            : std::string("the caller gives up (no methodConfig.timeout)")) +
              " and a timed-out attempt is never retried";
  f.fix =
      "set grpc.experimental.enable_hedging on C-core channels that rely on it; for other "
      "clients do not count on it: size methodConfig.timeout (and the callers' deadlines) "
      "for attempts that run to the deadline";
  f.numbers = {{"per_attempt_recv_timeout_s", *l.per_try_timeout_s}, {"deadline_s", deadline}};
  c.out.push_back(f);
}

// AWS adaptive mode: the retry quota is modelled, the client-side rate limiter
// is not, a deliberate simplification measured against botocore and
// @smithy/util-retry in docs/conformance.md ("AWS SDKs").
void rule_adaptive_limiter(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  auto mode = l.settings.find("retry_mode");
  if (l.system != "aws" || mode == l.settings.end() || mode->second != "adaptive") return;
  Finding f;
  f.severity = "info";
  f.rule = "adaptive-rate-limiter-not-modelled";
  f.file = l.file;
  f.message =
      "retry_mode = adaptive: the retry quota is modelled, the SDK's client-side rate limiter is "
      "not (a deliberate simplification): after a throttling error it holds every attempt, first "
      "attempts included, to a token bucket refilled at 0.7 x the measured send rate (at least "
      "0.5 per second) that then grows back along a cubic curve; simulated first attempts are "
      "never delayed by the client, so the model overstates the load an adaptive client sends "
      "while it is throttled";
  f.fix =
      "read the simulated load after throttling as an upper bound, or use retry_mode = standard";
  f.numbers = {{"min_fill_rate_per_s", 0.5}, {"beta", 0.7}};
  c.out.push_back(f);
}

// botocore's standard and adaptive modes cap each delay after the jitter,
// min(U(0, 1) x 2^(n-1), 20) s (ExponentialBackoff.delay_amount in
// botocore/retries/standard.py): from retry 6 on, a share of the delays is
// exactly 20 s, which the model's U(0, 20) does not draw. A deliberate
// simplification, measured in docs/conformance.md ("AWS SDKs").
void rule_aws_cap_after_jitter(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  auto mode = l.settings.find("retry_mode");
  if (l.system != "aws" || mode == l.settings.end() || mode->second == "legacy") return;
  if (l.retries < 6) return;
  Finding f;
  f.severity = "info";
  f.rule = "backoff-cap-after-jitter";
  f.file = l.file;
  f.message = std::to_string(l.retries + 1) + " attempts in retry_mode = " + mode->second +
              ": botocore caps each delay after drawing it, so from retry 6 on a delay is exactly "
              "20 s in 37.5% of draws or more (retry 6 mean 13.75 s); the model draws U(0, 20) "
              "s there (mean 10 s), so it runs the long tail of the ladder shorter than botocore "
              "(a deliberate simplification)";
  f.fix = "read ladder totals past retry 5 as a lower bound, or keep max_attempts at 6 or below";
  f.numbers = {{"attempts", l.retries + 1.0}, {"cap_s", 20}};
  c.out.push_back(f);
}

// The proxies' own traps (HAProxy, nginx), from the settings they were read
// with (LayerPolicy::settings; facts in import_haproxy.cpp, import_nginx.cpp).
Finding proxy_finding(const char* severity, const char* rule, const LayerPolicy& l) {
  Finding f;
  f.severity = severity;
  f.rule = rule;
  f.file = l.file;
  return f;
}

std::string setting(const LayerPolicy& l, const std::string& name) {
  auto it = l.settings.find(name);
  return it == l.settings.end() ? "" : it->second;
}

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// do_l7_retry (src/http_ana.c) checks no method: an L7 retry replays POSTs.
void rule_haproxy(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.system != "haproxy" || l.retries <= 0) return;
  std::string on = setting(l, "retry-on");
  std::vector<std::string> replays;
  for (const char* k : {"response-timeout", "empty-response", "junk-response"})
    if (has_word(on, k)) replays.push_back(k);
  if (!replays.empty()) {
    Finding f = proxy_finding("warning", "retries-non-idempotent", l);
    std::string list;
    for (const auto& k : replays) list += (list.empty() ? "" : ", ") + k;
    f.message = "retry-on " + list +
                ": the server may have done the work before it failed, and HAProxy replays "
                "every method (POST included; do_l7_retry checks none), " +
                plural(l.retries, "time", "times");
    f.fix =
        "keep response-timeout and empty-response for backends whose handlers are "
        "idempotent (request IDs); elsewhere retry-on conn-failure 503";
    f.numbers = {{"retries", l.retries}, {"retry_on", on}};
    c.out.push_back(f);
  }
  if (on == "conn-failure") {
    Finding f = proxy_finding("info", "retries-connection-failures-only", l);
    f.message = "retry-on conn-failure (HAProxy's default): the " +
                plural(l.retries, "retry covers", "retries cover") +
                " only connections that fail; a server that accepts and then answers 503 or "
                "times out is not retried";
    f.numbers = {{"retries", l.retries}, {"retry_on", on}};
    c.out.push_back(f);
  }
}

void rule_nginx(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.system != "nginx") return;
  std::string tries = setting(l, "proxy_next_upstream_tries");
  int servers = std::atoi(setting(l, "servers").c_str());
  if (tries == "0" && l.retries > 0) {
    Finding f = proxy_finding("warning", "unlimited-tries", l);
    f.message = "proxy_next_upstream_tries 0 (the default) sets no limit: every one of the " +
                std::to_string(servers) +
                " servers is tried, so each server added to the upstream adds a retry (" +
                std::to_string(l.retries) + " now)";
    f.fix = "set proxy_next_upstream_tries 2 (one retry) or the attempts you mean";
    f.numbers = {{"servers", servers}, {"retries", l.retries}};
    f.fix_keys = c.retries_fix(index, std::min(l.retries, 1));
    c.out.push_back(f);
  }
  long long written = std::atoll(tries.c_str());
  if (servers > 0 && written > servers) {
    Finding f = proxy_finding("info", "tries-above-servers", l);
    f.message = "proxy_next_upstream_tries " + tries + " but the upstream has " +
                plural(servers, "server", "servers") +
                (servers == 1 ? ", which nginx never retries" : "") + ": at most " +
                plural(servers, "try", "tries") + " per request";
    f.numbers = {{"tries", written}, {"servers", servers}};
    c.out.push_back(f);
  }
  if (l.retries > 0 && has_word(setting(l, "proxy_next_upstream"), "non_idempotent")) {
    Finding f = proxy_finding("warning", "retries-non-idempotent", l);
    f.message =
        "proxy_next_upstream non_idempotent passes POST, LOCK and PATCH requests to the "
        "next server after they were sent: the work may be done twice";
    f.fix = "drop non_idempotent unless the handlers are idempotent (request IDs)";
    c.out.push_back(f);
  }
}

// ----------------------------------------------------------- simulation

void snap_timeouts(Scenario& s, json& notes) {
  double step = s.step_s;
  double t = s.client.timeout_s;
  double snapped = std::max(step, std::round(t / step) * step);
  if (std::fabs(snapped - t) > 1e-12) {
    set_key(s, "client.timeout_s", snapped);
    std::string note = "client.timeout_s " + number_text(t) + " s rounded to " +
                       number_text(snapped) + " s (a whole number of " + number_text(step) +
                       " s steps)";
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
                    number_text(base.client.timeout_s) + " s is kept");
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
  o << "; failed " << number_text(std::round(m["failed_fraction"].get<double>() * 1000) / 10)
    << "%, wasted " << number_text(std::round(m["wasted_fraction"].get<double>() * 1000) / 10)
    << "%, peak amplification "
    << number_text(std::round(m["peak_amplification"].get<double>() * 100) / 100) << "x";
  return o.str();
}

}  // namespace

double checked_lint_load(double load, const std::string& option) {
  if (std::isfinite(load) && load >= 0 && load <= kMaxLintLoad) return load;
  throw InputError(option + ": " + number_text(load) + " is not a load; allowed 0 to " +
                   number_text(kMaxLintLoad) + " (demand / capacity, e.g. 0.6)");
}

namespace {

// The rules over the layers read (files, or a scenario's own policy).
LintReport lint_imported(ImportResult imported, const LintOptions& o) {
  LintReport r;
  r.imported = std::move(imported);
  Context c{r.imported, {}, r.findings};
  for (const auto& l : r.imported.layers)
    if (l.has_retry_policy) c.retrying.push_back(&l);
  for (size_t i = 0; i < c.retrying.size(); ++i) {
    rule_deadline(c, i);
    rule_never_retried(c, i);
    rule_budget(c, i);
    rule_no_deadline(c, i);
    rule_c_core_only(c, i);
    rule_haproxy(c, i);
    rule_nginx(c, i);
    rule_adaptive_limiter(c, i);
    rule_aws_cap_after_jitter(c, i);
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
    if (key_applies(base, "demand.rate_per_s")) {
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

}  // namespace

LintReport lint_configs(const std::vector<ConfigFile>& files, const LintOptions& o) {
  if (o.load) checked_lint_load(*o.load, "load");
  return lint_imported(import_configs(files, false), o);  // out-of-range files are linted too
}

LintReport lint_scenario(const Scenario& s, const std::string& source, const LintOptions& o) {
  if (o.load) checked_lint_load(*o.load, "load");
  return lint_imported(import_scenario(s, source), o);
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
              : v.is_number() ? number_text(v.get<double>())
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

namespace {
// A layer's ladder as run reports it and lint reasons over it (the same
// ClientPolicy ladder): mean, 99th percentile, worst case, and the share of
// requests whose attempts all fail that it carries past the deadline.
json ladder_json(const LayerPolicy& l) {
  LadderView v(l);
  json out = {{"retries", l.retries},
              {"mean_s", v.alone.mean_s()},
              {"p99_s", v.alone.quantile(kFitQuantile)},
              {"max_s", v.alone.max_s()}};
  double deadline = l.deadline_s.value_or(0);
  if (deadline > 0) {
    out["deadline_s"] = deadline;
    out["p_exceeds_deadline"] = v.total.p_exceeds(deadline);
  }
  return out;
}
}  // namespace

json lint_json(const LintReport& r) {
  json files = json::array();
  for (const auto& f : r.imported.formats) files.push_back(f);
  json layers = json::array();
  for (const auto& l : r.imported.layers)
    layers.push_back({{"file", l.file},
                      {"format", l.format},
                      {"system", l.system},
                      {"retries", l.retries},
                      {"budget", budget_kind_name(l.budget.kind)},
                      {"ladder", ladder_json(l)}});
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
