#include "systems/mesh/observed.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "model/graph.hpp"
#include "model/keys.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {

using nlohmann::json;

namespace {

using Edges = std::map<std::pair<std::string, std::string>, double>;  // (from, to) -> rate

std::string rate_text(double r) {
  return number_text(std::round(r * 1000) / 1000) + "/s";
}

// The observed calls between services of the mesh (self calls left out) and
// those from outside it, by callee.
void split_calls(const ObservedCalls& seen, Edges& inside, std::map<std::string, double>& outside,
                 const std::string& what, std::vector<std::string>& warnings) {
  for (const ObservedCall& c : seen.calls) {
    if (c.to.empty())
      warnings.push_back(what + ": " + (c.from.empty() ? "unknown" : c.from) +
                         " calls outside the mesh (" + rate_text(c.rate_per_s) + "); left out");
    else if (c.from.empty())
      outside[c.to] += c.rate_per_s;
    else if (c.from == c.to)
      warnings.push_back(what + ": " + c.from + " calls itself (" + rate_text(c.rate_per_s) +
                         "); a graph has no cycle, left out");
    else
      inside[{c.from, c.to}] += c.rate_per_s;
  }
}

// The service the user's requests enter: the calls file's call from the
// user, else the busiest callee of callers outside the mesh, else the one
// caller nobody calls.
std::string entry_service(const json* calls_doc, const Edges& inside,
                          const std::map<std::string, double>& outside, const std::string& what) {
  if (calls_doc)
    for (const json& c : (*calls_doc)["calls"])
      if (c.value("from", "") == kUserCaller) return c.value("to", "");
  if (!outside.empty())
    return std::max_element(outside.begin(), outside.end(),
                            [](const auto& a, const auto& b) { return a.second < b.second; })
        ->first;
  std::set<std::string> callers, callees, roots;
  for (const auto& [pair, rate] : inside) {
    callers.insert(pair.first);
    callees.insert(pair.second);
  }
  for (const std::string& c : callers)
    if (!callees.count(c)) roots.insert(c);
  if (roots.size() == 1) return *roots.begin();
  std::string names;
  for (const std::string& r : roots) names += (names.empty() ? "" : ", ") + r;
  throw InputError(what +
                   (roots.empty() ? ": every caller is also called, so no service is the entry"
                                  : ": several services nobody calls (" + names + ")") +
                   "; name the entry in a calls file, as a call from user");
}

// The entry's rate: the user's calls into it, else its busiest call (which
// each user request is then taken to make once), with a warning.
double entry_rate(const std::string& entry, const Edges& inside,
                  const std::map<std::string, double>& outside, const std::string& what,
                  std::vector<std::string>& warnings) {
  if (auto it = outside.find(entry); it != outside.end() && it->second > 0) return it->second;
  double busiest = 0;
  for (const auto& [pair, rate] : inside)
    if (pair.first == entry) busiest = std::max(busiest, rate);
  if (busiest <= 0)
    throw InputError(what + ": no rate into or out of the entry " + entry +
                     "; give demand.rate_per_s and the entry's calls in a calls file");
  warnings.push_back(
      what + ": no requests into " + entry +
      " from outside the mesh; each user request is taken to be one call to its busiest callee (" +
      rate_text(busiest) + ")");
  return busiest;
}

// The observed calls reached from the entry, breadth first, each caller's by
// callee name; the rest are warned and left out.
std::vector<std::pair<std::string, std::string>> reached_calls(const std::string& entry,
                                                               const Edges& inside,
                                                               const std::string& what,
                                                               std::vector<std::string>& warnings) {
  std::vector<std::pair<std::string, std::string>> order;
  std::vector<std::string> todo{entry};
  std::set<std::string> seen{entry};
  for (size_t k = 0; k < todo.size(); ++k)
    for (const auto& [pair, rate] : inside)
      if (pair.first == todo[k]) {
        order.push_back(pair);
        if (seen.insert(pair.second).second) todo.push_back(pair.second);
      }
  for (const auto& [pair, rate] : inside)
    if (!seen.count(pair.first))
      warnings.push_back(what + ": " + pair.first + " -> " + pair.second + " (" + rate_text(rate) +
                         ") is not reached from the entry " + entry + "; left out");
  return order;
}

// A call's count: its rate over its caller's arrivals, a whole number of at
// least 1 (the model makes a call on every request), warned when rounded far.
int call_count(const std::pair<std::string, std::string>& call, double rate, double arrivals,
               const std::string& what, std::vector<std::string>& warnings) {
  double per_request = arrivals > 0 ? rate / arrivals : 1;
  int count = std::max(1, static_cast<int>(std::lround(per_request)));
  if (std::fabs(per_request - count) > 0.1 * count)
    warnings.push_back(what + ": " + call.first + " -> " + call.second + " is " +
                       number_text(std::round(per_request * 100) / 100) + " calls per request at " +
                       call.first + " (" + rate_text(rate) + " over " + rate_text(arrivals) +
                       "), taken as " + std::to_string(count) +
                       ": in the model, every request makes its calls");
  return count;
}

// The calls file's keys over the observed calls; its calls not observed are
// kept, with a warning.
json merge_calls(json observed, const json* calls_doc, const std::string& what,
                 const std::string& source, std::vector<std::string>& warnings) {
  if (!calls_doc) return observed;
  for (const json& given : (*calls_doc)["calls"]) {
    std::string from = given.value("from", ""), to = given.value("to", "");
    auto it = std::find_if(observed.begin(), observed.end(),
                           [&](const json& c) { return c["from"] == from && c["to"] == to; });
    if (it != observed.end()) {
      it->update(given);
      continue;
    }
    warnings.push_back(what + ": " + from + " -> " + to + " is not in the " + source +
                       "; kept as the calls file gives it");
    observed.push_back(given);
  }
  return observed;
}

}  // namespace

json calls_from_observed(const ObservedCalls& seen, const json* calls_doc, const std::string& what,
                         std::vector<std::string>& warnings) {
  Edges inside;
  std::map<std::string, double> outside;
  split_calls(seen, inside, outside, what, warnings);
  std::string entry = entry_service(calls_doc, inside, outside, what);
  double rate = entry_rate(entry, inside, outside, what, warnings);
  for (const auto& [callee, r] : outside)
    if (callee != entry)
      warnings.push_back(what + ": " + rate_text(r) + " from outside the mesh into " + callee +
                         " left out: a graph has one entry, " + entry);
  std::vector<std::pair<std::string, std::string>> order =
      reached_calls(entry, inside, what, warnings);
  std::map<std::string, double> arrivals{{entry, rate}};
  for (const auto& call : order)
    if (call.second != entry) arrivals[call.second] += inside.at(call);
  json calls = json::array({{{"from", kUserCaller}, {"to", entry}}});
  for (const auto& call : order)
    calls.push_back(
        {{"from", call.first},
         {"to", call.second},
         {"count", call_count(call, inside.at(call), arrivals[call.first], what, warnings)}});
  json doc = calls_doc ? *calls_doc : json::object();
  doc["calls"] = merge_calls(calls, calls_doc, what, seen.source, warnings);
  // The patterns the source saw, unless the calls file gives the service's.
  for (const auto& [service, pattern] : seen.patterns) {
    if (!arrivals.count(service)) continue;  // not reached: left out above
    json& s = doc["services"][service];
    if (s.is_null()) s = json::object();
    if (s.is_object() && !s.contains("pattern")) s["pattern"] = pattern;
  }
  if (!doc.contains("demand") || !doc["demand"].is_object()) doc["demand"] = json::object();
  if (!doc["demand"].contains("rate_per_s"))
    doc["demand"]["rate_per_s"] = std::round(rate * 1000) / 1000;
  return doc;
}

}  // namespace retrystorm::configs
