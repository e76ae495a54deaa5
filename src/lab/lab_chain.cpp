// run_lab_chain: a chain of services on real processes (docs/lab.md, "A chain
// of services"). One backend process per service, each calling the next one
// through the lab's own retrying client with its call's policy; the load
// generator is the users' client on the entry call; the graph's agent run on
// the same scaled scenario is the prediction, compared hop by hop.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engines/engine.hpp"
#include "engines/series.hpp"
#include "formats/scenario_io.hpp"
#include "lab/backend.hpp"
#include "lab/caller.hpp"
#include "lab/generator.hpp"
#include "lab/lab.hpp"
#include "lab/lab_parts.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "policies/client_policy.hpp"
#include "text/number.hpp"

namespace retrystorm::lab {

namespace {

// A service of the chain, from the entry's callee down: the call into it and
// the one it makes (-1: the last).
struct Hop {
  int service = 0;
  int call_in = 0;
  int call_out = -1;
};

int call_from(const Graph& g, const std::string& caller) {
  for (size_t k = 0; k < g.calls.size(); ++k)
    if (g.calls[k].from == caller) return static_cast<int>(k);
  return -1;
}

std::vector<Hop> chain_of(const Graph& g) {
  std::vector<Hop> hops;
  for (int call = call_from(g, kUserCaller); call >= 0;) {
    Hop h;
    h.service = service_index(g, g.calls[static_cast<size_t>(call)].to);
    h.call_in = call;
    h.call_out = call_from(g, g.services[static_cast<size_t>(h.service)].name);
    hops.push_back(h);
    call = h.call_out;
  }
  return hops;
}

void check_chain_call(const Scenario& s, const GraphCall& call, const std::string& where) {
  if (call.count != 1 || call.optional || call.propagate_deadline)
    throw InputError("lab: " + where +
                     ": the lab runs plain calls (count 1, not optional, no propagate_deadline)");
  ClientPolicy policy = ClientPolicy::of(edge_scenario(s, call), Engine::agent);
  if (policy.hedging(0) != Hedging::none || policy.rate_limiter() != RateLimiter::none)
    throw InputError("lab: " + where +
                     ": hedging and rate_limiter are not run by the lab's client; it retries");
}

}  // namespace

// A chain only: each service calls at most one other (every service is
// reached from the entry, so the calls form one path), through the lab's own
// client at every hop.
void check_chain(const LabOptions& o) {
  const Scenario& s = o.scenario;
  const Graph& g = s.graph;
  if (o.through != "direct")
    throw InputError("lab: --through " + o.through +
                     " is for a scenario without services; a graph runs with the lab's own "
                     "client at every hop (--through direct)");
  if (s.incident.call >= 0)
    throw InputError(
        "lab: incident.call (a fault on a call) is not injected by the lab; the incident "
        "must be a service's capacity drop");
  if (incident_service(s) < 0)
    throw InputError("lab: no service has a server (services.NAME.capacity_per_s)");
  for (const GraphService& service : g.services) {
    int out = 0;
    for (const GraphCall& call : g.calls) out += call.from == service.name ? 1 : 0;
    if (out > 1)
      throw InputError("lab: services." + service.name + " makes " + std::to_string(out) +
                       " calls; the lab runs a chain (each service calls at most one other)");
    if (service.serves())
      check_backend_server(service_scenario(s, service).server, "services." + service.name + ".");
  }
  if (g.services.size() > static_cast<size_t>(kMaxChainServices))
    throw InputError("lab: " + std::to_string(g.services.size()) +
                     " services; the lab runs a chain of at most " +
                     std::to_string(kMaxChainServices) + " (one process each)");
  for (size_t k = 0; k < g.calls.size(); ++k)
    check_chain_call(s, g.calls[k], "calls[" + std::to_string(k) + "]");
}

namespace {

// The client of call k as the backend (or the generator) runs it: a
// scenario without the graph, the call's keys over the client block.
Scenario caller_scenario(const Scenario& lab, int k) {
  Scenario c = edge_scenario(lab, lab.graph.calls[static_cast<size_t>(k)]);
  c.graph = {};
  c.incident.service.clear();
  c.incident.call = -1;
  return c;
}

// The service's backend: its server (capacity 0 for a proxy), the incident
// when it is the one hit, and its call to the next service's port.
ChildProcess start_hop(const LabOptions& o, const Scenario& lab, const Hop& h, long long t0,
                       const std::string& dir, int callee_port, int& port) {
  const GraphService& service = lab.graph.services[static_cast<size_t>(h.service)];
  Scenario s = service_scenario(lab, service);
  if (!service.serves()) s.server.capacity_per_s = 0;
  if (h.service != incident_service(lab)) s.incident.duration_s = 0;
  std::vector<std::string> extra;
  if (h.call_out >= 0) {
    std::string file = dir + "/call-" + std::to_string(h.call_out) + ".json";
    std::ofstream(file) << scenario_to_json(caller_scenario(lab, h.call_out)).dump() << "\n";
    extra = {"--call-port",     std::to_string(callee_port),
             "--call-scenario", file,
             "--call-seed",     std::to_string(static_cast<long long>(lab.seed) + h.call_out + 1)};
  }
  int grpc_port = 0;
  return start_backend(o, s, t0, dir, port, grpc_port, "backend-" + service.name, extra);
}

std::vector<double> series_of(const nlohmann::json& j, const char* key, size_t n) {
  std::vector<double> v(n, 0.0);
  if (j.contains(key))
    for (size_t i = 0; i < n && i < j[key].size(); ++i) v[i] = j[key][i].get<double>();
  return v;
}

void read_service(ServiceSeries& out, const GraphService& service, const nlohmann::json& b,
                  size_t n) {
  out.name = service.name;
  out.serves = service.serves();
  out.first_attempts = series_of(b, "first_attempts", n);
  out.retries = series_of(b, "retries", n);
  out.served = series_of(b, "goodput", n);
  out.late = series_of(b, "served_late", n);
  out.rejected = series_of(b, "rejected", n);
  out.shed = series_of(b, "shed", n);
  out.failed = series_of(b, "failed", n);
  out.queue = series_of(b, "backlog", n);
}

// The call's counts: the generator's for the entry, else its caller's backend's.
void read_edge(EdgeSeries& out, const GraphCall& call, const CallerSeries& c, size_t n) {
  out.from = call.from;
  out.to = call.to;
  out.calls = c.first_sent;
  out.retries = c.retries_sent;
  out.timeouts = c.gave_up;
  out.failed = c.failed;
  out.denied = c.budget_denied;
  for (auto* v : {&out.calls, &out.retries, &out.timeouts, &out.failed, &out.denied})
    v->resize(n, 0.0);
  out.delayed.assign(n, 0.0);
  out.aborted.assign(n, 0.0);
  out.paced.assign(n, 0.0);
}

CallerSeries call_series(const nlohmann::json& b, size_t n) {
  const nlohmann::json& c = b.contains("call") ? b["call"] : nlohmann::json::object();
  return {series_of(c, "first_sent", n),
          series_of(c, "retries_sent", n),
          series_of(c, "gave_up", n),
          series_of(c, "failed", n),
          series_of(c, "budget_denied", n),
          {},
          {}};
}

CallerSeries generator_series(const GeneratorResult& g) {
  return {g.first_sent, g.retries_sent, g.gave_up, g.failed, g.budget_denied, {}, {}};
}

// The run's top-level series as the graph engine's are (docs/graph.md,
// "Results"): the incident service's server and the calls to it, the users'
// requests and outcomes at the entry.
void copy_into(std::span<double> to, const std::vector<double>& from) {
  std::fill(to.begin(), to.end(), 0.0);
  std::copy_n(from.begin(), std::min(from.size(), to.size()), to.begin());
}

void read_top_level(RunResult& r, const nlohmann::json& hit, const GeneratorResult& g,
                    int call_into_hit) {
  Series& x = r.series;
  size_t n = x.size();
  for (const BackendField& f : kBackendFields)
    for (const SeriesField& field : kSeriesFields)
      if (field.name == f.name) copy_into(x.*field.member, series_of(hit, f.name, n));
  copy_into(x.first_attempts, g.first_sent);
  copy_into(x.retries, series_of(hit, "path_retries", n));
  copy_into(x.goodput, g.succeeded_per_bin);
  copy_into(x.served_late, series_of(hit, "path_late", n));
  copy_into(x.failed, g.failed);
  copy_into(x.gave_up, r.graph.edges[static_cast<size_t>(call_into_hit)].timeouts);
  std::fill(x.budget_denied.begin(), x.budget_denied.end(), 0.0);
  for (const EdgeSeries& e : r.graph.edges)
    for (size_t i = 0; i < n; ++i) x.budget_denied[i] += e.denied[i];
  for (size_t i = 0; i < n; ++i) x.t_s[i] = static_cast<double>(i) * r.scenario.step_s;
}

RunResult measured_chain(const Scenario& lab, const std::vector<Hop>& hops,
                         const std::vector<nlohmann::json>& b, const GeneratorResult& g) {
  RunResult r;
  r.scenario = lab;
  size_t n = g.failed.size();
  r.series.resize(n);
  const Graph& graph = lab.graph;
  r.graph.services.resize(graph.services.size());
  r.graph.edges.resize(graph.calls.size());
  int hit = incident_service(lab), call_into_hit = 0;
  const nlohmann::json* hit_counts = &b[0];
  for (size_t i = 0; i < hops.size(); ++i) {
    size_t v = static_cast<size_t>(hops[i].service), e = static_cast<size_t>(hops[i].call_in);
    read_service(r.graph.services[v], graph.services[v], b[i], n);
    read_edge(r.graph.edges[e], graph.calls[e],
              i == 0 ? generator_series(g) : call_series(b[i - 1], n), n);
    if (hops[i].service == hit) hit_counts = &b[i], call_into_hit = hops[i].call_in;
  }
  read_top_level(r, *hit_counts, g, call_into_hit);
  count_users(r, g);
  return r;
}

// Timing over every process: the backend figures of the one whose timers
// were latest (p99), stalls from any.
void read_timing(LabResult& r, const std::vector<nlohmann::json>& b, const GeneratorResult& g) {
  std::vector<double> late;
  for (const nlohmann::json& x : b) {
    TimingError e = timing_of(x, "timing_error_s");
    if (e.p99_s >= r.backend_error.p99_s) r.backend_error = e;
    std::vector<double> l = backend_lateness(x);
    late.resize(std::max(late.size(), l.size()), 0.0);
    for (size_t i = 0; i < l.size(); ++i) late[i] = std::max(late[i], l[i]);
    r.served_in_time_after_caller_left += x.value("served_in_time_after_caller_left", 0.0);
    if (x.contains("call")) r.connection_errors += x["call"].value("connection_errors", 0.0);
  }
  r.generator_error = g.arrival_error;
  r.answer_transit = g.answer_transit;
  r.connection_errors += g.connection_errors;
  r.interrupted = g.interrupted;
  r.interrupted_at_s = g.interrupted_at_s;
  discount_stalls(r, g.lateness_max_s, late);
}

}  // namespace

LabResult run_lab_chain(const LabOptions& o) {
  LabResult r;
  Scenario lab = start_result(o, r);
  std::vector<Hop> hops = chain_of(lab.graph);

  WorkDir dir;
  InterruptGuard interrupts;  // Ctrl-C ends the run; the processes are stopped below
  long long t0 = unix_ms_now() + 1000 + 300 * static_cast<long long>(hops.size());
  std::vector<ChildProcess> backends(hops.size());
  int callee_port = 0;
  for (size_t i = hops.size(); i-- > 0;) {  // the last first: each calls a port already open
    int port = 0;
    backends[i] = start_hop(o, lab, hops[i], t0, dir.path(), callee_port, port);
    r.pids.push_back(backends[i].pid());
    callee_port = port;
  }
  Scenario users = caller_scenario(lab, hops.front().call_in);
  GeneratorResult g = run_users(o, {callee_port, users, true, 0, t0, o.bin_s, nullptr, ""});
  std::vector<nlohmann::json> counts;
  for (size_t i = 0; i < hops.size(); ++i)
    counts.push_back(
        read_backend(backends[i], dir.path(),
                     "backend-" + lab.graph.services[static_cast<size_t>(hops[i].service)].name));
  RunResult measured = measured_chain(lab, hops, counts, g);
  if (g.interrupted) keep_until_interrupt(measured, g.interrupted_at_s, o.bin_s);
  r.measured = view(std::move(measured));
  read_timing(r, counts, g);
  measure_delays(r);  // one hop's, handed to every service (docs/lab.md)
  apply_delays(r, lab);
  apply_delays(r, r.scaled);
  r.predicted = view(run_engine(lab));
  r.fluid_ran = false;  // the fluid engine runs no graph
  r.hops = hop_agreement(r.measured.run, r.predicted.run);
  return r;
}

}  // namespace retrystorm::lab
