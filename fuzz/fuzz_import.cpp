// libFuzzer target for the configuration importers (src/systems).
// The format comes from FUZZ_FORMAT (envoy, grpc, istio, linkerd, aws,
// haproxy, nginx, retrystorm; "detect" runs the detection too; "scenario" reads the input as a
// scenario file, JSON or YAML, as `run --scenario` does; "mesh" reads the input as the calls
// file of `import --mesh` over a small folder of Istio, gRPC and Kubernetes files;
// "call_rates" reads it as the Prometheus answer of `--calls-from-metrics` over that
// folder, with a calls file that gives a capacity; "traces" as the export of
// `--calls-from-traces` the same way). Bad input
// must end in
// InputError; anything else (a crash, another exception, a sanitizer
// report) is a bug. Each accepted input is also applied to a scenario and
// exported to every system, and linted.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "formats/scenario_io.hpp"
#include "model/keys.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"
#include "systems/lint.hpp"
#include "systems/mesh/mesh.hpp"

namespace {
std::string format = "detect";

// The folder the fuzzed calls files describe: callees "orders" and "db".
const std::vector<retrystorm::configs::ConfigFile> kMeshFolder = {
    {"orders-vs.yaml",
     "kind: VirtualService\napiVersion: networking.istio.io/v1\nmetadata: {name: orders}\n"
     "spec:\n  hosts: [orders.shop.svc.cluster.local]\n  http:\n  - route:\n    - "
     "destination: {host: orders}\n    retries: {attempts: 2, perTryTimeout: 1s}\n"},
    {"db.json",
     "{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Db\"}], \"timeout\": \"0.8s\", "
     "\"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"0.1s\", \"maxBackoff\": "
     "\"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}"},
    {"deploy.yaml",
     "kind: Deployment\napiVersion: apps/v1\nmetadata: {name: gateway}\n"
     "spec: {replicas: 3}\n"},
    {"service.yaml", "kind: Service\napiVersion: v1\nmetadata: {name: orders}\n"}};
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* f = std::getenv("FUZZ_FORMAT")) format = f;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace retrystorm;
  using namespace retrystorm::configs;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  if (format == "mesh") {
    try {
      configs::MeshImport m = configs::import_mesh(kMeshFolder, {"calls.yaml", text});
      configs::mesh_text(m);
      scenario_from_json(m.document);  // what we write, we read back
    } catch (const InputError&) {
    }
    return 0;
  }
  if (format == "call_rates") {
    try {
      configs::MeshImport m = configs::import_mesh_observed(
          kMeshFolder, {"rates.json", text},
          configs::ConfigFile{"calls.yaml", "services: {db: {capacity_per_s: 500}}\n"});
      configs::mesh_text(m);
      scenario_from_json(m.document);
    } catch (const InputError&) {
    }
    return 0;
  }
  if (format == "traces") {
    try {
      configs::MeshImport m = configs::import_mesh_traced(
          kMeshFolder, {"traces.json", text},
          configs::ConfigFile{"calls.yaml", "services: {db: {capacity_per_s: 500}}\n"});
      configs::mesh_text(m);
      scenario_from_json(m.document);
    } catch (const InputError&) {
    }
    return 0;
  }
  if (format == "scenario") {
    try {
      std::vector<std::string> given;
      Scenario s = scenario_from_text(text, "fuzz", &given);
      validate(s);
      ignored_keys(s, given);
      scenario_from_json(scenario_to_json(s));  // what we write, we read back
    } catch (const InputError&) {
    }
    return 0;
  }
  try {
    ConfigFile f{"fuzz", text};
    LayerPolicy l = import_file(f, warnings, format == "detect" ? "" : format);
    ImportResult r = import_configs({f, f}, false);  // a stack of two, ranges unchecked
    Scenario s;
    try {
      apply_keys(s, l.keys);
    } catch (const InputError&) {
      return 0;  // a value the model's key table refuses (named in the message)
    }
    for (const auto& system : export_systems()) {
      ExportResult e = export_config(s, system);
      if (system == "grpc") continue;
      // What we write, we read back.
      std::vector<std::string> w2;
      import_file({"export", e.text}, w2, system);
    }
    lint_configs({f});
  } catch (const InputError&) {
  }
  return 0;
}
