// The reports of `analyze --prometheus` (docs/prometheus.md): text, JSON, and
// the replay scenario as YAML. Views of incident::ObservedReport.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/incident/observed.hpp"

namespace retrystorm {

struct ObservedSource {
  std::string url;
  std::string mapping;  // "envoy", ..., or the --metrics file
  double start_unix_s = 0;
  double step_s = 1;
};

std::string observed_text(const incident::ObservedReport& r, const ObservedSource& src);
nlohmann::json observed_json(const incident::ObservedReport& r, const ObservedSource& src);
// The replay keys as a scenario file, each value with a comment saying its source.
std::string observed_replay_yaml(const incident::ObservedReport& r,
                                 const incident::ObservedOptions& o);

// The keys as a scenario file nested the way presets are written (shared
// with the log replay, src/formats/replay_yaml.cpp).
std::string replay_keys_yaml(const std::vector<incident::ReplayKey>& keys);

}  // namespace retrystorm
