#include "io/envoy_export.hpp"

#include "io/configs/export.hpp"

namespace retrystorm {

// The same writer as `retrystorm export --to envoy` (src/io/configs/export.cpp).
std::string envoy_yaml(const Scenario& s) {
  return configs::export_config(s, "envoy").text;
}

}  // namespace retrystorm
