// events.jsonl (docs/log-formats.md): one flat JSON object a line,
// {"t": 123.456, "sid": "s-...", "ev": "resp", "status": 429, ...}. A small
// scanner rather than a JSON library: a long run writes tens of millions of
// these lines, and only seven keys matter.
#include <cmath>
#include <string>
#include <unordered_map>

#include "analysis/incident/records.hpp"
#include "logs/readers.hpp"

namespace retrystorm::logs {

namespace {

class ObjectScanner {
 public:
  ObjectScanner(std::string_view s, const LineReader& in) : s_(s), in_(in) {}

  // Calls f(key, raw value) for each member; strings come without quotes.
  template <class F>
  void members(F f) {
    skip_space();
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++at_;
      skip_space();
      if (at_ < s_.size())
        in_.fail("text after the JSON object at character " + std::to_string(at_ + 1) +
                 "; events.jsonl holds one object a line");
      return;
    }
    for (;;) {
      skip_space();
      std::string_view key = string();
      skip_space();
      expect(':');
      skip_space();
      bool is_string = peek() == '"';
      std::string_view value = is_string ? string() : raw();
      f(key, value, is_string);
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      expect('}');
      skip_space();
      if (at_ < s_.size())
        in_.fail("text after the JSON object at character " + std::to_string(at_ + 1) +
                 "; events.jsonl holds one object a line");
      return;
    }
  }

 private:
  char peek() const { return at_ < s_.size() ? s_[at_] : '\0'; }
  void skip_space() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\r')) ++at_;
  }
  void expect(char c) {
    if (peek() != c)
      in_.fail("not a JSON object: expected '" + std::string(1, c) + "' at character " +
               std::to_string(at_ + 1) + "; events.jsonl holds one object a line");
    ++at_;
  }
  std::string_view string() {
    expect('"');
    size_t start = at_;
    while (at_ < s_.size() && s_[at_] != '"') at_ += s_[at_] == '\\' ? 2 : 1;
    if (at_ >= s_.size()) in_.fail("not a JSON object: a string does not end");
    return s_.substr(start, at_++ - start);
  }
  // A number, literal, or a nested value skipped whole.
  std::string_view raw() {
    size_t start = at_;
    int depth = 0;
    while (at_ < s_.size()) {
      char c = s_[at_];
      if (c == '"') {
        string();
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++at_;
    }
    std::string_view v = s_.substr(start, at_ - start);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  }

  std::string_view s_;
  const LineReader& in_;
  size_t at_ = 0;
};

double number(const LineReader& in, std::string_view key, std::string_view v) {
  auto n = parse_number(v);
  if (!n)
    in.fail("key " + std::string(key) + ": '" + printable(v.substr(0, 40)) + "' is not a number");
  return *n;
}

// A whole number a JSON field holds (a status, a step); bounded before the cast.
int small_int(const LineReader& in, std::string_view key, std::string_view v) {
  double n = number(in, key, v);
  if (std::abs(n) > 1e6 || n != std::floor(n))
    in.fail("key " + std::string(key) + ": " + printable(v.substr(0, 40)) +
            " is not allowed; a whole number from -1000000 to 1000000 is");
  return static_cast<int>(n);
}

// Each session's events come in time order: a session's time that went back
// would be spread over its hours as negative work. And a session lasts at
// most kMaxDuration, as a sessions.csv row does (longer is a broken clock).
// Kept per session until its end event, so the memory follows the sessions
// in flight.
class SessionClock {
 public:
  void check(const LineReader& in, const incident::EventRecord& e) {
    if (e.sid.empty()) return;
    auto [it, fresh] = last_.try_emplace(std::string(e.sid), Last{e.t, in.line_number(), e.t});
    if (!fresh && e.t < it->second.t)
      in.fail("key t: " + number_text(e.t) + " s is before the event of session '" +
              printable(e.sid.substr(0, 40)) + "' on line " + std::to_string(it->second.line) +
              " (" + number_text(it->second.t) +
              " s); events.jsonl lists each session's events in time order");
    if (e.t - it->second.first_t > kMaxDuration)
      in.fail("key t: " + number_text(e.t) + " s is " + number_text(e.t - it->second.first_t) +
              " s after the first event of session '" + printable(e.sid.substr(0, 40)) +
              "'; a session lasts at most " + number_text(kMaxDuration) + " s");
    it->second.t = e.t;
    it->second.line = in.line_number();
    if (e.kind == incident::EventKind::end) last_.erase(it);
  }

 private:
  struct Last {
    double t;
    size_t line;
    double first_t;  // the session's first event
  };
  std::unordered_map<std::string, Last> last_;
};

}  // namespace

void read_events_jsonl(LineReader& in, TimeBase& base, incident::Accumulator& acc) {
  std::string_view line;
  SessionClock clock;
  while (in.next(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    incident::EventRecord e;
    bool has_t = false, has_ev = false;
    std::string_view ev;
    ObjectScanner(line, in).members([&](std::string_view key, std::string_view v, bool str) {
      if (key == "t") {
        if (!str) number(in, key, v);  // unquoted, only a number is JSON
        e.t = read_time(in, "key t", v, base);
        has_t = true;
      } else if (key == "sid") {
        e.sid = v;
      } else if (key == "ev") {
        ev = v;
        has_ev = true;
      } else if (key == "status" && v != "null") {
        e.status = small_int(in, key, v);
      } else if (key == "step" && v != "null") {
        e.step = small_int(in, key, v);
      } else if (key == "dur" && v != "null") {
        e.dur = check_amount(in, "key dur", v, number(in, key, v), kMaxDuration, false);
      } else if (key == "outcome") {
        e.outcome = v;
      } else if (key == "kind") {
        e.item_kind = v;
      }
    });
    if (!has_t || !has_ev)
      in.fail(std::string("no \"") + (has_t ? "ev" : "t") +
              "\" key; every event needs t (seconds) and ev (arrival, launch, call, resp, sleep, "
              "wake, end, ...)");
    e.kind = incident::event_kind_from_name(ev).value_or(incident::EventKind::other);
    if (e.kind == incident::EventKind::end && !incident::outcome_from_name(e.outcome))
      in.fail("key outcome: '" + printable(e.outcome.substr(0, 40)) +
              "' is not an outcome; allowed: " + incident::outcome_names());
    clock.check(in, e);
    acc.add(e);
  }
}

}  // namespace retrystorm::logs
