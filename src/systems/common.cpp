#include "systems/common.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "formats/input_text.hpp"
#include "text/ascii.hpp"
#include "text/clock.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {

namespace {

YAML::Node json_to_yaml(const nlohmann::json& j) {
  if (j.is_object()) {
    YAML::Node n(YAML::NodeType::Map);
    for (const auto& [k, v] : j.items()) n[k] = json_to_yaml(v);
    return n;
  }
  if (j.is_array()) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& v : j) n.push_back(json_to_yaml(v));
    return n;
  }
  if (j.is_null()) return YAML::Node(YAML::NodeType::Null);
  if (j.is_string()) return YAML::Node(j.get<std::string>());
  return YAML::Node(j.dump());
}

}  // namespace

std::string Where::text() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  if (!key.empty()) out += ": " + key;
  return out;
}

int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

Where at(const std::string& file, const std::string& key, const YAML::Node& n) {
  return {file, key, line_of(n)};
}

void fail(const Where& w, const std::string& message) {
  throw InputError(w.text() + ": " + message);
}

std::vector<std::string> document_texts(const std::string& text) {
  // Documents are split here, not by YAML::LoadAll: yaml-cpp 0.7's LoadAll
  // loops forever on some malformed input (found by fuzzing), Load does not.
  // Each document keeps its line numbers: the lines before it become empty.
  std::vector<std::string> chunks(1);
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string l = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    bool separator =
        l.rfind("---", 0) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    if (separator) {
      chunks.push_back(std::string(static_cast<size_t>(line), '\n') + l.substr(3) + "\n");
    } else {
      chunks.back() += l + "\n";
    }
    ++line;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return chunks;
}

namespace {

std::string child_key(const std::string& path, const YAML::Node& key) {
  std::string k = key.IsScalar() ? key.Scalar() : "?";
  return path.empty() ? k : path + "." + k;
}

// One expansion of a document's merge keys (expand_merge_keys).
struct MergeExpansion {
  const std::string& file;
  std::vector<std::string>* warnings;
  size_t values = 0;  // nodes visited: aliases make a node count each time

  // Every map below `n` first, so that a map merged in has its own merges
  // expanded (maps shared through aliases are expanded once, in place).
  void walk(const YAML::Node& n, const std::string& path, int depth) {
    if (depth > kMaxNesting) fail(at(file, path, n), "nested too deep");
    if (++values > kMaxValues)
      fail(at(file, path, n),
           "expands to more than " + std::to_string(kMaxValues) + " values (aliases, merge keys?)");
    if (n.IsSequence()) {
      size_t i = 0;
      for (const auto& item : n) walk(item, path + "[" + std::to_string(i++) + "]", depth + 1);
      return;
    }
    if (!n.IsMap()) return;
    bool merges = false;
    for (const auto& kv : n) {
      walk(kv.second, child_key(path, kv.first), depth + 1);
      merges = merges || is_merge_key(kv.first);
    }
    if (merges) expand(n, path);
  }

  // The maps a `<<` merges, in the order go-yaml v2 sets them: a list's
  // backwards, so that the earlier one wins.
  std::vector<YAML::Node> sources(const YAML::Node& v, const std::string& path) const {
    auto refuse = [&](const YAML::Node& bad) {
      fail(at(file, path, bad),
           "a merge key takes a map or a list of maps; kubectl refuses the file (go-yaml: \"map "
           "merge requires map or sequence of maps as the value\")");
    };
    if (v.IsMap()) return {v};
    if (!v.IsSequence()) refuse(v);
    std::vector<YAML::Node> out;
    for (const auto& item : v) {
      if (!item.IsMap()) refuse(item);
      out.push_back(item);
    }
    // Copied backwards, not std::reverse: swapping Nodes assigns them, which
    // writes one map into the other.
    return std::vector<YAML::Node>(out.rbegin(), out.rend());
  }

  void expand(YAML::Node map, const std::string& path) {
    struct Entry {
      YAML::Node key, value;
      bool merged;
    };
    std::vector<Entry> result;  // the map as go-yaml v2 makes it
    std::map<std::string, size_t> index;
    auto set = [&](const YAML::Node& k, const YAML::Node& v, bool merged) {
      if (k.IsScalar()) {
        auto [it, fresh] = index.emplace(k.Scalar(), result.size());
        if (!fresh) {
          Entry& e = result[it->second];
          if (merged && !e.merged && warnings)
            warnings->push_back(
                at(file, child_key(path, k), e.value).text() +
                ": written before `<<`, and the merged value (line " + std::to_string(line_of(v)) +
                ") replaces it as kubectl reads the file (go-yaml v2 sets a merge's keys where "
                "the `<<` stands); read as kubectl does. YAML's merge rule keeps this one: write "
                "it after `<<` to say so for every reader");
          // reset() re-points a handle; Node's operator= would write into the
          // node it points at, a node of the document.
          e.key.reset(k);
          e.value.reset(v);
          e.merged = merged;
          return;
        }
      }
      result.push_back({k, v, merged});
    };
    for (const auto& kv : map) {
      if (!is_merge_key(kv.first)) {
        set(kv.first, kv.second, false);
        continue;
      }
      for (const YAML::Node& source : sources(kv.second, child_key(path, kv.first)))
        for (const auto& skv : source) set(skv.first, skv.second, true);
    }
    // The map's own entries stay (their nodes and Marks); `<<` and the keys
    // a merge replaced go, and the merged entries are added after them.
    std::vector<YAML::Node> drop;
    for (const auto& kv : map)
      if (is_merge_key(kv.first) ||
          (kv.first.IsScalar() && result[index.at(kv.first.Scalar())].merged))
        drop.push_back(kv.first);
    for (const YAML::Node& k : drop) map.remove(k);
    for (const Entry& e : result)
      if (e.merged) map.force_insert(e.key, e.value);
  }
};

// A map with `kind` or `apiVersion` among its keys; `kind` read when it is.
bool names_a_kind(const YAML::Node& map, std::string& kind) {
  if (!map.IsMap()) return false;
  const YAML::Node k = map["kind"];
  if (k && k.IsScalar()) kind = k.Scalar();
  return k || map["apiVersion"];
}

}  // namespace

bool kubernetes_resource(const YAML::Node& doc) {
  std::string kind;
  bool named = names_a_kind(doc, kind);
  if (!named && doc.IsMap())
    for (const auto& kv : doc) {
      if (!is_merge_key(kv.first)) continue;
      if (kv.second.IsMap()) named = names_a_kind(kv.second, kind);
      if (kv.second.IsSequence())
        for (const auto& item : kv.second) named = names_a_kind(item, kind) || named;
    }
  return named && kind != "retrystorm-policy";
}

YAML::Node expand_merge_keys(YAML::Node doc, const std::string& file,
                             std::vector<std::string>* warnings) {
  MergeExpansion{file, warnings}.walk(doc, "", 0);
  return doc;
}

std::vector<YAML::Node> parse_documents(const std::string& text, const std::string& file,
                                        std::vector<std::string>* warnings) {
  if (text.size() > kMaxInputBytes) fail({file, "", 0}, "larger than 4 MiB");
  check_utf8(text, file);     // formats/input_text.hpp
  check_nesting(text, file);  // before any recursive parser
  size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<YAML::Node> docs;
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    nlohmann::json j = parse_json_text(text, file);  // nesting and duplicate keys
    try {
      docs.push_back(YAML::Load(text));  // the same data, with line numbers
    } catch (const std::exception&) {
      docs.push_back(json_to_yaml(j));
    }
    return docs;
  }
  for (const auto& chunk : document_texts(text)) {
    try {
      YAML::Node d = YAML::Load(chunk);
      if (!d.IsDefined() || d.IsNull()) continue;
      const bool kubernetes = kubernetes_resource(d);  // reads the top map alone
      // Duplicate keys, aliases (formats/input_text.hpp).
      check_yaml_document(d, file, kubernetes);
      // Bounded by the check above: a merge's entries were counted under its `<<`.
      if (kubernetes) expand_merge_keys(d, file, warnings);
      docs.push_back(d);
    } catch (const YAML::Exception& e) {
      fail({file, "", e.mark.is_null() ? 0 : e.mark.line + 1}, "not valid YAML: " + e.msg);
    }
  }
  return docs;
}

double parse_duration_text(const std::string& raw, const Where& w, const DurationRules& rules) {
  std::string t;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  auto bad = [&](const std::string& why) -> double {
    fail(w, "'" + raw + "' is not a duration" + (why.empty() ? "" : " (" + why + ")") +
                (rules.allow_units && !rules.units_refused ? "; write e.g. 100ms, 1.5s, 1m30s"
                                                           : "; write e.g. 0.1s"));
  };
  if (t.empty()) return bad("empty");
  if (t[0] == '-') return bad("negative");
  // A plain number: seconds, where the system allows it.
  {
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end && *end == '\0' && (t[0] == '.' || std::isdigit(static_cast<unsigned char>(t[0])))) {
      if (!std::isfinite(v) || v > 1e12) return bad("too large");
      if (rules.allow_number || v == 0) return v;
      return bad("a unit is required");
    }
  }
  double total = 0;
  size_t i = 0;
  while (i < t.size()) {
    size_t start = i;
    while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
    if (i == start) return bad("expected a number");
    std::string num = t.substr(start, i - start);
    if (std::count(num.begin(), num.end(), '.') > 1) return bad("");
    double v = std::strtod(num.c_str(), nullptr);
    size_t ustart = i;
    while (i < t.size() && !std::isdigit(static_cast<unsigned char>(t[i])) && t[i] != '.') ++i;
    std::string unit = t.substr(ustart, i - ustart);
    double scale = 0;
    if (unit == "s")
      scale = 1;
    else if (rules.allow_units && unit == "ms")
      scale = 1e-3;
    else if (rules.allow_units && (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs"))
      scale = 1e-6;
    else if (rules.allow_units && unit == "ns")
      scale = 1e-9;
    else if (rules.allow_units && unit == "m")
      scale = text::kMinute;
    else if (rules.allow_units && unit == "h")
      scale = text::kHour;
    else
      return bad(unit.empty() ? "a unit is required" : "unknown unit '" + unit + "'");
    if (!rules.allow_units && i != t.size()) return bad("");
    total += v * scale;
  }
  if (!std::isfinite(total) || total > 1e12) return bad("too large");
  return total;
}

double duration(const YAML::Node& n, const Where& w, const DurationRules& rules) {
  if (n.IsMap()) {
    if (!rules.allow_object) fail(w, "a duration here is a string such as \"1.5s\", not an object");
    double seconds = 0, nanos = 0;
    for (const auto& kv : n) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      Where sub = at(w.file, w.key + "." + k, kv.second);
      if (k == "seconds")
        seconds = static_cast<double>(whole(kv.second, sub, 0, 315'576'000'000LL));
      else if (k == "nanos")
        nanos = static_cast<double>(whole(kv.second, sub, 0, 999'999'999));
      else
        fail(sub, "unknown field of a Duration; allowed: seconds, nanos");
    }
    return seconds + nanos * 1e-9;
  }
  if (!n.IsScalar()) fail(w, "must be a duration such as \"1.5s\"");
  return parse_duration_text(n.Scalar(), w, rules);
}

double number(const YAML::Node& n, const Where& w) {
  if (!n.IsScalar()) fail(w, "must be a number");
  const std::string& s = n.Scalar();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end != '\0' || !std::isfinite(v) ||
      !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' ||
        s[0] == '.'))
    fail(w, "'" + s + "' is not a number");
  return v;
}

long long whole(const YAML::Node& n, const Where& w, long long min, long long max) {
  double v = number(n, w);
  if (v != std::floor(v)) fail(w, "'" + n.Scalar() + "' is not a whole number");
  if (v < static_cast<double>(min) || v > static_cast<double>(max))
    fail(w, "'" + n.Scalar() + "' is out of range; allowed " + std::to_string(min) + " to " +
                std::to_string(max));
  return static_cast<long long>(v);
}

bool boolean(const YAML::Node& n, const Where& w) {
  if (n.IsScalar()) {
    const std::string s = text::lower_ascii(n.Scalar());
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  fail(w, "must be true or false");
}

std::string text(const YAML::Node& n, const Where& w) {
  if (!n.IsScalar()) fail(w, "must be text");
  return n.Scalar();
}

double wrapped_number(const YAML::Node& n, const Where& w) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (k != "value") fail(at(w.file, w.key + "." + k, kv.second), "allowed: value");
    }
    if (!n["value"]) fail(w, "{value: ...} without a value");
    return number(n["value"], at(w.file, w.key + ".value", n["value"]));
  }
  return number(n, w);
}

long long wrapped_whole(const YAML::Node& n, const Where& w, long long min, long long max) {
  if (!n.IsMap()) return whole(n, w, min, max);
  double v = wrapped_number(n, w);
  if (v != std::floor(v) || v < static_cast<double>(min) || v > static_cast<double>(max))
    fail(w, number_text(v) + " is not a whole number from " + std::to_string(min) + " to " +
                std::to_string(max));
  return static_cast<long long>(v);
}

std::string snake_case(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

std::string proto_duration(double seconds) {
  return text::decimal_text(seconds, 9) + "s";  // nanoseconds, trailing zeros trimmed
}

std::string grpc_duration_text(double seconds) {
  std::string t = proto_duration(seconds);
  size_t dot = t.find('.');
  if (dot == std::string::npos) return t;
  std::string digits = t.substr(dot + 1, t.size() - dot - 2);  // between '.' and 's'
  return t.substr(0, dot + 1) + digits + std::string(9 - digits.size(), '0') + "s";
}

std::string go_duration(double seconds) {
  using namespace std::chrono_literals;
  if (seconds <= 0) return "0s";
  std::chrono::milliseconds ms(std::llround(seconds * 1000));
  auto in_seconds = [](std::chrono::milliseconds d) {
    return number_text(static_cast<double>(d.count()) / 1000) + "s";
  };
  if (ms == 0ms) return number_text(std::round(seconds * 1e6)) + "us";
  if (ms < 1s) return std::to_string(ms.count()) + "ms";
  if (ms % 1s != 0ms && ms < 1min) return in_seconds(ms);
  std::chrono::hh_mm_ss t{ms};
  std::string out;
  if (t.hours() != 0h) out += std::to_string(t.hours().count()) + "h";
  if (t.minutes() != 0min) out += std::to_string(t.minutes().count()) + "m";
  if (auto rest = t.seconds() + t.subseconds(); rest != 0ms) out += in_seconds(rest);
  return out.empty() ? "0s" : out;
}

std::string config_word(const std::string& word) {
  bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || (c != 0 && std::strchr("._:/@%+=,-*[]~^$()!|?", c));
  });
  if (plain) return word;
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace retrystorm::configs
