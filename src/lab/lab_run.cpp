// run_lab: the processes in order (backend, proxy, generator), then the
// measurement read back and the predictions run on the same scaled scenario.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "engines/engine.hpp"
#include "engines/series.hpp"
#include "formats/input_text.hpp"
#include "lab/backend.hpp"
#include "lab/generator.hpp"
#include "lab/grpc_layer.hpp"
#include "lab/lab.hpp"
#include "lab/lab_parts.hpp"
#include "lab/process.hpp"
#include "lab/proxy.hpp"
#include "model/keys.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"
#include "text/number.hpp"

namespace retrystorm::lab {

namespace fs = std::filesystem;

namespace {}  // namespace

ChildProcess start_backend(const LabOptions& o, const Scenario& s, long long t0,
                           const std::string& dir, int& port, int& grpc_port,
                           const std::string& name, const std::vector<std::string>& extra) {
  // number_text: every digit, so the backend runs on the scenario's numbers.
  std::vector<std::string> argv = {o.program,
                                   "lab-backend",
                                   "--capacity",
                                   number_text(s.server.capacity_per_s),
                                   "--slots",
                                   number_text(std::max(1, s.server.slots)),
                                   "--queue-limit",
                                   number_text(s.server.queue_limit),
                                   "--incident-start",
                                   number_text(s.incident.start_s),
                                   "--incident-duration",
                                   number_text(s.incident.duration_s),
                                   "--capacity-factor",
                                   number_text(s.incident.capacity_factor),
                                   "--t0-unix-ms",
                                   std::to_string(t0),
                                   "--bin",
                                   number_text(o.bin_s),
                                   "--horizon",
                                   number_text(s.horizon_s),
                                   "--out",
                                   dir + "/" + name + ".json"};
  if (s.server.shed_abandoned) argv.push_back("--shed-abandoned");
  if (o.through == "grpc") argv.push_back("--grpc");
  argv.insert(argv.end(), extra.begin(), extra.end());
  ChildProcess p(argv, dir + "/" + name + ".stderr");
  // `listening PORT` or `listening PORT grpc GRPC_PORT`
  auto line = p.read_line(std::chrono::milliseconds(5000));
  if (!line || line->rfind("listening ", 0) != 0)
    throw std::runtime_error("the lab backend did not start");
  port = std::stoi(line->substr(10));
  auto g = line->find(" grpc ");
  grpc_port = g == std::string::npos ? 0 : std::stoi(line->substr(g + 6));
  if (o.through == "grpc" && grpc_port == 0)
    throw std::runtime_error("the lab backend did not start its gRPC listener");
  return p;
}

namespace {

void fill(std::span<double> to, const nlohmann::json& from) {
  for (size_t i = 0; i < to.size() && i < from.size(); ++i) to[i] = from[i].get<double>();
}

// The measurement as a run of the scaled scenario, so the run's metrics and
// verdict apply unchanged. Attempts and service come from the backend (it
// sees every attempt, whoever retries), outcomes of user requests from the
// generator.
RunResult measured_run(const Scenario& s, const nlohmann::json& b, const GeneratorResult& g,
                       bool generator_retries) {
  RunResult r;
  r.scenario = s;
  r.series.resize(g.failed.size());
  auto& x = r.series;
  for (size_t i = 0; i < x.size(); ++i) x.t_s[i] = static_cast<double>(i) * s.step_s;
  for (const BackendField& f : kBackendFields)  // each into the series of its name
    for (const SeriesField& field : kSeriesFields)
      if (field.name == f.name) fill(x.*field.member, b[f.name]);
  for (size_t i = 0; i < x.size(); ++i) {
    x.failed[i] = g.failed[i];
    x.budget_denied[i] = g.budget_denied[i];
    // Attempts the client's guards refused never reached the backend; the
    // engine counts them sent and refused (series.hpp, attempts_sent).
    x.refused_locally[i] = g.refused[i];
    x.first_attempts[i] += g.refused[i] - g.refused_retries[i];
    x.retries[i] += g.refused_retries[i];
    // Behind a proxy the generator sees no attempt time out; the server's
    // late and shed attempts are the ones whose caller gave up.
    x.gave_up[i] = generator_retries ? g.gave_up[i] : x.served_late[i] + x.shed[i];
  }
  count_users(r, g);
  return r;
}

// The proxy's settings, refused before anything starts when they hold
// more than the lab runs.
std::string layer_settings(const LabOptions& o, const Scenario& scaled) {
  std::string text = o.config_path.empty() ? configs::export_config(scaled, o.through).text
                                           : read_input_file(o.config_path, "--config");
  const std::string& file = o.config_path.empty() ? o.through + " export" : o.config_path;
  if (o.through == "haproxy") configs::lab_haproxy_config(text, file, "127.0.0.1:1");
  if (o.through == "nginx") configs::lab_nginx_config(text, file, "127.0.0.1:1", 1);
  return text;
}

// The layer's settings read back as scenario keys (`retrystorm import`).
// A layer that sets no timeout at all (HAProxy without `timeout server`, a
// gRPC method config without `timeout` or `perAttemptRecvTimeout`) is refused:
// the real layer would wait as long as the backend takes, while the
// prediction keeps the scenario's client.timeout_s (and the lab's own
// settings filled the gap: a 9 s server timeout, a made-up call deadline).
configs::ImportResult imported_settings(const std::string& through, const std::string& settings) {
  if (through == "grpc")
    if (std::string error = grpc_config_error(settings); !error.empty())
      throw InputError("--through grpc: the service config is refused by gRPC: " + error);
  configs::ImportResult r = configs::import_configs(
      {{through == "grpc" ? "service-config.json" : through + ".conf", settings}});
  for (const configs::LayerPolicy& l : r.layers)
    if (l.has_retry_policy && !l.per_try_timeout_s && !(l.deadline_s.value_or(0) > 0))
      throw InputError("--config: the " + through +
                       " settings set no timeout (HAProxy: timeout server; gRPC: timeout or "
                       "perAttemptRecvTimeout; nginx: proxy_read_timeout): the real layer "
                       "would wait as long as the backend takes, which the prediction does "
                       "not follow; give one");
  return r;
}

// How long a gRPC caller waits for a request its channel retries: every attempt
// timing out and every backoff at its cap, plus a second. With one attempt
// it is the attempt's timeout (over gRPC, the call's deadline). A scenario
// deadline ends it sooner.
double patience_s(const Scenario& s) {
  int attempts = s.attempts();
  if (s.client.deadline_s > 0) return s.client.deadline_s;
  if (attempts <= 1) return s.client.timeout_s;
  return attempts * s.client.timeout_s + (attempts - 1) * s.client.backoff.cap_s * 1.2 + 1;
}

}  // namespace

// A stall of the machine (a timer late by more than kStallBinFraction of a
// bin) moves completions into a later bin; judged by goodput per bin, that
// bin reads as not recovered. The measured recovery leaves such bins out
// (docs/lab.md, "Stalls of the machine"); the report keeps both figures.
void discount_stalls(LabResult& r, const std::vector<double>& generator_late_s,
                     const std::vector<double>& backend_late_s) {
  std::vector<bool> disturbed = disturbed_bins(generator_late_s, backend_late_s, r.bin_s);
  // The latest timer, for whether the machine kept time (time_keeping).
  r.worst_lateness_s = std::max(r.generator_error.max_s, r.backend_error.max_s);
  for (const auto* late : {&generator_late_s, &backend_late_s})
    for (double l : *late) r.worst_lateness_s = std::max(r.worst_lateness_s, l);
  r.worst_lateness_limit_s = worst_lateness_allowed_s(r.scaled, r.bin_s);
  // Bins after an interrupt were not measured (keep_until_interrupt).
  disturbed.resize(std::min(disturbed.size(), r.measured.run.series.size()));
  for (size_t i = 0; i < disturbed.size(); ++i)
    if (disturbed[i]) r.disturbed_t_s.push_back(static_cast<double>(i) * r.bin_s);
  Metrics& m = r.measured.metrics;
  r.goodput_recovery_counting_stalls_s = m.goodput_recovery_s;
  m.goodput_recovery_s = goodput_recovery_between_stalls(r.measured.run, disturbed);
  m.recovered = recovery_time(m, r.measured.run.scenario).has_value();
  r.measured.verdict = verdict(r.measured.run, m);
}

// The backend's `key` figures (p50, p99, max); none when it has no such key.
std::vector<double> backend_lateness(const nlohmann::json& b) {
  if (!b.contains("lateness_max_s")) return {};
  return b["lateness_max_s"].get<std::vector<double>>();
}

TimingError timing_of(const nlohmann::json& b, const char* key) {
  if (!b.contains(key)) return {};
  const auto& e = b[key];
  return {e["p50"].get<double>(), e["p99"].get<double>(), e["max"].get<double>(), 0};
}

void count_users(RunResult& r, const GeneratorResult& g) {
  r.user_requests = g.user_requests;
  r.succeeded = g.succeeded;
  r.failed = g.failed_total;
  r.in_flight = g.in_flight;
  r.success_latency = g.success_latency;
}

// The backend's per-bin counts, written when it was stopped.
nlohmann::json read_backend(ChildProcess& backend, const std::string& dir,
                            const std::string& file) {
  backend.stop(std::chrono::milliseconds(5000));
  std::ifstream f(dir + "/" + file + ".json");
  if (!f) {
    std::ifstream err(dir + "/" + file + ".stderr");
    std::string why((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    throw std::runtime_error("the lab backend wrote no counts" +
                             (why.empty() ? std::string() : ": " + why.substr(0, 400)));
  }
  return nlohmann::json::parse(f);
}

LabRun view(RunResult run) {
  LabRun v;
  v.metrics = compute_metrics(run);
  v.verdict = verdict(run, v.metrics);
  v.run = std::move(run);
  return v;
}

// The delays between the caller and the backend (docs/lab.md, "Who knows
// when the caller gives up"). The backend measures when a caller's leaving
// (a closed connection, a gRPC cancellation) reaches it, `give_up_lead`
// before its own give-up instant for the attempt: lead = gap - T, gap how
// much later than the caller the backend gives up, T the leaving's way to
// the backend. Direct, the backend has the caller's exact instant (gap 0).
// The answer's way back is the generator's measurement (`answer_transit`,
// one hop; two through a proxy, which is the caller there, so half of it),
// plus how late the backend's timers send an answer after its virtual
// finish. T is one hop; over gRPC, the measured transit of a call.
// Medians: what matters is the typical attempt at the head of the queue.
void measure_delays(LabResult& r) {
  bool proxy = r.through != "direct" && r.through != "grpc";
  double hop = std::max(0.0, r.answer_transit.p50_s) / (proxy ? 2 : 1);
  double way_there = r.through == "grpc" ? r.grpc_transit.p50_s : hop;
  r.give_up_gap_s = r.through == "direct" ? 0.0 : r.give_up_lead.p50_s + way_there;
  r.answer_way_back_s = hop + std::max(0.0, r.backend_error.p50_s);
}

// The model's server knows one give-up instant. A backend that gives up
// later sheds that much later (server.shed_lag_s); one that gives up
// earlier sheds sooner, and a caller still waiting then takes an answer
// that much longer, which shortens the answer's way back (below zero: none).
void apply_delays(const LabResult& r, Scenario& s) {
  s.server.shed_lag_s = std::max(0.0, r.give_up_gap_s);
  s.server.answer_delay_s = std::max(0.0, r.answer_way_back_s + std::min(0.0, r.give_up_gap_s));
}

namespace {

// What the backend and the generator counted, read as a run.
void read_measurement(LabResult& r, const nlohmann::json& b, const GeneratorResult& gr,
                      const Scenario& lab, bool direct) {
  r.interrupted = gr.interrupted;
  r.generator_error = gr.arrival_error;
  r.backend_error = timing_of(b, "timing_error_s");
  r.grpc_transit = timing_of(b, "grpc_transit_s");  // --through grpc only
  r.give_up_lead = timing_of(b, "give_up_lead_s");
  r.answer_transit = gr.answer_transit;
  r.served_in_time_after_caller_left = b.value("served_in_time_after_caller_left", 0.0);
  r.connection_errors = gr.connection_errors;
  r.interrupted_at_s = gr.interrupted_at_s;
  RunResult run = measured_run(lab, b, gr, direct);
  if (r.interrupted) keep_until_interrupt(run, r.interrupted_at_s, r.bin_s);
  r.measured = view(std::move(run));
  discount_stalls(r, gr.lateness_max_s, backend_lateness(b));
}

// The agent engine with the delays measured between caller and backend; the
// fluid engine for reference, where it runs the scenario (it refuses the
// client's breaker, throttle and max_requests, which need single attempts).
void predict(LabResult& r, Scenario lab) {
  measure_delays(r);
  apply_delays(r, lab);
  apply_delays(r, r.scaled);
  r.predicted = view(run_engine(lab));
  Scenario fluid = r.scaled;
  fluid.engine = Engine::fluid;
  try {
    validate(fluid);
  } catch (const InputError&) {
    r.fluid_ran = false;
    return;
  }
  r.fluid = view(run_engine(fluid));
}

}  // namespace

// Every process the lab started is stopped by now; anything still a child
// of the lab was started by one of them and left behind.
void remove_stale_work_dirs() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (entry.path().filename().string().rfind("retrystorm-lab-", 0) != 0) continue;
    std::ifstream owner(entry.path() / "owner.pid");
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;  // not one of ours, or still being made
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive
    std::error_code ignored;
    fs::remove_all(entry.path(), ignored);
  }
}

void check_no_strays() {
  std::vector<pid_t> strays = stop_strays({});
  if (strays.empty()) return;
  std::string pids;
  for (pid_t p : strays) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
  throw std::runtime_error("lab: the proxy left " + std::to_string(strays.size()) +
                           " process(es) running after it stopped (pids " + pids +
                           "); the lab stopped them");
}

// The load generator from time zero (progress about once a second); an
// interrupt while the processes started gives empty bins, marked interrupted.
GeneratorResult run_users(const LabOptions& o, GeneratorOptions g) {
  double horizon = g.scenario.horizon_s;
  if (o.progress)
    g.progress = [&](double t, double req, double ok, double failed) {
      o.progress("lab: " + number_text(t) + " of " + number_text(horizon) + " s, " +
                 number_text(req) + " requests, " + number_text(ok) + " ok, " +
                 number_text(failed) + " failed");
    };
  if (unix_ms_now() > g.t0_unix_ms)
    throw std::runtime_error("the lab took too long to start its processes");
  GeneratorResult gr;
  if (!interrupted()) gr = run_generator(g);
  if (gr.failed.empty()) {
    size_t bins = bin_count(horizon, o.bin_s);
    for (auto* v : {&gr.failed, &gr.gave_up, &gr.budget_denied, &gr.first_sent, &gr.retries_sent,
                    &gr.refused, &gr.refused_retries, &gr.succeeded_per_bin})
      v->assign(bins, 0.0);
    gr.interrupted = true;
  }
  return gr;
}

Scenario start_result(const LabOptions& o, LabResult& r) {
  r.through = o.through;
  r.scale = o.scale;
  r.bin_s = o.bin_s;
  r.scaled = scale_scenario(o.scenario, o.scale);
  Scenario lab = r.scaled;
  lab.engine = Engine::agent;
  lab.step_s = o.bin_s;
  lab.runs = 1;
  validate(lab);
  return lab;
}

LabResult run_lab(const LabOptions& o) {
  check_lab(o);
  if (!o.scenario.graph.empty()) return run_lab_chain(o);
  LabResult r;
  Scenario lab = start_result(o, r);

  // Behind a proxy, the policy that runs is the proxy's: the prediction
  // reads the same settings back (`import`), e.g. retries at once, no budget.
  std::string settings;
  if (o.through != "direct") {
    settings = layer_settings(o, lab);
    auto imported = imported_settings(o.through, settings);
    configs::apply_keys(lab, imported.keys);
    // retryThrottling's tokens are per channel, and the lab has one.
    if (o.through == "grpc") lab.client.budget.clients = 1;
    validate(lab);
    r.scaled = lab;
    r.scaled.engine = o.scenario.engine;
    r.scaled.step_s = o.scenario.step_s;
    r.imported_policy = configs::keys_text(imported);
  }

  adopt_orphans();  // whatever a proxy starts and leaves comes back here (check_no_strays)
  WorkDir dir;
  InterruptGuard interrupts;            // Ctrl-C ends the run; the processes are stopped below
  long long t0 = unix_ms_now() + 1500;  // room to start the proxy
  int backend_port = 0, grpc_port = 0;
  ChildProcess backend = start_backend(o, lab, t0, dir.path(), backend_port, grpc_port);
  r.pids.push_back(backend.pid());
  Proxy proxy;
  int target = backend_port;
  bool direct = o.through == "direct", grpc = o.through == "grpc";
  double patience = grpc ? patience_s(lab) : lab.attempts() * lab.client.timeout_s + 1;
  if (grpc) {
    target = grpc_port;
    r.layer_config = settings;
  } else if (!direct) {
    proxy = start_proxy(o.through, settings, backend_port, dir.path(), patience,
                        connections_in_flight(lab), o.config_path);
    target = proxy.port;
    r.pids.push_back(proxy.process.pid());
    r.layer_config = proxy.config;
  }
  GeneratorResult gr =
      run_users(o, {target, lab, direct, patience, t0, o.bin_s, nullptr, grpc ? settings : ""});
  proxy.process.stop();
  read_measurement(r, read_backend(backend, dir.path()), gr, lab, direct);
  check_no_strays();
  predict(r, lab);
  return r;
}

}  // namespace retrystorm::lab
