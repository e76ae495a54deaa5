// The per-system readers behind import_file(); internal to src/systems.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "systems/common.hpp"
#include "systems/import.hpp"

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
  // The warning check_fields gives for field `k` of the map at `key`.
  void unknown_field(const std::string& key, const std::string& k, const YAML::Node& at_node,
                     std::initializer_list<const char*> known) const;
};

// How a file's count field counts: retries after the first attempt
// (Envoy's num_retries) or attempts, the first included (AWS max_attempts).
enum class Counted { retries, attempts };

// The most retries per layer the model runs: client.retries's maximum.
int model_retry_cap();

// The layer's retries as the model runs them: every importer's one cap.
// Above model_retry_cap(), the cap, with a warning at `w` worded as the file
// counts, saying what the simulation then misses; r.layer.uncapped_retries
// set (lint's retries-above-model-cap) and the cap added to
// r.layer.from["client.retries"], so set that first.
int model_retries(long long retries, const Where& w, const Reader& r,
                  Counted counted = Counted::retries);

std::string key_of(const YAML::Node& k);
// The field `snake` of a protobuf-JSON map, spelled snake_case or camelCase
// (proto3 JSON reads either); a missing node when absent or not a map.
YAML::Node proto_field(const YAML::Node& map, const std::string& snake);

void read_envoy(const std::vector<YAML::Node>& docs, Reader& r);
void read_grpc(const std::vector<YAML::Node>& docs, Reader& r);
void read_istio(const std::vector<YAML::Node>& docs, Reader& r);
void read_linkerd(const std::vector<YAML::Node>& docs, Reader& r);
void read_aws(const std::string& text, Reader& r);
// Proxy configuration text, each with its own small tokenizer (bounded, errors
// "FILE:LINE: what"): systems/haproxy/import.cpp, systems/nginx/import.cpp.
void read_haproxy(const std::string& text, Reader& r);
void read_nginx(const std::string& text, Reader& r);
// Whether the first setting of the text looks like the format (detection).
bool looks_like_haproxy(const std::string& text);
bool looks_like_nginx(const std::string& text);
void read_policy(const std::vector<YAML::Node>& docs, Reader& r);

}  // namespace retrystorm::configs
