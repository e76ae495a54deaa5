// The lint rules' shared pieces (internal to src/systems/lint): the layers a
// rule reads, the ladder seen against a deadline, and the words findings are
// written in. One file per family of rules: ladder_rules.cpp (the ladder
// against the deadline), budget_rules.cpp, stack_rules.cpp (layers, load,
// counting, deadlines), system_rules.cpp (one system's own traps).
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/ladder.hpp"
#include "systems/common.hpp"
#include "systems/lint.hpp"
#include "systems/room.hpp"
#include "text/plural.hpp"

namespace retrystorm::configs::lint {

using nlohmann::json;

// "retry_policy.num_retries = 3" (or the attempts, where the system counts them).
std::string count_text(const LayerPolicy& l, int retries);
using text::plural;  // "1 retry", "2 retries"
// A finding of `rule` about `file`; the rule adds its message, fix and numbers.
Finding finding(Severity severity, std::string rule, std::string file);

struct Context {
  const ImportResult& imp;
  std::vector<const LayerPolicy*> retrying;  // outermost first
  std::vector<Finding>& out;
  const ClientInstances& instances;

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
std::string percent_text(double p);

// Whether the layer retries what an overloaded dependency answers: a
// timed-out attempt, a 503 or a 429 (a full queue, a shed). A layer that
// retries only refused connections and resets does not multiply an overload.
inline bool retries_overload(const LayerPolicy& l) {
  constexpr AnswerSet kOverload =
      answer_bit(FailureClass::http_503) | answer_bit(FailureClass::http_429);
  return l.retry_on_timeout || (l.retried_answers & kOverload) != 0;
}
// "every failure is retried", or which classes are when not all are:
// "every failure of these classes is retried ... (timeout, 503)".
inline std::string retried_classes(const LayerPolicy& l) {
  if (l.retry_on_timeout && l.retried_answers == kAllAnswers) return "";
  std::string answers = answer_list(l.retried_answers, ", ");
  if (!l.retry_on_timeout) return answers;
  return answers.empty() ? "timeout" : "timeout, " + answers;
}

// What of the layer's budget is held by each client instance, in words
// ("a cap of 3 concurrent retries"); "" when nothing is. These amounts scale
// by client.budget.clients (src/core/policies/budget.cpp).
std::string per_instance_amount(const LayerPolicy& l);
inline bool per_instance(const LayerPolicy& l) {
  return !per_instance_amount(l).empty();
}
// "a cap of 3 concurrent retries per client instance, with 100 instances
// (the model's default: ...)"; "" when nothing is per instance.
std::string instances_text(const LayerPolicy& l, const ClientInstances& n);

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

// The rules, each adding its findings to c.out.
void rule_deadline(const Context& c, size_t index);
void rule_never_retried(const Context& c, size_t index);
void rule_budget(const Context& c, size_t index);
void rule_no_deadline(const Context& c, size_t index);
void rule_layers(const Context& c);
void rule_load(const Context& c, std::optional<double> load, const std::string& load_from);
void rule_counting(const Context& c);
void rule_c_core_only(const Context& c, size_t index);
void rule_hedging(const Context& c, size_t index);
void rule_hedging_layers(const Context& c);
void rule_adaptive_limiter(const Context& c, size_t index);
void rule_pool_wait_unbounded(const Context& c, size_t index);
void rule_outlier_never_ejects(const Context& c, size_t index);
void rule_aws_cap_after_jitter(const Context& c, size_t index);
void rule_haproxy(const Context& c, size_t index);
void rule_nginx(const Context& c, size_t index);
void rule_model_cap(const Context& c, size_t index);
void rule_haproxy_16_bit(const Context& c, size_t index);

// The rules that need a graph of services (graph_rules.cpp), about the
// scenario `source` names.
void graph_rules(const Scenario& s, const std::string& source, std::vector<Finding>& out);

}  // namespace retrystorm::configs::lint
