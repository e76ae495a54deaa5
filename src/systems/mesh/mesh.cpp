#include "systems/mesh/mesh.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "formats/input_text.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "systems/common.hpp"
#include "systems/mesh/destination_rules.hpp"
#include "systems/mesh/observed.hpp"
#include "systems/room.hpp"
#include "systems/traces/call_graph.hpp"
#include "text/ascii.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {

using nlohmann::json;

namespace {

// The fields of a call that are the graph's, not its client's.
const std::set<std::string> kCallFields = {
    "from", "to", "count", "optional", "propagate_deadline", "configs"};

// Where a system's retries sit on one call, outermost first: the caller's own
// client library, then the mesh's sidecar, then a proxy in between.
int layer_rank(System s) {
  switch (s) {
    case System::grpc:
    case System::aws:
    case System::retrystorm:
      return 0;
    case System::istio:
    case System::linkerd:
      return 1;
    default:
      return 2;
  }
}

// A configuration file with the layer it describes.
struct MeshFile {
  ConfigFile file;
  LayerPolicy layer;
  bool pinned = false;  // named by a call's `configs`: used only there
  bool used = false;
  bool replaced = false;    // a DestinationRule another of its name replaces (said)
  std::string not_given{};  // why Istio gives this DestinationRule to a caller of its host
};

// The client instances of each workload, by service name.
using Workloads = std::map<std::string, Instances>;

// The workloads of a YAML file (none for a file that is not YAML); whether
// the file is nothing else.
bool read_workloads(const ConfigFile& f, Workloads& out, std::vector<std::string>& warnings) {
  for (const SystemFacts& sys : system_table())
    if (const Room& r = room(sys.system); r.looks_like && r.looks_like(f.text)) return false;
  std::vector<YAML::Node> docs;
  try {
    docs = parse_documents(f.text, f.name);
  } catch (const InputError&) {
    return false;  // import_file says what is wrong with it, if it is a configuration
  }
  size_t workloads = 0;
  for (const YAML::Node& d : docs) {
    if (!is_workload(d)) continue;
    ++workloads;
    if (std::optional<Instances> i = read_workload(d, f.name, warnings); i && !i->workload.empty())
      out.emplace(service_of_host(i->workload), *i);
  }
  return !docs.empty() && workloads == docs.size();
}

// A file of several routing resources (two VirtualServices, for orders and
// for search; a VirtualService for orders and a DestinationRule for search)
// as one file per resource, each with the file's name and line numbers: each
// resource names its own destination (read as one file, the first of each
// kind was read for the first one's destination, and a DestinationRule gave
// its budget to another service's calls). Parts for one destination join
// again as its files do (import_configs). Every
// document but a workload (read_workloads read those from the whole file)
// becomes a part: a Service's retry annotations too.
std::vector<ConfigFile> per_resource(const ConfigFile& f) {
  static const std::set<std::string> kRouting = {"VirtualService", "DestinationRule",
                                                 "ServiceProfile", "HTTPRoute", "GRPCRoute"};
  const size_t first = f.text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || f.text[first] == '{') return {f};
  std::vector<ConfigFile> parts;
  int routing = 0;  // routing resources in the file
  for (const std::string& chunk : document_texts(f.text)) {
    try {
      YAML::Node d = YAML::Load(chunk);
      if (!d.IsMap() || is_workload(d)) continue;
      if (d["kind"] && d["kind"].IsScalar() && kRouting.count(d["kind"].Scalar())) ++routing;
      parts.push_back({f.name, chunk});
    } catch (const std::exception&) {
      return {f};  // the importer says what is wrong with it
    }
  }
  return routing > 1 ? parts : std::vector<ConfigFile>{f};
}

// One retry configuration (a file, or one resource of it): read for its
// destination, or listed as skipped with the reason. A file of a known system
// that cannot be read (a TCP-only route, a stream proxy) is skipped, not the
// whole mesh; a call that pins it still fails, naming it.
void read_mesh_file(const ConfigFile& f, std::vector<MeshFile>& read, MeshImport& out) {
  std::vector<std::string> ignored;  // import_configs says them again, per call
  try {
    detect_system(f);
  } catch (const InputError& e) {
    out.skipped.push_back(std::string(e.what()));
    return;
  }
  try {
    MeshFile m{f, import_file(f, ignored)};
    out.formats.push_back(f.name + ": " + m.layer.format +
                          (m.layer.host.empty() ? std::string(" (names no destination)")
                                                : " (destination " + m.layer.host + ")"));
    read.push_back(std::move(m));
  } catch (const InputError& e) {
    out.skipped.push_back(std::string(e.what()));
    out.unread.push_back(std::string(e.what()));
  }
}

// The files that are retry configuration, each read once for its destination;
// the others are listed in `skipped` with the reason.
std::vector<MeshFile> read_mesh_files(const std::vector<ConfigFile>& files, Workloads& workloads,
                                      MeshImport& out) {
  std::vector<MeshFile> read;
  for (const ConfigFile& f : files) {
    if (read_workloads(f, workloads, out.warnings)) {
      out.formats.push_back(f.name + ": Kubernetes workloads (client instances per caller)");
      continue;
    }
    for (const ConfigFile& part : per_resource(f)) read_mesh_file(part, read, out);
  }
  return read;
}

// The file a call's `configs` entry names: its path in the folder, or a
// base name only one file has. A file read per resource (per_resource) gives
// the parts whose destination is the call's callee, or all of them when none
// names it.
std::vector<MeshFile*> pinned_file(std::vector<MeshFile>& files, const std::string& name,
                                   const std::string& to, const std::string& where) {
  std::vector<MeshFile*> exact, by_base;
  std::set<std::string> base_files;
  for (MeshFile& f : files) {
    std::string base = f.file.name.substr(f.file.name.find_last_of('/') + 1);
    if (f.file.name == name) exact.push_back(&f);
    if (base == name) {
      by_base.push_back(&f);
      base_files.insert(f.file.name);
    }
  }
  std::vector<MeshFile*> hits = !exact.empty()           ? exact
                                : base_files.size() == 1 ? by_base
                                                         : std::vector<MeshFile*>{};
  if (!hits.empty()) {
    std::vector<MeshFile*> callee;
    for (MeshFile* f : hits)
      if (!f->layer.host.empty() && service_of_host(f->layer.host) == service_of_host(to))
        callee.push_back(f);
    return hits.size() > 1 && !callee.empty() ? callee : hits;
  }
  std::string names;
  for (size_t i = 0; i < files.size() && i < 8; ++i) names += (i ? ", " : "") + files[i].file.name;
  if (files.size() > 8) names += ", ...";
  throw InputError(where + ": '" + name + "' " +
                   (base_files.empty() ? "is not a retry configuration of the folder"
                                       : "is the name of several files; give its path") +
                   (names.empty() ? std::string() : " (they are: " + names + ")"));
}

// A call's own client keys in the calls file ("retries", "backoff": {...}),
// as client.* keys.
std::vector<ImportedKey> own_keys(const json& call, const std::string& where,
                                  const std::string& source) {
  std::vector<ImportedKey> keys;
  std::vector<std::pair<std::string, const json*>> todo;
  for (const auto& [key, value] : call.items())
    if (!kCallFields.count(key)) todo.emplace_back(key, &value);
  while (!todo.empty()) {
    auto [key, value] = todo.back();
    todo.pop_back();
    if (value->is_object()) {
      for (const auto& [k, v] : value->items()) todo.emplace_back(key + "." + k, &v);
      continue;
    }
    std::string path = "client." + key;
    KeyValue v = key_value_from_json(where + "." + key, *value);
    KeySettings checked;  // a key of a call's client, or InputError naming it
    add_call_key(checked, source + ": " + where, key, v);
    keys.push_back({path, v, source + ": " + where + "." + key + " (the calls file's own)"});
  }
  return keys;
}

// One hop's keys: the layer's, without what a graph's call does not take,
// the caller's instances for a per-instance budget, the calls file's own on top.
// Client guards a graph does not run (engines/graph/graph_engine.cpp refuses
// them on a call): a cluster's circuit breakers are read, said, and left out,
// so that the imported mesh runs.
bool guard_key(const std::string& path) {
  for (const char* prefix :
       {"client.breaker", "client.throttle", "client.max_requests", "client.max_connections"})
    if (path.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<ImportedKey> hop_keys(std::vector<ImportedKey> keys, const std::string& caller,
                                  const Workloads& workloads, const std::vector<ImportedKey>& own,
                                  std::vector<std::string>& warnings) {
  std::vector<ImportedKey> out;
  bool per_instance = false;  // a budget or a rate limiter, counted per caller instance
  for (ImportedKey& k : keys) {
    if (k.path == "client.layers" || k.path == "client.stack_retries" ||
        k.path == "client.budget.clients")
      continue;
    if (guard_key(k.path)) {
      warnings.push_back(k.from + ": " + k.path + " " + to_string(k.value) +
                         " left out: a graph of services does not run client-side breakers, "
                         "throttles or connection limits yet");
      continue;
    }
    // Hedging and AWS adaptive mode run per call; "none" is every call's default.
    if ((k.path == "client.hedging" || k.path == "client.rate_limiter") &&
        to_string(k.value) == "none")
      continue;
    if ((k.path == "client.budget.kind" || k.path == "client.rate_limiter") &&
        to_string(k.value) != "none")
      per_instance = true;
    out.push_back(std::move(k));
  }
  if (auto w = workloads.find(service_of_host(caller)); w != workloads.end() && per_instance)
    out.push_back({"client.budget.clients", w->second.count, w->second.from});
  for (const ImportedKey& k : own) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ImportedKey& e) { return e.path == k.path; });
    if (it == out.end())
      out.push_back(k);
    else
      *it = {k.path, k.value, k.from + ", over " + it->from};
  }
  std::sort(out.begin(), out.end(),
            [](const ImportedKey& a, const ImportedKey& b) { return a.path < b.path; });
  return out;
}

// A host a call inside the cluster can name: "orders", "orders.shop",
// "orders.shop.svc" or "orders.shop.svc.cluster.local" (Kubernetes' forms),
// not an outside name such as "api.stripe.com", whose first label only looks
// like a service's.
bool in_cluster_host(const std::string& host) {
  std::string h = host;
  if (size_t scheme = h.find("://"); scheme != std::string::npos) h = h.substr(scheme + 3);
  h = h.substr(0, h.find_first_of(":/"));
  std::vector<std::string> labels;
  for (size_t at = 0; at <= h.size();) {
    size_t dot = h.find('.', at);
    labels.push_back(h.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return labels.size() <= 2 || text::lower_ascii(labels[2]) == "svc";
}

// One sidecar, one proxy or one client library applies one policy to a call:
// of the files of one layer (Istio and Linkerd, say) that name the callee in
// several namespaces or twice, the first is read and the others are named in
// a warning (they were stacked as layers, multiplying the attempts). Files
// with only a budget (a DestinationRule) stay: they join their layer.
std::vector<MeshFile*> one_policy_per_rank(const std::vector<MeshFile*>& group,
                                           const std::string& where,
                                           std::vector<std::string>& warnings) {
  std::vector<MeshFile*> out;
  for (MeshFile* f : group) {
    auto same = std::find_if(out.begin(), out.end(), [&](const MeshFile* kept) {
      return kept->layer.has_retry_policy && f->layer.has_retry_policy &&
             layer_rank(kept->layer.system) == layer_rank(f->layer.system);
    });
    if (same == out.end()) {
      out.push_back(f);
      continue;
    }
    warnings.push_back(where + ": " + f->file.name + " (" + f->layer.host + ") and " +
                       (*same)->file.name + " (" + (*same)->layer.host +
                       ") both give this call's policy at one layer; " + (*same)->file.name +
                       " is read (name the right one with the call's `configs`)");
  }
  return out;
}

// A retrying layer that sets no per-attempt timeout and no deadline: its
// attempts wait as long as they take. The call gets the key's largest value
// (with where it came from) instead of the scenario's default 5 s, which lint
// read as a timeout the files never set.
void unbounded_attempts(const LayerPolicy& l, std::vector<ImportedKey>& keys) {
  if (!l.has_retry_policy || l.per_try_timeout_s) return;
  for (const ImportedKey& k : keys)
    if (k.path == "client.timeout_s") return;
  const double longest = key_or_throw("client.timeout_s").max;
  keys.push_back({"client.timeout_s", longest,
                  l.file +
                      ": no per-attempt timeout and no deadline, so an attempt waits as "
                      "long as it takes (the key's largest value, " +
                      number_text(longest) + " s)"});
}

// Of `group`, the files `weighed` picks, with the fates `fates_of` gives
// them: those merged into another count as used, those not given are dropped
// (why, for warn_unused), and the others stay.
std::vector<MeshFile*> given_of(
    const std::vector<MeshFile*>& group, const std::function<bool(const MeshFile&)>& weighed,
    const std::function<std::vector<RuleFate>(const std::vector<const ConfigFile*>&)>& fates_of) {
  std::vector<const ConfigFile*> weigh;
  std::vector<size_t> at;  // in `group`
  for (size_t i = 0; i < group.size(); ++i)
    if (weighed(*group[i])) {
      weigh.push_back(&group[i]->file);
      at.push_back(i);
    }
  if (weigh.empty()) return group;
  const std::vector<RuleFate> fates = fates_of(weigh);
  std::vector<bool> keep(group.size(), true);
  for (size_t r = 0; r < weigh.size(); ++r) {
    MeshFile& f = *group[at[r]];
    keep[at[r]] = fates[r].kind == RuleFate::kept;
    if (fates[r].kind == RuleFate::merged) f.used = true;
    if (fates[r].kind == RuleFate::not_given && f.not_given.empty()) f.not_given = fates[r].why;
  }
  std::vector<MeshFile*> out;
  for (size_t i = 0; i < group.size(); ++i)
    if (keep[i]) out.push_back(group[i]);
  return out;
}

// What the Istio lookups read of the folder.
struct IstioView {
  const MeshNamespaces& namespaces;
  const IstioFiles& parsed;
};

// Of a call's Istio VirtualServices that reach sidecars, the one its
// caller's sidecar takes (istio_virtual_services); the others are dropped.
std::vector<MeshFile*> route_given_to_caller(const std::vector<MeshFile*>& group, const json& call,
                                             const IstioView& istio, const std::string& where,
                                             std::vector<std::string>& warnings) {
  return given_of(
      group,
      [](const MeshFile& f) {
        return f.layer.system == System::istio && f.layer.has_retry_policy && !f.layer.gateway_only;
      },
      [&](const std::vector<const ConfigFile*>& routes) {
        return istio_virtual_services(routes, istio.namespaces, istio.parsed,
                                      call.value("from", ""), call.value("to", ""), where,
                                      warnings);
      });
}

// The files that give call `index`'s policy, outermost first: those it pins,
// else those that name its callee (call_hops keeps those its sidecar takes).
std::vector<MeshFile*> call_files(std::vector<MeshFile>& files, const json& call,
                                  const std::string& where, const IstioFiles& parsed) {
  std::vector<MeshFile*> group;
  if (call.contains("configs")) {
    const json& names = call["configs"];
    if (!names.is_array() || names.empty())
      throw InputError(where + ".configs: must be a list of file names");
    for (const json& n : names) {
      if (!n.is_string()) throw InputError(where + ".configs: must be a list of file names");
      for (MeshFile* f :
           pinned_file(files, n.get<std::string>(), call.value("to", ""), where + ".configs"))
        group.push_back(f);
    }
    return group;
  }
  std::string to = service_of_host(call.value("to", ""));
  // A gateway's rules (an Istio VirtualService without "mesh") are only the
  // entry's, whose requests come in through it, and come first there.
  const bool entry = call.value("from", "") == "user";
  // A wildcard DestinationRule ("*.svc.cluster.local") may be any callee's:
  // given_to_caller weighs it against the callee's own.
  for (MeshFile& f : files)
    if (!f.pinned && !f.replaced && !f.layer.host.empty() &&
        ((in_cluster_host(f.layer.host) && service_of_host(f.layer.host) == to &&
          (entry || !f.layer.gateway_only)) ||
         (f.layer.system == System::istio && f.layer.host[0] == '*' &&
          is_wildcard_destination_rule(f.file, parsed))))
      group.push_back(&f);
  std::stable_sort(group.begin(), group.end(), [](const MeshFile* a, const MeshFile* b) {
    const int ra = layer_rank(a->layer.system), rb = layer_rank(b->layer.system);
    return ra != rb ? ra < rb : a->layer.gateway_only && !b->layer.gateway_only;
  });
  return group;
}

// A name for the proxy between two layers of one call, not yet taken.
std::string proxy_name(const std::string& from, System inner, const json& services) {
  std::string base = (from == "user" ? std::string("client") : from) + "-" + system_name(inner);
  std::string name = base;
  for (int n = 2; services.contains(name); ++n) name = base + "-" + std::to_string(n);
  return name;
}

struct Hop {
  MeshCall call;
  json graph;  // from, to, count, optional, propagate_deadline
};

// Of a call's files, those its caller's sidecar applies: of the Istio
// DestinationRules, the one Istio gives a sidecar of the caller's namespace
// (destination_rules.hpp); a rule merged into it counts as used.
std::vector<MeshFile*> given_to_caller(const std::vector<MeshFile*>& group, const json& call,
                                       const IstioView& istio, const std::string& where,
                                       std::vector<std::string>& warnings) {
  std::vector<const ConfigFile*> routes;  // may tell the callee's namespace
  for (const MeshFile* f : group)
    if (f->layer.system == System::istio && f->layer.has_retry_policy) routes.push_back(&f->file);
  return given_of(
      group,
      [](const MeshFile& f) {
        return f.layer.system == System::istio && !f.layer.has_retry_policy;
      },
      [&](const std::vector<const ConfigFile*>& rules) {
        return istio_destination_rules(rules, istio.namespaces, istio.parsed,
                                       call.value("from", ""), call.value("to", ""), where,
                                       warnings, routes);
      });
}

// Call `index` of the calls file as hops: one per retrying layer, joined by
// proxies (a stack on one call multiplies as stacked layers do).
std::vector<Hop> call_hops(const json& call, size_t index, std::vector<MeshFile>& files,
                           const Workloads& workloads, const IstioView& istio, json& services,
                           MeshImport& out, const std::string& source) {
  std::string where = "calls[" + std::to_string(index) + "]";
  std::vector<MeshFile*> named = call_files(files, call, where, istio.parsed), group = named;
  if (!call.contains("configs"))  // pinned files are read as named
    group = one_policy_per_rank(route_given_to_caller(named, call, istio, where, out.warnings),
                                where, out.warnings);
  group = given_to_caller(group, call, istio, where, out.warnings);
  json graph = json::object();
  for (const auto& [key, value] : call.items())
    if (kCallFields.count(key) && key != "configs") graph[key] = value;
  std::string from = call.value("from", ""), to = call.value("to", "");
  std::vector<ImportedKey> own = own_keys(call, where, source);
  if (group.empty()) {
    MeshCall c{from,
               to,
               {},
               {},
               (std::all_of(named.begin(), named.end(),
                            [](const MeshFile* f) { return f->layer.host.rfind('*', 0) == 0; })
                    ? "no configuration file names " + to
                    : "Istio gives " + from + " none of the files that name " + to) +
                   ": the calls file's keys and the scenario's client block",
               {}};
    c.keys = hop_keys({}, from, workloads, own, out.warnings);
    return {{c, graph}};
  }
  std::vector<ConfigFile> texts;
  for (MeshFile* f : group) {
    f->used = true;
    texts.push_back(f->file);
  }
  ImportResult r = import_configs(texts, false);
  std::vector<const LayerPolicy*> retrying;
  for (const LayerPolicy& l : r.layers)
    if (l.has_retry_policy) retrying.push_back(&l);
  // A stack here becomes one call per layer: the stack's warning (one timeout
  // for all layers) does not apply.
  for (const std::string& w : r.warnings)
    if (retrying.size() <= 1 || w.rfind("stack of ", 0) != 0) out.warnings.push_back(w);
  if (retrying.size() <= 1) {
    MeshCall c{from, to, {}, {}, "", {}};
    for (const LayerPolicy& l : r.layers) {
      c.files.push_back(l.file);
      if (l.fault && !c.fault) c.fault = l.fault;
    }
    std::vector<ImportedKey> keys = r.keys;
    if (!retrying.empty()) unbounded_attempts(*retrying[0], keys);
    c.keys = hop_keys(keys, from, workloads, own, out.warnings);
    return {{c, graph}};
  }
  std::vector<Hop> hops;
  std::string caller = from;
  for (size_t k = 0; k < retrying.size(); ++k) {
    bool last = k + 1 == retrying.size();
    std::string callee = last ? to : proxy_name(from, retrying[k + 1]->system, services);
    if (!last) services[callee] = json::object();
    json g = k == 0 ? graph : json{{"from", caller}, {"to", callee}};
    g["from"] = caller;
    g["to"] = callee;
    if (k > 0 && graph.contains("propagate_deadline"))
      g["propagate_deadline"] = graph["propagate_deadline"];
    MeshCall c{caller,
               callee,
               {retrying[k]->file},
               {},
               "layer " + std::to_string(k + 1) + " of " + std::to_string(retrying.size()) +
                   " on " + from + " -> " + to,
               retrying[k]->fault};
    // A proxy between layers is the caller's own (its sidecar): its instances.
    std::vector<ImportedKey> keys = retrying[k]->keys;
    unbounded_attempts(*retrying[k], keys);
    c.keys =
        hop_keys(keys, from, workloads, k == 0 ? own : std::vector<ImportedKey>{}, out.warnings);
    hops.push_back({c, g});
    caller = callee;
  }
  return hops;
}

// The calls file as a JSON object with a list of calls.
json read_calls_document(const ConfigFile& calls, bool need_calls = true) {
  size_t first = calls.text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError(calls.name + ": the file is empty");
  json doc = calls.text[first] == '{' ? parse_json_text(calls.text, calls.name)
                                      : parse_yaml_text(calls.text, calls.name);
  if (doc.is_object() && !need_calls && !doc.contains("calls")) doc["calls"] = json::array();
  if (!doc.is_object() || !doc.contains("calls") || !doc["calls"].is_array() ||
      (need_calls && doc["calls"].empty()))
    throw InputError(
        calls.name +
        ": a calls file is a mapping with `calls`, a list of {from, to} (docs/graph.md, "
        "\"From the mesh's configuration\")");
  for (size_t i = 0; i < doc["calls"].size(); ++i) {
    const json& c = doc["calls"][i];
    std::string where = calls.name + ": calls[" + std::to_string(i) + "]";
    if (!c.is_object() || !c.contains("from") || !c.contains("to") || !c["from"].is_string() ||
        !c["to"].is_string())
      throw InputError(where + ": needs from and to, service names");
  }
  if (doc.contains("services") && !doc["services"].is_object())
    throw InputError(calls.name + ": services: must be a mapping of service names to their keys");
  return doc;
}

// Every service a call names, declared: one the calls file leaves out is a
// proxy, which the warning says.
void declare_services(json& doc, const std::string& source, std::vector<std::string>& warnings) {
  json& services = doc["services"];
  if (services.is_null()) services = json::object();
  for (const json& c : doc["calls"])
    for (const char* end : {"from", "to"}) {
      std::string name = c[end].get<std::string>();
      if (name == "user" || services.contains(name)) continue;
      services[name] = json::object();
      warnings.push_back(source + ": services." + name +
                         " is not declared, so it is a proxy (no server of its own); give "
                         "services." +
                         name + ".capacity_per_s to model its capacity");
    }
}

void warn_unused(const std::vector<MeshFile>& files, std::vector<std::string>& warnings) {
  for (const MeshFile& f : files) {
    if (f.used) continue;
    if (!f.not_given.empty()) {
      warnings.push_back(f.file.name + ": Istio gives it to no caller here: " + f.not_given +
                         "; not used");
      continue;
    }
    warnings.push_back(
        f.file.name +
        (f.layer.host.empty()
             ? std::string(": names no destination; give it in a call's `configs` to use it")
             : ": its destination " + f.layer.host + " is the callee of no call; not used"));
  }
}

// The incident of the first call whose route injects a fault: the fault on
// that call, before its retries (fault_on calls), unless the calls file's
// incident names a call of its own. Said in `out.incident`.
void fault_incident(json& doc, MeshImport& out, const std::string& source) {
  size_t index = 0;
  while (index < out.calls.size() && !out.calls[index].fault) ++index;
  if (index == out.calls.size()) return;
  for (size_t i = index + 1; i < out.calls.size(); ++i)
    if (out.calls[i].fault)
      out.warnings.push_back("calls[" + std::to_string(i) + "] (" + out.calls[i].from + " -> " +
                             out.calls[i].to +
                             "): its route's fault is left out; the incident "
                             "is the fault of calls[" +
                             std::to_string(index) + "]");
  json& incident = doc["incident"];
  if (incident.is_object() && incident.contains("call")) {
    out.warnings.push_back(source + ": incident.call is the calls file's own; the fault of calls[" +
                           std::to_string(index) + "]'s route is left out");
    return;
  }
  if (!incident.is_object()) incident = json::object();
  const MeshCall& c = out.calls[index];
  const RouteFault& f = *c.fault;
  std::string file = c.files.empty() ? source : c.files.front();
  auto put = [&](const std::string& key, const KeyValue& v, const std::string& from) {
    incident[key.substr(9)] = key_value_to_json(v);
    out.incident.push_back({key, v, from});
  };
  put("incident.call", static_cast<double>(index),
      "the call (" + c.from + " -> " + c.to + ") whose route injects the fault");
  put("incident.fault_on", std::string("calls"),
      file + ": the fault filter runs before the router, so the route's retries never see it");
  if (f.delay_s > 0 && f.delay_share > 0) {
    put("incident.delay_s", f.delay_s, f.from.at("incident.delay_s"));
    put("incident.delay_share", f.delay_share, f.from.at("incident.delay_share"));
  }
  if (f.abort_share > 0) {
    put("incident.abort_share", f.abort_share, f.from.at("incident.abort_share"));
    put("incident.abort_status", std::string(failure_class_name(f.abort_status)),
        f.from.at("incident.abort_status"));
  }
}

// The calls of the calls file and those of the graph: a call with a stack
// of retrying layers is one hop per layer, so the numbers differ after it.
struct HopNumbers {
  std::vector<size_t> first_hop;  // by the file's call (and one past the last)
  struct Hop {
    size_t call;  // the file's call
    size_t hops;  // how many hops it became
  };
  std::vector<Hop> user_call;  // by the graph's call

  // A message about the graph, with its calls[N] (and incident.call: N) as
  // the file numbers them; what the message quotes ('...') is left as it is.
  std::string user_text(const std::string& message) const {
    static const std::regex kCall(R"((calls\[|incident\.call: )(\d+)\]?)");
    std::string out;
    bool quoted = false;
    size_t from = 0;
    for (size_t to = 0; to <= message.size(); ++to) {
      if (to < message.size() && message[to] != '\'') continue;
      std::string part = message.substr(from, to - from);
      out += quoted ? part : renumbered(part, kCall);
      if (to < message.size()) out += '\'';
      quoted = !quoted;
      from = to + 1;
    }
    return out;
  }

 private:
  std::string renumbered(const std::string& text, const std::regex& call) const {
    std::string out;
    auto at = text.cbegin();
    for (std::sregex_iterator m(text.begin(), text.end(), call), end; m != end; ++m) {
      out.append(at, (*m)[0].first);
      out += user_call_text((*m)[1].str(), (*m)[2].str(), (*m)[0].str());
      at = (*m)[0].second;
    }
    out.append(at, text.cend());
    return out;
  }

  // "calls[" or "incident.call: " with the graph's number `digits`, as the
  // file numbers it (`whole` when it names no call of the graph).
  std::string user_call_text(const std::string& head, const std::string& digits,
                             const std::string& whole) const {
    size_t graph = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), graph);
    if (error != std::errc() || end != digits.data() + digits.size() || graph >= user_call.size())
      return whole;
    const Hop& h = user_call[graph];
    std::string hop = h.hops > 1 ? " (hop " + std::to_string(graph - first_hop[h.call] + 1) +
                                       " of " + std::to_string(h.hops) + ")"
                                 : "";
    if (head == "calls[") return "calls[" + std::to_string(h.call) + "]" + hop;
    return head + std::to_string(h.call) + hop;
  }
};

// The calls file's own `incident.call` numbers its calls: on the graph it
// names the hop the fault sits on. A fault on the attempts is on the wire to
// the callee (the last hop, the innermost layer's); a fault on the call is
// before any of its retries (the first hop, the caller's own client).
void own_incident_on_its_hop(json& doc, const HopNumbers& numbers, const std::string& source) {
  if (!doc.contains("incident") || !doc["incident"].is_object()) return;
  json& incident = doc["incident"];
  if (!incident.contains("call") || !incident["call"].is_number()) return;
  const double number = incident["call"].get<double>();
  // Not a whole number, or past any count: validation's message names it.
  if (number != std::floor(number) || !(std::abs(number) < 1e15)) return;
  const auto call = static_cast<long long>(number);
  const size_t calls = numbers.first_hop.size() - 1;
  if (call < 0) return;  // -1: no fault (validation refuses other negatives)
  if (static_cast<unsigned long long>(call) >= calls)
    throw InputError(source + ": incident.call: " + std::to_string(call) + " names no call; " +
                     (calls == 0
                          ? std::string("the file has none")
                          : "the file has calls[0] to calls[" + std::to_string(calls - 1) + "]"));
  const auto i = static_cast<size_t>(call);
  const bool on_calls = incident.value("fault_on", std::string("attempts")) == "calls";
  incident["call"] = on_calls ? numbers.first_hop[i] : numbers.first_hop[i + 1] - 1;
}

// What an imported graph is checked against: every rule of a scenario, but no
// limit on the attempts its retries multiply to. That is a cost a run is
// refused for (validate() again, when it runs), while a storm of 14,641
// attempts per request is what `lint --mesh` is there to report.
RunLimits import_limits() {
  RunLimits limits;
  limits.max_attempts = std::numeric_limits<int>::max();
  return limits;
}

// The scenario of the filled-in calls file. Without a step_s of its own, the
// coarsest of 0.1 s, 50 ms, 10 ms, 5 ms and 1 ms that every imported timeout
// is a whole number of (the files' durations are theirs, not ours). When none
// fits, the finest step's error says why (the first's was about steps).
Scenario scenario_with_step(json& doc) {
  if (doc.contains("step_s")) {
    Scenario s = scenario_from_json(doc);
    validate(s, import_limits());
    return s;
  }
  std::optional<InputError> last;
  for (double step : {0.1, 0.05, 0.01, 0.005, 0.001}) {
    doc["step_s"] = step;
    try {
      Scenario s = scenario_from_json(doc);
      validate(s, import_limits());
      return s;
    } catch (const InputError& e) {
      last = e;
    }
  }
  doc.erase("step_s");
  throw *last;
}

}  // namespace

std::string service_of_host(const std::string& host) {
  std::string h = host;
  if (size_t scheme = h.find("://"); scheme != std::string::npos) h = h.substr(scheme + 3);
  h = h.substr(0, h.find_first_of(".:/"));
  return text::lower_ascii(h);
}

namespace {

// Two Istio DestinationRules of one namespace and name are one object: the
// one read later in the folder's file order replaces the other (said).
void replace_same_named(std::vector<MeshFile>& read, const MeshNamespaces& namespaces,
                        const IstioFiles& parsed, std::vector<std::string>& warnings) {
  std::vector<const ConfigFile*> istio;
  std::vector<MeshFile*> at;
  for (MeshFile& f : read)
    if (f.layer.system == System::istio) {
      istio.push_back(&f.file);
      at.push_back(&f);
    }
  const std::vector<bool> replaced =
      replaced_destination_rules(istio, namespaces, parsed, warnings);
  for (size_t i = 0; i < at.size(); ++i)
    if (replaced[i]) at[i]->replaced = at[i]->used = true;  // said once, here
}

// The graph of a calls document (`source` names it in messages) with each
// call's policy from the files.
MeshImport import_graph(const std::vector<ConfigFile>& files, json doc, const std::string& source,
                        MeshImport out) {
  Workloads workloads;
  std::vector<MeshFile> read = read_mesh_files(files, workloads, out);
  const MeshNamespaces namespaces = read_namespaces(files);
  std::vector<const ConfigFile*> istio_files;  // parsed once: every call weighs them
  for (const MeshFile& f : read)
    if (f.layer.system == System::istio) istio_files.push_back(&f.file);
  const IstioFiles parsed(istio_files, namespaces.unnamed);
  const IstioView istio{namespaces, parsed};
  replace_same_named(read, namespaces, parsed, out.warnings);
  for (size_t i = 0; i < doc["calls"].size(); ++i)
    if (doc["calls"][i].contains("configs"))
      for (MeshFile* f :
           call_files(read, doc["calls"][i], "calls[" + std::to_string(i) + "]", parsed))
        f->pinned = true;
  declare_services(doc, source, out.warnings);
  json graph_calls = json::array();
  HopNumbers numbers;
  for (size_t i = 0; i < doc["calls"].size(); ++i) {
    std::vector<Hop> hops =
        call_hops(doc["calls"][i], i, read, workloads, istio, doc["services"], out, source);
    numbers.first_hop.push_back(graph_calls.size());
    for (Hop& h : hops) {
      json c = h.graph;
      json keys = keys_object(h.call.keys);
      if (keys.is_object() && keys.contains("client")) c.update(keys["client"]);
      numbers.user_call.push_back({i, hops.size()});
      graph_calls.push_back(c);
      out.calls.push_back(std::move(h.call));
    }
  }
  numbers.first_hop.push_back(graph_calls.size());
  doc["calls"] = graph_calls;
  if (!doc.contains("engine")) doc["engine"] = "agent";  // a graph runs on the agent engine
  own_incident_on_its_hop(doc, numbers, source);
  const size_t said = out.warnings.size();
  fault_incident(doc, out, source);
  for (size_t w = said; w < out.warnings.size(); ++w)
    out.warnings[w] = numbers.user_text(out.warnings[w]);
  warn_unused(read, out.warnings);
  try {
    out.scenario = scenario_with_step(doc);
  } catch (const InputError& e) {
    throw InputError(source + " with the imported policies: " + numbers.user_text(e.what()));
  }
  out.document = doc;
  return out;
}

}  // namespace

MeshImport import_mesh(const std::vector<ConfigFile>& files, const ConfigFile& calls) {
  MeshImport out;
  out.graph_from = calls.name +
                   ": a calls file (routing configuration says how a call retries, not which "
                   "service calls which)";
  return import_graph(files, read_calls_document(calls), calls.name, std::move(out));
}

namespace {

// The graph of observed calls (`seen`, read from `source`, which `kind`
// describes), a calls file's keys over it.
MeshImport import_seen(const std::vector<ConfigFile>& files, const ObservedCalls& seen,
                       const std::string& source, const std::string& kind,
                       const std::optional<ConfigFile>& calls) {
  MeshImport out;
  std::optional<json> given;
  if (calls) given = read_calls_document(*calls, false);
  json doc = calls_from_observed(seen, given ? &*given : nullptr, source, out.warnings);
  out.graph_from = source + ": " + kind + seen.labels +
                   " (a call's count is its rate over its caller's)" +
                   (calls ? "; " + calls->name + "'s keys over them" : std::string());
  return import_graph(files, std::move(doc), calls ? calls->name : source, std::move(out));
}

}  // namespace

MeshImport import_mesh_observed(const std::vector<ConfigFile>& files, const ConfigFile& metrics,
                                const std::optional<ConfigFile>& calls) {
  return import_seen(files, read_observed_calls(metrics.text, metrics.name), metrics.name,
                     "a Prometheus answer, the request rates by ", calls);
}

MeshImport import_mesh_traced(const std::vector<ConfigFile>& files, const ConfigFile& traces,
                              const std::optional<ConfigFile>& calls) {
  ObservedCalls seen = read_traced_calls(traces.text, traces.name);
  MeshImport out = import_seen(files, seen, traces.name, "traces, the calls between the ", calls);
  // Traces are sampled: their rates are the sampled requests' own.
  json given = calls ? read_calls_document(*calls, false) : json::object();
  bool demand_given = given.contains("demand") && given["demand"].is_object() &&
                      given["demand"].contains("rate_per_s");
  if (!demand_given)
    out.warnings.push_back(traces.name +
                           ": demand.rate_per_s is the rate of the traced requests, which sampling "
                           "lowers; give the real rate in a calls file's demand");
  return out;
}

std::string mesh_text(const MeshImport& m) {
  std::ostringstream o;
  o << "# the call graph: " << m.graph_from << "\n";
  o << "# " << m.formats.size() << (m.formats.size() == 1 ? " file" : " files") << " read:\n";
  for (const std::string& f : m.formats) o << "#   " << f << "\n";
  for (const std::string& s : m.skipped) o << "# skipped: " << s << "\n";
  for (size_t i = 0; i < m.calls.size(); ++i) {
    const MeshCall& c = m.calls[i];
    std::string name = "calls[" + std::to_string(i) + "]";
    o << "\n" << name << ": " << c.from << " -> " << c.to;
    std::string files;
    for (const std::string& f : c.files) files += (files.empty() ? "" : ", ") + f;
    if (!files.empty()) o << " (" << files << ")";
    if (!c.note.empty()) o << "; " << c.note;
    o << "\n";
    // A call's client.* key under the call's name; a scenario key (the
    // engine an outlier detection needs) as it is.
    auto line_of = [&](const ImportedKey& k) {
      const bool client = k.path.rfind("client.", 0) == 0;
      return (client ? name + k.path.substr(6) : k.path) + " = " + to_string(k.value);
    };
    size_t width = 0;
    for (const ImportedKey& k : c.keys) width = std::max(width, line_of(k).size());
    for (const ImportedKey& k : c.keys) {
      std::string line = line_of(k);
      o << line << std::string(width - line.size() + 2, ' ') << "# " << k.from << "\n";
    }
  }
  if (!m.incident.empty()) {
    o << "\nthe incident: a fault on a call, for incident.duration_s from incident.start_s\n";
    size_t width = 0;
    for (const ImportedKey& k : m.incident)
      width = std::max(width, k.path.size() + 3 + to_string(k.value).size());
    for (const ImportedKey& k : m.incident) {
      std::string line = k.path + " = " + to_string(k.value);
      o << line << std::string(width - line.size() + 2, ' ') << "# " << k.from << "\n";
    }
  }
  return o.str();
}

}  // namespace retrystorm::configs
