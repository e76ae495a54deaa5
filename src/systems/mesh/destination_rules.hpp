// Which Istio DestinationRule a caller's sidecar applies to a call of the mesh
// (docs/graph.md, "From the mesh's configuration"), as istiod picks it
// (pilot/pkg/model/push_context.go, PushContext.destinationRule): the rule of
// the caller's own namespace, else the service's namespace's, else the root
// namespace's (istio-system), each as far as its exportTo lets it; several
// rules for one host in one namespace are merged (mergeDestinationRule,
// pilot/pkg/model/destination_rule.go), the oldest's trafficPolicy kept. In
// each namespace the most specific host wins (MostSpecificHostMatch,
// pilot/pkg/model/config.go): the callee's own, else the longest wildcard.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systems/import.hpp"

namespace retrystorm::configs {

// The namespaces the folder's Kubernetes manifests put each service in: a
// workload's or a Service's metadata.namespace, by service name, with the
// file:line of each.
struct MeshNamespaces {
  std::map<std::string, std::map<std::string, std::string>> of;
  // Where a resource without metadata.namespace is applied: the one
  // namespace every resource that names one names, else kubectl's `default`.
  std::string unnamed = "default";
  std::string unnamed_why = "kubectl's default namespace";
  // The service's namespace when the manifests give it exactly one.
  std::optional<std::string> one(const std::string& service) const;
};

MeshNamespaces read_namespaces(const std::vector<ConfigFile>& files);

// The mesh's Istio files, each parsed once as the DestinationRule or
// VirtualService it is (unnamed ones in `unnamed`): every call weighs them.
// Keyed by the files' addresses; a file not given is parsed when asked for.
class IstioFiles {
 public:
  struct Parsed;
  IstioFiles(const std::vector<const ConfigFile*>& files, const std::string& unnamed);
  std::shared_ptr<const Parsed> of(const ConfigFile& f) const;

 private:
  std::string unnamed_;
  std::map<const ConfigFile*, std::shared_ptr<const Parsed>> parsed_;
};

// What becomes of one file of a call: kept, merged into the DestinationRule
// read (as Istio merges it), or not given to this caller (`why` says why).
struct RuleFate {
  enum Kind { kept, merged, not_given } kind = kept;
  std::string why;
};

// The fate of each of `files`, a call's files (from -> to) that are Istio
// DestinationRules (a file that is not one is kept), wildcard hosts among
// them. `routes` (the call's VirtualServices) may tell the callee's
// namespace. Where the manifests cannot tell (the caller's namespace not
// given), the rule a caller of another namespace would get is read, else the
// first file's namespace's, with a warning naming the files and namespaces.
std::vector<RuleFate> istio_destination_rules(const std::vector<const ConfigFile*>& files,
                                              const MeshNamespaces& namespaces,
                                              const IstioFiles& parsed, const std::string& from,
                                              const std::string& to, const std::string& where,
                                              std::vector<std::string>& warnings,
                                              const std::vector<const ConfigFile*>& routes = {});

// The fate of each of `files`, a call's (from -> to) Istio VirtualServices
// that reach sidecars (a file that is not one VirtualService is kept): the
// one the caller's sidecar takes is kept, the others are not given. istiod
// does not merge VirtualServices for one host; a sidecar takes the first of
// those private to its namespace, then exported to it, then public, each
// oldest first (SelectVirtualServices, pilot/pkg/model/virtualservice.go).
// Where the caller's namespace is unknown and matters, the first file is
// kept, with a warning naming the files and namespaces. The entry's (from
// `user`) come through a gateway: all kept.
std::vector<RuleFate> istio_virtual_services(const std::vector<const ConfigFile*>& files,
                                             const MeshNamespaces& namespaces,
                                             const IstioFiles& parsed, const std::string& from,
                                             const std::string& to, const std::string& where,
                                             std::vector<std::string>& warnings);

// Whether `f` is one DestinationRule whose host is a wildcard ("*.local"):
// it may apply to any callee, so every call weighs it.
bool is_wildcard_destination_rule(const ConfigFile& f, const IstioFiles& parsed);

// Of `files`, the DestinationRules another of the same namespace and name,
// read later in the folder's file order, replaces (Kubernetes keeps one
// object per kind, namespace and name: the later apply wins); each said.
std::vector<bool> replaced_destination_rules(const std::vector<const ConfigFile*>& files,
                                             const MeshNamespaces& namespaces,
                                             const IstioFiles& parsed,
                                             std::vector<std::string>& warnings);

}  // namespace retrystorm::configs
