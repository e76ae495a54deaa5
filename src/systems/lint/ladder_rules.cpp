#include <cmath>

#include "systems/lint/rules.hpp"

namespace retrystorm::configs::lint {

namespace {

// A finding about one layer's ladder: its severity, rule, file and the
// ladder's numbers (each rule adds its own message, fix and numbers).
Finding ladder_finding(Severity severity, const char* rule, const LayerPolicy& l,
                       const LadderView& v, double deadline) {
  Finding f = finding(severity, rule, l.file);
  f.numbers = v.numbers(l, deadline);
  return f;
}

// What becomes of the retries the deadline leaves no time for: a layer that
// enforces its deadline never sends them; otherwise they run unseen.
std::string past_deadline_text(const LayerPolicy& l) {
  std::string stops = room(l.system).deadline_stops;
  if (stops.empty()) return "the rest are work the caller never sees";
  return "and the rest are never sent: " + stops +
         ", so the request fails at the deadline instead of being retried";
}

// "" or " (nginx starts no try once ...)": how the layer cuts at its deadline.
std::string enforced_text(const LayerPolicy& l) {
  std::string stops = room(l.system).deadline_stops;
  return stops.empty() ? "" : " (" + stops + ")";
}

void ladder_error(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  LintTerms t = lint_terms(l);
  int fits = v.retries_that_fit(deadline);
  double attempts_total = (l.retries + 1) * v.per_try;
  Finding f = ladder_finding(Severity::error, "ladder-exceeds-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.message =
      "the backoff ladder (" + v.text() + ") adds up to " + v.sum_text() + ", longer than the " +
      human_duration(deadline) + " deadline" +
      (v.per_try > 0 ? ", before the attempts' own " + human_duration(attempts_total) : "") + ": " +
      percent_text(v.total.p_exceeds(deadline)) +
      " of requests whose attempts all fail pass the deadline; only " + std::to_string(fits) +
      " of " + std::to_string(l.retries) + " retries can start in time (99th percentile), " +
      past_deadline_text(l);
  f.fix = "keep " + std::to_string(fits) + " retries (" + count_text(l, fits) +
          "), or cap the backoff (" + t.cap + ") so the ladder fits in " +
          human_duration(deadline) + ", or raise " + t.deadline + " above " +
          human_duration(v.total.quantile(kFitQuantile));
  f.fix_keys = c.retries_fix(index, fits);
  c.out.push_back(f);
}

void per_try_warning(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  LintTerms t = lint_terms(l);
  int fits = v.retries_that_fit(deadline);
  double p99 = v.alone.quantile(kFitQuantile);
  double suggested = (deadline - p99) / (l.retries + 1);
  Finding f = ladder_finding(Severity::warning, "per-try-timeouts-exceed-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.numbers["per_try_timeout_that_fits_s"] = std::max(0.0, suggested);
  f.message = "(" + std::to_string(l.retries) + " + 1) x " + human_duration(v.per_try) +
              " per try + backoff " + v.sum_text() + " = up to " + human_duration(v.total.max_s()) +
              " > " + t.deadline + " " + human_duration(deadline) + ": " +
              percent_text(v.total.p_exceeds(deadline)) +
              " of requests whose attempts all time out pass the deadline; only " +
              std::to_string(fits) + " of " + std::to_string(l.retries) +
              " retries fit (99th percentile), the deadline cuts the rest" + enforced_text(l);
  f.fix = suggested > 0 ? "set " + t.per_try + " to at most " + human_duration(suggested) +
                              " (then 99% of those requests end in time), or " + count_text(l, fits)
                        : count_text(l, fits) + ", or raise " + t.deadline;
  f.fix_keys = c.retries_fix(index, fits);
  c.out.push_back(f);
}

// The worst case passes the deadline, but rarely: stated, not an error.
void ladder_info(const Context& c, size_t index, const LadderView& v, double deadline) {
  const LayerPolicy& l = *c.retrying[index];
  Finding f = ladder_finding(Severity::info, "ladder-exceeds-deadline", l, v, deadline);
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
  Finding f = ladder_finding(Severity::info, "ladder-exceeds-deadline", l, v, deadline);
  f.numbers["retries_that_fit"] = fits;
  f.numbers["deadline_aware"] = true;
  // The rule (ClientPolicy::decide, rest_of_ladder_mean) retries only while
  // the rest of the ladder, each step at its middle, ends before the deadline.
  const double middles = v.alone.mean_s();
  f.message = "the backoff ladder (" + v.text() + ") adds up to " + v.sum_text() +
              ", longer than the " + human_duration(deadline) +
              " deadline, but the deadline-aware rule (sessions.deadline_aware) cuts it: a "
              "session retries only while the rest of the ladder, each step at its middle, "
              "can end before its deadline; " +
              (middles > deadline
                   ? "the whole ladder at its middles (" + human_duration(middles) +
                         ") is already longer, so every session fails fast on its first error"
                   : "at its middles the ladder takes " + human_duration(middles) +
                         ", so a session that starts erring with less than that left before its "
                         "deadline fails fast");
  c.out.push_back(f);
}

}  // namespace

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
  LintTerms t = lint_terms(l);
  double deadline = l.deadline_s.value_or(0);
  Finding f = finding(Severity::warning, "timeouts-never-retried", l.file);
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
  // Whole milliseconds, down: what a config file holds, and it still fits.
  if (suggested >= 0.001) suggested = std::floor(suggested * 1000) / 1000;
  // Envoy and Istio retry a timed-out attempt only with 5xx, gateway-error or
  // reset in retry_on: setting the per-try timeout alone would not do it.
  std::string and_retry_on =
      l.timeouts_retriable ? ""
                           : " and add reset to " +
                                 std::string(l.system == System::istio ? "retries.retryOn"
                                                                       : "retry_policy.retry_on") +
                                 " (5xx or gateway-error would also retry every 503), without "
                                 "which a timed-out attempt is still not retried,";
  f.numbers["timeouts_retriable"] = l.timeouts_retriable;
  if (suggested > 0) {
    double p = LadderDistribution(l.ladder(), (l.retries + 1) * suggested).p_exceeds(deadline);
    f.fix = "set " + t.per_try + " to about " + human_duration(suggested) + and_retry_on +
            " so every attempt fits in " + human_duration(deadline) + " (" + percent_text(p) +
            " of requests whose attempts all time out would pass it; the backoff's 99th "
            "percentile is " +
            human_duration(ladder.quantile(kFitQuantile)) +
            "; this adds load in an incident: pair it with a budget)";
    f.numbers["per_try_timeout_s"] = suggested;
    f.numbers["ladder_p99_s"] = ladder.quantile(kFitQuantile);
    f.numbers["p_exceeds_deadline_with_fix"] = p;
    f.fix_keys = {{"client.retry_on_timeout", true}, {"client.timeout_s", suggested}};
    // The edit adds reset to retry_on: the simulation retries resets too.
    if (!l.timeouts_retriable)
      f.fix_keys.emplace_back("client.retry_on",
                              answer_set_text(l.retried_answers | answer_bit(FailureClass::reset)));
  } else {
    f.fix = "set " + t.per_try + and_retry_on + " and an overall deadline";
  }
  c.out.push_back(f);
}

}  // namespace retrystorm::configs::lint
