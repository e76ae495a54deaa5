#include "app/configs.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "app/lint_simulation.hpp"
#include "formats/input_text.hpp"
#include "text/printable.hpp"

namespace retrystorm::app {

std::vector<configs::ConfigFile> read_config_files(const std::vector<std::string>& paths) {
  std::vector<configs::ConfigFile> files;
  for (const auto& p : paths) files.push_back({p, read_input_file(p, "file")});
  return files;
}

namespace {

constexpr size_t kMaxMeshFiles = 2000;
constexpr size_t kMaxMeshBytes = 64 << 20;  // all files together

// The names a folder's own calls file may have.
constexpr const char* kCallsFileNames[] = {"calls.yaml", "calls.yml", "calls.json"};

bool is_calls_file_name(const std::string& name) {
  return std::find(std::begin(kCallsFileNames), std::end(kCallsFileNames), name) !=
         std::end(kCallsFileNames);
}

bool mesh_extension(const std::filesystem::path& p) {
  static const std::set<std::string> kinds = {".yaml", ".yml", ".json", ".cfg", ".conf"};
  return kinds.count(p.extension().string()) > 0;
}

// The folder's calls file, when `calls` names none ("" when it has none and
// the metrics give the calls).
std::string default_calls_file(const std::filesystem::path& dir, bool needed) {
  for (const char* name : kCallsFileNames)
    if (std::filesystem::is_regular_file(dir / name)) return (dir / name).string();
  if (!needed) return "";
  throw InputError("--mesh " + dir.string() +
                   ": no calls.yaml in the folder; routing configuration does not say which "
                   "service calls which, so give the calls (docs/graph.md, \"From the mesh's "
                   "configuration\") in calls.yaml or with --calls FILE");
}

}  // namespace

MeshFolder read_mesh_folder(const std::string& dir, const std::string& calls,
                            const std::string& metrics, const std::string& traces) {
  return read_mesh_folder(dir, MeshSources{calls, metrics, traces, std::nullopt});
}

namespace {

// At most one source of the call graph besides the calls file.
void check_one_graph_source(const MeshSources& s) {
  int given = !s.metrics.empty() + !s.traces.empty() + s.prometheus.has_value();
  if (given > 1)
    throw InputError(
        "--calls-from-metrics, --calls-from-traces, --calls-from-prometheus: give the call "
        "graph's source once");
}

// The folder's configuration files, in path order, bounded in number and bytes
// before any is read; `skip` are the calls and graph files, never configuration.
std::vector<configs::ConfigFile> mesh_files(const std::string& dir,
                                            const std::vector<std::string>& skip);

}  // namespace

MeshFolder read_mesh_folder(const std::string& dir, const MeshSources& sources) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("--mesh " + dir + ": not a folder");
  check_one_graph_source(sources);
  const std::string &metrics = sources.metrics, &traces = sources.traces;
  bool elsewhere = !metrics.empty() || !traces.empty() || sources.prometheus;
  std::string calls_path =
      sources.calls.empty() ? default_calls_file(dir, !elsewhere) : sources.calls;
  MeshFolder out;
  if (!calls_path.empty())
    out.calls = configs::ConfigFile{calls_path, read_input_file(calls_path, "--calls")};
  if (!metrics.empty())
    out.metrics = configs::ConfigFile{metrics, read_input_file(metrics, "--calls-from-metrics")};
  if (!traces.empty())
    out.traces = configs::ConfigFile{traces, read_input_file(traces, "--calls-from-traces")};
  out.files = mesh_files(dir, {calls_path, metrics, traces});
  // Asked last: a folder that cannot be read costs no query.
  if (sources.prometheus) {
    CallRatesAnswer a = fetch_call_rates(*sources.prometheus);
    out.metrics = configs::ConfigFile{a.source, a.body};
  }
  return out;
}

namespace {

std::vector<configs::ConfigFile> mesh_files(const std::string& dir,
                                            const std::vector<std::string>& skip) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> paths;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw InputError("--mesh " + dir + ": " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw InputError("--mesh " + dir + ": " + ec.message());
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    // A link that leads nowhere (or in a loop) is no configuration file.
    bool regular = it->is_regular_file(ec);
    if (ec) {
      const std::string why = ec.message();
      if (fs::is_symlink(it->symlink_status(ec))) {
        ec.clear();
        continue;
      }
      throw InputError("--mesh " + dir + ": " + printable(it->path().string()) + ": " + why);
    }
    if (!regular || !mesh_extension(it->path())) continue;
    // The folder's own calls file is never a configuration file, even when
    // --calls names another.
    if (it.depth() == 0 && is_calls_file_name(name)) continue;
    if (std::any_of(skip.begin(), skip.end(), [&](const std::string& f) {
          return !f.empty() && fs::equivalent(it->path(), f, ec);
        }))
      continue;
    paths.push_back(it->path());
    if (paths.size() > kMaxMeshFiles)
      throw InputError("--mesh " + dir + ": more than " + std::to_string(kMaxMeshFiles) +
                       " configuration files; give a smaller folder");
  }
  std::sort(paths.begin(), paths.end());
  // The folder's size is checked before any file is read.
  uintmax_t bytes = 0;
  for (const fs::path& p : paths)
    if (uintmax_t n = fs::file_size(p, ec); !ec) bytes += n;
  if (bytes > kMaxMeshBytes)
    throw InputError("--mesh " + dir + ": more than " + std::to_string(kMaxMeshBytes >> 20) +
                     " MiB of configuration files; give a smaller folder");
  std::vector<configs::ConfigFile> files;
  for (const fs::path& p : paths)
    files.push_back({fs::relative(p, dir).generic_string(), read_input_file(p.string(), "--mesh")});
  return files;
}

}  // namespace

configs::MeshImport import_mesh_folder(const MeshFolder& folder) {
  if (folder.metrics)
    return configs::import_mesh_observed(folder.files, *folder.metrics, folder.calls);
  if (folder.traces) return configs::import_mesh_traced(folder.files, *folder.traces, folder.calls);
  return configs::import_mesh(folder.files, *folder.calls);
}

nlohmann::json import_json(const configs::ImportResult& r) {
  return {{"keys", configs::keys_flat(r.keys)}, {"warnings", r.warnings}, {"formats", r.formats}};
}

nlohmann::json import_details_json(const configs::ImportResult& r) {
  nlohmann::json j = import_json(r);
  j["scenario"] = configs::keys_object(r.keys);
  nlohmann::json from = nlohmann::json::object();
  for (const auto& k : r.keys) from[k.path] = k.from;
  j["from"] = from;
  return j;
}

nlohmann::json export_json(const configs::ExportResult& r) {
  const configs::SystemFacts& f = configs::facts(r.system);
  return {{"text", r.text}, {"notes", r.notes}, {"system", f.name}, {"extension", f.extension}};
}

configs::LintReport lint(const LintRequest& r) {
  // The scenario's own policy, as it is: no text written and read back.
  configs::LintReport report = r.files.empty() && r.scenario
                                   ? configs::lint_scenario(*r.scenario, r.source, r.options)
                                   : configs::lint_configs(r.files, r.options);  // none: refused
  if (r.options.simulate && r.budget)
    check_cost(lint_simulation_cost(report, r.options), r.budget->limits, "lint --simulate",
               r.budget->hint);
  if (r.options.simulate) report.simulation = simulate_lint(report, r.options);
  return report;
}

}  // namespace retrystorm::app
