// A mesh's configuration as a graph of services (docs/graph.md, "From the
// mesh's configuration"): a folder of Kubernetes manifests and proxy files
// gives each call's retry policy, a calls file gives who calls whom, because
// routing configuration does not say which service calls which.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/scenario.hpp"
#include "systems/import.hpp"

namespace retrystorm::configs {

// One call of the graph as imported: the files that gave its policy and its
// client keys with where each came from.
struct MeshCall {
  std::string from, to;
  std::vector<std::string> files;   // outermost first
  std::vector<ImportedKey> keys;    // "client.retries", ...
  std::string note;                 // why it has no files, or which layer of a stack it is
  std::optional<RouteFault> fault;  // a fault its layer's route injects
};

struct MeshImport {
  std::string graph_from;       // where the call graph came from: the calls file
  Scenario scenario;            // the calls file with each call's imported policy
  nlohmann::json document;      // the calls file filled in: a scenario object
  std::vector<MeshCall> calls;  // the scenario's calls, in order
  // The incident a file's fault gives (incident.call, delay_s, ...), with
  // where each came from; empty when no file injects a fault.
  std::vector<ImportedKey> incident;
  std::vector<std::string> formats;  // "istio/orders.yaml: Istio VirtualService (orders)"
  std::vector<std::string> skipped;  // files that are no retry configuration, and why
  // Files of a known system that could not be read, and why (in `skipped`
  // too): a call they would name falls back to the defaults, so the
  // commands say it on every output, not only in the text.
  std::vector<std::string> unread;
  std::vector<std::string> warnings;
};

// Reads the calls file (a scenario fragment: calls, and optionally services,
// demand and incident; a call may pin files with `configs: [name, ...]`) and
// the configuration files, and fills each call's policy from the files whose
// destination is its callee. Throws InputError naming the file and key.
MeshImport import_mesh(const std::vector<ConfigFile>& files, const ConfigFile& calls);

// The same with the call graph from a saved Prometheus answer of request
// rates by caller and callee (docs/graph.md, "The call graph from
// Prometheus"); `calls`, when given, is a calls file whose keys win (its
// `calls` may be left out).
MeshImport import_mesh_observed(const std::vector<ConfigFile>& files, const ConfigFile& metrics,
                                const std::optional<ConfigFile>& calls);

// The same with the call graph from a saved export of traces (Jaeger,
// Zipkin or OTLP JSON; docs/graph.md, "The call graph from traces").
MeshImport import_mesh_traced(const std::vector<ConfigFile>& files, const ConfigFile& traces,
                              const std::optional<ConfigFile>& calls);

// The text of `import --mesh`: each call's keys with where they came from.
std::string mesh_text(const MeshImport& m);

// A destination as the calls file names services: "orders" for
// "orders.shop.svc.cluster.local", "orders:8080", "http://orders" and
// "Orders" (the gRPC reader keeps the service of "shop.v1.Orders").
std::string service_of_host(const std::string& host);

}  // namespace retrystorm::configs
