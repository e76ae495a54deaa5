#include "server/server.hpp"

#include <httplib.h>

#include <iostream>
#include <map>
#include <set>

#include "analysis/ladder.hpp"
#include "analysis/sweep.hpp"
#include "analysis/tipping.hpp"
#include "engines/engine.hpp"
#include "engines/montecarlo.hpp"
#include "io/configs/export.hpp"
#include "io/configs/lint.hpp"
#include "io/envoy_export.hpp"
#include "io/result_json.hpp"
#include "io/scenario_io.hpp"
#include "io/session_report.hpp"
#include "server/web_assets.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

const std::set<std::string> kPostPaths = {
    "/api/run",          "/api/ladder",      "/api/tipping",      "/api/sweep",
    "/api/export/envoy", "/api/export/grpc", "/api/export/istio", "/api/export/linkerd",
    "/api/export/aws",   "/api/import",      "/api/lint",         "/api/trace"};
const std::set<std::string> kGetPaths = {"/api/presets", "/api/schema"};

// The scenario a request names: {"preset", "set"} or {"scenario"}.
Scenario scenario_of(const json& body, const std::set<std::string>& extra,
                     const ServerLimits& limits) {
  if (!body.is_object()) throw InputError("body: must be a JSON object");
  for (const auto& [key, v] : body.items()) {
    if (key == "preset" || key == "set" || key == "scenario" || extra.count(key)) continue;
    std::string allowed = "preset, set, scenario";
    for (const auto& e : extra) allowed += ", " + e;
    throw InputError("body." + key + ": unknown field; allowed: " + allowed);
  }
  if (body.contains("preset") && body.contains("scenario"))
    throw InputError("body: give preset or scenario, not both");
  Scenario s = preset_or_throw("order-status").scenario;
  if (body.contains("preset")) {
    if (!body["preset"].is_string()) throw InputError("preset: must be a preset name");
    s = preset_or_throw(body["preset"].get<std::string>()).scenario;
  } else if (body.contains("scenario")) {
    s = scenario_from_json(body["scenario"], Scenario{});
  }
  if (body.contains("set")) {
    if (!body["set"].is_object()) throw InputError("set: must be an object of path: value");
    for (const auto& [path, v] : body["set"].items()) set_key_json(s, path, v);
  }
  RunLimits run_limits;
  run_limits.max_steps = limits.max_steps;
  validate(s, run_limits);
  return s;
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
  json out = {{"text", r.text}, {"notes", r.notes}};
  if (system == "envoy") out["yaml"] = r.text;
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
  std::vector<configs::ConfigFile> files;
  for (const auto& f : body["files"]) {
    if (!f.is_object() || !f.contains("text") || !f["text"].is_string())
      throw InputError("files[]: must be {name, text} with text a string");
    std::string name = f.contains("name") && f["name"].is_string()
                           ? f["name"].get<std::string>()
                           : "file" + std::to_string(files.size() + 1);
    files.push_back({name, f["text"].get<std::string>()});
  }
  if (!lint) {
    configs::ImportResult r = configs::import_configs(files);
    return {{"keys", configs::keys_flat(r.keys)}, {"warnings", r.warnings}, {"formats", r.formats}};
  }
  configs::LintOptions o;
  if (body.contains("load")) {
    if (!body["load"].is_number() || body["load"].get<double>() < 0)
      throw InputError("load: must be a number, demand / capacity");
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
  return configs::lint_json(configs::lint_configs(files, o));
}

// Monte Carlo replications one request may ask for.
void check_runs(const Scenario& s, int limit) {
  if (s.runs > limit)
    throw InputError("runs: " + std::to_string(s.runs) + " replications; the server's limit for " +
                     "engine " + s.engine + " is " + std::to_string(limit) +
                     " (use the command line for more)");
}

// An optional true/false field of a body (default true).
bool flag_of(const json& body, const char* name) {
  if (!body.contains(name)) return true;
  if (!body[name].is_boolean()) throw InputError(std::string(name) + ": must be true or false");
  return body[name].get<bool>();
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
  if (path == "/api/run") {
    static TippingCache tipping_cache;
    Scenario s = scenario_of(body, {"trace", "sessions"}, limits);
    bool trace = flag_of(body, "trace");    // the page asks without, then fetches /api/trace
    bool rows = flag_of(body, "sessions");  // session rows; the page draws without them
    if (s.engine == "sessions") {
      check_runs(s, limits.max_session_runs);
      json answer = session_json(make_session_report(s));
      if (!rows) answer.erase("sessions");
      return answer;
    }
    if (s.engine == "agent" && s.runs > 1) {
      check_runs(s, limits.max_agent_runs);
      json answer = run_json(make_report(s, true, true, &tipping_cache, trace));
      answer["montecarlo"] = montecarlo_json(run_montecarlo(s));
      return answer;
    }
    return run_json(make_report(s, true, true, &tipping_cache, trace));
  }
  if (path == "/api/trace") {
    Scenario s = scenario_of(body, {}, limits);
    if (s.engine == "sessions") return {{"trace", json::array()}};  // no per-step trace
    return {{"trace", trace_json(decision_trace(run_engine(s)))}};
  }
  if (path == "/api/ladder") return ladder_json(run_ladder(scenario_of(body, {}, limits)));
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
    return tipping_json(tipping_point(s, grid));
  }
  if (path == "/api/sweep") {
    Scenario s = scenario_of(body, {"vary"}, limits);
    auto axes = axes_of(body);
    SweepOptions options;
    options.max_runs = limits.max_sweep_runs;
    return sweep_json(axes, run_sweep(s, axes, options));
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

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // Not "application/json": cpp-httplib would brotli-compress it, which costs
  // seconds for a 1 MB answer and nothing is gained on loopback.
  res.set_content(body.dump(), "application/json; charset=utf-8");
}

}  // namespace

ApiAnswer handle_api(const std::string& path, const std::string& body, const ServerLimits& limits) {
  try {
    json parsed = json::object();
    if (kPostPaths.count(path)) {
      try {
        parsed = json::parse(body.empty() ? "{}" : body);
      } catch (const json::parse_error& e) {
        return {400, {{"error", std::string("body: not valid JSON: ") + e.what()}}};
      }
    }
    return {200, dispatch(path, parsed, limits)};
  } catch (const InputError& e) {
    return {400, {{"error", e.what()}}};
  } catch (const json::exception& e) {
    return {400, {{"error", std::string("body: ") + e.what()}}};
  }
}

int serve(const std::string& host, int port, const ServerLimits& limits) {
  httplib::Server server;
  server.set_payload_max_length(limits.max_body_bytes);

  // Known API paths with the wrong method answer 405, not 404.
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    bool get = kGetPaths.count(req.path), post = kPostPaths.count(req.path);
    if ((get && req.method != "GET" && req.method != "HEAD") || (post && req.method != "POST")) {
      res.set_header("Allow", get ? "GET" : "POST");
      send_json(res, 405, {{"error", req.method + " is not allowed on " + req.path}});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  auto api = [&limits](const httplib::Request& req, httplib::Response& res) {
    ApiAnswer a = handle_api(req.path, req.body, limits);
    send_json(res, a.status, a.body);
  };
  for (const auto& p : kGetPaths) server.Get(p, api);
  for (const auto& p : kPostPaths) server.Post(p, api);

  // The page: only files embedded at build time; no file system access, so a
  // path such as /../etc/passwd can only miss.
  server.Get(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
    std::string file = req.path == "/" ? "index.html" : req.path.substr(1);
    const auto& assets = web_assets();
    auto it = assets.find(file);
    if (it == assets.end()) {
      if (req.path.rfind("/api/", 0) == 0 || file.find('.') != std::string::npos ||
          assets.empty()) {
        send_json(res, 404, {{"error", "no such path: " + req.path}});
        return;
      }
      it = assets.find("index.html");  // client-side routes fall back to the page
      if (it == assets.end()) return send_json(res, 404, {{"error", "no page built"}});
    }
    res.set_content(std::string(it->second), content_type(it->first));
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) {
      std::string reason =
          res.status == 413 ? "body: larger than the limit" : "HTTP " + std::to_string(res.status);
      send_json(res, res.status, {{"error", reason + " (" + req.path + ")"}});
    }
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_json(res, 500, {{"error", what}});
      });

  if (!server.bind_to_port(host, port)) {
    std::cerr << "retrystorm: cannot listen on " << host << ":" << port << "\n";
    return 1;
  }
  std::cout << "retrystorm explorer: http://" << (host == "0.0.0.0" ? "127.0.0.1" : host) << ":"
            << port << "/" << std::endl;
  server.listen_after_bind();
  return 0;
}

}  // namespace retrystorm
