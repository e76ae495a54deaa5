// What a run of a graph of services measured per service and per edge
// (docs/graph.md): amounts per step, and the one table that names each
// series for the JSON answer and the text report.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace retrystorm {

struct ServiceSeries {
  std::string name;
  bool serves = false;                 // has a server of its own
  std::vector<double> first_attempts;  // attempts arriving that are a call's first
  std::vector<double> retries;         // attempts arriving that are a retry
  std::vector<double> served;          // served while the caller still waited
  std::vector<double> late;            // served after the caller gave up
  std::vector<double> rejected;        // refused by a full queue (or answered at once)
  std::vector<double> shed;            // given-up attempts dropped from the queue
  std::vector<double> queue;           // attempts at the server at the step's end
  std::vector<double> failed;          // attempts that answered with a failure
};

struct EdgeSeries {
  std::string from, to;
  std::vector<double> calls;     // calls made on the edge (each one's first attempt)
  std::vector<double> retries;   // retries sent on the edge
  std::vector<double> timeouts;  // attempts the caller gave up on
  std::vector<double> failed;    // calls that failed after their retries
  std::vector<double> denied;    // retries the edge's budget refused
  std::vector<double> delayed;   // attempts (or calls) the incident's fault delayed
  std::vector<double> aborted;   // attempts (or calls) the incident's fault answered
  std::vector<double> paced;     // attempts the call's rate limiter held for a token
};

template <typename Record>
struct GraphField {
  std::string_view name;
  std::vector<double> Record::*member;
};

inline constexpr std::array<GraphField<ServiceSeries>, 8> kServiceFields = {{
    {"first_attempts", &ServiceSeries::first_attempts},
    {"retries", &ServiceSeries::retries},
    {"served", &ServiceSeries::served},
    {"late", &ServiceSeries::late},
    {"rejected", &ServiceSeries::rejected},
    {"shed", &ServiceSeries::shed},
    {"failed", &ServiceSeries::failed},
    {"queue", &ServiceSeries::queue},
}};

inline constexpr std::array<GraphField<EdgeSeries>, 8> kEdgeFields = {{
    {"calls", &EdgeSeries::calls},
    {"retries", &EdgeSeries::retries},
    {"timeouts", &EdgeSeries::timeouts},
    {"failed", &EdgeSeries::failed},
    {"denied", &EdgeSeries::denied},
    {"delayed", &EdgeSeries::delayed},
    {"aborted", &EdgeSeries::aborted},
    {"paced", &EdgeSeries::paced},
}};

// Per service and per edge, in the order the scenario lists them; empty
// for a scenario without a graph.
struct GraphResult {
  std::vector<ServiceSeries> services;
  std::vector<EdgeSeries> edges;
  bool empty() const { return services.empty(); }
};

}  // namespace retrystorm
