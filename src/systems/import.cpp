#include "systems/import.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>

#include "systems/readers.hpp"
#include "systems/room.hpp"

namespace retrystorm::configs {

using nlohmann::json;

namespace {

// Bounded walk: aliases can make a small YAML file a very large tree.
bool contains_key(const YAML::Node& n, std::initializer_list<const char*> keys, int depth,
                  int& budget) {
  if (depth > 40 || --budget < 0) return false;
  if (n.IsMap()) {
    for (const auto& kv : n) {
      std::string k = key_of(kv.first);
      for (const char* want : keys)
        if (k == want || snake_case(k) == want) return true;
      if (contains_key(kv.second, keys, depth + 1, budget)) return true;
    }
  } else if (n.IsSequence()) {
    for (const auto& v : n)
      if (contains_key(v, keys, depth + 1, budget)) return true;
  }
  return false;
}

System system_of_doc(const YAML::Node& d, const std::string& file, int index) {
  Where w{file, "", line_of(d)};
  if (!d.IsMap()) fail(w, "expected a mapping at the top of document " + std::to_string(index + 1));
  if (d["kind"] && d["kind"].IsScalar()) {
    std::string kind = d["kind"].Scalar();
    if (kind == "retrystorm-policy") return System::retrystorm;
    if (kind == "VirtualService" || kind == "DestinationRule") return System::istio;
    // Linkerd reads a Gateway API route's rules[].timeouts.request too
    // (docs/configs.md): a route without retry annotations does not retry.
    if (kind == "ServiceProfile" || kind == "HTTPRoute" || kind == "GRPCRoute")
      return System::linkerd;
    const YAML::Node ann =
        d["metadata"] && d["metadata"].IsMap() ? d["metadata"]["annotations"] : missing();
    if (ann && ann.IsMap())
      for (const auto& kv : ann) {
        std::string k = key_of(kv.first);
        if (k.rfind("retry.linkerd.io/", 0) == 0 || k.rfind("timeout.linkerd.io/", 0) == 0)
          return System::linkerd;
      }
    fail(at(file, "kind", d["kind"]),
         "'" + kind +
             "' carries no retry settings we read; expected VirtualService, DestinationRule, "
             "ServiceProfile, HTTPRoute, GRPCRoute, a resource with retry.linkerd.io/ "
             "annotations, or retrystorm-policy (a Deployment or StatefulSet may sit beside "
             "them: its replicas are the client instances)");
  }
  int budget = 20000;
  if (contains_key(d, {"method_config", "retry_throttling", "load_balancing_config"}, 0, budget))
    return System::grpc;
  budget = 20000;
  if (contains_key(d,
                   {"retry_policy", "circuit_breakers", "num_retries", "per_try_timeout",
                    "retry_budget", "virtual_hosts", "routes", "route", "clusters",
                    "static_resources", "route_config", "retry_back_off"},
                   0, budget))
    return System::envoy;
  fail(w,
       "cannot tell the format: expected an Envoy route/cluster (retry_policy, "
       "circuit_breakers), a gRPC service config (methodConfig), an Istio or Linkerd resource "
       "(kind), an AWS config profile ([default], max_attempts), an HAProxy section (backend, "
       "listen, defaults), an nginx block (location, upstream, server) or kind: "
       "retrystorm-policy");
}

std::string value_text(const KeyValue& v) {
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "true" : "false";
  if (std::holds_alternative<double>(v)) return number_text(std::get<double>(v));
  const std::string& t = std::get<std::string>(v);
  return t.empty() ? "\"\"" : t;
}

// Table order, so the output reads like the scenario.
size_t key_rank(const std::string& path) {
  const auto& table = scenario_keys();
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].path == path) return i;
  return table.size();
}

void sort_keys(std::vector<ImportedKey>& keys) {
  std::stable_sort(keys.begin(), keys.end(), [](const ImportedKey& a, const ImportedKey& b) {
    return key_rank(a.path) < key_rank(b.path);
  });
}

}  // namespace

std::string key_of(const YAML::Node& k) {
  return k.IsScalar() ? k.Scalar() : std::string("?");
}

YAML::Node proto_field(const YAML::Node& map, const std::string& snake) {
  if (!map.IsMap()) return missing();
  for (const auto& kv : map)
    if (snake_case(key_of(kv.first)) == snake) return kv.second;
  return missing();
}

void Reader::check_fields(const YAML::Node& map, const std::string& key,
                          std::initializer_list<const char*> known, bool snake) const {
  if (!map.IsMap()) return;
  for (const auto& kv : map) {
    std::string k = key_of(kv.first);
    std::string cmp = snake ? snake_case(k) : k;
    if (cmp == "_comment" || cmp == "__comment") continue;  // our own notes in JSON
    bool ok = false;
    for (const char* want : known) ok = ok || cmp == want;
    if (!ok) unknown_field(key, k, kv.first, known);
  }
}

void Reader::unknown_field(const std::string& key, const std::string& k, const YAML::Node& at_node,
                           std::initializer_list<const char*> known) const {
  std::string list;
  for (const char* want : known) list += (list.empty() ? "" : ", ") + std::string(want);
  warn(at(file, key.empty() ? k : key + "." + k, at_node),
       "unknown field, ignored (known here: " + list + ")");
}

namespace {

// "999 retries (1000 attempts per request)", or as a file that counts
// attempts says it: "1000 attempts per request (999 retries)".
std::string retries_text(long long retries, Counted counted) {
  const std::string n = std::to_string(retries) + " retries";
  const std::string a = std::to_string(retries + 1) + " attempts per request";
  return counted == Counted::attempts ? a + " (" + n + ")" : n + " (" + a + ")";
}

}  // namespace

int model_retry_cap() {
  return static_cast<int>(key_or_throw("client.retries").max);
}

int model_retries(long long retries, const Where& w, const Reader& r, Counted counted) {
  const long long cap = model_retry_cap();
  if (retries <= cap) return static_cast<int>(retries);
  r.layer.uncapped_retries = retries;
  const bool attempts = counted == Counted::attempts;
  const std::string most =
      attempts ? std::to_string(cap + 1) + " attempts (" + std::to_string(cap) + " retries)"
               : std::to_string(cap) + " retries";
  r.warn(w, retries_text(retries, counted) + " is more than the model runs: at most " + most +
                " per layer, so this layer is imported with " +
                (attempts ? std::to_string(cap + 1) + " attempts" : std::to_string(cap)) +
                ". A request that keeps failing makes " + std::to_string(cap + 1) +
                " attempts in the simulation, not " + std::to_string(retries + 1) +
                ": the retry load an incident shows is a floor of the real one");
  r.layer.from["client.retries"] +=
      ", read as the model's most: " + std::to_string(cap) + " retries";
  return static_cast<int>(cap);
}

void LayerPolicy::set_budget(const std::string& name, double value) {
  Scenario s;
  s.client.budget = budget;
  key_or_throw("client.budget." + name).put(s, value);
  budget = s.client.budget;
  if (std::find(budget_given.begin(), budget_given.end(), name) == budget_given.end())
    budget_given.push_back(name);
}

BudgetPart LayerPolicy::budget_part() const {
  BudgetPart p{budget, budget_given, budget_from, {}};
  for (const auto& [path, src] : from)
    if (path.rfind("client.budget.", 0) == 0) p.from[path] = src;
  return p;
}

void LayerPolicy::take_budget(const LayerPolicy& file) {
  auto it = destination.empty() ? file.destination_budgets.end()
                                : file.destination_budgets.find(destination);
  BudgetPart p = it != file.destination_budgets.end() ? it->second : file.budget_part();
  budget = p.budget;
  budget_given = p.given;
  budget_from = p.budget_from;
  for (const auto& [path, src] : p.from) from[path] = src;
}

void LayerPolicy::clear_budget() {
  budget = Budget{};
  budget_given.clear();
}

void LayerPolicy::finalize() {
  keys.clear();
  // The typed fields go through the key table, which names their values.
  Scenario s;
  s.client.backoff = backoff;
  s.client.budget = budget;
  auto put = [&](const std::string& path, const KeyValue& v) {
    auto it = from.find(path);
    keys.push_back({path, v, it == from.end() ? file : it->second});
  };
  auto put_key = [&](const std::string& path) { put(path, key_or_throw(path).get(s)); };
  if (has_retry_policy) {
    put("client.retries", static_cast<double>(retries));
    if (per_try_timeout_s) put("client.timeout_s", *per_try_timeout_s);
    if (deadline_s) put("client.deadline_s", *deadline_s);
    put("client.retry_on_timeout", retry_on_timeout);
    put("client.retry_on", answer_set_text(retried_answers));
    if (hedges())  // only where the layer hedges
      put("client.hedging", std::string(kHedgingNames[static_cast<int>(hedging)]));
    if (rate_limiter == RateLimiter::aws_adaptive)
      put("client.rate_limiter", std::string("aws_adaptive"));
    for (const char* k : {"base_s", "multiplier", "cap_s", "jitter"})
      put_key(std::string("client.backoff.") + k);
    if (pushback != Pushback::ignore) {  // only where the system reads a pushback
      s.client.pushback = pushback;
      s.client.pushback_max_s = pushback_max_s;
      put_key("client.pushback");
      if (pushback == Pushback::envoy) put_key("client.pushback_max_s");
    }
  }
  for (const auto& [path, v] : extra) put(path, v);
  if (has_retry_policy || has_budget_part) {
    put_key("client.budget.kind");
    std::vector<std::string> given = budget_given;
    std::sort(given.begin(), given.end());  // as before: by name, then table order
    for (const auto& name : given) put_key("client.budget." + name);
  }
}

ClientPolicy LayerPolicy::policy() const {
  ClientPolicy::Settings p;
  p.layer_retries = {retries};
  if (per_try_timeout_s) p.timeout_s = *per_try_timeout_s;
  p.layer_timeouts_s = {p.timeout_s};
  p.deadline_s = deadline_s.value_or(0);
  p.retry_on_timeout = retry_on_timeout;
  p.retried_answers = retried_answers;
  p.pushback = pushback;
  p.pushback_max_s = pushback_max_s;
  p.backoff = backoff;
  p.budget = budget;
  if (hedges()) p.layer_hedging = {hedging};
  p.rate_limiter = rate_limiter;
  return ClientPolicy(std::move(p));
}

std::vector<DelayRange> LayerPolicy::ladder() const {
  if (ladder_s.empty()) return policy().ladder(0);
  std::vector<DelayRange> out;
  for (double d : ladder_s) out.push_back({d, d});
  return out;
}

bool key_applies(const Scenario& s, const std::string& path) {
  const KeySpec& k = key_or_throw(path);
  if (k.when_path.empty()) return true;
  if (k.when_present) return !s.graph.empty();  // when_path "services"
  // The value as text, as the page reads it: a choice's name, a number's digits.
  const std::string value = to_string(key_or_throw(k.when_path).get(s));
  return key_applies(s, k.when_path) &&
         std::find(k.when_values.begin(), k.when_values.end(), value) != k.when_values.end();
}

ImportResult import_scenario(const Scenario& s, const std::string& source) {
  ClientPolicy p = ClientPolicy::of(s);
  ImportResult out;
  const std::string file = source + " (client policy)";
  const bool timeouts = key_applies(s, "client.timeout_s");  // not the session model's
  const bool per_layer = key_applies(s, "client.layer_timeouts_s");
  const bool budget = key_applies(s, "client.budget.kind");
  for (int i = 0; i < p.layers(); ++i) {
    LayerPolicy l;
    l.file = p.layers() > 1 ? file + " layer " + std::to_string(i + 1) : file;
    l.format = "scenario client policy";
    l.system = System::retrystorm;
    l.has_retry_policy = true;
    l.has_budget_part = l.budget_modelled = budget;
    l.retries = p.retries(i);
    l.counting = "retries";
    l.as_written = l.retries;
    l.count_field = "client.retries";
    if (timeouts)
      l.per_try_timeout_s =
          per_layer ? p.layer_timeouts_s().at(static_cast<size_t>(i)) : p.timeout_s();
    l.deadline_s = p.deadline_s();
    l.retry_on_timeout = p.retry_on_timeout();
    l.retried_answers = p.retried_answers();
    l.deadline_aware = key_applies(s, "sessions.deadline_aware") && s.sessions.deadline_aware;
    l.backoff = p.backoff();
    if (budget) l.budget = p.budget();
    l.budget_from = source + ": client.budget.kind = " + budget_kind_name(l.budget.kind);
    out.layers.push_back(std::move(l));
  }
  out.formats.push_back(file + ": " + out.layers.front().format);
  for (const auto& k : scenario_keys())
    if (k.path.rfind("client.", 0) == 0 && key_applies(s, k.path))
      out.keys.push_back({k.path, k.get(s), source + ": " + k.path});
  return out;
}

std::string jitter_name(Jitter j) {
  Scenario s;
  s.client.backoff.jitter = j;
  return std::get<std::string>(key_or_throw("client.backoff.jitter").get(s));
}

std::string budget_kind_name(BudgetKind k) {
  Scenario s;
  s.client.budget.kind = k;
  return std::get<std::string>(key_or_throw("client.budget.kind").get(s));
}

System detect_system(const ConfigFile& f) {
  // The formats with tokenizers of their own first: they are not YAML.
  for (const SystemFacts& sys : system_table()) {
    const Room& r = room(sys.system);
    if (r.looks_like && r.looks_like(f.text)) return sys.system;
  }
  auto docs = parse_documents(f.text, f.name);
  if (docs.empty()) fail({f.name, "", 0}, "empty: no settings to import");
  std::optional<System> system;
  std::optional<InputError> bystander;  // the first resource that carries no retry settings
  for (size_t i = 0; i < docs.size(); ++i) {
    if (is_workload(docs[i])) continue;  // how many clients run, read beside the system
    System s;
    try {
      s = system_of_doc(docs[i], f.name, static_cast<int>(i));
    } catch (const InputError& e) {
      // A Kubernetes resource of another kind (a Service bundled with its
      // VirtualService) sits beside the retry settings; alone, it is refused.
      if (!docs[i].IsMap() || !docs[i]["kind"] || !docs[i]["kind"].IsScalar()) throw;
      if (!bystander) bystander = e;
      continue;
    }
    if (system && s != *system)
      fail({f.name, "", line_of(docs[i])}, "mixes " + std::string(system_label(*system)) + " and " +
                                               system_label(s) +
                                               " documents; give one system per file");
    system = s;
  }
  if (!system && bystander) throw *bystander;
  if (!system)
    fail({f.name, "", 0},
         "only Kubernetes workloads: they say how many client instances run, not how they "
         "retry; give the file beside a retry configuration");
  return *system;
}

namespace {

System forced_system(const ConfigFile& f, std::string_view name) {
  if (std::optional<System> s = system_named(name)) return *s;
  std::string names;
  for (const SystemFacts& sys : system_table())
    names += (names.empty() ? "" : ", ") + std::string(sys.name);
  throw InputError(f.name + ": unknown format '" + std::string(name) + "'; choose " + names);
}

}  // namespace

LayerPolicy import_file(const ConfigFile& f, std::vector<std::string>& warnings,
                        std::string_view forced) {
  System system = forced.empty() ? detect_system(f) : forced_system(f, forced);
  LayerPolicy layer;
  layer.file = f.name;
  layer.system = system;
  Reader r{f.name, warnings, layer};
  const Room& reader = room(system);
  if (reader.read_text) {
    reader.read_text(f.text, r);
  } else {
    // Kubernetes resources come with their merge keys expanded (common.hpp).
    auto docs = parse_documents(f.text, f.name, &warnings);
    if (docs.empty()) fail({f.name, "", 0}, "empty: no settings to import");
    layer.instances = take_workloads(docs, f.name, warnings);
    try {
      reader.read_documents(docs, r);
    } catch (const YAML::Exception& e) {
      fail({f.name, "", e.mark.is_null() ? 0 : e.mark.line + 1}, e.msg);
    }
  }
  layer.finalize();
  return layer;
}

namespace {

// Budget-only files (an Envoy cluster, an Istio DestinationRule) belong to
// the layer of the same system before them, else the one after them: the
// layers with those merged in.
std::vector<LayerPolicy> merge_budget_files(std::vector<LayerPolicy>& read,
                                            std::vector<std::string>& warnings) {
  std::vector<LayerPolicy> layers;
  std::vector<bool> merged(read.size(), false);
  const bool any_retrying = std::any_of(read.begin(), read.end(),
                                        [](const LayerPolicy& l) { return l.has_retry_policy; });
  for (size_t i = 0; i < read.size(); ++i) {
    if (read[i].has_retry_policy) continue;
    std::optional<size_t> target;
    for (size_t j = i; j-- > 0;)
      if (read[j].has_retry_policy && read[j].system == read[i].system && !merged[j]) {
        target = j;
        break;
      }
    if (!target)
      for (size_t j = i + 1; j < read.size(); ++j)
        if (read[j].has_retry_policy && read[j].system == read[i].system) {
          target = j;
          break;
        }
    if (!target && any_retrying && read[i].has_budget_part) {
      // Its budget belongs to a retrying layer of its own system, and none
      // is here: left out, or it would land on another system's layer. Its
      // other keys (outlier detection, connection limits) stay.
      const std::string system = facts(read[i].system).label;
      warnings.push_back(read[i].file + ": its retry budget bounds " + system +
                         "'s retries, and no file here sets " + system +
                         "'s retries; the budget is not read (the file's other keys are)");
      read[i].clear_budget();
      read[i].has_budget_part = false;
      read[i].finalize();
      continue;
    }
    if (!target) continue;
    LayerPolicy& t = read[*target];
    t.take_budget(read[i]);
    // The budget file's other keys come along (a DestinationRule's outlier
    // detection): the retrying layer's own value of a key wins.
    for (const auto& [path, value] : read[i].extra)
      if (t.extra.emplace(path, value).second) {
        auto src = read[i].from.find(path);
        if (src != read[i].from.end()) t.from[path] = src->second;
      }
    t.has_budget_part = true;
    t.file += ", " + read[i].file;
    t.format += " + " + read[i].format;
    for (const auto& n : read[i].notes) t.notes.push_back(n);
    t.finalize();
    merged[i] = true;
  }
  for (size_t i = 0; i < read.size(); ++i)
    if (!merged[i]) layers.push_back(read[i]);
  return layers;
}

// One retrying layer (or none): its keys, and one layer with no stack.
void add_single_layer_keys(ImportResult& out, const std::vector<const LayerPolicy*>& retrying) {
  for (const auto& l : out.layers)
    for (const auto& k : l.keys) {
      auto it = std::find_if(out.keys.begin(), out.keys.end(),
                             [&](const ImportedKey& e) { return e.path == k.path; });
      if (it == out.keys.end())
        out.keys.push_back(k);
      else if (l.has_retry_policy)
        *it = k;  // the retrying layer's own value wins over a lone budget file
    }
  if (retrying.size() == 1) {
    bool has_layers = std::any_of(out.keys.begin(), out.keys.end(),
                                  [](const ImportedKey& k) { return k.path == "client.layers"; });
    if (!has_layers)
      out.keys.push_back({"client.layers", 1.0, "one retrying layer (" + retrying[0]->file + ")"});
    bool has_stack = std::any_of(out.keys.begin(), out.keys.end(), [](const ImportedKey& k) {
      return k.path == "client.stack_retries";
    });
    if (!has_stack && find_key("client.stack_retries"))
      out.keys.push_back({"client.stack_retries", std::string(), "one layer: no stack"});
  }
}

// A stack's budget: the innermost layer with one, else the innermost layer's
// "none". The warning says where the shared settings come from.
void add_stack_budget_keys(ImportResult& out, const std::vector<const LayerPolicy*>& retrying) {
  const LayerPolicy& inner = *retrying.back();
  const LayerPolicy* with_budget = nullptr;
  for (auto it = retrying.rbegin(); it != retrying.rend(); ++it)
    if ((*it)->budget.kind != BudgetKind::none) {
      with_budget = *it;
      break;
    }
  const LayerPolicy& b = with_budget ? *with_budget : inner;
  for (const auto& k : b.keys)
    if (k.path.rfind("client.budget.", 0) == 0)
      out.keys.push_back(
          {k.path, k.value,
           (with_budget ? "the innermost layer with a budget: " : "no layer has a budget: ") +
               k.from});
  out.warnings.push_back(
      "stack of " + std::to_string(retrying.size()) +
      " layers: the model gives every layer one timeout, backoff and budget; they are taken "
      "from the innermost layer (" +
      inner.file + ")" +
      (with_budget && with_budget != &inner ? " and its budget from " + with_budget->file
                                            : std::string()));
}

// client.hedging of a stack where a layer hedges: how each layer hedges.
void add_stack_hedging_key(ImportResult& out, const std::vector<const LayerPolicy*>& retrying) {
  std::string list, names;
  for (const auto* l : retrying) {
    list += std::string(list.empty() ? "" : ",") + kHedgingNames[static_cast<int>(l->hedging)];
    if (l->hedges()) names += (names.empty() ? "" : ", ") + l->file;
  }
  if (!names.empty())
    out.keys.push_back({"client.hedging", list, "hedging layers, outermost first: " + names});
}

// Stacked layers, outermost first: the attempts multiply; timeout, backoff
// and budget are one per model, taken from the innermost layer.
void add_stack_keys(ImportResult& out, const std::vector<const LayerPolicy*>& retrying) {
  const LayerPolicy& inner = *retrying.back();
  std::string names;
  std::string stack;
  bool same = true;
  for (const auto* l : retrying) {
    names += (names.empty() ? "" : ", ") + l->file;
    stack += (stack.empty() ? "" : ",") + std::to_string(l->retries);
    same = same && l->retries == retrying.front()->retries;
  }
  std::string layers_from = std::to_string(retrying.size()) +
                            " retrying layers, outermost first: " + names + "; attempts multiply";
  out.keys.push_back({"client.layers", static_cast<double>(retrying.size()), layers_from});
  out.keys.push_back({"client.retries", static_cast<double>(inner.retries),
                      same ? "every layer: " + inner.from.at("client.retries")
                           : "innermost layer: " + inner.from.at("client.retries")});
  out.keys.push_back({"client.stack_retries", same ? std::string() : stack,
                      same ? "every layer retries the same number of times"
                           : "retries per layer, outermost first (" + names + ")"});
  add_stack_hedging_key(out, retrying);
  for (const auto& k : inner.keys) {
    if (k.path == "client.retries" || k.path == "client.deadline_s" || k.path == "client.hedging" ||
        k.path.rfind("client.budget.", 0) == 0)
      continue;
    out.keys.push_back({k.path, k.value, "innermost layer: " + k.from});
  }
  for (const auto* l : retrying) {
    auto it = std::find_if(l->keys.begin(), l->keys.end(),
                           [](const ImportedKey& k) { return k.path == "client.deadline_s"; });
    if (it != l->keys.end()) {
      out.keys.push_back({it->path, it->value,
                          (l == retrying.front() ? "outermost layer: "
                                                 : "layer of the user's "
                                                   "deadline: ") +
                              it->from});
      break;
    }
  }
  add_stack_budget_keys(out, retrying);
}

// A YAML file of Kubernetes workloads only (Deployment, ...): its documents;
// nullopt for anything else, which import_file reads (and refuses). What the
// merge keys' expansion says goes to `warnings` only for such a file
// (import_file says it for the others).
std::optional<std::vector<YAML::Node>> workload_documents(const ConfigFile& f,
                                                          std::vector<std::string>& warnings) {
  for (const SystemFacts& sys : system_table()) {
    const Room& r = room(sys.system);
    if (r.looks_like && r.looks_like(f.text)) return std::nullopt;
  }
  std::vector<YAML::Node> docs;
  std::vector<std::string> said;
  try {
    docs = parse_documents(f.text, f.name, &said);
  } catch (const InputError&) {
    return std::nullopt;  // import_file says what is wrong with it
  }
  if (docs.empty() || !std::all_of(docs.begin(), docs.end(), is_workload)) return std::nullopt;
  warnings.insert(warnings.end(), said.begin(), said.end());
  return docs;
}

// The instances of the first workload; a different count in another file is
// a warning (one client population).
void add_instances(ImportResult& out, const std::vector<Instances>& found) {
  if (found.empty()) return;
  out.instances = found.front();
  for (size_t i = 1; i < found.size(); ++i)
    if (found[i].count != found.front().count)
      out.warnings.push_back(found[i].from +
                             ": another workload; the model has one population "
                             "of clients and keeps " +
                             number_text(found.front().count) + " from " + found.front().from);
}

}  // namespace

namespace {

// Envoy's max_requests, connection pool, adaptive concurrency filter and
// outlier detection count single attempts, and hosts take single attempts:
// the agent engine runs them, so the import says so.
void add_engine_for_extras(ImportResult& out) {
  for (const ImportedKey& k : out.keys)
    if (k.path == "server.adaptive_concurrency" || k.path == "client.max_requests" ||
        k.path == "client.max_connections" || k.path == "client.outlier_5xx" ||
        k.path == "server.hosts") {
      out.keys.push_back({"engine", std::string("agent"),
                          k.path + " (" + k.from + ") counts single attempts: the agent engine"});
      return;
    }
}

}  // namespace

ImportResult import_configs(const std::vector<ConfigFile>& files, bool check) {
  if (files.empty()) throw InputError("import: give at least one file");
  ImportResult out;
  std::vector<LayerPolicy> read;
  std::vector<Instances> instances;  // in file order
  for (const auto& f : files) {
    if (std::optional<std::vector<YAML::Node>> docs = workload_documents(f, out.warnings)) {
      for (const Instances& i : take_workloads(*docs, f.name, out.warnings)) instances.push_back(i);
      out.formats.push_back(f.name + ": Kubernetes workload (client instances)");
      continue;
    }
    read.push_back(import_file(f, out.warnings));
    out.formats.push_back(f.name + ": " + read.back().format);
    for (const Instances& i : read.back().instances) instances.push_back(i);
  }
  if (read.empty())
    throw InputError(files.front().name +
                     ": only Kubernetes workloads; give them beside a retry configuration");
  add_instances(out, instances);
  out.layers = merge_budget_files(read, out.warnings);
  std::vector<const LayerPolicy*> retrying;
  for (const auto& l : out.layers)
    if (l.has_retry_policy) retrying.push_back(&l);
  if (retrying.size() <= 1)
    add_single_layer_keys(out, retrying);
  else
    add_stack_keys(out, retrying);
  if (out.instances)
    out.keys.push_back({"client.budget.clients", out.instances->count, out.instances->from});
  add_engine_for_extras(out);
  sort_keys(out.keys);
  if (check) check_runnable(out);
  return out;
}

void check_runnable(const ImportResult& r) {
  Scenario s;
  apply_keys(s, r.keys);  // each key in its range, naming where it came from
  // Whether a timeout is a whole number of steps depends on the scenario the
  // keys go into, not on the files: those keys are checked above, by range.
  const Scenario plain;
  s.client.timeout_s = plain.client.timeout_s;
  s.client.budget.window_s = plain.client.budget.window_s;
  s.client.budget.ttl_s = plain.client.budget.ttl_s;
  try {
    validate(s);  // layers and attempts, as `run` checks them
  } catch (const InputError& e) {
    std::string names;
    for (const auto& l : r.layers) names += (names.empty() ? "" : ", ") + l.file;
    throw InputError(std::string(e.what()) + " (imported from " + names + ")");
  }
}

void apply_keys(Scenario& s, const std::vector<ImportedKey>& keys) {
  for (const auto& k : keys) {
    try {
      set_key(s, k.path, k.value);
    } catch (const InputError& e) {
      throw InputError(std::string(e.what()) + " (from " + k.from + ")");
    }
  }
}

std::string keys_text(const ImportResult& r) {
  std::ostringstream o;
  o << "# " << r.formats.size() << (r.formats.size() == 1 ? " file" : " files");
  if (r.layers.size() > 1) o << ", stacked outermost first";
  o << "\n";
  for (size_t i = 0; i < r.layers.size(); ++i)
    o << "#   " << (r.layers.size() > 1 ? "layer " + std::to_string(i + 1) + ": " : "")
      << r.layers[i].file << " (" << r.layers[i].format << ")\n";
  for (const auto& l : r.layers)
    for (const auto& n : l.notes) o << "# note: " << l.file << ": " << n << "\n";
  size_t width = 0;
  for (const auto& k : r.keys)
    width = std::max(width, k.path.size() + 3 + value_text(k.value).size());
  for (const auto& k : r.keys) {
    std::string line = k.path + " = " + value_text(k.value);
    o << line << std::string(width - line.size() + 2, ' ') << "# " << k.from << "\n";
  }
  return o.str();
}

json keys_flat(const std::vector<ImportedKey>& keys) {
  json out = json::object();
  for (const auto& k : keys) {
    if (std::holds_alternative<bool>(k.value))
      out[k.path] = std::get<bool>(k.value);
    else if (std::holds_alternative<double>(k.value)) {
      double v = std::get<double>(k.value);
      if (v == std::floor(v) && std::fabs(v) < 1e15)
        out[k.path] = static_cast<long long>(v);  // 3, not 3.0
      else
        out[k.path] = v;
    } else
      out[k.path] = std::get<std::string>(k.value);
  }
  return out;
}

json keys_object(const std::vector<ImportedKey>& keys) {
  json out = json::object();
  json flat = keys_flat(keys);
  for (const auto& [path, v] : flat.items()) {
    json* node = &out;
    std::string rest = path;
    for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      node = &(*node)[rest.substr(0, dot)];
      rest = rest.substr(dot + 1);
    }
    (*node)[rest] = v;
  }
  return out;
}

namespace {
void emit_yaml(YAML::Emitter& e, const json& j) {
  if (j.is_object()) {
    e << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      e << YAML::Key << k << YAML::Value;
      emit_yaml(e, v);
    }
    e << YAML::EndMap;
  } else if (j.is_array()) {
    e << YAML::BeginSeq;
    for (const auto& v : j) emit_yaml(e, v);
    e << YAML::EndSeq;
  } else if (j.is_string()) {
    e << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_boolean()) {
    e << (j.get<bool>() ? "true" : "false");
  } else if (j.is_number()) {
    e << number_text(j.get<double>());
  } else {
    e << YAML::Null;
  }
}
}  // namespace

std::string json_to_yaml_text(const json& j) {
  YAML::Emitter e;
  emit_yaml(e, j);
  return std::string(e.c_str()) + "\n";
}

}  // namespace retrystorm::configs
