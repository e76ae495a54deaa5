// A graph of services in a scenario (docs/graph.md): what the reader checks
// of each service and call, the shape rules, and the scenarios each service
// and each edge run with (the scenario's own server and client blocks, with
// the service's or the edge's keys over them).
#pragma once

#include <string>
#include <vector>

#include "model/keys.hpp"
#include "model/scenario.hpp"

namespace retrystorm {

// The caller name of the entry call.
inline constexpr const char* kUserCaller = "user";

// Sets one key of a service ("slots") or a call ("retries", "backoff.base_s")
// into `settings`, checked against the key table under "server." or
// "client." (InputError naming `where` and the key).
void add_service_key(KeySettings& settings, const std::string& where, const std::string& key,
                     const KeyValue& value);
void add_call_key(KeySettings& settings, const std::string& where, const std::string& key,
                  const KeyValue& value);

// A key of one call or one service, as --set, a ladder row or a sweep names
// it: "calls[2].retries", "calls[0].backoff.base_s", "services.db.queue_limit".
bool is_graph_path(const std::string& path);
// Sets it (InputError naming the path when the call or service does not
// exist, or the key or value is not allowed).
void set_graph_key(Scenario& s, const std::string& path, const KeyValue& value);
// Its value: the one the call or service sets, else the scenario's.
KeyValue graph_key_value(const Scenario& s, const std::string& path);
// Its type, for reading its value from text.
KeyType graph_key_type(const std::string& path);

// The shape rules: unique service names, calls between known services, one
// call from the user, no cycle, every service reached, the worst case of
// attempts along each path within limits (InputError otherwise).
void validate_graph(const Scenario& s, const RunLimits& limits);

// The scenario a service's server runs with: s.server with its keys.
Scenario service_scenario(const Scenario& s, const GraphService& service);
// The scenario an edge's clients run with: s.client with its keys, one layer;
// only the entry call inherits client.deadline_s (the user's deadline).
Scenario edge_scenario(const Scenario& s, const GraphCall& call);

// One call of the graph as a scenario of its own, without the graph: the
// call's client over one layer, the callee's server when it has one, the
// call's own rate as demand (when nothing fails), named "NAME calls[N]"
// (export writes a real system's policy from it, lint lints it). InputError naming `key`
// (the flag or field that gave the index) and the range when `index` is not a call.
Scenario call_scenario(const Scenario& s, long long index, const std::string& key = "--call");

// Index of the service named `name` in s.graph.services, -1 when none.
int service_index(const Graph& g, const std::string& name);
// Each service's depth: the longest path of calls from the entry (the
// entry's callee is 0; -1 when unreached).
std::vector<int> service_depths(const Graph& g);
// The service the incident hits (incident.service; with a fault on a call,
// its callee when it has a server; else the deepest one with a server, the
// first by name among equals); -1 when no service has one.
int incident_service(const Scenario& s);
// Whether the incident's capacity drop and failure hit that service: always,
// unless the incident is a fault on a call and names no service.
bool incident_hits_service(const Scenario& s);
// The fault keys (incident.call, delay_s, abort_share): a fault needs a
// graph and a call in range, and must delay or abort (InputError naming the
// key otherwise).
void validate_call_fault(const Scenario& s);

// Attempts at each service per user request when every attempt fails and
// nothing is budgeted: the product of (retries + 1) x count along the paths,
// summed over the paths (the worst case lint reports).
std::vector<double> worst_case_attempts(const Scenario& s);
// The same when every attempt succeeds: the calls each service receives per
// user request (the product of `count` along the paths, summed).
std::vector<double> calls_per_request(const Scenario& s);
// A call's own rate when nothing fails: the users' demand times the calls its
// caller receives per user request (`per_request`, calls_per_request) times
// its count.
double call_rate_per_s(const Scenario& s, const GraphCall& call,
                       const std::vector<double>& per_request);

// The scenario as the incident's service sees it: its server, and the
// client of the first call to it (the figures that read one server and one
// client: the model bound, the decision trace).
Scenario dependency_view(const Scenario& s);

}  // namespace retrystorm
