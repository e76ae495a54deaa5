// `analyze --emit-scenario`: the replay keys as a scenario file, nested the
// way the presets are written, each value with a comment saying its source.
#include <sstream>

#include "analysis/incident/replay.hpp"
#include "io/analyze_report.hpp"
#include "io/observed_report.hpp"

namespace retrystorm {

namespace {

std::vector<std::string> parts(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t dot; (dot = path.find('.', at)) != std::string::npos; at = dot + 1)
    out.push_back(path.substr(at, dot - at));
  out.push_back(path.substr(at));
  return out;
}

}  // namespace

std::string replay_keys_yaml(const std::vector<incident::ReplayKey>& keys) {
  std::ostringstream o;
  std::vector<std::string> open;
  for (const auto& key : keys) {
    auto p = parts(key.path);
    size_t same = 0;
    while (same < open.size() && same + 1 < p.size() && open[same] == p[same]) ++same;
    open.resize(same);
    for (size_t i = same; i + 1 < p.size(); ++i) {
      o << std::string(2 * i, ' ') << p[i] << ":\n";
      open.push_back(p[i]);
    }
    o << std::string(2 * (p.size() - 1), ' ') << p.back() << ": "
      << (key.text ? "\"" + key.value + "\"" : key.value)
      << (key.note.empty() ? "" : "  # " + key.note) << "\n";
  }
  return o.str();
}

std::string replay_yaml(const incident::Report& r) {
  std::ostringstream o;
  o << "# A replay of the analyzed incident for the session engine (retrystorm analyze\n"
       "# --emit-scenario). Run it: retrystorm run --scenario THIS_FILE\n";
  o << "name: replay\n";
  o << "description: \"The analyzed incident: " << r.sessions << " " << r.unit
    << " in the log, replayed with its demand, dependency timeline, deadline and ladder.\"\n";
  return o.str() + replay_keys_yaml(incident::replay_keys(r));
}

}  // namespace retrystorm
