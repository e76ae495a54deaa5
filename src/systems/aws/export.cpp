// The AWS SDKs' shared config file written from a scenario: a [default]
// profile with retry_mode and max_attempts.
#include <sstream>

#include "systems/export_kit.hpp"

namespace retrystorm::configs {

using namespace kit;  // the exporters' shared pieces

void write_aws(const Scenario& s, Draft& d) {
  auto& [r, fit, retries, notes] = d;
  // The SDKs retry throttling, transient errors and 5xx answers alike.
  if (retries > 0) note_retried(s, kAllAnswers, "AWS SDK", notes);
  // Never legacy: aws-sdk-go-v2 and other SDKs refuse it, and botocore's
  // legacy mode retries 5 times by default without a backoff cap.
  // client.rate_limiter aws_adaptive is adaptive mode: the same quota, and the limiter.
  const std::string mode =
      s.client.rate_limiter == RateLimiter::aws_adaptive ? "adaptive" : "standard";
  if (s.client.budget.kind != BudgetKind::none && s.client.budget.kind != BudgetKind::aws_quota)
    notes.push_back("the scenario's '" + budget_kind_name(s.client.budget.kind) +
                    "' budget is closest to " + mode + " mode's retry quota (500 tokens)");
  if (s.client.budget.kind == BudgetKind::aws_quota &&
      (s.client.budget.quota_tokens != 500 || s.client.budget.retry_cost != 5 ||
       s.client.budget.timeout_cost != 10 || s.client.budget.success_reward != 1))
    notes.push_back(
        "the retry quota's sizes (500 tokens, costs 5 and 10, reward 1) are fixed "
        "by the SDKs");
  if (s.client.budget.kind == BudgetKind::none)
    notes.push_back(
        "the scenario has no retry budget, but standard mode always keeps a retry quota (500 "
        "tokens, 5 per retry, 10 after a timeout) that no setting turns off: this file adds "
        "one; legacy mode, which has none, is not written (several SDKs refuse it)");
  if (retries > 0 && (s.client.backoff.base_s != 1 || s.client.backoff.multiplier != 2 ||
                      s.client.backoff.cap_s != 20 || s.client.backoff.jitter != Jitter::full))
    notes.push_back(
        "AWS standard mode backs off U(0, 1) x min(2^(retry-1), 20) s; the scenario's backoff "
        "cannot be expressed here");
  notes.push_back(
      "timeouts are not in the config file: set the per-attempt timeout (" +
      human_duration(s.client.timeout_s) + ") as the SDK client's read timeout" +
      (s.client.deadline_s > 0
           ? " and the overall deadline (" + human_duration(s.client.deadline_s) + ") in the caller"
           : std::string()));
  server_notes(s, notes);
  std::ostringstream o;
  o << "# " << heading("AWS SDK", s) << "\n";
  o << "# Goes in ~/.aws/config (or the file AWS_CONFIG_FILE names).\n";
  o << commented(notes, "#");
  o << "[default]\nretry_mode = " << mode << "\nmax_attempts = " << retries + 1 << "\n";
  r.text = o.str();
}

}  // namespace retrystorm::configs
