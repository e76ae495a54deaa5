// The per-system readers behind import_file(); internal to src/io/configs.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "io/configs/common.hpp"
#include "io/configs/import.hpp"

namespace retrystorm::configs {

// Collects warnings about one file: unknown fields and ignored settings.
struct Reader {
  std::string file;
  std::vector<std::string>& warnings;
  LayerPolicy& layer;

  void warn(const Where& w, const std::string& message) const {
    warnings.push_back(w.text() + ": " + message);
  }
  // Warns about every key of `map` not in `known` (the map's own path `key`).
  void check_fields(const YAML::Node& map, const std::string& key,
                    std::initializer_list<const char*> known, bool snake = false) const;
};

std::string key_of(const YAML::Node& k);

void read_envoy(const std::vector<YAML::Node>& docs, Reader& r);
void read_grpc(const std::vector<YAML::Node>& docs, Reader& r);
void read_istio(const std::vector<YAML::Node>& docs, Reader& r);
void read_linkerd(const std::vector<YAML::Node>& docs, Reader& r);
void read_aws(const std::string& text, Reader& r);
void read_policy(const std::vector<YAML::Node>& docs, Reader& r);

}  // namespace retrystorm::configs
