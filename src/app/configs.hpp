// The configuration commands (import, export, lint; docs/configs.md), one way
// for every front end: the command line and the Python package read files by
// path, the HTTP API receives their texts; each writes the answers below.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "systems/export.hpp"
#include "systems/import.hpp"
#include "systems/lint.hpp"
#include "systems/mesh/mesh.hpp"
#include "systems/prometheus/client.hpp"

namespace retrystorm::app {

// The files at `paths`, read; InputError naming one that cannot be.
std::vector<configs::ConfigFile> read_config_files(const std::vector<std::string>& paths);

// A mesh's folder (import --mesh, lint --mesh): its configuration files
// (.yaml, .yml, .json, .cfg, .conf; hidden entries left out), named by their
// path in the folder, the calls file (`calls` when given, else the folder's
// calls.yaml, calls.yml or calls.json; needed unless `metrics` names a saved
// Prometheus answer of the call rates) and that answer. InputError naming the path.
struct MeshFolder {
  std::vector<configs::ConfigFile> files;
  std::optional<configs::ConfigFile> calls;
  std::optional<configs::ConfigFile> metrics;
  std::optional<configs::ConfigFile> traces;
};
MeshFolder read_mesh_folder(const std::string& dir, const std::string& calls = "",
                            const std::string& metrics = "", const std::string& traces = "");
// Where a mesh's call graph comes from besides its calls file: at most one of a
// saved Prometheus answer, a saved export of traces, or a live Prometheus
// asked at once (its answer becomes the folder's `metrics`, named by the
// query; docs/graph.md, "The call graph from Prometheus").
struct MeshSources {
  std::string calls, metrics, traces;
  std::optional<LiveCallRates> prometheus;
};
MeshFolder read_mesh_folder(const std::string& dir, const MeshSources& sources);
// The graph of the folder: from its metrics or its traces when given, else
// its calls file.
configs::MeshImport import_mesh_folder(const MeshFolder& folder);

// The answer of POST /api/import: keys (flat), formats, warnings.
nlohmann::json import_json(const configs::ImportResult& r);
// The same with the scenario object (nested, as `import --format json`
// writes it) and where each key came from: the Python package's answer.
nlohmann::json import_details_json(const configs::ImportResult& r);

// The answer of POST /api/export/{system} and the Python package: text, notes.
nlohmann::json export_json(const configs::ExportResult& r);

struct LintRequest {
  std::vector<configs::ConfigFile> files;  // stacked layers, outermost first
  // Without files: this scenario's own client policy, named `source` in findings.
  std::optional<Scenario> scenario;
  std::string source;
  configs::LintOptions options;
  // With --simulate: the runs are priced against it first (the server's);
  // none: the command line's, whose user asked for the work.
  std::optional<CostBudget> budget;
};

// Lints the files, else the scenario's policy; InputError when given neither.
configs::LintReport lint(const LintRequest& r);

}  // namespace retrystorm::app
