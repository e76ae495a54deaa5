// Kubernetes workloads given beside a retry configuration: how many client
// instances run (docs/configs.md, "How many client instances"). Per-instance
// budget amounts (Envoy's cap, gRPC tokens, AWS quota, Linkerd's reserve)
// scale by this number, so lint reads it instead of assuming one.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace retrystorm::configs {

// A number of client instances and where it came from.
struct Instances {
  double count = 1;
  std::string from;      // "deploy.yaml:6: spec.replicas: 12 (Deployment checkout)"
  std::string workload;  // metadata.name: "checkout"
};

// Whether a YAML document is a workload whose pods would be the clients:
// Deployment, StatefulSet, ReplicaSet or DaemonSet.
bool is_workload(const YAML::Node& doc);

// The instances a workload document runs: spec.replicas (Kubernetes starts
// 1 when it is left out). A DaemonSet runs one per node, which no file says:
// nullopt, with a warning asking for --instances.
std::optional<Instances> read_workload(const YAML::Node& doc, const std::string& file,
                                       std::vector<std::string>& warnings);

// The workloads among `docs`, taken out: the instances of each, in order.
std::vector<Instances> take_workloads(std::vector<YAML::Node>& docs, const std::string& file,
                                      std::vector<std::string>& warnings);

}  // namespace retrystorm::configs
