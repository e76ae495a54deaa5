// Helpers shared by the configs_*_test.cpp suites: fixtures and the binary.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "systems/import.hpp"

namespace retrystorm::configs::testing {

// An Envoy cluster "backend" whose DEFAULT thresholds hold an HTTP/1
// connection pool; max_pending_requests is on line 7.
inline std::string envoy_pool_cluster(int connections, int pending) {
  return "static_resources:\n"
         "  clusters:\n"
         "  - name: backend\n"
         "    circuit_breakers:\n"
         "      thresholds:\n"
         "      - max_connections: " +
         std::to_string(connections) +
         "\n        max_pending_requests: " + std::to_string(pending) + "\n";
}

// The presets as export takes them: a graph's each call on its own
// (`export --call N`), named "preset calls[N]".
inline std::vector<Preset> exportable_presets() {
  std::vector<Preset> out;
  for (const Preset& p : presets()) {
    if (p.scenario.graph.empty()) {
      out.push_back(p);
      continue;
    }
    for (size_t i = 0; i < p.scenario.graph.calls.size(); ++i)
      out.push_back({p.name + " calls[" + std::to_string(i) + "]", p.description,
                     call_scenario(p.scenario, static_cast<int>(i))});
  }
  return out;
}

inline std::string fixture_path(const std::string& rel) {
  return std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/configs/" + rel;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline ConfigFile fixture(const std::string& rel) {
  return {rel, read_text(fixture_path(rel))};
}

// The value of one imported key (throws when absent).
inline KeyValue key(const ImportResult& r, const std::string& path) {
  for (const auto& k : r.keys)
    if (k.path == path) return k.value;
  throw std::runtime_error("no key " + path);
}
inline bool has_key(const ImportResult& r, const std::string& path) {
  for (const auto& k : r.keys)
    if (k.path == path) return true;
  return false;
}
inline double num(const ImportResult& r, const std::string& path) {
  return std::get<double>(key(r, path));
}
inline std::string str(const ImportResult& r, const std::string& path) {
  return std::get<std::string>(key(r, path));
}
inline bool flag(const ImportResult& r, const std::string& path) {
  return std::get<bool>(key(r, path));
}

struct BinRun {
  int status = -1;
  std::string out, err;
};

// Runs the retrystorm binary with `args` (already shell-quoted where needed).
inline BinRun run_bin(const std::string& args) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rs-configs-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  static int n = 0;
  std::string base = (dir / std::to_string(++n)).string();
  std::string cmd =
      std::string(RETRYSTORM_BIN) + " " + args + " >" + base + ".out 2>" + base + ".err";
  int rc = std::system(cmd.c_str());
  BinRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = read_text(base + ".out");
  r.err = read_text(base + ".err");
  return r;
}

}  // namespace retrystorm::configs::testing
