#include "lab/lab.hpp"

#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "analysis/graph_report.hpp"
#include "engines/engine.hpp"
#include "lab/generator.hpp"
#include "lab/process.hpp"
#include "lab/proxy.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "systems/export.hpp"
#include "text/units.hpp"

namespace retrystorm::lab {

namespace fs = std::filesystem;

Scenario scale_scenario(const Scenario& s, double k) {
  Scenario x = s;
  x.demand.rate_per_s *= k;
  x.server.capacity_per_s *= k;
  // A queue limit is a capacity too (attempts waiting), kept at least one.
  if (x.server.queue_limit > 0)
    x.server.queue_limit = std::max(1.0, std::round(x.server.queue_limit * k));
  for (GraphService& service : x.graph.services)  // a service's own keys, the same way
    for (auto& [key, value] : service.server) {
      double* v = std::get_if<double>(&value);
      if (!v) continue;
      if (key == "server.capacity_per_s") *v *= k;
      if (key == "server.queue_limit" && *v > 0) *v = std::max(1.0, std::round(*v * k));
    }
  return x;
}

double peak_attempt_rate(const Scenario& scaled) {
  double demand = scaled.demand.rate_per_s * std::max(1.0, scaled.incident.demand_factor);
  if (scaled.demand.process == DemandProcess::bursty) demand *= scaled.demand.burst_factor;
  if (!scaled.graph.empty()) {  // every service's worst case, summed over the processes
    std::vector<double> worst = worst_case_attempts(scaled);
    return demand * std::accumulate(worst.begin(), worst.end(), 0.0);
  }
  return demand * scaled.attempts();
}

namespace {

bool known_through(const std::string& t) {
  for (const char* n : kThroughNames)
    if (t == n) return true;
  return false;
}

// Two significant digits, rounded down: a --scale that fits.
double suggested_scale(double scale, double peak) {
  double k = scale * kMaxAttemptsPerS / peak;
  double unit = std::pow(10.0, std::floor(std::log10(k)) - 1);
  return std::floor(k / unit) * unit;
}

std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

void check_descriptors(const Scenario& scaled, double peak_attempts_per_s, bool proxied);

// The backend answers a full queue with 503 and its incident is a slower or
// stopped server (attempts wait); other classes it does not produce. `where`
// names the block ("server." or "services.db.").
void check_backend_server(const decltype(Scenario::server)& server, const std::string& where) {
  // What stands before or inside the backend in the engines only.
  if (server.concurrency.kind != ConcurrencyLimiter::none)
    throw InputError("lab: " + where + "adaptive_concurrency " +
                     kConcurrencyLimiterNames[static_cast<int>(server.concurrency.kind)] +
                     " does not stand before the lab's backend; the agent engine runs it");
  if (server.error_share > 0)
    throw InputError("lab: " + where +
                     "error_share: the lab's backend injects no errors; the agent engine does");
  if (server.reject_status != FailureClass::http_503)
    throw InputError("lab: " + where + "reject_status " + failure_class_name(server.reject_status) +
                     " is not produced by the lab's backend, which rejects with 503");
  if (server.retry_after_s > 0)
    throw InputError("lab: " + where +
                     "retry_after_s is not sent by the lab's backend, whose 503s carry no "
                     "Retry-After");
  if (server.discipline != QueueDiscipline::fifo || server.service != ServiceDist::deterministic ||
      server.contention != 0)
    throw InputError("lab: " + where +
                     "*: the backend serves FIFO with a fixed service time and no contention");
}

// The client's breaker, throttle and max_requests run in the lab's own
// retrying client, in front of one backend.
void check_client_guards(const LabOptions& o) {
  const Scenario& s = o.scenario;
  const char* key = s.client.breaker.kind != BreakerKind::none ? "client.breaker"
                    : s.client.throttle.k > 0                  ? "client.throttle_k"
                    : s.client.max_requests > 0                ? "client.max_requests"
                                                               : nullptr;
  if (s.client.max_connections > 0)
    throw InputError(
        "lab: client.max_connections (Envoy's connection pool) is not run by the "
        "lab's client; the engines run it");
  if (s.server.hosts > 1 || s.client.outlier.consecutive_5xx > 0)
    throw InputError(std::string("lab: ") +
                     (s.server.hosts > 1 ? "server.hosts" : "client.outlier_5xx") +
                     ": the lab runs one backend per service, so there are no hosts to balance "
                     "or eject; the agent engine runs them");
  if (!key) return;
  if (!s.graph.empty())
    throw InputError(std::string("lab: ") + key +
                     " runs on one population of clients in front of one backend, not on a "
                     "chain of services");
  if (o.through != "direct")
    throw InputError(std::string("lab: ") + key + " runs in the lab's own client (--through " +
                     "direct); " + o.through + " in front would retry past it");
}

void check_lab(const LabOptions& o) {
  if (!known_through(o.through))
    throw InputError("--through: '" + o.through + "' is not one of direct, haproxy, nginx, grpc");
  if (!o.config_path.empty() && o.through == "direct")
    throw InputError(
        "--config: needs --through haproxy, nginx or grpc (direct retries by the scenario)");
  if (!(o.scale > 0) || o.scale > 100)
    throw InputError("--scale: " + number(o.scale) + " must be above 0 and at most 100");
  if (o.scenario.engine == Engine::sessions)
    throw InputError("lab: the session model has no lab run (engine fluid or agent only)");
  if (o.scenario.incident.failure != FailureClass::timeout)
    throw InputError(std::string("lab: incident.failure ") +
                     failure_class_name(o.scenario.incident.failure) +
                     " is not produced by the lab's backend, whose incident slows or stops it "
                     "(timeout)");
  if (o.scenario.horizon_s > 600)
    throw InputError("lab: horizon_s " + number(o.scenario.horizon_s) +
                     " is more than the 600 s a lab runs in real time; --set horizon_s=...");
  // The generator sends evenly or as Poisson arrivals; bursts it does not make.
  if (o.scenario.demand.process == DemandProcess::bursty)
    throw InputError(
        "lab: demand.process bursty is not generated by the lab's load generator (it sends "
        "evenly or as Poisson arrivals); --set demand.process=poisson or deterministic");
  check_client_guards(o);
  if (!o.scenario.graph.empty()) {
    check_chain(o);
  } else {
    check_backend_server(o.scenario.server, "server.");
    if (o.scenario.retrying_layers() != 1)
      throw InputError("lab: one retrying layer only (client.layers = 1, no stack_retries)");
  }
  Scenario scaled = scale_scenario(o.scenario, o.scale);
  double peak = peak_attempt_rate(scaled);
  if (peak > kMaxAttemptsPerS)
    throw InputError(
        "lab: at --scale " + number(o.scale) + " the scenario can ask " + number(std::round(peak)) +
        " attempts/s, more than the " + number(kMaxAttemptsPerS) +
        " this machine sustains with a small timing error (docs/lab.md); try --scale " +
        number(suggested_scale(o.scale, peak)));
  check_descriptors(scaled, peak, o.through == "haproxy" || o.through == "nginx");
}

double open_files_allowed() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {  // the lab takes what it may before it counts
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    ::getrlimit(RLIMIT_NOFILE, &r);
  }
  return static_cast<double>(r.rlim_cur);
}

double connections_in_flight(const Scenario& scaled) {
  return std::ceil(peak_attempt_rate(scaled) * scaled.client.timeout_s) + 100;
}

// `proxied`: HAProxy or nginx holds two descriptors a request, its caller's
// and its backend's, under the same limit (the proxy inherits it).
void check_descriptors(const Scenario& scaled, double peak_attempts_per_s, bool proxied) {
  double connections = connections_in_flight(scaled);
  double descriptors = proxied ? 2 * connections : connections;
  double allowed = open_files_allowed();
  if (descriptors > allowed)
    throw InputError("lab: the scenario can hold about " + number(connections) +
                     " connections open at once (" + number(std::round(peak_attempts_per_s)) +
                     " attempts/s for up to " + number(scaled.client.timeout_s) + " s each" +
                     (proxied ? ", two descriptors each in the proxy" : "") + "), more than the " +
                     number(allowed) +
                     " open files this process may have (ulimit -n); raise the limit or lower "
                     "--scale");
}

std::vector<bool> disturbed_bins(const std::vector<double>& generator_late_s,
                                 const std::vector<double>& backend_late_s, double bin_s) {
  std::vector<bool> d(std::max(generator_late_s.size(), backend_late_s.size()), false);
  double limit = kStallBinFraction * bin_s;
  for (size_t i = 0; i < d.size(); ++i)
    d[i] = (i < generator_late_s.size() && generator_late_s[i] > limit) ||
           (i < backend_late_s.size() && backend_late_s[i] > limit);
  return d;
}

// The loop of goodput_recovery (src/core/analysis/metrics.cpp), skipping
// disturbed bins that fall short, and starting at an undisturbed bin or one
// that holds up.
std::optional<double> goodput_recovery_between_stalls(const RunResult& run,
                                                      const std::vector<bool>& disturbed) {
  const Scenario& s = run.scenario;
  const auto& goodput = run.series.goodput;
  size_t n = goodput.size();
  double end = s.incident_end_s();
  size_t earliest = static_cast<size_t>(std::max(0.0, std::ceil(end / s.step_s - 1e-9)));
  if (earliest >= n) return std::nullopt;
  double needed = s.recovery.goodput_fraction * s.demand.rate_per_s * s.step_s - 1e-9;
  auto holds = [&](size_t i) {
    return goodput[i] >= needed || (i < disturbed.size() && disturbed[i]);
  };
  size_t from = n;
  while (from > earliest && holds(from - 1)) --from;
  while (from < n && goodput[from] < needed) ++from;  // a disturbed bin does not start it
  if (from == n) return std::nullopt;
  return std::max(0.0, std::round((static_cast<double>(from) * s.step_s - end) * 1e9) / 1e9);
}

double worst_lateness_allowed_s(const Scenario& scaled, double bin_s) {
  // A chain's callers are its calls (the top-level client is theirs to inherit).
  double shortest = HUGE_VAL;
  if (scaled.graph.empty() && scaled.client.timeout_s > 0) shortest = scaled.client.timeout_s;
  for (const GraphCall& call : scaled.graph.calls) {
    double t = edge_scenario(scaled, call).client.timeout_s;
    if (t > 0) shortest = std::min(shortest, t);
  }
  return std::min(shortest / 4, bin_s);
}

TimeKeeping time_keeping(double generator_p99_s, double backend_p99_s, double worst_late_s,
                         double worst_allowed_s) {
  std::ostringstream why;
  why << "this machine could not keep time during the run (";
  if (generator_p99_s >= kMaxTimingErrorP99S || backend_p99_s >= kMaxTimingErrorP99S)
    why << "timer lateness p99: generator " << human_duration(generator_p99_s) << ", backend "
        << human_duration(backend_p99_s) << "; the bound is " << human_duration(kMaxTimingErrorP99S)
        << ")";
  else if (worst_late_s > worst_allowed_s)
    why << "a timer fired " << human_duration(worst_late_s) << " late; the bound is "
        << human_duration(worst_allowed_s)
        << ", a quarter of the shortest timeout or one bin, whichever is less)";
  else
    return {};
  return {false, why.str()};
}

TimeKeeping time_keeping(const LabResult& r) {
  return time_keeping(r.generator_error.p99_s, r.backend_error.p99_s, r.worst_lateness_s,
                      r.worst_lateness_limit_s);
}

std::string not_judged_why(const LabResult& r) {
  if (r.interrupted)
    return "the run was interrupted at " + number(std::round(r.interrupted_at_s * 10) / 10) + " s";
  TimeKeeping k = time_keeping(r);
  return k.kept ? std::string() : k.why;
}

void keep_until_interrupt(RunResult& run, double at_s, double bin_s) {
  size_t n = std::min(run.series.size(),
                      static_cast<size_t>(std::max(0.0, std::ceil(at_s / bin_s - 1e-9))));
  Series kept;
  kept.resize(n);
  for (const SeriesField& f : kSeriesFields)
    std::copy_n((run.series.*f.member).begin(), n, (kept.*f.member).begin());
  run.series = std::move(kept);
  for (ServiceSeries& x : run.graph.services)
    for (const auto& f : kServiceFields) (x.*f.member).resize(std::min(n, (x.*f.member).size()));
  for (EdgeSeries& x : run.graph.edges)
    for (const auto& f : kEdgeFields) (x.*f.member).resize(std::min(n, (x.*f.member).size()));
  // Its metrics are over what was measured (the last window ends here).
  run.scenario.horizon_s = static_cast<double>(n) * bin_s;
}

std::vector<HopAgreement> hop_agreement(const RunResult& measured, const RunResult& predicted) {
  GraphSummary m = graph_summary(measured), p = graph_summary(predicted);
  auto served_share = [](const ServiceHop& h) {
    double arrived = h.first_attempts + h.retries;
    return arrived > 0 ? h.served / arrived : 0.0;
  };
  std::vector<HopAgreement> hops;
  for (size_t i = 0; i < m.services.size() && i < p.services.size(); ++i) {
    HopAgreement h;
    h.service = m.services[i].name;
    h.serves = m.services[i].serves;
    h.measured_per_request = m.services[i].per_request;
    h.predicted_per_request = p.services[i].per_request;
    h.measured_served_share = served_share(m.services[i]);
    h.predicted_served_share = served_share(p.services[i]);
    h.attempts = std::abs(h.measured_per_request - h.predicted_per_request) <=
                 std::max(0.1, 0.25 * h.predicted_per_request);
    h.served = !h.serves || std::abs(h.measured_served_share - h.predicted_served_share) <= 0.05;
    hops.push_back(h);
  }
  return hops;
}

Agreement agreement(const Metrics& m, const Metrics& p, const Scenario& s) {
  Agreement a;
  a.verdict = m.recovered == p.recovered;
  a.failed_share = std::abs(m.failed_fraction - p.failed_fraction) <= 0.05;
  auto rm = recovery_time(m, s), rp = recovery_time(p, s);
  if (!rm || !rp)
    a.recovery = !rm && !rp;
  else
    a.recovery = std::abs(*rm - *rp) <= std::max(2.0, 0.1 * std::max(*rm, *rp));
  return a;
}

}  // namespace retrystorm::lab
