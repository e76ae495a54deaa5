#include "server/server.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstring>
#include <deque>
#include <iostream>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "analysis/ladder.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "app/commands.hpp"
#include "app/configs.hpp"
#include "app/scenario_request.hpp"
#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "formats/input_text.hpp"
#include "formats/result_json.hpp"
#include "formats/scenario_io.hpp"
#include "formats/session_report.hpp"
#include "server/web_assets.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

const std::set<std::string> kPostPaths = {
    "/api/run",          "/api/ladder",         "/api/tipping",      "/api/sweep",
    "/api/export/envoy", "/api/export/grpc",    "/api/export/istio", "/api/export/linkerd",
    "/api/export/aws",   "/api/import",         "/api/lint",         "/api/trace",
    "/api/export/nginx", "/api/export/haproxy", "/api/advice"};
const std::set<std::string> kGetPaths = {"/api/presets", "/api/schema", "/api/systems"};

// The scenario a request names: {"preset", "set"} or {"scenario"}.
// `warnings`, when given, receives a line per key the scenario does not use.
Scenario scenario_of(const json& body, const std::set<std::string>& extra,
                     const ServerLimits& limits, std::vector<std::string>* warnings = nullptr) {
  if (!body.is_object()) throw InputError("body: must be a JSON object");
  for (const auto& [key, v] : body.items()) {
    if (key == "preset" || key == "set" || key == "scenario" || extra.count(key)) continue;
    std::string allowed = "preset, set, scenario";
    for (const auto& e : extra) allowed += ", " + e;
    throw InputError("body." + key + ": unknown field; allowed: " + allowed);
  }
  if (body.contains("preset") && body.contains("scenario"))
    throw InputError("body: give preset or scenario, not both");
  app::ScenarioRequest request;
  if (body.contains("preset")) {
    if (!body["preset"].is_string()) throw InputError("preset: must be a preset name");
    request.preset = body["preset"].get<std::string>();
    if (request.preset.empty()) preset_or_throw("");  // the unknown-preset error, not the default
  } else if (body.contains("scenario")) {
    request.scenario = body["scenario"];
  }
  if (body.contains("set")) {
    if (!body["set"].is_object()) throw InputError("set: must be an object of path: value");
    for (const auto& [path, v] : body["set"].items()) request.sets.push_back({path, v});
  }
  request.limits.max_steps = limits.max_steps;
  app::AssembledScenario assembled = app::assemble_scenario(request);
  if (warnings) *warnings = std::move(assembled.warnings);
  return assembled.scenario;
}

std::vector<SweepAxis> axes_of(const json& body) {
  if (!body.contains("vary") || !body["vary"].is_array())
    throw InputError("vary: must be a list of {path, from, to, step}");
  std::vector<SweepAxis> axes;
  for (const auto& v : body["vary"]) {
    if (!v.is_object()) throw InputError("vary[]: must be an object {path, from, to, step}");
    SweepAxis a;
    for (const auto& [key, value] : v.items()) {
      if (key == "path" && value.is_string())
        a.path = value.get<std::string>();
      else if (key == "from" && value.is_number())
        a.from = value.get<double>();
      else if (key == "to" && value.is_number())
        a.to = value.get<double>();
      else if (key == "step" && value.is_number())
        a.step = value.get<double>();
      else
        throw InputError("vary[]." + key +
                         ": unknown field or wrong type; allowed: path "
                         "(text), from, to, step (numbers)");
    }
    axes.push_back(a);
  }
  return axes;
}

// POST /api/export/{system}: body as /api/run. Envoy keeps the field "yaml".
json export_json(const std::string& system, const json& body, const ServerLimits& limits) {
  configs::ExportResult r = configs::export_config(scenario_of(body, {}, limits), system);
  json out = app::export_json(r);
  if (r.system == configs::System::envoy) out["yaml"] = r.text;
  return out;
}

// POST /api/import and /api/lint: {"files": [{"name", "text"}]}; lint also
// takes "load", "simulate" and "preset".
json configs_json(const std::string& path, const json& body) {
  if (!body.is_object() || !body.contains("files") || !body["files"].is_array())
    throw InputError("files: must be a list of {name, text}");
  bool lint = path == "/api/lint";
  for (const auto& [key, v] : body.items())
    if (key != "files" && !(lint && (key == "load" || key == "simulate" || key == "preset")))
      throw InputError("body." + key + ": unknown field; allowed: files" +
                       std::string(lint ? ", load, simulate, preset" : ""));
  app::LintRequest request;
  std::vector<configs::ConfigFile>& files = request.files;
  for (const auto& f : body["files"]) {
    if (!f.is_object() || !f.contains("text") || !f["text"].is_string())
      throw InputError("files[]: must be {name, text} with text a string");
    std::string name = f.contains("name") && f["name"].is_string()
                           ? f["name"].get<std::string>()
                           : "file" + std::to_string(files.size() + 1);
    files.push_back({name, f["text"].get<std::string>()});
  }
  if (!lint) return app::import_json(configs::import_configs(files));
  configs::LintOptions& o = request.options;
  if (body.contains("load")) {
    // The CLI's range (lint --load), so both refuse the same values.
    const json& load = body["load"];
    if (!load.is_number() || !(load.get<double>() >= 0) ||
        !(load.get<double>() <= configs::kMaxLintLoad))
      throw InputError(
          "load: " + (load.is_number() ? to_string(KeyValue{load.get<double>()}) : "not a number") +
          "; must be a number from 0 to " + to_string(KeyValue{configs::kMaxLintLoad}) +
          " (demand / capacity)");
    o.load = body["load"].get<double>();
  }
  if (body.contains("simulate")) {
    if (!body["simulate"].is_boolean()) throw InputError("simulate: must be true or false");
    o.simulate = body["simulate"].get<bool>();
  }
  if (body.contains("preset")) {
    if (!body["preset"].is_string()) throw InputError("preset: must be a preset name");
    o.preset = body["preset"].get<std::string>();
    preset_or_throw(o.preset);
  }
  return configs::lint_json(app::lint(request));
}

// An optional true/false field of a body (default true).
bool flag_of(const json& body, const char* name) {
  if (!body.contains(name)) return true;
  if (!body[name].is_boolean()) throw InputError(std::string(name) + ": must be true or false");
  return body[name].get<bool>();
}

TippingCache& tipping_cache() {
  static TippingCache cache;
  return cache;
}

// What one request may cost, and the check that stops it when its client has gone.
app::Budget budget_of(const ServerLimits& limits) {
  return {limits.cost, "", limits.cancelled};
}

// POST /api/run for a valid scenario: the session report, or the run's report
// with its Monte Carlo when there are replications.
json run_answer(const Scenario& s, const json& body, const ServerLimits& limits) {
  app::RunOptions o;
  o.report.trace = flag_of(body, "trace");  // the page asks without, then fetches /api/trace
  // Advice and tipping point; the page fetches them after drawing the chart.
  o.report.advice = o.report.tipping = flag_of(body, "advice");
  o.report.cache = &tipping_cache();
  bool rows = flag_of(body, "sessions");  // session rows; the page draws without them
  o.montecarlo = engine_facts(s).random && s.runs > 1;
  o.max_runs = engine_facts(s).run ? limits.max_agent_runs : limits.max_session_runs;
  json answer = app::run_answer_json(app::run(s, o, budget_of(limits)));
  if (!rows && !engine_facts(s).run) answer.erase("sessions");
  return answer;
}

// GET /api/systems: the systems table (systems/system.hpp), in order.
json systems_json() {
  json list = json::array();
  for (const configs::SystemFacts& f : configs::system_table())
    list.push_back(
        {{"name", f.name}, {"label", f.label}, {"extension", f.extension}, {"export", f.exported}});
  return {{"systems", list}};
}

json dispatch(const std::string& path, const json& body, const ServerLimits& limits) {
  if (path == "/api/presets") {
    json list = json::array();
    for (const auto& p : presets())
      list.push_back({{"name", p.name},
                      {"description", p.description},
                      {"scenario", scenario_to_json(p.scenario)}});
    return {{"presets", list}};
  }
  if (path == "/api/schema") return schema_json();
  if (path == "/api/systems") return systems_json();
  if (path == "/api/run") {
    std::vector<std::string> warnings;
    Scenario s = scenario_of(body, {"trace", "sessions", "advice"}, limits, &warnings);
    app::check_run_cost(s, budget_of(limits));  // before the body's flags are read
    json answer = run_answer(s, body, limits);
    if (!warnings.empty()) answer["warnings"] = warnings;  // keys this engine ignores
    return answer;
  }
  if (path == "/api/trace") {
    Scenario s = scenario_of(body, {}, limits);
    if (!engine_facts(s).run) return {{"trace", json::array()}};  // no per-step trace
    return {{"trace", trace_json(app::trace(s, budget_of(limits)))}};
  }
  if (path == "/api/advice") {  // what /api/run leaves out with "advice": false
    Scenario s = scenario_of(body, {}, limits);
    if (!engine_facts(s).run) return {{"advice", json::array()}};
    RunReport r = app::advice(s, &tipping_cache(), budget_of(limits));
    json answer = {{"advice", advice_json(r.advice)}};
    if (r.tipping) answer["tipping"] = tipping_json(*r.tipping);
    return answer;
  }
  if (path == "/api/ladder") {
    return ladder_json(app::ladder(scenario_of(body, {}, limits), budget_of(limits)));
  }
  if (path == "/api/tipping") {
    Scenario s = scenario_of(body, {"grid_s"}, limits);
    double grid = 0;
    if (body.contains("grid_s")) {
      if (!body["grid_s"].is_number() || body["grid_s"].get<double>() <= 0)
        throw InputError("grid_s: must be a number of seconds above 0");
      grid = body["grid_s"].get<double>();
    }
    if (tipping_steps(s, grid) > limits.max_tipping_steps)
      throw InputError("grid_s: " + to_string(KeyValue{grid > 0 ? grid : default_grid_s(s)}) +
                       " s makes " + to_string(KeyValue{tipping_steps(s, grid)}) +
                       " steps of work; the limit is " +
                       to_string(KeyValue{limits.max_tipping_steps}) + "; choose a coarser grid");
    return tipping_json(app::tipping(s, grid, budget_of(limits)));
  }
  if (path == "/api/sweep") {
    Scenario s = scenario_of(body, {"vary"}, limits);
    auto axes = axes_of(body);
    SweepOptions options;
    options.max_runs = limits.max_sweep_runs;
    options.threads = limits.sweep_threads;
    return sweep_json(axes, app::sweep(s, axes, options, budget_of(limits)));
  }
  if (path.rfind("/api/export/", 0) == 0) return export_json(path.substr(12), body, limits);
  if (path == "/api/import" || path == "/api/lint") return configs_json(path, body);
  throw std::logic_error("no handler for " + path);
}

std::string content_type(const std::string& file) {
  static const std::map<std::string, std::string> types = {
      {".html", "text/html; charset=utf-8"},
      {".js", "application/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".json", "application/json"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"}};
  auto dot = file.rfind('.');
  auto it = dot == std::string::npos ? types.end() : types.find(file.substr(dot));
  return it == types.end() ? "application/octet-stream" : it->second;
}

// Every JSON answer goes through here. Paths and headers can carry any bytes
// (%FF): the replacement handler writes invalid UTF-8 as U+FFFD, so dumping
// never throws.
void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // Not "application/json": cpp-httplib would brotli-compress it, which costs
  // seconds for a 1 MB answer and nothing is gained on loopback.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json; charset=utf-8");
}

// At most `n` bytes of client text for a message (send_json escapes them).
std::string clip(const std::string& text, size_t n = 200) {
  return text.size() <= n ? text : text.substr(0, n) + "...";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

ApiAnswer handle_api(const std::string& path, const std::string& body, const ServerLimits& limits) {
  // The run deadline joins the request's own check, and every engine polls it
  // inside its runs (parallel/cancel.hpp): no run, even one a bug keeps
  // going, holds a work slot past it.
  auto overran = std::make_shared<std::atomic<bool>>(false);
  ServerLimits l = limits;
  if (limits.run_deadline_s > 0) {
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(limits.run_deadline_s));
    l.cancelled = [until, overran, client = limits.cancelled] {
      if (std::chrono::steady_clock::now() >= until) return *overran = true;
      return client && client();
    };
  }
  CancelScope scope(l.cancelled);
  try {
    json parsed = json::object();
    if (kPostPaths.count(path)) {
      // Nesting, duplicate keys and size bounded (formats/input_text.hpp).
      parsed = parse_json_text(body.empty() ? "{}" : body, "body");
    }
    return {200, dispatch(path, parsed, l)};
  } catch (const Cancelled& e) {
    if (*overran)
      return {503,
              {{"error", "run: stopped after " + to_string(KeyValue{limits.run_deadline_s}) +
                             " s, the server's limit for one request (serve --run-deadline); "
                             "make it smaller, or run it with the command line"}}};
    return {503, {{"error", e.what()}}};  // nobody reads it: the client has gone
  } catch (const InputError& e) {
    return {400, {{"error", e.what()}}};
  } catch (const json::exception& e) {
    return {400, {{"error", std::string("body: ") + e.what()}}};
  } catch (const std::bad_alloc&) {
    return {503, {{"error", "out of memory for this request; make it smaller or retry later"}}};
  }
}

// ------------------------------------------------------------- work budget

bool WorkBudget::acquire(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  auto me = queue_.insert(queue_.end(), 0);
  bool got = freed_.wait_for(lock, wait, [&] { return queue_.begin() == me && free_ > 0; });
  queue_.erase(me);
  if (got) --free_;
  freed_.notify_all();  // the next in line moved up
  return got;
}

int WorkBudget::acquire_more(int most) {
  std::lock_guard lock(mutex_);
  if (!queue_.empty()) return 0;  // those waiting come first
  int n = std::max(0, std::min(most, free_));
  free_ -= n;
  return n;
}

void WorkBudget::release(int slots) {
  std::lock_guard lock(mutex_);
  free_ += slots;
  freed_.notify_all();
}

namespace {

// --------------------------------------------------------------- security

bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The Host and Origin values that name this server: the bound address,
// localhost and 127.0.0.1 with the server's port, and --allow-host.
class HostRules {
 public:
  HostRules(const std::string& bound, int port, const std::vector<std::string>& extra)
      : port_(std::to_string(port)) {
    for (std::string name : {bound, std::string("localhost"), std::string("127.0.0.1")}) {
      if (name.find(':') != std::string::npos && name.front() != '[') name = "[" + name + "]";
      names_.insert(lower(name));
    }
    for (const auto& e : extra) {
      if (e.empty()) continue;
      auto [name, p] = split(lower(e));
      if (p.empty())
        names_.insert(name);
      else
        with_port_.insert(name + ":" + p);
    }
  }
  // A Host header; without a port it means ours.
  bool host_ok(const std::string& host) const {
    if (host.empty()) return false;
    auto [name, p] = split(lower(host));
    return matches(name, p.empty() ? port_ : p);
  }
  // An Origin header: http://HOST[:PORT], nothing after; no port means 80.
  bool origin_ok(const std::string& origin) const {
    std::string o = lower(origin);
    if (o.rfind("http://", 0) != 0 || o.find('/', 7) != std::string::npos) return false;
    if (o.size() == 7) return false;
    auto [name, p] = split(o.substr(7));
    return matches(name, p.empty() ? "80" : p);
  }
  std::string allowed() const {
    std::string text;
    for (const auto& n : names_) text += (text.empty() ? "" : ", ") + n + ":" + port_;
    for (const auto& h : with_port_) text += ", " + h;
    return text;
  }

 private:
  // "name:port", "[::1]:port" or "name" into name and port ("" when none or
  // not a number, which then matches nothing).
  static std::pair<std::string, std::string> split(const std::string& h) {
    size_t colon = h.rfind(':');
    if (colon == std::string::npos || (h.front() == '[' && h.back() == ']')) return {h, ""};
    std::string p = h.substr(colon + 1);
    return {h.substr(0, colon), !p.empty() && p.size() <= 5 && all_digits(p) ? p : "x"};
  }
  bool matches(const std::string& name, const std::string& p) const {
    return (names_.count(name) && p == port_) || with_port_.count(name + ":" + p);
  }
  std::string port_;
  std::set<std::string> names_, with_port_;
};

struct Refusal {
  int status;
  std::string message;
  std::string allow;  // the Allow header of a 405
};

// What a POST's headers must say before its body is read.
std::optional<Refusal> body_refusal(const httplib::Request& req, const ServerLimits& limits) {
  std::string type = lower(req.get_header_value("Content-Type"));
  type = type.substr(0, type.find(';'));
  type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
  if (type != "application/json")
    return Refusal{415,
                   "Content-Type: '" + clip(req.get_header_value("Content-Type")) +
                       "' is not accepted; send the body as JSON with Content-Type: "
                       "application/json",
                   ""};
  std::string encoding = lower(req.get_header_value("Content-Encoding"));
  if (!encoding.empty() && encoding != "identity")
    return Refusal{
        415, "Content-Encoding: '" + clip(encoding) + "' is not accepted; send plain JSON", ""};
  std::string length = req.get_header_value("Content-Length");
  for (size_t i = 1; i < req.get_header_value_count("Content-Length"); ++i)
    if (req.get_header_value("Content-Length", i) != length)  // RFC 9112, 6.3
      return Refusal{400, "Content-Length: given twice with different values", ""};
  if (req.has_header("Transfer-Encoding")) {
    if (lower(req.get_header_value("Transfer-Encoding")) != "chunked" || !length.empty())
      return Refusal{400, "Transfer-Encoding: only 'chunked', and without Content-Length", ""};
    return std::nullopt;  // the limit is checked while reading (read_body)
  }
  if (length.empty())
    return Refusal{411, "Content-Length: missing; send the length or a chunked body", ""};
  if (length.empty() || length.size() > 18 || !all_digits(length))
    return Refusal{400, "Content-Length: '" + clip(length) + "' is not a number of bytes", ""};
  if (std::stoull(length) > limits.max_body_bytes)
    return Refusal{413,
                   "body: " + length + " bytes; the limit is " +
                       std::to_string(limits.max_body_bytes) + " bytes",
                   ""};
  return std::nullopt;
}

// Checked before routing, so that nothing is read or run for a request this
// server does not take (docs/http-api.md, "Security model").
std::optional<Refusal> refusal_of(const httplib::Request& req, const HostRules& hosts,
                                  const ServerLimits& limits) {
  std::string host = req.get_header_value("Host");
  if (req.get_header_value_count("Host") != 1 || !hosts.host_ok(host))
    return Refusal{403,
                   "Host: '" + clip(host) + "' is not this server; allowed: " + hosts.allowed() +
                       " (serve --allow-host NAME adds one)",
                   ""};
  if (req.has_header("Origin") && (req.get_header_value_count("Origin") != 1 ||
                                   !hosts.origin_ok(req.get_header_value("Origin"))))
    return Refusal{403,
                   "Origin: '" + clip(req.get_header_value("Origin")) +
                       "' is not this server's page; requests from other sites are refused",
                   ""};
  bool get = kGetPaths.count(req.path), post = kPostPaths.count(req.path);
  bool reading = req.method == "GET" || req.method == "HEAD";
  // Known API paths with the wrong method answer 405, not 404.
  if (get && !reading) return Refusal{405, req.method + " is not allowed here", "GET"};
  if (post && req.method != "POST")
    return Refusal{405, req.method + " is not allowed here", "POST"};
  if (!get && !post && !reading)  // only the page's files remain, and they are GETs
    return Refusal{404, "no such path: " + clip(req.path), ""};
  return post ? body_refusal(req, limits) : std::nullopt;
}

// The body of a POST, refused with 413 as soon as it passes the limit: cpp-
// httplib 0.11.4 checks payload_max_length against Content-Length only, and
// reads a chunked body whole.
bool read_body(const httplib::ContentReader& reader, size_t max, std::string& body,
               httplib::Response& res) {
  bool too_big = false;
  bool ok = reader([&](const char* data, size_t n) {
    if (n > max - body.size()) {
      too_big = true;
      return false;  // stops reading
    }
    body.append(data, n);
    return true;
  });
  if (ok) return true;
  if (too_big)
    send_json(res, 413,
              {{"error", "body: larger than the limit of " + std::to_string(max) + " bytes"}});
  else
    send_json(res, 400, {{"error", "body: incomplete or malformed chunked encoding"}});
  return false;
}

// ------------------------------------------------------------ connections

// Set on the thread that serves a request: it ended in an error whose body may
// be unread (close the connection), or its time ran out (answer 408).
thread_local bool t_close_after = false;
thread_local bool t_late = false;
thread_local bool t_head_too_large = false;  // the headers passed kMaxHeadBytes or kMaxHeadLines
thread_local bool t_answer_late = false;     // the answer passed the response deadline
// A run's memory goes back to the system once it is answered (after the answer
// is written, off the client's wait), not kept by the allocator of whichever
// of the many connection threads served it.
thread_local bool t_trim_after = false;

// What a request's line and headers may take: far more than any browser or
// client sends, and little enough that a flood of header lines costs nothing.
constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr int kMaxHeadLines = 200;

// Finds where a request's head ends (the empty line) in the bytes read, and
// counts the head's bytes and lines on the way.
class HeadScanner {
 public:
  void reset() { *this = HeadScanner{}; }
  // False once the head is over its limits.
  bool scan(const char* data, size_t n) {
    for (size_t i = 0; i < n && !done_; ++i) {
      ++bytes_;
      if (data[i] == '\n') {
        done_ = line_ == 0 && lines_ > 0;  // the empty line after the request line
        lines_ += line_ > 0;
        line_ = 0;
      } else if (data[i] != '\r') {
        ++line_;
      }
    }
    return bytes_ <= kMaxHeadBytes && lines_ <= kMaxHeadLines;
  }

 private:
  size_t bytes_ = 0, line_ = 0;
  int lines_ = 0;
  bool done_ = false;
};

// Reads with one deadline for the whole request, headers and body, so that a
// client trickling a byte at a time cannot hold a thread longer; writes time
// out per write. Replaces httplib's SocketStream, whose timeout is per read.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int sock, int write_timeout_ms, double response_deadline_s)
      : sock_(sock), write_ms_(write_timeout_ms), response_s_(response_deadline_s) {}

  void start_request(double deadline_s) {
    written_ = 0;
    head_.reset();
    deadline_ = Clock::now() + seconds(deadline_s);
  }
  // Whether a request starts within `idle_s`.
  bool wait_for_request(double idle_s) {
    return off_ < len_ || wait(POLLIN, static_cast<int>(idle_s * 1000));
  }
  bool is_readable() const override {
    if (off_ < len_) return true;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    if (left > 0 && wait(POLLIN, static_cast<int>(left))) return true;
    t_late = t_late || Clock::now() >= deadline_;
    return false;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_) {
      if (!is_readable()) return -1;
      ssize_t n;
      while ((n = ::recv(sock_, buf_.data(), buf_.size(), 0)) < 0 && errno == EINTR) {
      }
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t k = std::min(size, len_ - off_);
    if (!head_.scan(buf_.data() + off_, k)) {
      t_head_too_large = true;
      return -1;
    }
    std::memcpy(ptr, buf_.data() + off_, k);
    off_ += k;
    return static_cast<ssize_t>(k);
  }
  // Each write waits at most the write timeout, and the whole answer at most
  // the response deadline, so that a client reading a byte now and then
  // cannot pin a large answer in memory.
  bool is_writable() const override {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(answer_until_ - Clock::now()).count();
    bool writable = left > 0 && wait(POLLOUT, static_cast<int>(std::min<long>(left, write_ms_)));
    t_answer_late = t_answer_late || (!writable && Clock::now() >= answer_until_);
    return writable;
  }
  // All of `size` or -1: httplib writes an answer's body in one call and
  // takes any count as done. Never blocks in the kernel, where a send of a
  // large answer to a slow reader would wait for all of it, past any deadline.
  ssize_t write(const char* ptr, size_t size) override {
    if (t_head_too_large) return -1;  // answered 431 by serve_requests, not by httplib
    if (written_ == 0) answer_until_ = Clock::now() + seconds(response_s_);
    for (size_t sent = 0; sent < size;) {
      if (!is_writable()) return -1;
      ssize_t n = ::send(sock_, ptr + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
      if (n > 0) {
        sent += static_cast<size_t>(n);
        written_ += static_cast<size_t>(n);
      }
    }
    return static_cast<ssize_t>(size);
  }
  // An answer of the server's own, for a request httplib could not read.
  void write_raw(const std::string& answer) {
    bool head_too_large = std::exchange(t_head_too_large, false);
    write(answer.data(), answer.size());
    t_head_too_large = head_too_large;
  }
  size_t written() const { return written_; }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  static void address_of(int sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    auto* sa = reinterpret_cast<sockaddr*>(&a);
    if ((peer ? ::getpeername(sock, sa, &len) : ::getsockname(sock, sa, &len)) != 0) return;
    char text[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  bool wait(short events, int ms) const {
    pollfd p{sock_, events, 0};
    int r;
    while ((r = ::poll(&p, 1, std::max(ms, 0))) < 0 && errno == EINTR) {
    }
    return r > 0 && !(p.revents & POLLNVAL) && (events != POLLOUT || (p.revents & POLLOUT));
  }
  int sock_;
  int write_ms_;
  double response_s_;
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point answer_until_ = Clock::now();
  HeadScanner head_;
  std::array<char, 16384> buf_{};
  size_t off_ = 0, len_ = 0;
  size_t written_ = 0;  // bytes of the current request's answer
};

// An answer written without httplib: for a request it never saw whole.
std::string raw_answer(int status, const char* reason, const std::string& message) {
  std::string body = json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n" +
         (status == 503 ? "Retry-After: 1\r\n" : "") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string late_message(const ServerLimits& limits) {
  return "request: not received within " + to_string(KeyValue{limits.request_deadline_s}) +
         " s (headers and body)";
}

// Ends a connection. After an error the client may still be sending a body:
// read and drop it for a moment first, or closing with unread bytes resets
// the connection and the client never sees the answer.
void close_connection(int sock, bool linger, int linger_ms) {
  if (linger) {
    ::shutdown(sock, SHUT_WR);
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(linger_ms);
    char buf[16384];
    for (size_t total = 0; total < (16u << 20);) {
      auto left =
          std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      pollfd p{sock, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      ssize_t n = ::recv(sock, buf, sizeof buf, 0);
      if (n <= 0) break;
      total += static_cast<size_t>(n);
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

// The socket of the request this thread serves (-1 outside one).
thread_local int t_client_socket = -1;

// True once the client has closed its end of the connection: a read would
// return end of file (a pipelined request would be data, not the end).
bool client_gone(int sock) {
  char c;
  ssize_t n = ::recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Connections open now, per client address and in all. At a cap, a new
// connection takes the place of the one that has waited longest without
// sending a whole request, once that one has waited kSlowAfter: slow and idle
// clients from one address (everything on loopback is one) cannot shut out a
// client that sends its request at once.
class Connections {
 public:
  struct Entry {
    int sock;
    std::string ip;
    std::chrono::steady_clock::time_point waiting_since;
    bool waiting = true;  // no whole request read yet (or idle between requests)
    bool counted = true;  // against the caps; false once it made room for another
  };
  static constexpr std::chrono::milliseconds kSlowAfter{1000};

  // The new connection's entry, or nullptr when it is refused.
  Entry* admit(int sock, const std::string& ip, const ServerLimits& limits) {
    std::lock_guard lock(mutex_);
    if (over_cap(ip, limits) && !make_room(ip, limits)) return nullptr;
    count(ip, +1);
    return &*open_.insert(open_.end(), Entry{sock, ip, std::chrono::steady_clock::now()});
  }
  // Before the socket is closed, so that make_room never touches a number
  // the system has since given to a new connection.
  void leave(Entry* e) {
    std::lock_guard lock(mutex_);
    if (e->counted) count(e->ip, -1);
    open_.remove_if([e](const Entry& x) { return &x == e; });
  }
  void set_waiting(Entry* e, bool waiting) {
    std::lock_guard lock(mutex_);
    e->waiting = waiting;
    e->waiting_since = std::chrono::steady_clock::now();
  }

 private:
  void count(const std::string& ip, int delta) {
    total_ += delta;
    if ((per_client_[ip] += delta) <= 0) per_client_.erase(ip);
  }
  bool over_cap(const std::string& ip, const ServerLimits& limits) const {
    auto it = per_client_.find(ip);
    return total_ >= limits.max_connections ||
           (it != per_client_.end() && it->second >= limits.max_connections_per_client);
  }
  // Ends the longest-waiting slow connection that counts against the cap the
  // new one meets: its address's, or any address's when the cap in all is met.
  bool make_room(const std::string& ip, const ServerLimits& limits) {
    bool any = total_ >= limits.max_connections;
    auto now = std::chrono::steady_clock::now();
    Entry* oldest = nullptr;
    for (Entry& e : open_)
      if (e.counted && e.waiting && now - e.waiting_since >= kSlowAfter && (any || e.ip == ip) &&
          (!oldest || e.waiting_since < oldest->waiting_since))
        oldest = &e;
    if (!oldest) return false;
    ::shutdown(oldest->sock, SHUT_RD);  // its thread reads the end and closes it
    oldest->counted = false;
    count(oldest->ip, -1);
    return !over_cap(ip, limits);
  }
  std::mutex mutex_;
  std::list<Entry> open_;
  int total_ = 0;
  std::map<std::string, int> per_client_;
};

// The connection this thread serves (nullptr outside one) and its table.
thread_local Connections::Entry* t_connection = nullptr;
thread_local Connections* t_connections = nullptr;

// Called by the handlers once a request is read whole: the connection is no
// longer one that makes room for others.
void mark_busy() {
  if (t_connection) t_connections->set_waiting(t_connection, false);
}

// httplib's thread pool, with one change: a connection that would wait in
// line for a thread is answered 503 at once by the accepting thread, so a
// flood of idle connections never hides a new client behind it.
class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (busy_ + jobs_.size() < threads_.size()) {
        jobs_.push_back(std::move(fn));
        ready_.notify_one();
        return;
      }
    }
    t_refuse_now = true;  // process_and_close_socket answers 503 without waiting
    fn();
    t_refuse_now = false;
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  static inline thread_local bool t_refuse_now = false;

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
      }
      fn();
      std::lock_guard lock(mutex_);
      --busy_;
    }
  }
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable ready_;
};

// httplib's server with its connection loop replaced: a request deadline, a
// cap on connections, and a thread per open connection (threads that wait on
// sockets are cheap; the expensive work is bounded by the WorkBudget).
class HardenedServer : public httplib::Server {
 public:
  explicit HardenedServer(const ServerLimits& limits) : limits_(limits) {
    // A few threads beyond the cap answer the connections over it.
    size_t threads = static_cast<size_t>(std::max(1, limits.max_connections)) + 8;
    new_task_queue = [threads] { return new ConnectionPool(threads); };
  }
  // httplib listens with a backlog of 5: a burst of connections (a page
  // opening several at once, or many slow clients) would see SYNs dropped and
  // wait a second each. Listening again on Linux only changes the backlog.
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    if (ConnectionPool::t_refuse_now) {
      refuse_busy(sock, false);
      return false;
    }
    std::string ip;
    int port = 0;
    DeadlineStream::address_of(sock, true, ip, port);
    Connections::Entry* entry = connections_.admit(sock, ip, limits_);
    if (!entry) {
      refuse_busy(sock, true);
      return false;
    }
    t_answer_late = false;
    bool linger = serve_connection(sock, entry);
    connections_.leave(entry);
    if (t_answer_late) {  // cut off: what the kernel still holds of the answer is dropped too
      linger = false;
      ::linger reset{1, 0};
      ::setsockopt(sock, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
      ::close(sock);
      return true;
    }
    close_connection(sock, linger, 1000);
    return true;
  }

  // True when the connection ends on an error whose body may be unread. An
  // allocation that fails while reading or answering ends this connection,
  // never the server.
  bool serve_connection(int sock, Connections::Entry* entry) {
    DeadlineStream strm(sock, static_cast<int>(write_timeout_sec_ * 1000),
                        limits_.response_deadline_s);
    t_client_socket = sock;
    t_connection = entry;
    t_connections = &connections_;
    bool linger = true;
    try {
      linger = serve_requests(strm, entry);
    } catch (const std::bad_alloc&) {
      if (strm.written() == 0) {
        std::string busy = raw_answer(503, "Service Unavailable", "out of memory; retry later");
        ::send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    } catch (...) {
    }
    t_client_socket = -1;
    t_connection = nullptr;
    t_connections = nullptr;
    return linger;
  }

  // httplib's keep-alive loop, with the deadline; true when the connection
  // ends on an error whose body may be unread.
  bool serve_requests(DeadlineStream& strm, Connections::Entry* entry) {
    for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
      connections_.set_waiting(entry, true);
      if (!strm.wait_for_request(limits_.idle_timeout_s)) return false;
      strm.start_request(limits_.request_deadline_s);
      t_close_after = t_late = t_head_too_large = false;
      bool closed = false;
      bool ok = process_request(strm, left == 1, closed, nullptr);
      if (std::exchange(t_trim_after, false)) ::malloc_trim(0);
      // httplib answers nothing when the request line is late, and 400 (not
      // written: see write) when the headers are over the caps.
      if (t_head_too_large || (t_late && strm.written() == 0)) {
        strm.write_raw(t_head_too_large
                           ? raw_answer(431, "Request Header Fields Too Large",
                                        "headers: more than " +
                                            std::to_string(kMaxHeadBytes / 1024) + " KiB or " +
                                            std::to_string(kMaxHeadLines) +
                                            " lines; send fewer or shorter headers")
                           : raw_answer(408, "Request Timeout", late_message(limits_)));
        return true;
      }
      if (t_close_after) return true;
      if (!ok || closed) return false;
    }
    return false;
  }

  // 503 to a connection over the caps. From the accepting thread (`linger`
  // false) nothing waits: what the client sent is dropped unread first, so
  // that closing sends the answer and an end, not a reset.
  void refuse_busy(int sock, bool linger) const {
    std::string busy =
        raw_answer(503, "Service Unavailable",
                   "too many open connections (the limit is " +
                       std::to_string(limits_.max_connections_per_client) + " per client, " +
                       std::to_string(limits_.max_connections) + " in all); retry shortly");
    ::send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (!linger) {
      char drop[16384];
      while (::recv(sock, drop, sizeof drop, MSG_DONTWAIT) > 0) {
      }
    }
    close_connection(sock, linger, 200);
  }

  const ServerLimits& limits_;
  Connections connections_;
};

// ---------------------------------------------------------------- handlers

// Requests that run engines hold a slot of the work budget.
const std::set<std::string> kExpensivePaths = {"/api/run",   "/api/ladder", "/api/tipping",
                                               "/api/sweep", "/api/trace",  "/api/lint",
                                               "/api/advice"};

int work_slots(const ServerLimits& limits) {
  return limits.max_work > 0 ? limits.max_work
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// One API call under the work budget: a slot (a sweep takes the idle ones
// too, as threads), or 503 with Retry-After when none comes free in time.
void answer_api(const std::string& path, const std::string& body, const ServerLimits& limits,
                WorkBudget& budget, httplib::Response& res) {
  mark_busy();
  int held = 0;
  ServerLimits l = limits;
  if (kExpensivePaths.count(path)) {
    auto wait = std::chrono::milliseconds(static_cast<long>(limits.work_wait_s * 1000));
    if (!budget.acquire(wait)) {
      res.set_header("Retry-After", "2");
      return send_json(res, 503,
                       {{"error", "busy: " + std::to_string(work_slots(limits)) +
                                      " runs are in progress, the server's limit; retry in a "
                                      "few seconds"}});
    }
    held = 1 + (path == "/api/sweep" ? budget.acquire_more(work_slots(limits) - 1) : 0);
    l.sweep_threads = static_cast<unsigned>(held);
    if (int sock = t_client_socket; sock >= 0) l.cancelled = [sock] { return client_gone(sock); };
  }
  struct Release {
    WorkBudget& b;
    int& n;
    ~Release() {
      if (n > 0) b.release(n);
    }
  } release{budget, held};
  ApiAnswer a = handle_api(path, body, l);
  if (a.status == 503) res.set_header("Retry-After", "5");
  send_json(res, a.status, a.body);
  t_trim_after = held > 0;
}

// The page: only files embedded at build time; no file system access, so a
// path such as /../etc/passwd can only miss.
void serve_page(const httplib::Request& req, httplib::Response& res) {
  mark_busy();
  std::string file = req.path == "/" ? "index.html" : req.path.substr(1);
  const auto& assets = web_assets();
  auto it = assets.find(file);
  if (it == assets.end()) {
    if (req.path.rfind("/api/", 0) == 0 || file.find('.') != std::string::npos || assets.empty())
      return send_json(res, 404, {{"error", "no such path: " + clip(req.path)}});
    it = assets.find("index.html");  // client-side routes fall back to the page
    if (it == assets.end()) return send_json(res, 404, {{"error", "no page built"}});
  }
  res.set_content(std::string(it->second), content_type(it->first));
}

// Errors nobody answered yet, the request deadline, and closing after errors.
void set_error_handlers(httplib::Server& server, const ServerLimits& limits) {
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string reason =
        res.status == 413 ? "body: larger than the limit" : "HTTP " + std::to_string(res.status);
    send_json(res, res.status, {{"error", reason + " (" + clip(req.path) + ")"}});
  });
  server.set_post_routing_handler([&limits](const httplib::Request&, httplib::Response& res) {
    if (t_late) send_json(res, 408, {{"error", late_message(limits)}});
    if (res.status < 400) return;
    t_close_after = true;
    res.headers.erase("Keep-Alive");
    if (res.get_header_value("Connection") != "close") res.set_header("Connection", "close");
  });
  // Details go to the log, not to the client.
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        auto quoted = [](const std::string& s) {
          return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
        };
        try {
          std::rethrow_exception(ep);
        } catch (const std::bad_alloc&) {
          res.set_header("Retry-After", "5");
          return send_json(res, 503, {{"error", "out of memory for this request"}});
        } catch (const std::exception& e) {
          std::cerr << "retrystorm: internal error on " << quoted(req.path) << ": "
                    << quoted(e.what()) << std::endl;
        } catch (...) {
          std::cerr << "retrystorm: internal error on " << quoted(req.path) << std::endl;
        }
        send_json(res, 500, {{"error", "internal error (details in the server's log)"}});
      });
}

}  // namespace

int serve(const std::string& host, int port, const ServerLimits& limits) {
  // Every open connection is a descriptor: take all the system allows, so a
  // flood meets the connection caps, not the descriptor limit.
  if (rlimit r{}; ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  HardenedServer server(limits);
  server.set_payload_max_length(limits.max_body_bytes);
  HostRules hosts(host, port, limits.allowed_hosts);
  WorkBudget budget(work_slots(limits));

  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    auto refusal = refusal_of(req, hosts, limits);
    if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
    if (!refusal->allow.empty()) res.set_header("Allow", refusal->allow);
    send_json(res, refusal->status, {{"error", refusal->message}});
    return httplib::Server::HandlerResponse::Handled;
  });
  for (const auto& p : kGetPaths)
    server.Get(p, [&](const httplib::Request& req, httplib::Response& res) {
      answer_api(req.path, "", limits, budget, res);
    });
  for (const auto& p : kPostPaths)
    server.Post(p, [&](const httplib::Request& req, httplib::Response& res,
                       const httplib::ContentReader& reader) {
      std::string body;
      if (read_body(reader, limits.max_body_bytes, body, res))
        answer_api(req.path, body, limits, budget, res);
    });
  server.Get(R"(/.*)", serve_page);
  set_error_handlers(server, limits);

  if (!server.bind_to_port(host, port)) {
    std::cerr << "retrystorm: cannot listen on " << host << ":" << port << "\n";
    return 1;
  }
  server.widen_backlog();
  std::cout << "retrystorm explorer: http://" << (host == "0.0.0.0" ? "127.0.0.1" : host) << ":"
            << port << "/" << std::endl;
  server.listen_after_bind();
  return 0;
}

}  // namespace retrystorm
