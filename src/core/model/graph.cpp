#include "model/graph.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include "text/number.hpp"

namespace retrystorm {

namespace {

// Client keys that shape one population's stack of layers: a graph has one
// layer per edge and says per edge what they say per layer.
constexpr const char* kStackOnly[] = {"layers", "stack_retries", "layer_timeouts_s"};

void add_key(KeySettings& settings, const std::string& where, const std::string& prefix,
             const std::string& key, const KeyValue& value) {
  std::string path = prefix + key;
  if (!find_key(path))
    throw InputError(where + "." + key + ": unknown key; a " +
                     (prefix == "server." ? "service takes the server.* keys and pattern"
                                          : "call takes from, to, count, optional, "
                                            "propagate_deadline and the client.* keys"));
  Scenario probe;
  try {
    set_key(probe, path, value);
  } catch (const InputError& e) {
    throw InputError(where + "." + key + " (as " + e.what() + ")");
  }
  settings.emplace_back(path, value);
}

void apply(Scenario& s, const KeySettings& settings) {
  for (const auto& [path, value] : settings) set_key(s, path, value);
}

}  // namespace

namespace {

struct GraphPath {
  bool call = false;  // calls[index], else services.name
  size_t index = 0;
  std::string name;
  std::string key;  // "retries", "backoff.base_s", "queue_limit"
};

std::optional<GraphPath> parse_graph_path(const std::string& path) {
  GraphPath out;
  if (path.rfind("calls[", 0) == 0) {
    size_t close = path.find("].");
    std::string digits = close == std::string::npos ? "" : path.substr(6, close - 6);
    if (digits.empty() || digits.size() > 4 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("'" + path + "': a call's key is calls[N].key, N from 0");
    out.call = true;
    out.index = std::stoul(digits);
    out.key = path.substr(close + 2);
    return out;
  }
  if (path.rfind("services.", 0) == 0) {
    size_t dot = path.find('.', 9);
    if (dot == std::string::npos || dot == 9)
      throw InputError("'" + path + "': a service's key is services.NAME.key");
    out.name = path.substr(9, dot - 9);
    out.key = path.substr(dot + 1);
    return out;
  }
  return std::nullopt;
}

GraphCall& call_at(Scenario& s, const GraphPath& p) {
  if (p.index >= s.graph.calls.size())
    throw InputError("calls[" + std::to_string(p.index) + "]: the scenario has " +
                     std::to_string(s.graph.calls.size()) + " calls" +
                     (s.graph.calls.empty() ? ""
                                            : ", calls[0] to calls[" +
                                                  std::to_string(s.graph.calls.size() - 1) + "]"));
  return s.graph.calls[p.index];
}

GraphService& service_at(Scenario& s, const GraphPath& p) {
  int i = service_index(s.graph, p.name);
  if (i < 0) {
    std::string names;
    for (const GraphService& service : s.graph.services)
      names += (names.empty() ? "" : ", ") + service.name;
    throw InputError("services." + p.name + ": no such service" +
                     (names.empty() ? "" : "; the services are " + names));
  }
  return s.graph.services[static_cast<size_t>(i)];
}

// The one setting of `path` replaced, or added at the end.
void put_setting(KeySettings& settings, const KeySettings& one) {
  for (auto& kv : settings)
    if (kv.first == one.front().first) {
      kv.second = one.front().second;
      return;
    }
  settings.push_back(one.front());
}

bool flag_value(const std::string& path, const KeyValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b;
  throw InputError(path + ": '" + to_string(value) + "' is not true or false");
}

void set_call_field(GraphCall& call, const std::string& path, const std::string& key,
                    const KeyValue& value) {
  if (key == "count") {
    const double* d = std::get_if<double>(&value);
    if (!d || *d != std::floor(*d) || *d < 1 || *d > 100)
      throw InputError(path + ": '" + to_string(value) + "' must be a whole number from 1 to 100");
    call.count = static_cast<int>(*d);
  } else if (key == "optional") {
    call.optional = flag_value(path, value);
  } else {
    call.propagate_deadline = flag_value(path, value);
  }
}

bool is_call_field(const std::string& key) {
  return key == "count" || key == "optional" || key == "propagate_deadline";
}

}  // namespace

bool is_graph_path(const std::string& path) {
  return path.rfind("calls[", 0) == 0 || path.rfind("services.", 0) == 0;
}

void set_graph_key(Scenario& s, const std::string& path, const KeyValue& value) {
  GraphPath p = *parse_graph_path(path);
  KeySettings one;
  if (p.call) {
    GraphCall& call = call_at(s, p);
    if (is_call_field(p.key)) return set_call_field(call, path, p.key, value);
    add_call_key(one, "calls[" + std::to_string(p.index) + "]", p.key, value);
    return put_setting(call.client, one);
  }
  GraphService& service = service_at(s, p);
  if (p.key == "pattern") {
    const std::string* name = std::get_if<std::string>(&value);
    if (!name || (*name != "sequence" && *name != "parallel"))
      throw InputError(path + ": '" + to_string(value) +
                       "' is not allowed; choose sequence or "
                       "parallel");
    service.pattern = *name == "parallel" ? CallPattern::parallel : CallPattern::sequence;
    return;
  }
  add_service_key(one, "services." + p.name, p.key, value);
  put_setting(service.server, one);
}

KeyValue graph_key_value(const Scenario& s, const std::string& path) {
  GraphPath p = *parse_graph_path(path);
  Scenario& any = const_cast<Scenario&>(s);  // read only: call_at and service_at check
  if (p.call) {
    const GraphCall& call = call_at(any, p);
    if (p.key == "count") return static_cast<double>(call.count);
    if (p.key == "optional") return call.optional;
    if (p.key == "propagate_deadline") return call.propagate_deadline;
    return key_or_throw("client." + p.key).get(edge_scenario(s, call));
  }
  const GraphService& service = service_at(any, p);
  if (p.key == "pattern") return std::string(kCallPatternNames[static_cast<int>(service.pattern)]);
  return key_or_throw("server." + p.key).get(service_scenario(s, service));
}

KeyType graph_key_type(const std::string& path) {
  GraphPath p = *parse_graph_path(path);
  if (p.call && p.key == "count") return KeyType::integer;
  if (p.call && is_call_field(p.key)) return KeyType::boolean;
  if (!p.call && p.key == "pattern") return KeyType::choice;
  return key_or_throw((p.call ? "client." : "server.") + p.key).type;
}

bool GraphService::serves() const {
  return std::any_of(server.begin(), server.end(),
                     [](const auto& kv) { return kv.first == "server.capacity_per_s"; });
}

void add_service_key(KeySettings& settings, const std::string& where, const std::string& key,
                     const KeyValue& value) {
  add_key(settings, where, "server.", key, value);
}

void add_call_key(KeySettings& settings, const std::string& where, const std::string& key,
                  const KeyValue& value) {
  for (const char* stack : kStackOnly)
    if (key == stack)
      throw InputError(where + "." + key +
                       ": shapes a stack of layers; in a graph each call is one layer (give each "
                       "hop its own call)");
  add_key(settings, where, "client.", key, value);
}

int service_index(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.services.size(); ++i)
    if (g.services[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> service_depths(const Graph& g) {
  std::vector<int> depth(g.services.size(), -1);
  // Longest path from the entry; the graph is acyclic (validate_graph), so
  // relaxing every call services-many times settles it.
  for (size_t round = 0; round <= g.services.size(); ++round)
    for (const GraphCall& call : g.calls) {
      int from = call.from == kUserCaller ? 0 : depth[service_index(g, call.from)] + 1;
      int to = service_index(g, call.to);
      if (to >= 0 && (call.from == kUserCaller || depth[service_index(g, call.from)] >= 0))
        depth[to] = std::max(depth[to], from);
    }
  return depth;
}

int incident_service(const Scenario& s) {
  const Graph& g = s.graph;
  if (!s.incident.service.empty()) return service_index(g, s.incident.service);
  if (int c = s.incident.call; c >= 0 && c < static_cast<int>(g.calls.size())) {
    int callee = service_index(g, g.calls[static_cast<size_t>(c)].to);
    if (callee >= 0 && g.services[static_cast<size_t>(callee)].serves()) return callee;
  }
  std::vector<int> depth = service_depths(g);
  int best = -1;
  for (size_t i = 0; i < g.services.size(); ++i)
    if (g.services[i].serves() && (best < 0 || depth[i] > depth[best])) best = static_cast<int>(i);
  return best;
}

bool incident_hits_service(const Scenario& s) {
  return s.incident.call < 0 || !s.incident.service.empty();
}

void validate_call_fault(const Scenario& s) {
  const auto& i = s.incident;
  bool faults = i.delay_s > 0 || i.abort_share > 0;
  if (i.call < 0) {
    if (faults)
      throw InputError(std::string(i.delay_s > 0 ? "incident.delay_s" : "incident.abort_share") +
                       ": a fault needs incident.call, the index of the call it hits "
                       "(docs/graph.md, \"A fault on a call\")");
    return;
  }
  std::string call = "incident.call: " + std::to_string(i.call);
  if (s.graph.empty())
    throw InputError(call +
                     ": a fault on a call needs services and calls; without them the incident "
                     "is incident.capacity_factor and incident.failure at the dependency");
  size_t n = s.graph.calls.size();
  if (static_cast<size_t>(i.call) >= n)
    throw InputError(call + " is not a call; the scenario has " + std::to_string(n) +
                     (n == 1 ? " call (0)" : " calls (0 to " + std::to_string(n - 1) + ")"));
  if (!faults)
    throw InputError(call +
                     ": the fault neither delays nor aborts; give incident.delay_s or "
                     "incident.abort_share");
}

Scenario service_scenario(const Scenario& s, const GraphService& service) {
  Scenario out = s;
  apply(out, service.server);
  return out;
}

Scenario edge_scenario(const Scenario& s, const GraphCall& call) {
  Scenario out = s;
  if (call.from != kUserCaller) out.client.deadline_s = 0;
  apply(out, call.client);
  out.client.layers = 1;
  out.client.stack_retries.clear();
  out.client.layer_timeouts_s.clear();
  return out;
}

Scenario call_scenario(const Scenario& s, long long index, const std::string& key) {
  const auto& calls = s.graph.calls;
  if (index < 0 || index >= static_cast<long long>(calls.size()))
    throw InputError(key + ": " + std::to_string(index) + " is not a call of the scenario; " +
                     (calls.empty() ? std::string("it has no services and calls")
                                    : "choose 0 to " + std::to_string(calls.size() - 1)));
  const GraphCall& call = calls[static_cast<size_t>(index)];
  Scenario out = edge_scenario(s, call);
  const GraphService& callee =
      s.graph.services[static_cast<size_t>(service_index(s.graph, call.to))];
  if (callee.serves()) out.server = service_scenario(s, callee).server;
  out.demand.rate_per_s = call_rate_per_s(s, call, calls_per_request(s));
  out.name = s.name + " calls[" + std::to_string(index) + "]";
  out.graph = {};
  out.incident.service.clear();
  out.incident.call = -1;  // a fault on a call runs on the graph only
  out.incident.delay_s = 0;
  out.incident.abort_share = 0;
  return out;
}

namespace {

void check_names(const Graph& g) {
  std::set<std::string> seen;
  for (const GraphService& service : g.services) {
    if (service.name.empty() || service.name == kUserCaller)
      throw InputError("services: '" + service.name + "' cannot name a service (" + kUserCaller +
                       " is the callers of the entry)");
    if (!seen.insert(service.name).second)
      throw InputError("services." + service.name + ": listed twice");
  }
}

void check_calls(const Graph& g) {
  int entries = 0;
  for (size_t i = 0; i < g.calls.size(); ++i) {
    const GraphCall& call = g.calls[i];
    std::string where = "calls[" + std::to_string(i) + "]";
    if (call.from == kUserCaller) {
      ++entries;
      // One user request is one call of the entry; a count would be read by
      // the reports and not by the engine.
      if (call.count != 1)
        throw InputError(where + ".count: " + std::to_string(call.count) +
                         " on the entry call; a user request is one call (count 1), "
                         "raise demand.rate_per_s instead");
    } else if (service_index(g, call.from) < 0) {
      throw InputError(where + ".from: '" + call.from +
                       "' is not a service; use one of services, "
                       "or user for the entry");
    }
    if (service_index(g, call.to) < 0)
      throw InputError(where + ".to: '" + call.to + "' is not a service");
    if (call.from == call.to) throw InputError(where + ": a service cannot call itself");
  }
  if (entries != 1)
    throw InputError("calls: " + std::to_string(entries) +
                     " calls from user; a graph has exactly one (its entry)");
}

// Depth-first from the entry: a service on the current path reached again is
// a cycle; every service must be reached.
void check_acyclic(const Graph& g) {
  std::vector<int> mark(g.services.size(), 0);  // 0 new, 1 on the path, 2 done
  std::function<void(int)> visit = [&](int v) {
    mark[v] = 1;
    for (const GraphCall& call : g.calls) {
      if (call.from != g.services[v].name) continue;
      int w = service_index(g, call.to);
      if (mark[w] == 1)
        throw InputError("calls: " + call.from + " -> " + call.to +
                         " closes a cycle; a graph of calls has none");
      if (mark[w] == 0) visit(w);
    }
    mark[v] = 2;
  };
  for (const GraphCall& call : g.calls)
    if (call.from == kUserCaller) visit(service_index(g, call.to));
  for (size_t v = 0; v < g.services.size(); ++v)
    if (mark[v] == 0)
      throw InputError("services." + g.services[v].name + ": no call reaches it from the entry");
}

}  // namespace

namespace {

// Attempts at each service per user request, each call making `attempts(call)`:
// a service's attempts flow down its calls once all that reach it are in, in
// the topological order of the calls (a path by path walk took time
// exponential in the graph's depth: a ladder of 30 diamonds never ended).
template <typename Attempts>
std::vector<double> attempts_per_request(const Scenario& s, Attempts attempts_of_call) {
  const Graph& g = s.graph;
  const size_t n = g.services.size();
  std::vector<double> at(n, 0);
  std::vector<int> waiting(n, 0);  // calls into a service not yet flowed
  std::vector<std::vector<size_t>> out(n);
  std::vector<size_t> ready;
  auto flow = [&](size_t c, double per_request) {
    const GraphCall& call = g.calls[c];
    int to = service_index(g, call.to);
    if (to < 0) return;
    at[to] = std::min(1e300, at[to] + per_request * call.count * attempts_of_call(call));
    if (--waiting[to] == 0) ready.push_back(static_cast<size_t>(to));
  };
  for (size_t c = 0; c < g.calls.size(); ++c) {
    int to = service_index(g, g.calls[c].to);
    if (to < 0) continue;
    ++waiting[to];
    int from = service_index(g, g.calls[c].from);
    if (from >= 0) out[static_cast<size_t>(from)].push_back(c);
  }
  for (size_t c = 0; c < g.calls.size(); ++c)
    if (g.calls[c].from == kUserCaller) flow(c, 1);
  while (!ready.empty()) {  // a cycle never gets ready (check_acyclic names it)
    size_t v = ready.back();
    ready.pop_back();
    for (size_t c : out[v]) flow(c, at[v]);
  }
  return at;
}

}  // namespace

std::vector<double> worst_case_attempts(const Scenario& s) {
  return attempts_per_request(
      s, [&](const GraphCall& call) { return edge_scenario(s, call).client.retries + 1.0; });
}

std::vector<double> calls_per_request(const Scenario& s) {
  return attempts_per_request(s, [](const GraphCall&) { return 1.0; });
}

double call_rate_per_s(const Scenario& s, const GraphCall& call,
                       const std::vector<double>& per_request) {
  const double callers = call.from == kUserCaller
                             ? 1
                             : per_request[static_cast<size_t>(service_index(s.graph, call.from))];
  return s.demand.rate_per_s * callers * call.count;
}

Scenario dependency_view(const Scenario& s) {
  int hit = incident_service(s);
  if (hit < 0) return s;
  const std::string& name = s.graph.services[static_cast<size_t>(hit)].name;
  Scenario view = service_scenario(s, s.graph.services[static_cast<size_t>(hit)]);
  for (const GraphCall& call : s.graph.calls)
    if (call.to == name) {
      view.client = edge_scenario(s, call).client;
      break;
    }
  return view;
}

void validate_graph(const Scenario& s, const RunLimits& limits) {
  const Graph& g = s.graph;
  constexpr size_t kMaxServices = 64, kMaxCalls = 256;
  if (g.services.size() > kMaxServices || g.calls.size() > kMaxCalls)
    throw InputError("services: " + std::to_string(g.services.size()) + " services and " +
                     std::to_string(g.calls.size()) + " calls; at most " +
                     std::to_string(kMaxServices) + " and " + std::to_string(kMaxCalls));
  if (g.services.empty()) throw InputError("calls: given without services");
  check_names(g);
  check_calls(g);
  check_acyclic(g);
  if (!s.incident.service.empty() && service_index(g, s.incident.service) < 0)
    throw InputError("incident.service: '" + s.incident.service + "' is not a service");
  if (int hit = service_index(g, s.incident.service);
      hit >= 0 && !g.services[static_cast<size_t>(hit)].serves())
    throw InputError("incident.service: '" + s.incident.service +
                     "' is a proxy (no capacity_per_s); the incident hits a service with a server");
  if (incident_service(s) < 0)
    throw InputError("services: none sets capacity_per_s; a graph needs a service with a server");
  for (size_t i = 0; i < g.calls.size(); ++i) {
    try {
      validate_step_keys(edge_scenario(s, g.calls[i]), limits);
    } catch (const InputError& e) {
      throw InputError("calls[" + std::to_string(i) + "] (" + g.calls[i].from + " -> " +
                       g.calls[i].to + "): " + e.what());
    }
  }
  std::vector<double> worst = worst_case_attempts(s);
  for (size_t v = 0; v < worst.size(); ++v)
    if (worst[v] > limits.max_attempts)
      throw InputError("services." + g.services[v].name + ": up to " + number_text(worst[v]) +
                       " attempts per user request when all fail (retries x count multiplied "
                       "along the paths); the limit is " +
                       number_text(limits.max_attempts));
}

}  // namespace retrystorm
