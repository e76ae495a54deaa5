#include "systems/mesh/destination_rules.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "systems/common.hpp"
#include "systems/kubernetes/workloads.hpp"
#include "systems/mesh/mesh.hpp"
#include "text/ascii.hpp"

namespace retrystorm::configs {

namespace {

// meshConfig.rootNamespace's default (pkg/config/mesh/mesh.go).
const std::string kRoot = "istio-system";
// A caller's namespace that holds no rule: what any other namespace gets.
const std::string kElsewhere = "\x01";
// A service's full name is <name>.<namespace> then this.
const std::string kDomain = ".svc.cluster.local";

std::string scalar_at(const YAML::Node& map, const char* key) {
  return map && map.IsMap() && map[key] && map[key].IsScalar() ? map[key].Scalar() : "";
}

// A file's YAML documents; none when it does not parse (its reader says why).
std::vector<YAML::Node> documents_or_none(const ConfigFile& f) {
  try {
    return parse_documents(f.text, f.name);
  } catch (const std::exception&) {
    return {};
  }
}

std::string joined(const std::vector<std::string>& items, const std::string& last = " and ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? last : ", ") + items[i];
  return out;
}

// One DestinationRule, as the lookup needs it.
struct Rule {
  size_t index = 0;  // in the call's files
  std::string file, ns, name, created, host;
  std::string fqdn;                        // the host as istiod indexes it
  std::string host_ns;                     // the namespace the host names, "" for none or any
  bool wildcard = false, assumed = false;  // assumed: no metadata.namespace
  int line = 0;                            // of metadata.namespace, else of kind
  std::vector<std::string> export_to;
  bool selector = false, policy = false;
  std::set<std::string> subsets;
  std::vector<std::string> own_budget_subsets;  // a retryBudget or maxRetries of their own

  std::string where() const { return file + ":" + std::to_string(line); }
  std::string ns_text() const {
    return "namespace " + ns + (assumed ? " (assumed: no metadata.namespace)" : "");
  }
  bool exports(const std::string& n) const {
    return std::find(export_to.begin(), export_to.end(), n) != export_to.end();
  }
};

using Tier = std::vector<const Rule*>;

}  // namespace

// What the lookups read of one Istio file, parsed once.
struct IstioFiles::Parsed {
  std::optional<Rule> rule;   // the one DestinationRule the file is
  std::optional<Rule> route;  // the one VirtualService the file is
  // Each VirtualService's metadata.namespace ("" for none) and spec.hosts.
  std::vector<std::pair<std::string, std::vector<std::string>>> route_hosts;
};

namespace {

std::vector<std::string> labels_of(const std::string& h) {
  std::vector<std::string> labels;
  for (size_t at = 0; at <= h.size();) {
    const size_t dot = std::min(h.find('.', at), h.size());
    labels.push_back(h.substr(at, dot - at));
    at = dot + 1;
  }
  return labels;
}

// The host as istiod indexes it (ResolveShortnameToFQDN, config.go): only a
// name without dots is expanded, into the rule's namespace; "orders.shop"
// stays as it is, and no service's full name is that.
std::string resolved(const std::string& host, const std::string& ns) {
  const std::string h = text::lower_ascii(host);
  return h == "*" || h.find('.') != std::string::npos ? h : h + "." + ns + kDomain;
}

// The namespace a resolved host names: name.ns.svc.<domain>, or a wildcard
// *.ns.svc.<domain>; "" for a host of no namespace or of any.
std::string host_namespace(const std::string& fqdn) {
  const std::vector<std::string> l = labels_of(fqdn);
  return l.size() >= 4 && l[2] == "svc" ? l[1] : "";
}

void read_subsets(const YAML::Node& subsets, Rule& r) {
  if (!subsets || !subsets.IsSequence()) return;
  for (const YAML::Node& s : subsets) {
    const std::string name = scalar_at(s, "name");
    if (name.empty()) continue;
    r.subsets.insert(name);
    const YAML::Node tp = s["trafficPolicy"];
    const YAML::Node pool = tp && tp.IsMap() ? tp["connectionPool"] : missing();
    const YAML::Node http = pool && pool.IsMap() ? pool["http"] : missing();
    if ((tp && tp.IsMap() && tp["retryBudget"]) || (http && http.IsMap() && http["maxRetries"]))
      r.own_budget_subsets.push_back(name);
  }
}

// What a DestinationRule and a VirtualService both say (metadata, exportTo)
// as a Rule for `host`, its short name resolved in the resource's namespace
// (ResolveShortnameToFQDN). Without metadata.namespace it is in `unnamed`,
// where kubectl applies it.
Rule resource_of(const ConfigFile& f, size_t index, const YAML::Node& doc, const std::string& host,
                 const std::string& unnamed) {
  const YAML::Node meta = doc["metadata"], spec = doc["spec"];
  Rule r;
  r.index = index;
  r.file = f.name;
  r.ns = scalar_at(meta, "namespace");
  r.assumed = r.ns.empty();
  if (r.assumed) r.ns = unnamed;
  r.name = scalar_at(meta, "name");
  r.created = scalar_at(meta, "creationTimestamp");
  r.host = host;
  r.fqdn = resolved(r.host, r.ns);
  r.wildcard = !r.fqdn.empty() && r.fqdn[0] == '*';
  r.host_ns = host_namespace(r.fqdn);
  const YAML::Node ns_node = meta && meta.IsMap() ? meta["namespace"] : missing();
  r.line = line_of(ns_node ? ns_node : doc["kind"]);  // where its namespace is said
  if (const YAML::Node e = spec && spec.IsMap() ? spec["exportTo"] : missing(); e && e.IsSequence())
    for (const YAML::Node& n : e)
      if (n.IsScalar()) r.export_to.push_back(n.Scalar());
  return r;
}

// The DestinationRule a file is (one resource, no VirtualService).
// A rule without metadata.namespace is in `unnamed`, where kubectl applies it.
std::optional<Rule> rule_of(const ConfigFile& f, const std::vector<YAML::Node>& docs,
                            const std::string& unnamed) {
  std::optional<YAML::Node> dr;
  for (const YAML::Node& d : docs) {
    const std::string kind = scalar_at(d, "kind");
    if (kind == "VirtualService" || (kind == "DestinationRule" && dr)) return std::nullopt;
    if (kind == "DestinationRule") dr = d;
  }
  if (!dr) return std::nullopt;
  const YAML::Node spec = (*dr)["spec"];
  Rule r = resource_of(f, 0, *dr, scalar_at(spec, "host"), unnamed);
  if (!spec || !spec.IsMap()) return r;
  r.selector = static_cast<bool>(spec["workloadSelector"]);
  r.policy = spec["trafficPolicy"] && spec["trafficPolicy"].IsMap();
  read_subsets(spec["subsets"], r);
  return r;
}

// exportTo of the rule's own namespace only: not in the exported index
// (setDestinationRules, isPrivateOnly; the mesh's default exportTo is "*").
bool private_only(const Rule& r) {
  return r.export_to.size() == 1 && (r.export_to[0] == "." || r.export_to[0] == r.ns);
}

// In namespace `ns`'s own index (setDestinationRules, namespaceLocal).
bool local_to(const Rule& r, const std::string& ns) {
  return r.ns == ns && (r.export_to.empty() || r.exports(".") || r.exports("*") || r.exports(r.ns));
}

// Exported from `owner` to a caller in `ns` (getExportedDestinationRuleFromNamespace).
bool exported(const Rule& r, const std::string& owner, const std::string& ns) {
  return r.ns == owner && !private_only(r) &&
         (r.export_to.empty() || r.exports("*") || r.exports(ns));
}

// Of one index's rules for the callee, istiod takes the most specific host
// (MostSpecificHostMatch): the callee's own name, else the longest wildcard.
Tier pick(const std::vector<Rule>& rules, const std::function<bool(const Rule&)>& keep) {
  Tier out;
  for (const Rule& r : rules)
    if (keep(r)) out.push_back(&r);
  const bool exact = std::any_of(out.begin(), out.end(), [](auto* r) { return !r->wildcard; });
  size_t longest = 0;
  for (const Rule* r : out) longest = std::max(longest, r->fqdn.size());
  out.erase(
      std::remove_if(out.begin(), out.end(),
                     [&](auto* r) { return exact ? r->wildcard : r->fqdn.size() != longest; }),
      out.end());
  return out;
}

// PushContext.destinationRule for a sidecar in `ns`: its own namespace's
// rules, else the service namespace's exported ones, else the root's.
Tier lookup(const std::vector<Rule>& rules, const std::string& ns,
            const std::optional<std::string>& service_ns) {
  Tier t = pick(rules, [&](const Rule& r) {
    return ns != kRoot ? local_to(r, ns) : r.ns == kRoot && private_only(r);
  });
  if (t.empty() && service_ns)
    t = pick(rules, [&](const Rule& r) { return exported(r, *service_ns, ns); });
  if (t.empty()) t = pick(rules, [&](const Rule& r) { return exported(r, kRoot, ns); });
  return t;
}

// Whether a caller of any namespace (those the rules name, and any other)
// gets the same rules: then the caller's namespace does not matter.
bool same_for_every_caller(const std::vector<Rule>& rules,
                           const std::optional<std::string>& service_ns) {
  std::set<std::string> callers = {kElsewhere, kRoot};
  for (const Rule& r : rules) {
    callers.insert(r.ns);
    for (const std::string& e : r.export_to)
      if (e != "." && e != "*") callers.insert(e);
  }
  const Tier elsewhere = lookup(rules, kElsewhere, service_ns);
  return std::all_of(callers.begin(), callers.end(), [&](const std::string& ns) {
    return lookup(rules, ns, service_ns) == elsewhere;
  });
}

// The namespace a VirtualService of the call puts service `svc` in: its full
// name's, or a short name's (the VirtualService's own namespace).
std::optional<std::string> route_namespace(const std::vector<const ConfigFile*>& routes,
                                           const IstioFiles& parsed, const std::string& svc,
                                           const std::string& unnamed) {
  for (const ConfigFile* f : routes)
    for (const auto& [ns, hosts] : parsed.of(*f)->route_hosts)
      for (const std::string& h : hosts)
        if (service_of_host(h) == svc)
          if (std::string n = host_namespace(resolved(h, ns.empty() ? unnamed : ns)); !n.empty())
            return n;
  return std::nullopt;
}

// The callee's namespace: its Service's or workload's, the calls file's name
// for it (orders.shop), its VirtualService's, else the one its rules' hosts
// all name.
std::optional<std::string> service_namespace(const std::vector<Rule>& rules,
                                             const MeshNamespaces& namespaces,
                                             const std::string& to,
                                             const std::vector<const ConfigFile*>& routes,
                                             const IstioFiles& parsed) {
  if (std::optional<std::string> ns = namespaces.one(to)) return ns;
  const std::vector<std::string> l = labels_of(text::lower_ascii(to));
  if (l.size() == 2 || (l.size() > 2 && l[2] == "svc")) return l[1];
  if (auto ns = route_namespace(routes, parsed, service_of_host(to), namespaces.unnamed)) return ns;
  std::set<std::string> named;
  for (const Rule& r : rules)
    if (!r.host_ns.empty()) named.insert(r.host_ns);
  if (named.size() == 1) return *named.begin();
  return std::nullopt;
}

// Why a rule's host cannot be the callee's ("": it is, or may be): istiod
// matches the resolved host exactly, a wildcard by suffix.
std::string mismatch(const Rule& r, const std::string& to, const std::optional<std::string>& ns) {
  const std::string svc = service_of_host(to);
  if (r.wildcard) {
    const std::string tail = r.fqdn.substr(1);
    const bool may = ns ? (svc + "." + *ns + kDomain).ends_with(tail)
                        : kDomain.ends_with(tail) || !r.host_ns.empty();
    return may ? ""
               : "its host " + r.host + " does not match " + svc + "." + ns.value_or("") + kDomain;
  }
  if (r.host_ns.empty() || labels_of(r.fqdn)[0] != svc)
    return "its host " + r.host + " has dots but is no full name (" + svc +
           ".<namespace>.svc.cluster.local), so istiod does not expand it "
           "(ResolveShortnameToFQDN) and it names no service";
  if (ns && r.host_ns != *ns)
    return "its host " + r.host + " is a service of namespace " + r.host_ns + ", and " + to +
           " is in " + *ns;
  return "";
}

// The rules Istio would not give any sidecar for this call: a workload
// selector's (some pods only; a call has one policy for all its caller's
// pods), and a rule whose host is not the callee.
std::vector<Rule> for_the_callee(std::vector<Rule> rules, const std::optional<std::string>& svc,
                                 const std::string& to, std::vector<RuleFate>& fates) {
  std::vector<Rule> out;
  for (Rule& r : rules) {
    if (r.selector)
      fates[r.index] = {RuleFate::not_given,
                        "its workloadSelector gives it to some pods of " + r.ns_text() +
                            " only, and a call has one policy for all of its caller's pods"};
    else if (std::string why = mismatch(r, to, svc); !why.empty())
      fates[r.index] = {RuleFate::not_given, why};
    else
      out.push_back(std::move(r));
  }
  return out;
}

// The rules not in `tier` are not given to this caller.
void give_only(const std::vector<Rule>& rules, const Tier& tier, const std::string& why,
               std::vector<RuleFate>& fates) {
  for (const Rule& r : rules)
    if (std::find(tier.begin(), tier.end(), &r) == tier.end())
      fates[r.index] = {RuleFate::not_given, why};
}

std::string files_of(const Tier& tier) {
  std::vector<std::string> names;
  for (const Rule* r : tier) names.push_back(r->where());
  return names.empty() ? std::string("none") : joined(names);
}

// What the lookup's order is, for messages.
std::string the_order(const std::optional<std::string>& service_ns) {
  return "a sidecar takes its own namespace's DestinationRule, else the service's namespace's" +
         (service_ns ? " (" + *service_ns + ")" : std::string()) +
         ", else istio-system's, as far as exportTo lets it";
}

struct Call {
  const MeshNamespaces& namespaces;
  const IstioFiles& parsed;
  std::string from, to, where;
  std::optional<std::string> service_ns;
};

// Why the manifests cannot tell which rule the caller gets.
std::string unknown_text(const Call& c) {
  if (c.from == "user") return "the entry's requests come from outside the mesh";
  auto it = c.namespaces.of.find(service_of_host(c.from));
  if (it == c.namespaces.of.end())
    return c.from + "'s namespace is unknown (no Deployment or Service here gives one)";
  std::vector<std::string> seen;
  for (const auto& [ns, where] : it->second) seen.push_back(ns + " (" + where + ")");
  return c.from + " is in several namespaces: " + joined(seen);
}

// The manifests cannot tell: the rules a caller of another namespace gets,
// else the first file's namespace's; said.
Tier deterministic_tier(const std::vector<Rule>& rules, const Call& c, std::vector<RuleFate>& fates,
                        std::vector<std::string>& warnings) {
  Tier t = lookup(rules, kElsewhere, c.service_ns);
  const bool fallback = t.empty();
  // A wildcard rule is a namespace's setting for every service: not read for
  // a caller of no known namespace unless exported to any (e.g. the entry's).
  auto named_host = std::find_if(rules.begin(), rules.end(), [](auto& r) { return !r.wildcard; });
  if (fallback && named_host == rules.end()) {
    give_only(rules, t,
              c.from + "'s namespace is unknown: a wildcard rule is read where it is known", fates);
    return t;
  }
  if (fallback) t = pick(rules, [&](const Rule& r) { return r.ns == named_host->ns; });
  std::vector<std::string> named;
  for (const Rule& r : rules) named.push_back(r.ns_text() + " (" + r.where() + ")");
  warnings.push_back(
      c.where + " (" + c.from + " -> " + c.to + "): DestinationRules for " + c.to + " in " +
      joined(named) + "; " + the_order(c.service_ns) + ", and " + unknown_text(c) + ": " +
      files_of(t) + " read" +
      (fallback ? " (the first file's namespace)" : " (what a caller of another namespace gets)") +
      "; give the namespaces, or pin the rule with the call's `configs`");
  give_only(rules, t, "the manifests cannot tell whether " + c.from + " gets it (see the warning)",
            fates);
  return t;
}

// The rules of one namespace the caller gets (several, to be merged).
Tier chosen_tier(const std::vector<Rule>& rules, const Call& c, std::vector<RuleFate>& fates,
                 std::vector<std::string>& warnings) {
  const std::optional<std::string> caller =
      c.from == "user" ? std::nullopt : c.namespaces.one(c.from);
  if (caller || same_for_every_caller(rules, c.service_ns)) {
    Tier t = lookup(rules, caller.value_or(kElsewhere), c.service_ns);
    std::string who = caller ? c.from + " (namespace " + *caller + ", " +
                                   c.namespaces.of.at(service_of_host(c.from)).at(*caller) + ")"
                             : c.from;
    give_only(rules, t,
              who + " takes " + (t.empty() ? "no DestinationRule" : files_of(t)) + ": " +
                  the_order(c.service_ns),
              fates);
    return t;
  }
  return deterministic_tier(rules, c, fates, warnings);
}

void warn_once(std::vector<std::string>& warnings, const std::string& text) {
  if (std::find(warnings.begin(), warnings.end(), text) == warnings.end()) warnings.push_back(text);
}

// What the merge of one namespace's rules for one host loses, said once.
void warn_merge(const Tier& tier, const Rule& base, bool stamped,
                std::vector<std::string>& warnings) {
  const std::string head =
      files_of(tier) + ": DestinationRules for " + base.host + " in " + base.ns_text();
  const auto with_policy =
      std::count_if(tier.begin(), tier.end(), [](auto* r) { return r->policy; });
  if (with_policy > 1)
    warn_once(warnings, head +
                            " each set a trafficPolicy; Istio merges them into one, with the "
                            "oldest rule's trafficPolicy (" +
                            (stamped ? std::string("by metadata.creationTimestamp")
                                     : "no creationTimestamp here, so by name, as Istio orders "
                                       "rules created in the same second") +
                            "): " + base.where() + "'s is read, the others' is not");
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const Rule* r : tier)
    if (sorted(r->export_to) != sorted(base.export_to))
      warn_once(warnings, head +
                              " have different exportTo: Istio keeps them apart and a sidecar "
                              "takes one by their order, which is not modelled; read merged");
  bool before = true;
  for (const Rule* r : tier) {
    if (r == &base) before = false;
    std::vector<std::string> lost;
    for (const std::string& s : r->own_budget_subsets)
      if (r != &base && (before || !base.subsets.count(s))) lost.push_back(s);
    if (!lost.empty())
      warn_once(warnings, r->where() + (lost.size() > 1 ? ": subsets " : ": subset ") +
                              joined(lost) + (lost.size() > 1 ? " have" : " has") +
                              " a trafficPolicy of its own, which Istio merges over " +
                              base.where() +
                              "'s; not read (give the subsets in one DestinationRule)");
  }
}

// Several rules for one host in one namespace are one (mergeDestinationRule):
// ordered by creation time, then name (sortConfigBySelectorAndCreationTime),
// the first with a trafficPolicy keeps it whole; the others add subsets.
void merge_tier(Tier tier, std::vector<RuleFate>& fates, std::vector<std::string>& warnings) {
  if (tier.size() < 2) return;
  const bool stamped =
      std::all_of(tier.begin(), tier.end(), [](auto* r) { return !r->created.empty(); });
  std::stable_sort(tier.begin(), tier.end(), [&](const Rule* a, const Rule* b) {
    if (stamped && a->created != b->created) return a->created < b->created;
    return a->name < b->name;
  });
  auto base = std::find_if(tier.begin(), tier.end(), [](auto* r) { return r->policy; });
  const Rule& kept = base == tier.end() ? *tier.front() : **base;
  for (const Rule* r : tier)
    if (r != &kept) fates[r->index] = {RuleFate::merged, "merged into " + kept.where()};
  warn_merge(tier, kept, stamped, warnings);
}

// A resource without metadata.namespace as applied in `ns` instead: its
// short host resolves there (resource_of).
Rule applied_in(Rule r, const std::string& ns) {
  if (!r.assumed || r.ns == ns) return r;
  r.ns = ns;
  r.fqdn = resolved(r.host, r.ns);
  r.wildcard = !r.fqdn.empty() && r.fqdn[0] == '*';
  r.host_ns = host_namespace(r.fqdn);
  return r;
}

std::vector<Rule> rehomed(std::vector<Rule> rules, const std::string& ns) {
  for (Rule& r : rules) r = applied_in(std::move(r), ns);
  return rules;
}

// The call's files' DestinationRules (`routes`: VirtualServices), indexed by
// their place in `files`, the unnamed ones in `unnamed`.
std::vector<Rule> rules_of(const std::vector<const ConfigFile*>& files, const IstioFiles& parsed,
                           const std::string& unnamed, bool routes = false) {
  std::vector<Rule> rules;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::shared_ptr<const IstioFiles::Parsed> p = parsed.of(*files[i]);
    if (const std::optional<Rule>& r = routes ? p->route : p->rule) {
      rules.push_back(applied_in(*r, unnamed));
      rules.back().index = i;
    }
  }
  return rules;
}

// The callee's namespace is unknown and the rules' hosts name several: which
// rule is the callee's depends on it, so said.
void warn_unknown_callee(const std::vector<Rule>& rules, const Call& c, const Tier& read,
                         std::vector<std::string>& warnings) {
  std::set<std::string> named;
  std::vector<std::string> seen;
  for (const Rule& r : rules)
    if (!r.host_ns.empty() && named.insert(r.host_ns).second)
      seen.push_back(r.host + " in " + r.host_ns + " (" + r.where() + ")");
  if (named.size() < 2) return;
  const std::string svc = service_of_host(c.to);
  warnings.push_back(c.where + " (" + c.from + " -> " + c.to +
                     "): the DestinationRules' hosts put " + svc +
                     " in different namespaces: " + joined(seen) +
                     "; istiod applies a rule only to the service its host names, and no "
                     "Deployment, Service or VirtualService here gives " +
                     svc + "'s namespace, so which applies cannot be told: " + files_of(read) +
                     " read; give " + svc + "'s namespace");
}

// One call's fates with rules read as `rules` (an unnamed rule in some namespace).
std::vector<RuleFate> decide(std::vector<Rule> rules, Call c, size_t files,
                             const std::vector<const ConfigFile*>& routes,
                             std::vector<std::string>& warnings) {
  std::vector<RuleFate> fates(files);
  if (rules.empty()) return fates;
  c.service_ns = service_namespace(rules, c.namespaces, c.to, routes, c.parsed);
  rules = for_the_callee(std::move(rules), c.service_ns, c.to, fates);
  if (rules.empty()) return fates;
  const Tier t = chosen_tier(rules, c, fates, warnings);
  if (!c.service_ns) warn_unknown_callee(rules, c, t, warnings);
  merge_tier(t, fates, warnings);
  return fates;
}

std::string taken(const std::vector<const ConfigFile*>& files, const std::vector<RuleFate>& fates) {
  std::vector<std::string> names;
  for (size_t i = 0; i < files.size(); ++i)
    if (fates[i].kind != RuleFate::not_given) names.push_back(files[i]->name);
  return names.empty() ? std::string("none of them") : joined(names);
}

// An unnamed rule is read in `c.namespaces.unnamed`; when, in the caller's
// namespace (or another), the caller would take other rules, that is said.
void warn_assumed(const std::vector<const ConfigFile*>& files, const std::vector<Rule>& rules,
                  const Call& c, const std::vector<RuleFate>& fates,
                  const std::vector<const ConfigFile*>& routes,
                  std::vector<std::string>& warnings) {
  std::vector<std::string> unnamed;
  for (const Rule& r : rules)
    if (r.assumed) unnamed.push_back(r.where());
  if (unnamed.empty()) return;
  const std::string& as = c.namespaces.unnamed;
  const std::optional<std::string> caller =
      c.from == "user" ? std::nullopt : c.namespaces.one(c.from);
  const std::string other = caller && *caller != as ? *caller : kElsewhere;
  std::vector<std::string> scratch;
  const std::vector<RuleFate> alt = decide(rehomed(rules, other), c, files.size(), routes, scratch);
  if (taken(files, alt) == taken(files, fates)) return;
  warnings.push_back(
      c.where + " (" + c.from + " -> " + c.to + "): " + joined(unnamed) +
      (unnamed.size() > 1 ? " give" : " gives") + " no metadata.namespace: read as in namespace " +
      as + " (" + c.namespaces.unnamed_why + "), where " + c.from + " takes " +
      taken(files, fates) + "; applied in " +
      (other == kElsewhere ? std::string("another namespace") : "namespace " + other) + ", " +
      c.from + " would take " + taken(files, alt) + "; give metadata.namespace");
}

// The VirtualService a file is (one resource), as a Rule: its host the
// first of spec.hosts, its namespace where kubectl applies it.
std::optional<Rule> route_of(const ConfigFile& f, const std::vector<YAML::Node>& docs,
                             const std::string& unnamed) {
  if (docs.size() != 1 || scalar_at(docs[0], "kind") != "VirtualService") return std::nullopt;
  const YAML::Node& d = docs[0];
  const YAML::Node spec = d["spec"];
  const YAML::Node hosts = spec && spec.IsMap() ? spec["hosts"] : missing();
  std::string host;
  if (hosts && hosts.IsSequence() && hosts.size() > 0 && hosts[0].IsScalar())
    host = hosts[0].Scalar();
  return resource_of(f, 0, d, host, unnamed);  // ResolveVirtualServiceShortnames, as for rules
}

// Each VirtualService's namespace and hosts, for route_namespace.
std::vector<std::pair<std::string, std::vector<std::string>>> route_hosts(
    const std::vector<YAML::Node>& docs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const YAML::Node& d : docs) {
    if (scalar_at(d, "kind") != "VirtualService") continue;
    const YAML::Node spec = d["spec"];
    const YAML::Node hosts = spec && spec.IsMap() ? spec["hosts"] : missing();
    if (!hosts || !hosts.IsSequence()) continue;
    auto& [ns, names] =
        out.emplace_back(scalar_at(d["metadata"], "namespace"), std::vector<std::string>{});
    for (const YAML::Node& h : hosts)
      if (h.IsScalar()) names.push_back(h.Scalar());
  }
  return out;
}

IstioFiles::Parsed parse_istio(const ConfigFile& f, const std::string& unnamed) {
  const std::vector<YAML::Node> docs = documents_or_none(f);
  return {rule_of(f, docs, unnamed), route_of(f, docs, unnamed), route_hosts(docs)};
}

// initVirtualServices (push_context.go) files a VirtualService as public
// ("*", or no exportTo: the mesh's default), private to its namespace ("." or
// its own name), exported to the others named, or nowhere ("~"). 0: private
// to `ns`, 1: exported to it, 2: public, 3: not seen from `ns`.
int route_tier(const Rule& r, const std::string& ns) {
  if (r.export_to.empty() || r.exports("*")) return 2;
  if (r.exports("~")) return 3;
  if (r.ns == ns && (r.exports(".") || r.exports(ns))) return 0;
  return r.ns != ns && r.exports(ns) ? 1 : 3;
}

// The VirtualServices a sidecar in `ns` sees, in the order it reads them
// (SelectVirtualServices, virtualservice.go: private, exported, public; each
// by creation time, then name and namespace, configCompareByCreationTime).
// The first wins the host: the route builder drops a later virtual host of
// the same domain (httproute.go, "duplicate domain"); none are merged.
Tier visible_routes(const std::vector<Rule>& routes, const std::string& ns, bool stamped) {
  Tier out;
  for (const Rule& r : routes)
    if (route_tier(r, ns) < 3) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [&](const Rule* a, const Rule* b) {
    if (route_tier(*a, ns) != route_tier(*b, ns)) return route_tier(*a, ns) < route_tier(*b, ns);
    if (stamped && a->created != b->created) return a->created < b->created;
    return a->name != b->name ? a->name < b->name : a->ns < b->ns;
  });
  return out;
}

const Rule* route_for(const std::vector<Rule>& routes, const std::string& ns, bool stamped) {
  const Tier t = visible_routes(routes, ns, stamped);
  return t.empty() ? nullptr : t.front();
}

// Whether a sidecar of any namespace takes the same VirtualService.
bool same_route_for_every_caller(const std::vector<Rule>& routes, bool stamped) {
  std::set<std::string> callers = {kElsewhere};
  for (const Rule& r : routes) {
    callers.insert(r.ns);
    for (const std::string& e : r.export_to)
      if (e != "." && e != "*" && e != "~") callers.insert(e);
  }
  const Rule* elsewhere = route_for(routes, kElsewhere, stamped);
  return std::all_of(callers.begin(), callers.end(), [&](const std::string& ns) {
    return route_for(routes, ns, stamped) == elsewhere;
  });
}

std::string routes_text(const std::vector<Rule>& routes) {
  std::vector<std::string> named;
  for (const Rule& r : routes) named.push_back(r.ns_text() + " (" + r.where() + ")");
  return joined(named);
}

const char* kRouteOrder =
    "a sidecar takes the first VirtualService for a host of those private to its namespace, "
    "then those exported to it, then the public ones, each oldest first, and merges none";

// The caller's namespace is known (or does not matter): its sidecar's choice.
// When creation order decides and no creationTimestamp gives it, that is said.
void known_route(const std::vector<Rule>& routes, const std::string& ns, const std::string& who,
                 const Call& c, bool stamped, std::vector<RuleFate>& fates,
                 std::vector<std::string>& warnings) {
  const Tier seen = visible_routes(routes, ns, stamped);
  const Rule* won = seen.empty() ? nullptr : seen.front();
  for (const Rule& r : routes)
    if (&r != won)
      fates[r.index] = {RuleFate::not_given,
                        who + " takes " + (won ? won->where() : std::string("none of them")) +
                            ": " + kRouteOrder};
  if (stamped || seen.size() < 2 || route_tier(*seen[0], ns) != route_tier(*seen[1], ns)) return;
  warnings.push_back(c.where + " (" + c.from + " -> " + c.to + "): VirtualServices for " + c.to +
                     " in " + routes_text(routes) + "; " + kRouteOrder +
                     "; with no metadata.creationTimestamp, by name, as Istio orders those "
                     "created in the same second: " +
                     won->where() + " read; in a cluster the one applied first wins");
}

// The VirtualServices of one call a caller's sidecar does not take.
std::vector<RuleFate> decide_routes(const std::vector<Rule>& all, const Call& c, size_t files,
                                    std::vector<std::string>& warnings) {
  std::vector<RuleFate> fates(files);
  // A route's host is one service's: a route for another namespace's orders
  // is not the callee's. Hosts of several namespaces and no namespace for the
  // callee: the first file read, as the caller says (one_policy_per_rank).
  const std::optional<std::string> callee =
      service_namespace(all, c.namespaces, c.to, {}, c.parsed);
  std::set<std::string> named;
  for (const Rule& r : all)
    if (!r.host_ns.empty()) named.insert(r.host_ns);
  if (!callee && named.size() > 1) return fates;
  std::vector<Rule> routes;
  for (const Rule& r : all)
    if (std::string why = mismatch(r, c.to, callee); !why.empty())
      fates[r.index] = {RuleFate::not_given, why};
    else
      routes.push_back(r);
  if (routes.empty()) return fates;
  const bool stamped =
      std::all_of(routes.begin(), routes.end(), [](const Rule& r) { return !r.created.empty(); });
  const std::optional<std::string> caller = c.namespaces.one(c.from);
  if (caller) {
    const std::string who = c.from + " (namespace " + *caller + ", " +
                            c.namespaces.of.at(service_of_host(c.from)).at(*caller) + ")";
    known_route(routes, *caller, who, c, stamped, fates, warnings);
  } else if (same_route_for_every_caller(routes, stamped)) {
    known_route(routes, kElsewhere, c.from, c, stamped, fates, warnings);
  } else {  // the first file read, as before namespaces were weighed
    for (const Rule& r : routes)
      if (&r != &routes.front())
        fates[r.index] = {RuleFate::not_given, "the manifests cannot tell whether " + c.from +
                                                   " takes it (see the warning)"};
    warnings.push_back(c.where + " (" + c.from + " -> " + c.to + "): VirtualServices for " + c.to +
                       " in " + routes_text(routes) + "; " + kRouteOrder + ", and " +
                       unknown_text(c) + ": " + routes.front().where() +
                       " read (the first file); give the namespaces, or pin the VirtualService "
                       "with the call's `configs`");
  }
  return fates;
}

}  // namespace

std::optional<std::string> MeshNamespaces::one(const std::string& service) const {
  auto it = of.find(service_of_host(service));
  if (it == of.end() || it->second.size() != 1) return std::nullopt;
  return it->second.begin()->first;
}

MeshNamespaces read_namespaces(const std::vector<ConfigFile>& files) {
  MeshNamespaces out;
  std::set<std::string> given;  // by any resource
  for (const ConfigFile& f : files) {
    if (f.text.find("kind") == std::string::npos) continue;  // no Kubernetes resource
    for (const YAML::Node& d : documents_or_none(f)) {
      if (d.IsMap() && !scalar_at(d["metadata"], "namespace").empty())
        given.insert(scalar_at(d["metadata"], "namespace"));
      if (!d.IsMap() || (!is_workload(d) && scalar_at(d, "kind") != "Service")) continue;
      const YAML::Node meta = d["metadata"];
      const std::string name = scalar_at(meta, "name"), ns = scalar_at(meta, "namespace");
      if (!name.empty() && !ns.empty())
        out.of[service_of_host(name)].emplace(ns, f.name + ":" + std::to_string(line_of(meta)));
    }
  }
  if (given.size() == 1) {  // the folder is one namespace's: applied there
    out.unnamed = *given.begin();
    out.unnamed_why = "the one namespace the folder's resources give";
  }
  return out;
}

std::vector<RuleFate> istio_destination_rules(const std::vector<const ConfigFile*>& files,
                                              const MeshNamespaces& namespaces,
                                              const IstioFiles& parsed, const std::string& from,
                                              const std::string& to, const std::string& where,
                                              std::vector<std::string>& warnings,
                                              const std::vector<const ConfigFile*>& routes) {
  const std::vector<Rule> rules = rules_of(files, parsed, namespaces.unnamed);
  const Call c{namespaces, parsed, from, to, where, std::nullopt};
  std::vector<RuleFate> fates = decide(rules, c, files.size(), routes, warnings);
  warn_assumed(files, rules, c, fates, routes, warnings);
  return fates;
}

IstioFiles::IstioFiles(const std::vector<const ConfigFile*>& files, const std::string& unnamed)
    : unnamed_(unnamed) {
  for (const ConfigFile* f : files)
    parsed_.emplace(f, std::make_shared<const Parsed>(parse_istio(*f, unnamed)));
}

std::shared_ptr<const IstioFiles::Parsed> IstioFiles::of(const ConfigFile& f) const {
  auto it = parsed_.find(&f);
  return it != parsed_.end() ? it->second
                             : std::make_shared<const Parsed>(parse_istio(f, unnamed_));
}

bool is_wildcard_destination_rule(const ConfigFile& f, const IstioFiles& parsed) {
  const std::optional<Rule>& r = parsed.of(f)->rule;
  return r && r->wildcard;
}

std::vector<bool> replaced_destination_rules(const std::vector<const ConfigFile*>& files,
                                             const MeshNamespaces& namespaces,
                                             const IstioFiles& parsed,
                                             std::vector<std::string>& warnings) {
  std::vector<bool> out(files.size());
  std::map<std::pair<std::string, std::string>, Rule> last;  // by namespace and name
  for (Rule& r : rules_of(files, parsed, namespaces.unnamed)) {
    if (r.name.empty()) continue;
    auto [it, fresh] = last.try_emplace({r.ns, r.name}, r);
    if (fresh) continue;
    out[it->second.index] = true;
    warnings.push_back(it->second.where() + " and " + r.where() + ": both are DestinationRule " +
                       r.name + " of " + r.ns_text() +
                       "; Kubernetes keeps one object per kind, namespace and name, and the one "
                       "applied later replaces the other: " +
                       r.file + " (later in the folder's file order) is read, " + it->second.file +
                       " is not used");
    it->second = std::move(r);
  }
  return out;
}

std::vector<RuleFate> istio_virtual_services(const std::vector<const ConfigFile*>& files,
                                             const MeshNamespaces& namespaces,
                                             const IstioFiles& parsed, const std::string& from,
                                             const std::string& to, const std::string& where,
                                             std::vector<std::string>& warnings) {
  if (from == "user") return std::vector<RuleFate>(files.size());  // through a gateway
  const std::vector<Rule> routes = rules_of(files, parsed, namespaces.unnamed, true);
  return decide_routes(routes, Call{namespaces, parsed, from, to, where, std::nullopt},
                       files.size(), warnings);
}

}  // namespace retrystorm::configs
