#include <cmath>

#include "systems/lint/rules.hpp"

namespace retrystorm::configs::lint {

std::string per_instance_amount(const LayerPolicy& l) {
  const Budget& b = l.budget;
  switch (b.kind) {
    case BudgetKind::envoy_concurrency:
      if (!(b.min_concurrency > 0)) return "";
      return (b.ratio == 0 ? "a cap of " : "a floor of ") + number_text(b.min_concurrency) +
             " concurrent " + (b.min_concurrency == 1 ? "retry" : "retries");
    case BudgetKind::grpc_throttling:
      return "a bucket of " + number_text(b.max_tokens) + " retry tokens";
    case BudgetKind::aws_quota:
      return "a retry quota of " + number_text(b.quota_tokens) + " tokens";
    case BudgetKind::ratio_ttl:
      if (!(b.min_retries_per_s > 0)) return "";
      return "a reserve of " + number_text(b.min_retries_per_s) + " retries per second";
    default:
      return "";
  }
}

std::string instances_text(const LayerPolicy& l, const ClientInstances& n) {
  std::string amount = per_instance_amount(l);
  if (amount.empty()) return "";
  return amount + " per client instance, with " + number_text(n.count) +
         (n.count == 1 ? " instance (" : " instances (") + n.from + ")";
}

namespace {

// A fixed cap on concurrent retries (Envoy's max_retries, 3 when left out;
// Istio's maxRetries): Envoy takes the slot when the failure arrives and holds
// it through the backoff until the retry's outcome; a failure over the cap is
// returned at once (RetryStateImpl::shouldRetry, docs/policies.md).
std::string cap_text(const LayerPolicy& l, const ClientInstances& instances) {
  std::string n = number_text(l.budget.min_concurrency);
  std::string where = room(l.system).budget_scope;
  return "only a fixed cap, no retry budget: " + n + " " +
         (l.budget.min_concurrency == 1 ? "retry" : "retries") + " may be in flight" + where +
         " (backoff included), and a failure above that is returned at once; the cap does not "
         "grow or shrink with traffic, and the fleet's is " +
         number_text(l.budget.min_concurrency * instances.count) + " with " +
         number_text(instances.count) + (instances.count == 1 ? " instance" : " instances") + " (" +
         instances.from + ")";
}

// The fix for a fixed cap: lower it, since a retry budget loosens it in an
// overload (20% of the requests in flight passes a cap of 3 from 16 on).
std::string cap_fix_text(const LayerPolicy& l, const ClientInstances& instances) {
  double cap = l.budget.min_concurrency;
  std::string field = l.system == System::istio ? "connectionPool.http.maxRetries"
                                                : "circuit_breakers.thresholds[].max_retries";
  return "lower " + field + " to 1 (1 retry in flight per instance, " +
         number_text(instances.count) + " in the fleet); a retry budget {20%, min " +
         number_text(cap) + "} would scale with traffic but admit more than today's cap once " +
         number_text(std::floor(cap / 0.2) + 1) +
         " requests are in flight, which an overload exceeds";
}

}  // namespace

void rule_budget(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0) return;
  if (!l.budget_modelled) return;
  if (!retries_overload(l)) return;        // its retries do not multiply an overload
  if (l.hedging == Hedging::grpc) return;  // the hedging finding says what bounds hedges
  bool cap_only = l.budget.fixed_cap();
  if (l.budget.follows_traffic()) return;
  Finding f = finding(Severity::warning, "no-retry-budget", l.file);
  std::string why = l.budget_from.empty() ? "no retry budget" : l.budget_from;
  std::string classes = retried_classes(l);
  f.message = cap_only ? cap_text(l, c.instances)
                       : "no retry budget (" + why + "): in an incident every failure " +
                             (classes.empty() ? "" : "of these classes ") + "is retried " +
                             plural(l.retries, "time", "times") +
                             (classes.empty() ? "" : " (" + classes + ")") + ", up to " +
                             std::to_string(l.retries + 1) + "x the load";
  const BudgetFix& fix = room(l.system).budget_fix;
  f.fix = cap_only ? cap_fix_text(l, c.instances) : fix.text;
  f.numbers = {{"retries", l.retries}, {"budget", budget_kind_name(l.budget.kind)}};
  if (cap_only) f.numbers["instances"] = c.instances.count;
  // A share-of-traffic budget admits more than a small cap once many requests
  // are in flight, as they are in an overload: the fix for a cap is a lower cap.
  f.fix_keys = cap_only ? KeyFix{{"client.budget.kind", std::string("envoy_concurrency")},
                                 {"client.budget.ratio", 0.0},
                                 {"client.budget.min_concurrency", 1.0}}
                        : fix.keys;
  c.out.push_back(f);
}

}  // namespace retrystorm::configs::lint
