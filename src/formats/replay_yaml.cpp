// `analyze --emit-scenario`: the replay keys as a scenario file, nested the
// way the presets are written, each value with a comment saying its source.
// yaml-cpp's emitter writes it, so a text value is always quoted and escaped.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

#include "analysis/incident/replay.hpp"
#include "formats/analyze_report.hpp"
#include "formats/observed_report.hpp"
#include "formats/scenario_io.hpp"

namespace retrystorm {

namespace {

using incident::ReplayKey;

std::vector<std::string> parts(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t dot; (dot = path.find('.', at)) != std::string::npos; at = dot + 1)
    out.push_back(path.substr(at, dot - at));
  out.push_back(path.substr(at));
  return out;
}

struct PathKey {
  std::vector<std::string> parts;
  const ReplayKey* key;
};

void emit_value(YAML::Emitter& out, const ReplayKey& k) {
  if (k.text) out << YAML::DoubleQuoted;
  out << k.value;
  if (!k.note.empty()) out << YAML::Comment(k.note);
}

// The keys below one section (`depth` parts in), in the order they first
// come: a section's keys stay together even when the list interleaves them.
void emit_section(YAML::Emitter& out, const std::vector<PathKey>& keys, size_t depth) {
  std::vector<std::string> done;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& name = keys[i].parts[depth];
    if (keys[i].parts.size() == depth + 1) {
      out << YAML::Key << name << YAML::Value;
      emit_value(out, *keys[i].key);
      continue;
    }
    if (std::find(done.begin(), done.end(), name) != done.end()) continue;
    done.push_back(name);
    std::vector<PathKey> inside;
    for (size_t j = i; j < keys.size(); ++j)
      if (keys[j].parts.size() > depth + 1 && keys[j].parts[depth] == name)
        inside.push_back(keys[j]);
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    emit_section(out, inside, depth + 1);
    out << YAML::EndMap;
  }
}

}  // namespace

std::string replay_keys_yaml(const std::vector<ReplayKey>& keys) {
  if (keys.empty()) return "";
  std::vector<PathKey> paths;
  for (const auto& k : keys) paths.push_back({parts(k.path), &k});
  YAML::Emitter out;
  out << YAML::BeginMap;
  emit_section(out, paths, 0);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string replay_yaml(const incident::Report& r) {
  std::ostringstream description;
  description << "The analyzed incident: " << r.sessions << " " << r.unit
              << " in the log, replayed with its demand, dependency timeline, deadline and ladder.";
  std::vector<ReplayKey> keys{{"name", "replay", false, ""},
                              {"description", description.str(), true, ""}};
  // What the log does not show of the retry policy: the scheduler incident's
  // baseline preset, which every scheduler preset shares.
  incident::ReplayFallback fallback{"the scheduler-normal-day preset",
                                    preset_or_throw("scheduler-normal-day").scenario};
  for (auto& k : incident::replay_keys(r, fallback)) keys.push_back(std::move(k));
  return "# A replay of the analyzed incident for the session engine (retrystorm analyze\n"
         "# --emit-scenario). Run it: retrystorm run --scenario THIS_FILE\n" +
         replay_keys_yaml(keys);
}

}  // namespace retrystorm
