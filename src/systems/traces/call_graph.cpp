#include "systems/traces/call_graph.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "formats/input_text.hpp"
#include "model/keys.hpp"

namespace retrystorm {

namespace {

using nlohmann::json;

constexpr size_t kMaxSpans = 2'000'000;

// One span as the three formats give it, times in the format's unit (0 when
// absent): microseconds, or OTLP's nanoseconds, so that the differences of
// Unix times keep their digits.
struct Span {
  std::string trace, id, parent, service;
  double start = 0, end = 0;
  bool shared = false;  // Zipkin: the server half of a span its client shares
};

// A string field (ids, names), or InputError naming the span's path.
std::string id_of(const json& span, const char* key, const std::string& where, bool needed) {
  auto it = span.find(key);
  if (it == span.end() || it->is_null()) {
    if (needed) throw InputError(where + ": no " + key);
    return "";
  }
  if (!it->is_string()) throw InputError(where + "." + key + ": must be a string");
  return it->get<std::string>();
}

// A field that is a string, else "" (a name compared, never an error).
std::string text_or_empty(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A time: a number, or a number in a string (OTLP's 64-bit nanoseconds); 0
// when absent.
double time_of(const json& span, const char* key, const std::string& where) {
  auto it = span.find(key);
  if (it == span.end() || it->is_null()) return 0;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string& t = it->get_ref<const std::string&>();
    if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos && t.size() <= 20)
      return std::stod(t);
  }
  throw InputError(where + "." + key + ": must be a number");
}

void add(std::vector<Span>& out, Span s, const std::string& what) {
  if (out.size() >= kMaxSpans)
    throw InputError(what + ": more than " + std::to_string(kMaxSpans) +
                     " spans; give a smaller export");
  out.push_back(std::move(s));
}

// Jaeger's JSON ({"data": [trace, ...]}, its query API's and its UI's
// export): each trace's spans name a process, whose serviceName is the
// service; the CHILD_OF reference is the parent (FOLLOWS_FROM is not a call).
void read_jaeger(const json& doc, std::vector<Span>& out, const std::string& what) {
  const json& data = doc["data"];
  if (!data.is_array()) throw InputError(what + ": data: must be a list of traces");
  for (size_t t = 0; t < data.size(); ++t) {
    std::string tw = what + ": data[" + std::to_string(t) + "]";
    const json& trace = data[t];
    if (!trace.is_object() || !trace.contains("spans") || !trace["spans"].is_array())
      throw InputError(tw + ": a trace needs spans");
    const json processes = trace.value("processes", json::object());
    for (size_t i = 0; i < trace["spans"].size(); ++i) {
      const json& span = trace["spans"][i];
      std::string where = tw + ".spans[" + std::to_string(i) + "]";
      if (!span.is_object()) throw InputError(where + ": must be an object");
      Span s;
      s.trace = id_of(span, "traceID", where, true);
      s.id = id_of(span, "spanID", where, true);
      std::string pid = id_of(span, "processID", where, true);
      const json* process =
          processes.is_object() && processes.contains(pid) ? &processes[pid] : nullptr;
      if (!process || !process->is_object())
        throw InputError(where + ": processID '" + pid + "' is not in the trace's processes");
      s.service = id_of(*process, "serviceName", tw + ".processes." + pid, true);
      if (span.contains("references") && span["references"].is_array())
        for (const json& ref : span["references"])
          if (ref.is_object() && text_or_empty(ref, "refType") == "CHILD_OF")
            s.parent = id_of(ref, "spanID", where + ".references", true);
      s.start = time_of(span, "startTime", where);
      s.end = s.start + time_of(span, "duration", where);
      add(out, std::move(s), what);
    }
  }
}

// Zipkin's v2 JSON: a list of spans, or a list of traces (its API's
// /api/v2/traces); localEndpoint.serviceName is the service.
void read_zipkin_span(const json& span, const std::string& where, std::vector<Span>& out,
                      const std::string& what) {
  if (!span.is_object()) throw InputError(where + ": must be an object");
  Span s;
  s.trace = id_of(span, "traceId", where, true);
  s.id = id_of(span, "id", where, true);
  s.parent = id_of(span, "parentId", where, false);
  const json& local = span.contains("localEndpoint") ? span["localEndpoint"] : json();
  if (!local.is_object()) throw InputError(where + ": no localEndpoint.serviceName");
  s.service = id_of(local, "serviceName", where + ".localEndpoint", true);
  s.start = time_of(span, "timestamp", where);
  s.end = s.start + time_of(span, "duration", where);
  s.shared = span.contains("shared") && span["shared"] == true;
  add(out, std::move(s), what);
}

void read_zipkin(const json& doc, std::vector<Span>& out, const std::string& what) {
  for (size_t t = 0; t < doc.size(); ++t) {
    std::string tw = what + ": [" + std::to_string(t) + "]";
    if (doc[t].is_array())
      for (size_t i = 0; i < doc[t].size(); ++i)
        read_zipkin_span(doc[t][i], tw + "[" + std::to_string(i) + "]", out, what);
    else
      read_zipkin_span(doc[t], tw, out, what);
  }
}

// The service.name attribute of an OTLP resource.
std::string otlp_service(const json& resource_spans, const std::string& where) {
  const json& attrs = resource_spans.contains("resource") && resource_spans["resource"].is_object()
                          ? resource_spans["resource"].value("attributes", json::array())
                          : json::array();
  if (attrs.is_array())
    for (const json& a : attrs)
      if (a.is_object() && text_or_empty(a, "key") == "service.name" && a.contains("value") &&
          a["value"].is_object())
        return id_of(a["value"], "stringValue", where + ".resource.attributes", true);
  throw InputError(where + ": no resource attribute service.name");
}

// OpenTelemetry's OTLP JSON (the collector's file exporter, a /v1/traces
// body): resourceSpans[].scopeSpans[].spans[], the service a resource
// attribute.
void read_otlp(const json& doc, std::vector<Span>& out, const std::string& what) {
  const json& resources = doc["resourceSpans"];
  if (!resources.is_array()) throw InputError(what + ": resourceSpans: must be a list");
  for (size_t r = 0; r < resources.size(); ++r) {
    std::string rw = what + ": resourceSpans[" + std::to_string(r) + "]";
    if (!resources[r].is_object()) throw InputError(rw + ": must be an object");
    std::string service = otlp_service(resources[r], rw);
    const char* scopes_key =
        resources[r].contains("scopeSpans") ? "scopeSpans" : "instrumentationLibrarySpans";
    const json scopes = resources[r].value(scopes_key, json::array());
    for (size_t k = 0; scopes.is_array() && k < scopes.size(); ++k) {
      const json spans = scopes[k].is_object() ? scopes[k].value("spans", json::array()) : json();
      if (!spans.is_array()) throw InputError(rw + "." + scopes_key + ": spans must be a list");
      for (size_t i = 0; i < spans.size(); ++i) {
        std::string where =
            rw + "." + scopes_key + "[" + std::to_string(k) + "].spans[" + std::to_string(i) + "]";
        if (!spans[i].is_object()) throw InputError(where + ": must be an object");
        Span s;
        s.trace = id_of(spans[i], "traceId", where, true);
        s.id = id_of(spans[i], "spanId", where, true);
        s.parent = id_of(spans[i], "parentSpanId", where, false);
        s.service = service;
        s.start = time_of(spans[i], "startTimeUnixNano", where);
        s.end = time_of(spans[i], "endTimeUnixNano", where);
        add(out, std::move(s), what);
      }
    }
  }
}

// The spans of the text, the format's name and its unit of time in seconds.
std::vector<Span> read_spans(const std::string& body, const std::string& what, std::string& format,
                             double& unit) {
  json doc = parse_json_text(body, what);
  std::vector<Span> spans;
  if (doc.is_object() && doc.contains("data")) {
    format = "Jaeger";
    unit = 1e-6;
    read_jaeger(doc, spans, what);
  } else if (doc.is_object() && doc.contains("resourceSpans")) {
    format = "OpenTelemetry (OTLP JSON)";
    unit = 1e-9;
    read_otlp(doc, spans, what);
  } else if (doc.is_array()) {
    format = "Zipkin";
    unit = 1e-6;
    read_zipkin(doc, spans, what);
  } else {
    throw InputError(what +
                     ": not a trace export; give Jaeger's JSON ({\"data\": [...]}), Zipkin's v2 "
                     "JSON (a list of spans or of traces) or OTLP JSON ({\"resourceSpans\": ...})");
  }
  if (spans.empty()) throw InputError(what + ": no spans");
  return spans;
}

constexpr size_t kNone = static_cast<size_t>(-1);

// Each span's parent in the file (kNone: a root, or a parent the file does
// not hold); a Zipkin shared span's parent is the client half of its id.
std::vector<size_t> parents_of(const std::vector<Span>& spans, size_t& orphans) {
  std::unordered_map<std::string, size_t> index;
  auto key = [](const std::string& trace, const std::string& id) { return trace + '\x1f' + id; };
  for (size_t i = 0; i < spans.size(); ++i)
    if (!spans[i].shared) index.emplace(key(spans[i].trace, spans[i].id), i);
  std::vector<size_t> parent(spans.size(), kNone);
  orphans = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    const std::string& p = spans[i].shared ? spans[i].id : spans[i].parent;
    if (p.empty()) continue;
    auto it = index.find(key(spans[i].trace, p));
    if (it != index.end() && it->second != i)
      parent[i] = it->second;
    else
      ++orphans;
  }
  return parent;
}

bool is_visit(const std::vector<Span>& spans, const std::vector<size_t>& parent, size_t i) {
  return parent[i] == kNone || spans[parent[i]].service != spans[i].service;
}

// The visit a span belongs to: itself or its nearest ancestor that is a
// visit. InputError for a cycle of parents.
size_t visit_of(const std::vector<Span>& spans, const std::vector<size_t>& parent, size_t i,
                const std::string& what) {
  for (size_t steps = 0; steps <= spans.size(); ++steps) {
    if (is_visit(spans, parent, i)) return i;
    i = parent[i];
  }
  throw InputError(what + ": the parents of trace " + spans[i].trace + " make a cycle");
}

// Whether most visits of each service with two calls or more overlap them.
std::map<std::string, std::string> patterns_of(
    const std::vector<Span>& spans,
    std::map<size_t, std::vector<std::pair<double, double>>> calls) {
  std::map<std::string, std::pair<int, int>> seen;  // service -> (overlapping, with 2+ calls)
  for (auto& [visit, times] : calls) {
    if (times.size() < 2) continue;
    std::sort(times.begin(), times.end());
    bool overlap = false;
    double end = times[0].second;
    for (size_t k = 1; k < times.size(); ++k) {
      overlap = overlap || times[k].first < end;
      end = std::max(end, times[k].second);
    }
    auto& [overlapping, counted] = seen[spans[visit].service];
    overlapping += overlap;
    ++counted;
  }
  std::map<std::string, std::string> out;
  for (const auto& [service, n] : seen)
    if (2 * n.first > n.second) out[service] = "parallel";
  return out;
}

}  // namespace

ObservedCalls read_traced_calls(const std::string& body, const std::string& what) {
  std::string format;
  double unit = 1;
  std::vector<Span> spans = read_spans(body, what, format, unit);
  size_t orphans = 0;
  std::vector<size_t> parent = parents_of(spans, orphans);
  std::map<std::pair<std::string, std::string>, double> counts;
  std::map<size_t, std::vector<std::pair<double, double>>> calls;  // caller visit -> call times
  double first = spans[0].start, last = spans[0].end;
  for (size_t i = 0; i < spans.size(); ++i) {
    first = std::min(first, spans[i].start);
    last = std::max(last, spans[i].end);
    if (!is_visit(spans, parent, i)) continue;
    if (parent[i] == kNone) {
      counts[{"", spans[i].service}] += 1;
      continue;
    }
    counts[{spans[parent[i]].service, spans[i].service}] += 1;
    calls[visit_of(spans, parent, parent[i], what)].push_back({spans[i].start, spans[i].end});
  }
  double window = last - first > 0 ? (last - first) * unit : 1;
  ObservedCalls out;
  out.source = "traces";
  std::map<std::string, bool> traces;
  for (const Span& s : spans) traces[s.trace] = true;
  out.labels = format + " spans' services and parents (" + std::to_string(traces.size()) +
               " traces, " + std::to_string(spans.size()) + " spans" +
               (orphans ? ", " + std::to_string(orphans) +
                              " whose parent is not in the file, read as calls from outside"
                        : std::string()) +
               ")";
  for (const auto& [pair, n] : counts) out.calls.push_back({pair.first, pair.second, n / window});
  out.patterns = patterns_of(spans, std::move(calls));
  return out;
}

}  // namespace retrystorm
