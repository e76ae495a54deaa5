// HAProxy 2.6 configuration (haproxy.cfg): the retry settings of a backend,
// listen or defaults section. The facts, from HAProxy's source (v2.6):
// - `retries N` (default 3, CONN_RETRIES) counts retries after the first
//   attempt: a connection failure is retried while s->conn_retries <
//   be->conn_retries (back_handle_st_cer, src/backend.c), so is an L7 retry
//   (do_l7_retry, src/http_ana.c). The value is read with atol into an int,
//   unchecked (cfg_parse_listen, src/cfgparse-listen.c): only a missing or a
//   second value is refused.
// - `retry-on` (default conn-failure, proxy_parse_retry_on in src/proxy.c):
//   anything but conn-failure turns on L7 retries (TX_L7_RETRY, process_stream
//   in src/stream.c), in HTTP mode only; `none` never retries.
// - L7 retries start at once; a connection that failed with an error (refused,
//   reset; not a connect timeout) retried on the same server waits
//   MIN(1 s, timeout connect) first (back_handle_st_cer: must_tar).
// - `timeout server` bounds an attempt (no data from the server); with
//   response-timeout in retry-on a timed-out attempt is retried. HAProxy has no
//   per-request deadline and no retry budget.
// Mapping and what is approximated: docs/configs.md, "HAProxy".
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <sstream>

#include "formats/input_text.hpp"
#include "systems/readers.hpp"
#include "text/clock.hpp"
#include "text/plural.hpp"

namespace retrystorm::configs {

namespace {

constexpr size_t kMaxLine = 64 * 1024;
constexpr size_t kMaxWords = 64;  // HAProxy's MAX_LINE_ARGS
// HAProxy refuses timers above this ("timer overflow", parse_time_err).
constexpr double kMaxTimerMs = 2147483647.0;

struct CfgLine {
  int line = 0;
  std::vector<std::string> words;
};

struct CfgSection {
  std::string kind;  // backend, listen, defaults, ...
  std::string name;
  std::string from;  // "backend app from base": the named defaults
  int line = 0;
  std::vector<CfgLine> lines;
};

const std::set<std::string>& section_keywords() {
  static const std::set<std::string> k = {"global",      "defaults",    "frontend", "backend",
                                          "listen",      "resolvers",   "peers",    "userlist",
                                          "program",     "ring",        "mailers",  "cache",
                                          "http-errors", "log-forward", "fcgi-app"};
  return k;
}

// One line as HAProxy's parse_line splits it: words separated by blanks,
// "..." (with backslash escapes) and '...' quotes, a backslash escaping the
// next character, '#' starting a comment outside quotes.
std::vector<std::string> split_words(const std::string& raw, const Where& w) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < raw.size())
        cur += raw[++i];
      else
        cur += c;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < raw.size()) {
      cur += raw[++i];
      in_word = true;
    } else if (c == '#') {
      break;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) fail(w, std::string("unterminated ") + quote + " quote");
  if (in_word) words.push_back(cur);
  if (words.size() > kMaxWords) fail(w, "more than 64 words on one line (HAProxy's limit)");
  return words;
}

std::vector<CfgSection> parse_sections(const std::string& text, const std::string& file) {
  if (text.size() > kMaxInputBytes) fail({file, "", 0}, "larger than 4 MiB");
  check_utf8(text, file);
  std::vector<CfgSection> out;
  std::istringstream in(text);
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    if (raw.size() > kMaxLine) fail({file, "", n}, "a line longer than 64 KiB");
    std::vector<std::string> words = split_words(raw, {file, "", n});
    if (words.empty()) continue;
    if (section_keywords().count(words[0])) {
      CfgSection s{words[0], words.size() > 1 ? words[1] : "", "", n, {}};
      for (size_t i = 2; i + 1 < words.size(); ++i)
        if (words[i] == "from") s.from = words[i + 1];
      out.push_back(std::move(s));
      continue;
    }
    if (out.empty())
      fail({file, words[0], n},
           "a setting before any section; expected a backend, listen or defaults section");
    out.back().lines.push_back({n, std::move(words)});
  }
  if (out.empty()) fail({file, "", 0}, "empty: no settings to import");
  return out;
}

// HAProxy times: a whole number with an optional unit (us, ms, s, m, h, d);
// no unit means milliseconds (parse_time_err, src/tools.c). In seconds.
double haproxy_time(const std::string& v, const Where& w) {
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
  std::string unit = v.substr(i);
  bool letters = std::all_of(unit.begin(), unit.end(),
                             [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (i == 0 || i > 15 || !letters)
    fail(w, "'" + v + "' is not a time; write a whole number with a unit, e.g. 1500ms, 2s, 1m");
  double n = std::stod(v.substr(0, i));
  double ms = 0;
  if (unit.empty() || unit == "ms")
    ms = n;
  else if (unit == "us")
    ms = std::ceil(n / 1000);
  else if (unit == "s")
    ms = n * 1000;
  else if (unit == "m")
    ms = n * text::kMinute * 1000;
  else if (unit == "h")
    ms = n * text::kHour * 1000;
  else if (unit == "d")
    ms = n * text::kDay * 1000;
  else
    fail(w, "'" + v + "': unknown unit '" + unit + "'; HAProxy takes us, ms, s, m, h, d");
  if (ms > kMaxTimerMs)
    fail(w, "'" + v + "' is more than HAProxy allows (2147483647 ms, about 24.8 days)");
  return ms / 1000;
}

// The section read and the defaults it inherits (HAProxy 2.6: the last
// defaults section before it, or the one `from` names).
struct Picked {
  const CfgSection* proxy = nullptr;
  const CfgSection* defaults = nullptr;
};

Picked pick_section(const std::vector<CfgSection>& sections, Reader& r) {
  Picked p;
  int proxies = 0;
  for (const auto& s : sections)
    if (s.kind == "backend" || s.kind == "listen") {
      if (!p.proxy) p.proxy = &s;
      ++proxies;
    }
  if (proxies > 1)
    r.warn({r.file, p.proxy->kind + " " + p.proxy->name, p.proxy->line},
           std::to_string(proxies) +
               " backend/listen sections; this one is read (give each layer its own file)");
  if (!p.proxy) {  // only defaults: they are the policy
    for (const auto& s : sections)
      if (s.kind == "defaults") p.proxy = &s;
    if (!p.proxy)
      fail({r.file, "", sections.front().line},
           "no backend, listen or defaults section: nothing here carries retry settings");
    return p;
  }
  for (const auto& s : sections) {
    if (&s == p.proxy) break;
    if (s.kind != "defaults") continue;
    if (p.proxy->from.empty() || s.name == p.proxy->from) p.defaults = &s;
  }
  if (!p.proxy->from.empty() && (!p.defaults || p.defaults->name != p.proxy->from))
    fail({r.file, p.proxy->kind + " " + p.proxy->name, p.proxy->line},
         "'from " + p.proxy->from + "': no defaults section of that name before it");
  return p;
}

// The settings in effect: the defaults' lines, then the section's; the last
// one of a name wins. Keys: "retries", "timeout server", "option redispatch".
std::map<std::string, const CfgLine*> effective(const Picked& p) {
  std::map<std::string, const CfgLine*> out;
  auto take = [&](const CfgSection* s) {
    if (!s) return;
    for (const auto& l : s->lines) {
      const auto& w = l.words;
      bool no = w[0] == "no" && w.size() > 2 && w[1] == "option";
      std::string key = w[0];
      if (no)
        key = "option " + w[2];
      else if ((w[0] == "timeout" || w[0] == "option" || w[0] == "http-request") && w.size() > 1)
        key = w[0] + " " + w[1];  // http-request rules all apply: one per action
      out[key] = &l;
    }
  };
  take(p.defaults);
  take(p.proxy);
  return out;
}

std::string joined(const std::vector<std::string>& w, size_t from) {
  std::string out;
  for (size_t i = from; i < w.size(); ++i) out += (out.empty() ? "" : " ") + w[i];
  return out;
}

struct Settings {
  const std::map<std::string, const CfgLine*>& lines;
  Reader& r;
  std::string section;  // "backend app"

  const CfgLine* get(const std::string& key) const {
    auto it = lines.find(key);
    return it == lines.end() ? nullptr : it->second;
  }
  Where where(const CfgLine& l, const std::string& key) const { return {r.file, key, l.line}; }
  // The value of a one-argument setting ("retries 3"; "timeout server 2s").
  const std::string& arg(const CfgLine& l, size_t index, const std::string& key) const {
    if (l.words.size() <= index) fail(where(l, key), "a value is missing");
    return l.words[index];
  }
};

// retry-on: the keywords as written, checked as proxy_parse_retry_on does.
std::set<std::string> read_retry_on(const Settings& s, LayerPolicy& l) {
  static const std::set<std::string> known = {"none",
                                              "conn-failure",
                                              "empty-response",
                                              "junk-response",
                                              "response-timeout",
                                              "0rtt-rejected",
                                              "401",
                                              "403",
                                              "404",
                                              "408",
                                              "425",
                                              "500",
                                              "501",
                                              "502",
                                              "503",
                                              "504",
                                              "421",
                                              "429",
                                              "all-retryable-errors"};
  const CfgLine* line = s.get("retry-on");
  if (!line) {
    l.from["retry-on"] = s.r.file + ": retry-on left out: conn-failure, HAProxy's default";
    return {"conn-failure"};
  }
  std::set<std::string> out;
  for (size_t i = 1; i < line->words.size(); ++i) {
    const std::string& k = line->words[i];
    if (!known.count(k))
      fail(s.where(*line, "retry-on"), "unknown keyword '" + k + "' (HAProxy refuses it)");
    if (k == "all-retryable-errors")
      out.insert({"conn-failure", "empty-response", "junk-response", "response-timeout",
                  "0rtt-rejected", "500", "502", "503", "504"});
    else
      out.insert(k);
  }
  if (out.empty()) fail(s.where(*line, "retry-on"), "needs at least one keyword");
  if (out.count("none") && out.size() > 1)
    fail(s.where(*line, "retry-on"), "'none' can only be used alone");
  if (out.count("429") || out.count("421"))
    l.notes.push_back(
        "retry-on 429 and 421 are HAProxy 3.1+ keywords: earlier releases refuse "
        "the file");
  l.from["retry-on"] = s.where(*line, "retry-on").text() + ": " + joined(line->words, 1);
  return out;
}

// Which error answers retry-on retries: conn-failure a refused connection
// (back_handle_st_cer in src/backend.c retries a failed connection; an
// answer is retried only by do_l7_retry, with TX_L7_RETRY), a listed status
// code that answer, empty-response a connection closed without one.
void read_retried_answers(LayerPolicy& l, const std::set<std::string>& on) {
  l.retried_answers = 0;
  if (on.count("conn-failure")) l.retried_answers |= answer_bit(FailureClass::refused);
  if (on.count("empty-response")) l.retried_answers |= answer_bit(FailureClass::reset);
  if (on.count("503")) l.retried_answers |= answer_bit(FailureClass::http_503);
  if (on.count("429")) l.retried_answers |= answer_bit(FailureClass::http_429);
  l.from["client.retry_on"] = l.from["retry-on"] + ": retries " +
                              answer_set_text(l.retried_answers) +
                              (on.count("503") ? "" : " (a 503 answer is not retried)");
}

// Whether every connection retry goes to another server at once, without
// the turn-around wait (HAProxy 2.6 stream_choose_redispatch,
// include/haproxy/stream.h): option redispatch, no persistence forcing the
// server (SF_DIRECT: use-server, cookie, stick), more than one active server
// and a round-robin balance (BE_LB_KIND_RR: roundrobin, the default, and
// static-rr). "" when not; else why, for the key's source.
std::string redispatch_at_once(const Settings& s, const CfgSection& proxy) {
  const CfgLine* d = s.get("option redispatch");
  if (!d || d->words[0] == "no") return "";
  std::string balance = "roundrobin";
  if (const CfgLine* b = s.get("balance"); b && b->words.size() > 1) balance = b->words[1];
  if (balance != "roundrobin" && balance != "static-rr") return "";
  int active = 0;
  for (const CfgLine& l : proxy.lines) {
    const std::string& w = l.words[0];
    if (w == "use-server" || w == "cookie" || w.rfind("stick", 0) == 0) return "";
    bool spare = std::find(l.words.begin(), l.words.end(), "backup") != l.words.end() ||
                 std::find(l.words.begin(), l.words.end(), "disabled") != l.words.end();
    if (w == "server" && !spare) ++active;
  }
  if (active < 2) return "";
  return s.where(*d, "option redispatch").text() + ": with balance " + balance + " over " +
         std::to_string(active) +
         " active servers, a failed connection is retried at once on another server "
         "(stream_choose_redispatch): no turn-around wait";
}

// Immediate L7 retries, or the turn-around timer of connection retries
// (unless every retry is redispatched at once: `at_once` says why).
void read_backoff(const Settings& s, LayerPolicy& l, bool l7, const std::string& at_once) {
  l.backoff = Backoff{0, 2, 0, Jitter::none};
  if (l7 || !at_once.empty()) {
    std::string why = l7 ? "HAProxy retries at once (do_l7_retry): no backoff" : at_once;
    l.from["client.backoff.base_s"] = l.from["client.backoff.cap_s"] =
        l.from["client.backoff.multiplier"] = l.from["client.backoff.jitter"] = why;
    if (l7 && l.retries > 0 && at_once.empty())
      l.notes.push_back(
          "a refused connection retried on the same server waits MIN(1 s, timeout connect) "
          "first (back_handle_st_cer); L7 retries do not wait: read as no backoff");
    return;
  }
  double connect = 0;
  if (const CfgLine* c = s.get("timeout connect"))
    connect = haproxy_time(s.arg(*c, 2, "timeout connect"), s.where(*c, "timeout connect"));
  double wait = connect > 0 ? std::min(1.0, connect) : 1.0;
  l.backoff = Backoff{wait, 1, 0, Jitter::none};
  std::string why =
      "a refused connection retried on the same server waits MIN(1 s, timeout "
      "connect) = " +
      human_duration(wait) + " (back_handle_st_cer)";
  l.from["client.backoff.base_s"] = why;
  l.from["client.backoff.multiplier"] = l.from["client.backoff.cap_s"] =
      l.from["client.backoff.jitter"] = "HAProxy's turn-around timer is fixed";
  if (l.retries > 0)
    l.notes.push_back(
        "a connect timeout is retried at once, and a retry redispatched to another server (the "
        "last one with option redispatch) does not wait; read as always waiting");
}

// Settings read, not modelled: warnings (docs/configs.md, "HAProxy").
void warn_unmodelled(const Settings& s, LayerPolicy& l, const std::set<std::string>& on) {
  if (const CfgLine* d = s.get("option redispatch")) {
    bool off = d->words[0] == "no";
    l.settings["option redispatch"] = off                           ? "off"
                                      : joined(d->words, 2).empty() ? "-1"
                                                                    : d->words[2];
    if (!off && l.retries > 0)
      l.notes.push_back(
          "option redispatch: a retry may go to another server; the model has one server "
          "pool, so where a retry goes is not modelled");
  }
  if (const CfgLine* q = s.get("timeout queue")) {
    l.settings["timeout queue"] = joined(q->words, 2);
    l.notes.push_back(
        "timeout queue: time waiting for a server slot (server maxconn) is not part of the "
        "model's attempt");
  }
  bool l7 = on.size() > 1 || !on.count("conn-failure");
  if (l7 && !on.count("none"))
    for (const char* k :
         {"401", "403", "404", "408", "425", "501", "junk-response", "0rtt-rejected"})
      if (on.count(k))
        s.r.warn({s.r.file, "retry-on " + std::string(k), s.get("retry-on")->line},
                 "the model does not tell this failure from others: every failed attempt is "
                 "retried the same way");
  if (const CfgLine* d = s.get("http-request disable-l7-retry"))
    s.r.warn(s.where(*d, "http-request disable-l7-retry"),
             "requests it matches are never retried after the connection; the model "
             "retries every request");
}

// `retries` as HAProxy stores it: atol into an int, unchecked (cfg_parse_listen,
// src/cfgparse-listen.c). atol (glibc's strtol) skips blanks, takes a sign and
// the leading digits, ignores the rest and stops at LONG_MAX / LONG_MIN; the
// int keeps the low 32 bits.
int haproxy_atol_int(const std::string& v) {
  return static_cast<int32_t>(static_cast<uint32_t>(std::strtol(v.c_str(), nullptr, 10)));
}

// Whether `v` is the decimal text of `n` (leading zeros aside): HAProxy then
// runs what the file says.
bool reads_as_written(const std::string& v, int n) {
  size_t z = v.find_first_not_of('0');
  std::string digits = z == std::string::npos ? "0" : v.substr(z);
  return n >= 0 && digits == std::to_string(n);
}

// What a `retries` value that is not a plain count is: too large, signed
// (-1, +5, -0) or not a number.
std::string written_as(const std::string& v) {
  auto digits = [](const std::string& t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
  };
  if (digits(v)) return "does not fit HAProxy's int: atol into an int keeps ";
  const std::string atol = ": HAProxy reads it with atol, unchecked, as ";
  if ((v[0] != '-' && v[0] != '+') || !digits(v.substr(1))) return "is not a whole number" + atol;
  const bool negative = v[0] == '-' && v.find_first_not_of('0', 1) != std::string::npos;
  return (negative ? "is a negative count" : "is a count with a sign") + atol;
}

// What HAProxy made of a `retries` value that is not a plain count. A
// negative one depends on the version: up to 3.0 back_handle_st_cer
// (src/backend.c) compares the int counts, so it never retries; from 3.1
// stream_new (src/stream.c) copies it into the unsigned short max_retries.
std::string atol_warning(const std::string& v, int n) {
  std::string head = "'" + v + "' " + written_as(v) + std::to_string(n);
  if (n >= 0) return head + ": read as " + text::plural(n, "retry", "retries");
  return head + ": HAProxy up to 3.0 never retries (back_handle_st_cer and do_l7_retry find " +
         "the count reached at once); 3.1 and later retry " +
         text::plural(static_cast<uint16_t>(n), "time", "times") +
         " (unsigned short max_retries); read as 0 retries, as up to 3.0";
}

// The count HAProxy 2.6 holds for `retries V` (an int, maybe negative): only
// a missing value or a second one is refused; anything else is what atol made
// of it.
int haproxy_retries(const CfgLine& c, const Settings& s, LayerPolicy& l) {
  const Where w = s.where(c, "retries");
  if (c.words.size() < 2 || c.words[1].empty())
    fail(w, "a value is missing: HAProxy refuses the file ('retries' expects an integer argument)");
  if (c.words.size() > 2)
    fail(w, "'" + joined(c.words, 1) +
                "': one value is allowed, a whole number of retries; HAProxy refuses the file "
                "(cannot handle unexpected argument)");
  const std::string& v = c.words[1];
  const int n = haproxy_atol_int(v);
  if (!reads_as_written(v, n)) s.r.warn(w, atol_warning(v, n));
  // HAProxy 3.1 copies it into each stream's unsigned short max_retries
  // (stream_new, process_switching_rules in src/stream.c); lint's
  // retries-wrap-16-bit says so.
  if (n < 0 || n > 0xFFFF)
    l.notes.push_back("retries " + v +
                      ": HAProxy 3.1 and later keep each stream's count in 16 "
                      "bits (unsigned short max_retries), so there it is " +
                      text::plural(static_cast<uint16_t>(n), "retry", "retries") +
                      "; the import follows 2.6 (" + std::to_string(std::max(n, 0)) + ")");
  return n;
}

void read_retries(const Settings& s, LayerPolicy& l, const std::set<std::string>& on) {
  l.counting = "retries";
  l.count_field = "retries";
  long long n = 3;
  const CfgLine* c = s.get("retries");
  if (c) {
    const int held = haproxy_retries(*c, s, l);
    l.settings["retries held"] = std::to_string(held);  // lint's retries-wrap-16-bit
    n = std::max(held, 0);
    l.from["client.retries"] = s.where(*c, "retries").text() + ": " + std::to_string(n) +
                               " (retries; " + std::to_string(n + 1) + " attempts)";
  } else {
    l.from["client.retries"] = s.r.file + ": retries left out (HAProxy's default 3; 4 attempts)";
  }
  l.as_written = n;
  l.settings["retries"] = std::to_string(n);
  if (on.count("none") && n > 0) {
    l.retries = 0;
    l.from["client.retries"] =
        l.from["retry-on"] + ": never retries (retries " + std::to_string(n) + " has no effect)";
    return;
  }
  l.retries = model_retries(n, c ? s.where(*c, "retries") : Where{s.r.file, "retries", 0}, s.r);
}

void read_timeouts(const Settings& s, LayerPolicy& l, const std::set<std::string>& on) {
  const CfgLine* srv = s.get("timeout server");
  if (srv) {
    Where w = s.where(*srv, "timeout server");
    double t = haproxy_time(s.arg(*srv, 2, "timeout server"), w);
    l.settings["timeout server"] = srv->words[2];
    if (t > 0) {
      l.per_try_timeout_s = t;
      l.from["client.timeout_s"] =
          w.text() + ": " + srv->words[2] + " (each attempt: time without data from the server)";
    }
  }
  if (!l.per_try_timeout_s) {
    l.per_try_timeout_unset = true;
    l.notes.push_back(
        "timeout server left out (or 0): an attempt waits for the server without limit "
        "(HAProxy warns at startup); client.timeout_s is not imported");
  }
  if (const CfgLine* c = s.get("timeout connect"))
    l.settings["timeout connect"] = s.arg(*c, 2, "timeout connect");
  bool retried = on.count("response-timeout") > 0 && l.per_try_timeout_s.has_value();
  l.retry_on_timeout = retried;
  l.from["client.retry_on_timeout"] =
      retried ? l.from["retry-on"] + ": response-timeout retries an attempt past timeout server"
              : l.from["retry-on"] + ": no response-timeout, a timed-out attempt is not retried";
  l.deadline_s = 0;
  l.from["client.deadline_s"] =
      "HAProxy has no per-request deadline (timeout server bounds each attempt)";
}

}  // namespace

bool looks_like_haproxy(const std::string& text) {
  std::istringstream in(text.substr(0, 64 * 1024));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    return section_keywords().count(first) > 0;
  }
  return false;
}

void read_haproxy(const std::string& text, Reader& r) {
  LayerPolicy& l = r.layer;
  std::vector<CfgSection> sections = parse_sections(text, r.file);
  Picked p = pick_section(sections, r);
  auto lines = effective(p);
  Settings s{lines, r, p.proxy->kind + (p.proxy->name.empty() ? "" : " " + p.proxy->name)};
  l.format = "HAProxy " + s.section;
  l.host = p.proxy->name;  // the backend's name: the service behind it
  l.has_retry_policy = true;
  l.has_budget_part = true;
  std::set<std::string> on = read_retry_on(s, l);
  l.settings["retry-on"] = [&] {
    std::string t;
    for (const auto& k : on) t += (t.empty() ? "" : " ") + k;
    return t;
  }();
  // Outside mode http (and tcp is HAProxy's default: init_new_proxy) only a
  // failed connection is retried, and only when retry-on lists conn-failure
  // (back_handle_st_cer checks retry_type & PR_RE_CONN_FAILED; the layer-7
  // retries of process_stream need mode http).
  const CfgLine* m = s.get("mode");
  const std::string mode = m && m->words.size() > 1 ? m->words[1] : "tcp";
  if (mode != "http") {
    l.settings["mode"] = mode;
    const bool conn = on.count("conn-failure") > 0;
    if (on.size() > 1 || !conn) {
      r.warn(
          m ? s.where(*m, "mode " + mode) : Where{r.file, s.section, p.proxy->line},
          std::string(m ? "mode " + mode : "no mode line: HAProxy's default is mode tcp") +
              ": retry-on reaches only failed connections there; " +
              (conn ? "conn-failure is kept" : "conn-failure is not listed, so none is retried"));
      on = conn ? std::set<std::string>{"conn-failure"} : std::set<std::string>{"none"};
    }
  }
  read_retries(s, l, on);
  read_timeouts(s, l, on);
  bool l7 = on.size() > 1 || !on.count("conn-failure");
  read_backoff(s, l, l7 || on.count("none"), redispatch_at_once(s, *p.proxy));
  read_retried_answers(l, on);
  if (!l7 && l.retries > 0)
    l.notes.push_back(
        "retry-on conn-failure: only failed connections are retried; an attempt that connects "
        "and then fails (503, a reset, a timeout) is not");
  warn_unmodelled(s, l, on);
  l.budget.kind = BudgetKind::none;
  l.budget_from = "HAProxy has no retry budget";
  l.from["client.budget.kind"] = l.budget_from;
}

namespace {

// What the lab runs of a HAProxy file: the sections and directives the
// importer reads, and the options of each that neither run a program nor
// touch a file or another address (docs/lab.md, "--config").
const std::set<std::string> kLabSections = {"defaults", "backend"};
const std::set<std::string> kLabDirectives = {
    "mode", "retries",      "retry-on", "timeout", "option",
    "no",   "http-request", "server",   "balance", "default-server"};
const std::set<std::string> kLabOptions = {"redispatch",      "abortonclose", "http-server-close",
                                           "http-keep-alive", "httpclose",    "forwardfor",
                                           "httplog",         "dontlognull",  "allbackups"};
const std::set<std::string> kLabRequestActions = {"disable-l7-retry", "set-timeout"};
const std::set<std::string> kLabServerOptions = {"check",  "inter",  "fastinter", "downinter",
                                                 "fall",   "rise",   "maxconn",   "maxqueue",
                                                 "weight", "backup", "slowstart"};

bool number_or_time(const std::string& w) {
  size_t digits = 0;
  while (digits < w.size() && std::isdigit(static_cast<unsigned char>(w[digits]))) ++digits;
  static const std::set<std::string> units = {"", "us", "ms", "s", "m", "h", "d"};
  return digits > 0 && units.count(w.substr(digits));
}

[[noreturn]] void not_in_lab(const std::string& file, const CfgLine& l, const std::string& what) {
  fail({file, l.words[0], l.line},
       what +
           " is not run by the lab: it runs only the retry settings the importer reads "
           "(docs/lab.md, \"--config\")");
}

// One line of a defaults or backend section, checked; servers rewritten.
std::vector<std::string> lab_line(const CfgLine& l, const std::string& file,
                                  const std::string& backend_address) {
  std::vector<std::string> w = l.words;
  if (!kLabDirectives.count(w[0])) not_in_lab(file, l, "'" + w[0] + "'");
  size_t opt = w[0] == "no" ? 2 : 1;
  if ((w[0] == "option" || w[0] == "no") &&
      (w.size() <= opt || (w[0] == "no" && w[1] != "option") || !kLabOptions.count(w[opt])))
    not_in_lab(file, l, "'" + joined(w, 0) + "'");
  if (w[0] == "http-request" && (w.size() < 2 || !kLabRequestActions.count(w[1])))
    not_in_lab(file, l, "'" + joined(w, 0) + "'");
  bool server = w[0] == "server";
  if (server || w[0] == "default-server") {
    if (server && w.size() < 3) fail({file, "server", l.line}, "a server needs a name and address");
    if (server) w[2] = backend_address;  // the lab's backend stands in for every server
    for (size_t i = server ? 3 : 1; i < w.size(); ++i)
      if (!kLabServerOptions.count(w[i]) && !number_or_time(w[i]))
        not_in_lab(file, l, "the server option '" + w[i] + "'");
  }
  return w;
}

}  // namespace

LabProxyConfig lab_haproxy_config(const std::string& text, const std::string& file,
                                  const std::string& backend_address) {
  LabProxyConfig out;
  for (const CfgSection& s : parse_sections(text, file)) {
    if (!kLabSections.count(s.kind))
      fail({file, s.kind, s.line}, "a " + s.kind +
                                       " section is not run by the lab: give defaults and one "
                                       "backend (the lab adds its own frontend)");
    if (s.kind == "backend") {
      if (!out.backend.empty())
        fail({file, "backend", s.line}, "a second backend; the lab runs one");
      out.backend = s.name;
    }
    std::vector<std::string> head = {s.kind};
    if (!s.name.empty()) head.push_back(s.name);
    if (!s.from.empty()) head.insert(head.end(), {"from", s.from});
    std::string section;
    for (const auto& w : head) section += (section.empty() ? "" : " ") + config_word(w);
    out.text += section + "\n";
    for (const CfgLine& l : s.lines) {
      std::string line = "   ";
      for (const auto& w : lab_line(l, file, backend_address)) line += " " + config_word(w);
      out.text += line + "\n";
    }
  }
  if (out.backend.empty()) fail({file, "backend", 0}, "no backend section for the lab to run");
  std::vector<std::string> ignored;  // the import says them, with the layer it reads
  LayerPolicy l = import_file({file, text}, ignored, "haproxy");
  if (auto m = l.settings.find("mode"); m != l.settings.end()) out.mode = m->second;
  return out;
}

}  // namespace retrystorm::configs
