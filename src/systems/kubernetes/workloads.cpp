#include "systems/kubernetes/workloads.hpp"

#include "systems/common.hpp"

namespace retrystorm::configs {

namespace {

std::string kind_of(const YAML::Node& doc) {
  return doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() ? doc["kind"].Scalar() : "";
}

std::string metadata_name(const YAML::Node& doc) {
  const YAML::Node meta = doc["metadata"];
  return meta && meta.IsMap() && meta["name"] && meta["name"].IsScalar() ? meta["name"].Scalar()
                                                                         : "";
}

std::string name_of(const YAML::Node& doc) {
  std::string name = metadata_name(doc);
  return name.empty() ? kind_of(doc) : kind_of(doc) + " " + name;
}

}  // namespace

bool is_workload(const YAML::Node& doc) {
  std::string kind = kind_of(doc);
  return kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet" ||
         kind == "DaemonSet";
}

std::optional<Instances> read_workload(const YAML::Node& doc, const std::string& file,
                                       std::vector<std::string>& warnings) {
  std::string name = name_of(doc);
  if (kind_of(doc) == "DaemonSet") {
    warnings.push_back(at(file, "kind", doc["kind"]).text() + ": " + name +
                       " runs one instance per node, and how many nodes cannot be known from "
                       "the file; give lint --instances N");
    return std::nullopt;
  }
  const YAML::Node spec = doc["spec"];
  if (spec && !spec.IsMap()) fail(at(file, "spec", spec), "must be an object");
  const YAML::Node replicas = spec ? spec["replicas"] : missing();
  if (!replicas)
    return Instances{1,
                     at(file, "spec", spec ? spec : doc).text() + ": replicas of " + name +
                         " left out, so Kubernetes runs 1 (an autoscaler may run more)",
                     metadata_name(doc)};
  Where w = at(file, "spec.replicas", replicas);
  long long n = whole(replicas, w, 0, 10'000'000);
  if (n == 0) {
    warnings.push_back(w.text() + ": " + name +
                       " has 0 replicas, so none of its pods call anything; read as 1 instance");
    n = 1;
  }
  return Instances{static_cast<double>(n), w.text() + ": " + std::to_string(n) + " of " + name,
                   metadata_name(doc)};
}

std::vector<Instances> take_workloads(std::vector<YAML::Node>& docs, const std::string& file,
                                      std::vector<std::string>& warnings) {
  std::vector<Instances> found;
  std::vector<YAML::Node> rest;
  for (const YAML::Node& d : docs) {
    if (!is_workload(d))
      rest.push_back(d);
    else if (std::optional<Instances> i = read_workload(d, file, warnings))
      found.push_back(*i);
  }
  docs = std::move(rest);
  return found;
}

}  // namespace retrystorm::configs
