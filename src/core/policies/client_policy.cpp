#include "policies/client_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/keys.hpp"  // InputError, parse_number_list

namespace retrystorm {

namespace {

// Grid cells for the ladder distribution: enough for a CDF error far below
// a percent, bounded so that a 10,000-retry ladder still costs milliseconds.
constexpr double kGridWork = 2e7;
constexpr int kMinCells = 512, kMaxCells = 8192;
// The engines compare instants with this tolerance (decimal steps).
constexpr double kDeadlineEpsilon = 1e-9;

// The integral of the piecewise-linear CDF `f` (nodes j x h, 1 past the last
// node, 0 before the first) from 0 to y, given its prefix integrals `g`.
double integral_at(const std::vector<double>& f, const std::vector<double>& g, double h, double y) {
  if (y <= 0) return 0;
  auto last = f.size() - 1;
  double cell = std::floor(y / h);
  if (cell >= static_cast<double>(last)) return g[last] + (y - static_cast<double>(last) * h);
  auto j = static_cast<size_t>(cell);
  double t = y - static_cast<double>(j) * h;
  return g[j] + f[j] * t + (f[j + 1] - f[j]) * t * t / (2 * h);
}

// One convolution of the CDF on the grid with U(0, w): F'(x) = (G(x) - G(x - w)) / w.
void convolve_uniform(std::vector<double>& f, std::vector<double>& g, double h, double w) {
  g[0] = 0;
  for (size_t j = 1; j < f.size(); ++j) g[j] = g[j - 1] + h * (f[j - 1] + f[j]) / 2;
  std::vector<double> next(f.size());
  for (size_t j = 0; j < f.size(); ++j) {
    double x = static_cast<double>(j) * h;
    next[j] = std::clamp((g[j] - integral_at(f, g, h, x - w)) / w, 0.0, 1.0);
  }
  f = std::move(next);
}

}  // namespace

LadderDistribution::LadderDistribution(const std::vector<DelayRange>& delays, double fixed_s) {
  min_s_ = max_s_ = mean_s_ = fixed_s;
  std::vector<double> widths;
  for (const DelayRange& r : delays) {
    min_s_ += r.low_s;
    max_s_ += r.high_s;
    mean_s_ += (r.low_s + r.high_s) / 2;
    if (r.high_s > r.low_s) widths.push_back(r.high_s - r.low_s);
  }
  double total = max_s_ - min_s_;
  if (widths.empty() || !std::isfinite(total)) return;  // a point, or no finite law
  auto cells = static_cast<int>(std::clamp(kGridWork / static_cast<double>(widths.size()),
                                           double{kMinCells}, double{kMaxCells}));
  h_ = total / cells;
  f_.assign(static_cast<size_t>(cells) + 1, 1.0);  // all mass at 0 before the first draw
  std::vector<double> g(f_.size());
  for (double w : widths) convolve_uniform(f_, g, h_, w);
}

double LadderDistribution::cdf(double x_s) const {
  if (!std::isfinite(max_s_)) return 0;  // an unbounded range: every total exceeds x
  if (x_s < min_s_) return 0;
  if (x_s >= max_s_ || f_.empty()) return 1;
  double y = (x_s - min_s_) / h_;
  auto j = std::min(static_cast<size_t>(y), f_.size() - 2);
  double t = y - static_cast<double>(j);
  return std::clamp(f_[j] + (f_[j + 1] - f_[j]) * t, 0.0, 1.0);
}

double LadderDistribution::quantile(double q) const {
  if (q <= 0 || f_.empty()) return q <= 0 ? min_s_ : max_s_;
  if (q >= 1) return max_s_;
  auto it = std::lower_bound(f_.begin(), f_.end(), q);
  if (it == f_.end()) return max_s_;
  auto j = static_cast<size_t>(it - f_.begin());
  if (j == 0) return min_s_;
  double below = f_[j - 1], above = f_[j];
  double t = above > below ? (q - below) / (above - below) : 1;
  return min_s_ + (static_cast<double>(j - 1) + t) * h_;
}

ClientPolicy ClientPolicy::of(const Scenario& s, Engine runs_with) {
  Settings p;
  // The session model has one client with one ladder of client.retries steps.
  bool sessions = runs_with == Engine::sessions;
  p.layer_retries = sessions ? std::vector<int>{s.client.retries} : s.layer_retries();
  p.timeout_s = s.client.timeout_s;
  p.deadline_s = s.client.deadline_s;
  p.retry_on_timeout = s.client.retry_on_timeout;
  // The session model's answers are its own (docs/sessions.md): it retries them all.
  p.retried_answers = sessions ? kAllAnswers : s.retried_answers();
  p.pushback = s.client.pushback;
  p.pushback_max_s = s.client.pushback_max_s;
  p.backoff = s.client.backoff;
  p.budget = s.client.budget;
  // Per-layer timeouts are the agent engine's key; the others time every layer alike.
  p.layer_timeouts_s =
      parse_layer_timeouts(runs_with == Engine::agent ? s.client.layer_timeouts_s : std::string(),
                           static_cast<int>(p.layer_retries.size()), p.timeout_s);
  // Hedging is the agent engine's: the fluid engine reads a hedging layer as
  // retries after a per-attempt timeout (docs/policies.md, "Hedging").
  if (runs_with == Engine::agent) {
    p.layer_hedging = s.hedged_layers();
    p.rate_limiter = s.client.rate_limiter;
  }
  if (p.deadline_s > 0) {
    switch (runs_with) {
      case Engine::fluid:
        p.deadline_rule = DeadlineRule::planned_mean;
        break;
      case Engine::agent:
        p.deadline_rule = DeadlineRule::fires;
        break;
      case Engine::sessions:
        if (s.sessions.deadline_aware) p.deadline_rule = DeadlineRule::rest_of_ladder_mean;
        break;
    }
  }
  return ClientPolicy(std::move(p));
}

ClientPolicy::ClientPolicy(Settings settings) : settings_(std::move(settings)) {
  attempts_ = static_cast<int>(std::min(attempts_of(settings_.layer_retries), 1e9));
  // Ranges up to the longest ladder an engine walks (the stack read as one
  // ladder is at most RunLimits::max_attempts long once validated).
  constexpr int kCachedRanges = 1 << 16;
  int most = std::min(attempts() - 1, kCachedRanges);
  ranges_.reserve(static_cast<size_t>(most) + 1);
  ranges_.push_back({0, 0});
  for (int k = 1; k <= most; ++k) ranges_.push_back(backoff_delay(settings_.backoff, k));
  last_planned_attempt_ = plan_deadline();
  if (settings_.deadline_rule == DeadlineRule::rest_of_ladder_mean) mean_ladder_ = mean_ladder(0);
}

std::vector<double> ClientPolicy::parse_layer_timeouts(const std::string& text, int layers,
                                                       double timeout_s) {
  if (text.empty()) return std::vector<double>(static_cast<size_t>(layers), timeout_s);
  std::vector<double> out;
  std::string bad;
  bool numbers = parse_number_list(text, out, bad);
  bool valid =
      numbers && std::all_of(out.begin(), out.end(), [](double v) { return v > 0 && v <= 1e7; });
  if (!valid)
    throw InputError("client.layer_timeouts_s: '" + text +
                     "' must be timeouts in seconds above 0, outermost first, like 3,1");
  if (out.size() != static_cast<size_t>(layers))
    throw InputError("client.layer_timeouts_s: '" + text + "' names " + std::to_string(out.size()) +
                     " timeouts for " + std::to_string(layers) +
                     " retrying layers; give one per layer, outermost first");
  return out;
}

std::vector<DelayRange> ClientPolicy::ladder_of(int retries) const {
  std::vector<DelayRange> out;
  out.reserve(static_cast<size_t>(std::max(retries, 0)));
  for (int k = 1; k <= retries; ++k) out.push_back(delay(k));
  return out;
}

std::vector<double> ClientPolicy::mean_ladder(int layer) const {
  std::vector<double> out;
  for (const DelayRange& r : ladder(layer)) out.push_back((r.low_s + r.high_s) / 2);
  return out;
}

LadderDistribution ClientPolicy::ladder_distribution(int layer, double per_try_s) const {
  int n = retries(layer);
  return LadderDistribution(ladder_of(n), (n + 1) * per_try_s);
}

LadderStats ClientPolicy::ladder_stats(int layer, double per_try_s) const {
  LadderDistribution d = ladder_distribution(layer, per_try_s);
  LadderStats st;
  st.retries = retries(layer);
  st.fixed_s = (st.retries + 1) * per_try_s;
  st.min_s = d.min_s();
  st.mean_s = d.mean_s();
  st.max_s = d.max_s();
  st.p99_s = d.quantile(0.99);
  return st;
}

double ClientPolicy::p_exceeds(double deadline_s, int layer, double per_try_s) const {
  return ladder_distribution(layer, per_try_s).p_exceeds(deadline_s);
}

// With the planned rule, retry number a is sent only if the ladder up to it
// fits: a timeouts plus the middle of each backoff range. The ladder only
// grows, so the first retry that does not fit ends it.
int ClientPolicy::plan_deadline() const {
  int n = attempts();
  if (deadline_rule() != DeadlineRule::planned_mean) return n;
  double elapsed = 0;
  for (int a = 1; a < n; ++a) {
    DelayRange d = delay(a);
    elapsed += timeout_s() + (d.low_s + d.high_s) / 2;
    if (elapsed > deadline_s() + kDeadlineEpsilon) return a;
  }
  return n;
}

RetryDecision ClientPolicy::decide(const Failure& f) const {
  RetryDecision d;
  int limit = f.layer == Failure::kAllLayers ? last_planned_attempt_ : layer_attempts(f.layer);
  if (f.attempt >= limit) {
    // The planned rule ends the ladder early: past the deadline, not exhausted.
    d.verdict = f.attempt < attempts() && f.layer == Failure::kAllLayers
                    ? RetryVerdict::past_deadline
                    : RetryVerdict::exhausted;
    return d;
  }
  if (!f.hedge_due && !retryable(f)) {
    d.verdict = f.timed_out ? RetryVerdict::timeout_not_retried : RetryVerdict::answer_not_retried;
    return d;
  }
  if (deadline_rule() == DeadlineRule::rest_of_ladder_mean) {
    // The rest of the ladder, from this retry on, at its middles.
    double rest = 0;
    for (size_t k = static_cast<size_t>(f.attempt - 1); k < mean_ladder_.size(); ++k)
      rest += mean_ladder_[k];
    if (f.now_s + rest > f.start_s + deadline_s()) {
      d.verdict = RetryVerdict::past_deadline;
      return d;
    }
  }
  d.verdict = RetryVerdict::retry;
  d.retry = f.attempt;
  d.ladder_offset = f.ladder_offset;
  if (!waits_pushback(f)) {  // most failures: no pushback, the ladder's step
    d.delay = delay(ladder_step(f));
    return d;
  }
  // A waited pushback replaces the backoff's draw. Envoy's exponential ladder
  // does not step on (RetryStateImpl::enableBackoffTimer calls the rate-limited
  // strategy's nextBackOffMs, not backoff_strategy_'s); gRPC's starts again
  // (C-core RetryFilter::LegacyCallData::StartRetryTimer: retry_backoff_.Reset();
  // grpc-go numRetriesSincePushback = 0; grpc-js, grpc-java alike).
  d.delay = pushback_range(f);
  d.ladder_offset = settings_.pushback == Pushback::exact ? f.attempt : f.ladder_offset + 1;
  return d;
}

// gRPC waits the server's grpc-retry-pushback-ms exactly (C-core
// RetryFilter's CallAttempt::ShouldRetry, grpc-java RetriableStream);
// Envoy's rate_limited_retry_back_off draws in [p, 1.5 p) and keeps its
// backoff for a pushback above max_interval (RetryStateImpl::parseResetInterval).
DelayRange ClientPolicy::pushback_delay(const Failure& f, DelayRange backoff) const {
  return waits_pushback(f) ? pushback_range(f) : backoff;
}

DelayRange ClientPolicy::pushback_range(const Failure& f) const {
  if (settings_.pushback == Pushback::exact) return {f.pushback_s, f.pushback_s};
  return {f.pushback_s, 1.5 * f.pushback_s};
}

bool ClientPolicy::waits_pushback(const Failure& f) const {
  if (!(f.pushback_s > 0) || f.timed_out) return false;  // no answer, no header
  switch (settings_.pushback) {
    case Pushback::ignore:
      return false;
    case Pushback::exact:
      return true;
    case Pushback::envoy:
      return f.pushback_s <= settings_.pushback_max_s;
  }
  return false;
}

double ClientPolicy::deadline_left_s(int attempt) const {
  double elapsed = attempt * timeout_s();
  for (int k = 1; k < attempt; ++k) {
    DelayRange d = delay(k);
    elapsed += (d.low_s + d.high_s) / 2;
  }
  return std::max(0.0, deadline_s() - elapsed);
}

}  // namespace retrystorm
