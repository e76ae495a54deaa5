// nginx 1.22 configuration: the retry settings of the location that proxies
// (proxy_pass) and of its upstream. The facts, from nginx's source:
// - A failed attempt goes to the next server at once, without backoff, when
//   the failure is one of proxy_next_upstream's conditions (default "error
//   timeout"), tries are left and proxy_next_upstream_timeout has not passed
//   since the first attempt (ngx_http_upstream_next, src/http/ngx_http_upstream.c).
//   POST, LOCK and PATCH are not passed on once sent unless non_idempotent is
//   listed (same function).
// - Tries: one per server of the upstream (down ones left out, backups in;
//   ngx_http_upstream_init_round_robin), at most proxy_next_upstream_tries
//   (0 = no limit). An upstream of one server is never retried
//   (ngx_http_upstream_free_round_robin_peer: peers->single, pc->tries = 0).
// - proxy_read_timeout (default 60 s) bounds the wait between two reads;
//   proxy_next_upstream_timeout (default 0, none) stops new tries but does not
//   end a started one.
// Mapping and what is approximated: docs/configs.md, "nginx".
#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "formats/input_text.hpp"
#include "systems/readers.hpp"
#include "text/clock.hpp"

namespace retrystorm::configs {

namespace {

constexpr int kMaxDepth = 64;  // blocks inside blocks

struct Directive {
  std::string name;
  std::vector<std::string> args;
  int line = 0;
  bool is_block = false;
  std::vector<Directive> children;
};

enum class Tok { word, semicolon, open, close, end };

// nginx's grammar (ngx_conf_read_token): words separated by blanks, "..." and
// '...' quotes with backslash escapes, '#' comments from a word's start to the
// end of the line, directives ending in ';', blocks in '{ }'.
class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : t_(text), file_(file) {}
  int line() const { return line_; }

  Tok next(std::string& word) {
    skip_blanks();
    if (p_ >= t_.size()) return Tok::end;
    char c = t_[p_];
    if (c == ';' || c == '{' || c == '}') {
      ++p_;
      return c == ';' ? Tok::semicolon : c == '{' ? Tok::open : Tok::close;
    }
    word.clear();
    if (c == '"' || c == '\'') return quoted(word);
    while (p_ < t_.size() && !separator(t_[p_])) {
      if (t_[p_] == '$' && p_ + 1 < t_.size() && t_[p_ + 1] == '{') {  // ${var}
        size_t close = t_.find('}', p_);
        if (close == std::string::npos || t_.find('\n', p_) < close)
          fail({file_, "", line_}, "a ${ without its }");
        word += t_.substr(p_, close - p_ + 1);
        p_ = close + 1;
        continue;
      }
      word += t_[p_++];
    }
    return Tok::word;
  }

 private:
  static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
  static bool separator(char c) {
    return blank(c) || c == ';' || c == '{' || c == '}' || c == '"' || c == '\'';
  }
  void skip_blanks() {
    while (p_ < t_.size()) {
      if (t_[p_] == '\n') ++line_;
      if (t_[p_] == '#') {
        while (p_ < t_.size() && t_[p_] != '\n') ++p_;
      } else if (blank(t_[p_])) {
        ++p_;
      } else {
        return;
      }
    }
  }
  Tok quoted(std::string& word) {
    char q = t_[p_++];
    int start = line_;
    while (p_ < t_.size() && t_[p_] != q) {
      if (t_[p_] == '\n') ++line_;
      if (t_[p_] == '\\' && p_ + 1 < t_.size()) ++p_;
      word += t_[p_++];
    }
    if (p_ >= t_.size()) fail({file_, "", start}, std::string("unterminated ") + q + " quote");
    ++p_;
    if (p_ < t_.size() && !blank(t_[p_]) && t_[p_] != ';' && t_[p_] != '{')
      fail({file_, "", line_}, std::string("unexpected '") + t_[p_] + "' after a quoted word");
    return Tok::word;
  }

  const std::string& t_;
  const std::string& file_;
  size_t p_ = 0;
  int line_ = 1;
};

// Within one block, nginx refuses a second setting of a directive it keeps
// one value of ("is duplicate": ngx_conf_set_num_slot, ngx_conf_set_msec_slot,
// ngx_http_proxy_pass), and ORs the flags of proxy_next_upstream
// (ngx_conf_set_bitmask_slot): `proxy_next_upstream error;` then
// `proxy_next_upstream http_503;` retry both. Checked for the directives
// read here; repeated proxy_next_upstream lines become one (the first line).
void settle_repeats(std::vector<Directive>& block, const std::string& file) {
  static const std::set<std::string> kOneValue = {
      "proxy_pass",         "proxy_next_upstream_tries", "proxy_next_upstream_timeout",
      "proxy_read_timeout", "proxy_connect_timeout",     "proxy_send_timeout"};
  std::map<std::string, size_t> first;
  std::vector<Directive> kept;
  for (Directive& d : block) {
    if (d.is_block || (!kOneValue.count(d.name) && d.name != "proxy_next_upstream")) {
      kept.push_back(std::move(d));
      continue;
    }
    auto [at, fresh] = first.emplace(d.name, kept.size());
    if (fresh) {
      kept.push_back(std::move(d));
    } else if (d.name == "proxy_next_upstream") {
      Directive& into = kept[at->second];
      into.args.insert(into.args.end(), d.args.begin(), d.args.end());
    } else {
      fail({file, d.name, d.line}, "directive is duplicate: nginx refuses a second " + d.name +
                                       " in one block (line " +
                                       std::to_string(kept[at->second].line) + " sets it)");
    }
  }
  block = std::move(kept);
}

// The directives of one block (the file itself at depth 0).
std::vector<Directive> parse_block(Lexer& lx, const std::string& file, int depth, int open_line) {
  if (depth > kMaxDepth) fail({file, "", lx.line()}, "blocks nested deeper than 64");
  std::vector<Directive> out;
  std::string w;
  for (;;) {
    Tok t = lx.next(w);
    if (t == Tok::end) {
      if (depth > 0)
        fail({file, "", lx.line()}, "unexpected end of file: the block opened on line " +
                                        std::to_string(open_line) + " has no }");
      settle_repeats(out, file);
      return out;
    }
    if (t == Tok::close) {
      if (depth == 0) fail({file, "", lx.line()}, "unexpected }");
      settle_repeats(out, file);
      return out;
    }
    if (t != Tok::word)
      fail({file, "", lx.line()}, std::string("unexpected ") +
                                      (t == Tok::semicolon ? "';'" : "'{'") +
                                      ": a directive needs a name");
    Directive d{w, {}, lx.line(), false, {}};
    for (;;) {
      Tok a = lx.next(w);
      if (a == Tok::word) {
        d.args.push_back(w);
      } else if (a == Tok::semicolon) {
        break;
      } else if (a == Tok::open) {
        d.is_block = true;
        d.children = parse_block(lx, file, depth + 1, d.line);
        break;
      } else {
        fail({file, d.name, lx.line()}, a == Tok::end
                                            ? "unexpected end of file, expecting ';' or '{'"
                                            : "unexpected }, expecting ';'");
      }
    }
    out.push_back(std::move(d));
  }
}

using Chain = std::vector<const Directive*>;  // outermost block first

const Directive* direct(const Directive& block, const std::string& name) {
  const Directive* found = nullptr;
  for (const auto& d : block.children)
    if (d.name == name && !d.is_block) found = &d;
  return found;
}

// The location that proxies: the first block (depth first) holding proxy_pass,
// else the first holding a proxy_next_upstream* directive. Counts candidates.
bool find_target(const Directive& block, Chain& chain, Chain& best, int& count,
                 const std::function<bool(const Directive&)>& holds) {
  chain.push_back(&block);
  if (holds(block)) {
    if (count++ == 0) best = chain;
  }
  for (const auto& d : block.children)
    if (d.is_block && d.name != "upstream") find_target(d, chain, best, count, holds);
  chain.pop_back();
  return count > 0;
}

void collect_upstreams(const Directive& block, std::map<std::string, const Directive*>& out) {
  for (const auto& d : block.children) {
    if (d.is_block && d.name == "upstream" && !d.args.empty()) out.emplace(d.args[0], &d);
    if (d.is_block) collect_upstreams(d, out);
  }
}

struct Scope {
  const Chain& chain;
  Reader& r;
  // The directive in effect: the innermost block that sets it (nginx merges
  // proxy_* settings from http to server to location).
  const Directive* get(const std::string& name) const {
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (const Directive* d = direct(**it, name)) return d;
    return nullptr;
  }
  Where where(const Directive& d) const { return {r.file, d.name, d.line}; }
  const std::string& arg(const Directive& d) const {
    if (d.args.size() != 1) fail(where(d), "takes exactly one value");
    return d.args[0];
  }
};

// nginx times (ngx_parse_time for milliseconds): whole numbers with units w,
// d, h, m, s, ms in that order, "1m30s"; a bare number is seconds. In seconds.
double nginx_time(const std::string& v, const Where& w) {
  static const std::vector<std::pair<std::string, double>> units = {
      {"w", 7 * text::kDay}, {"d", text::kDay}, {"h", text::kHour},
      {"m", text::kMinute},  {"s", 1},          {"ms", 0.001}};
  auto bad = [&](const std::string& why) -> double {
    fail(w, "'" + v + "' is not an nginx time (" + why + "); write e.g. 500ms, 5s, 1m30s");
  };
  double total = 0;
  size_t rank = 0, i = 0;
  while (i < v.size()) {
    size_t j = i;
    while (j < v.size() && std::isdigit(static_cast<unsigned char>(v[j]))) ++j;
    if (j == i || j - i > 15) return bad("a number is expected");
    double n = std::stod(v.substr(i, j - i));
    size_t k = j;
    while (k < v.size() && std::isalpha(static_cast<unsigned char>(v[k]))) ++k;
    std::string unit = v.substr(j, k - j);
    if (unit.empty()) {
      if (k != v.size()) return bad("unexpected text");
      return total + n;
    }
    auto u = std::find_if(units.begin() + static_cast<long>(rank), units.end(),
                          [&](const auto& e) { return e.first == unit; });
    if (u == units.end()) return bad("unit '" + unit + "' unknown or out of order");
    rank = static_cast<size_t>(u - units.begin()) + 1;
    total += n * u->second;
    i = k;
  }
  if (v.empty()) return bad("empty");
  return total;
}

struct Upstream {
  const Directive* block = nullptr;
  std::string name;      // from proxy_pass
  int servers = 0;       // entries nginx tries (down left out), 0 = unknown
  bool address = false;  // proxy_pass to an IP address or socket: one peer, no block
  bool fails_mark_down = false;
};

// Whether proxy_pass names one address rather than a host name: an IPv4 or
// [IPv6] literal, or a unix: socket. nginx builds an implicit upstream of the
// addresses (ngx_http_upstream_init_round_robin, the branch without
// us->servers), and one address is a single peer, never retried.
bool literal_address(const std::string& host_port) {
  if (host_port.rfind("unix:", 0) == 0 || host_port.rfind('[', 0) == 0) return true;
  std::string host = host_port.substr(0, host_port.find(':'));
  int dots = 0, digits = 0;
  for (char c : host) {
    if (c == '.') {
      if (digits == 0) return false;
      ++dots;
      digits = 0;
    } else if (std::isdigit(static_cast<unsigned char>(c)) && ++digits <= 3) {
      continue;
    } else {
      return false;
    }
  }
  return dots == 3 && digits > 0;
}

// A server entry by name: nginx resolves it when it starts and tries every
// address it gets (ngx_http_upstream_init_round_robin adds each of naddrs).
void warn_named_server(const Directive& d, const Upstream& u, Reader& r) {
  std::string address = d.args.front();
  if (literal_address(address)) return;
  r.warn({r.file, "server " + address, d.line},
         "a host name: nginx tries every address it resolves to, which cannot be known "
         "offline; counted as one server of upstream " +
             u.name + " (list the addresses to count them)");
}

Upstream find_upstream(const Scope& s, const Directive& root, Reader& r) {
  std::map<std::string, const Directive*> ups;
  collect_upstreams(root, ups);
  Upstream u;
  if (const Directive* pass = s.get("proxy_pass")) {
    std::string url = s.arg(*pass);
    for (const char* scheme : {"http://", "https://"})
      if (url.rfind(scheme, 0) == 0) url = url.substr(std::string(scheme).size());
    u.name = url.substr(0, url.find_first_of("/?"));
    auto it = ups.find(u.name);
    if (it != ups.end()) u.block = it->second;
    if (!u.block && literal_address(u.name)) {
      u.address = true;
      u.servers = 1;
      return u;
    }
  } else if (ups.size() == 1) {
    u.block = ups.begin()->second;
    u.name = ups.begin()->first;
  }
  if (!u.block) return u;
  for (const auto& d : u.block->children) {
    if (d.name != "server" || d.is_block) continue;
    if (d.args.empty()) fail({r.file, "server", d.line}, "a server needs an address");
    bool down = std::find(d.args.begin(), d.args.end(), "down") != d.args.end();
    bool no_fails = std::find(d.args.begin(), d.args.end(), "max_fails=0") != d.args.end();
    if (!down) ++u.servers;
    if (!down) warn_named_server(d, u, r);
    u.fails_mark_down = u.fails_mark_down || (!down && !no_fails);
  }
  if (u.servers == 0)
    fail({r.file, "upstream " + u.name, u.block->line}, "no server nginx can try");
  return u;
}

// proxy_next_upstream: the conditions as written, checked as nginx does.
std::set<std::string> read_conditions(const Scope& s, LayerPolicy& l) {
  static const std::set<std::string> known = {
      "error",    "timeout",  "invalid_header", "non_idempotent", "http_500", "http_502",
      "http_503", "http_504", "http_403",       "http_404",       "http_429", "updating",
      "off"};
  const Directive* d = s.get("proxy_next_upstream");
  if (!d) {
    l.from["proxy_next_upstream"] =
        s.r.file + ": proxy_next_upstream left out: error timeout, nginx's default";
    return {"error", "timeout"};
  }
  if (d->args.empty()) fail(s.where(*d), "needs at least one condition");
  std::set<std::string> on;
  for (const auto& a : d->args) {
    if (!known.count(a)) fail(s.where(*d), "unknown condition '" + a + "' (nginx refuses it)");
    on.insert(a);
  }
  if (on.count("off")) on = {"off"};  // nginx: off wins over the rest
  std::string text;
  for (const auto& a : d->args) text += (text.empty() ? "" : " ") + a;
  l.from["proxy_next_upstream"] = s.where(*d).text() + ": " + text;
  return on;
}

// A number as nginx reads it (ngx_conf_set_num_slot with ngx_atoi,
// src/core/ngx_string.c): digits only, no sign or blank, at most
// NGX_MAX_INT_T_VALUE; anything else is "invalid number".
long long nginx_number(const std::string& v, const Where& w) {
  constexpr long long kMax = std::numeric_limits<long long>::max();  // 64-bit ngx_int_t
  long long n = v.empty() ? -1 : 0;
  for (size_t i = 0; i < v.size() && n >= 0; ++i) {
    const int d = v[i] - '0';
    n = d < 0 || d > 9 || n > (kMax - d) / 10 ? -1 : n * 10 + d;
  }
  if (n < 0)
    fail(w, "'" + v + "': nginx refuses it (invalid number); write digits only, 0 to " +
                std::to_string(kMax) + " (0: no limit)");
  return n;
}

// Tries toward an upstream not in the file (or a host name): the tries as
// written, a warning that the servers are unknown. 0 sets no limit
// (ngx_http_upstream_init_request caps peer.tries only when it is set), so
// every server is tried: read as 1 try, the warning says so.
long long unknown_upstream_tries(const Scope& s, const Upstream& u, long long tries) {
  const long long n = tries == 0 ? 1 : tries;
  const Directive* pass = s.get("proxy_pass");
  const std::string read =
      tries == 0 ? "proxy_next_upstream_tries 0 sets no limit, so every one is tried once, and "
                   "how many there are is not known here: read as 1 try, no retries, which "
                   "undercounts when there are several"
                 : "each server or address is tried at most once, read as " + std::to_string(n) +
                       (n == 1 ? " try" : " tries");
  s.r.warn({s.r.file, "proxy_pass", pass ? pass->line : 0},
           "'" + u.name +
               "' is an upstream not in this file or a host name (nginx then tries each "
               "address the name resolves to, which cannot be known offline): " +
               read + " (give the upstream block, or addresses, to count them)");
  return n;
}

void read_tries(const Scope& s, LayerPolicy& l, const Upstream& u, bool off) {
  l.counting = "attempts";
  l.count_field = "proxy_next_upstream_tries";
  long long tries = 0;
  std::string from = s.r.file + ": proxy_next_upstream_tries left out (0: no limit)";
  const Directive* d = s.get("proxy_next_upstream_tries");
  if (d) {
    tries = nginx_number(s.arg(*d), s.where(*d));
    from = s.where(*d).text() + ": " + std::to_string(tries) +
           (tries == 0 ? " (no limit)" : " (attempts, the first included)");
  }
  l.settings["proxy_next_upstream_tries"] = std::to_string(tries);
  // Lint's file edits: the directive to change, or the proxy_pass to add it after.
  if (d) l.spots["tries"] = {d->line - 1, 0};
  if (const Directive* pass = s.get("proxy_pass")) l.spots["proxy_pass"] = {pass->line - 1, 0};
  l.settings["servers"] = std::to_string(u.servers);
  long long n = tries;
  if (u.address) {
    n = 1;
    from += "; proxy_pass to the address " + u.name +
            ": one server, tried once whatever the tries say (nginx never retries a single "
            "server)";
  } else if (u.block) {
    n = tries == 0 ? u.servers : std::min<long long>(tries, u.servers);
    from += "; upstream " + u.name + " has " + std::to_string(u.servers) +
            (u.servers == 1 ? " server, tried once (nginx never retries a single server)"
                            : " servers, each tried at most once");
  } else {
    n = unknown_upstream_tries(s, u, tries);
    if (tries == 0) from += "; the servers of " + u.name + " are not in this file: read as 1 try";
  }
  if (off) {
    n = 1;
    from = l.from["proxy_next_upstream"] + ": never passed to another server";
  }
  l.as_written = tries == 0 ? n : tries;
  const Where w = d && tries > 0
                      ? s.where(*d)
                      : Where{s.r.file, "upstream " + u.name, u.block ? u.block->line : 0};
  l.from["client.retries"] = from + " -> " + std::to_string(n - 1) + " retries";
  l.retries = model_retries(n - 1, w, s.r);
}

void read_timeouts(const Scope& s, LayerPolicy& l, const std::set<std::string>& on) {
  double read = 60;
  std::string from = s.r.file + ": proxy_read_timeout left out (nginx's default 60s)";
  if (const Directive* d = s.get("proxy_read_timeout")) {
    read = nginx_time(s.arg(*d), s.where(*d));
    from = s.where(*d).text() + ": " + d->args[0];
    l.settings["proxy_read_timeout"] = d->args[0];
  }
  l.per_try_timeout_s = read;
  l.from["client.timeout_s"] = from + " (between two reads; read as each attempt's timeout)";
  if (const Directive* d = s.get("proxy_connect_timeout")) {
    nginx_time(s.arg(*d), s.where(*d));  // checked; the model has no connect phase
    l.settings["proxy_connect_timeout"] = d->args[0];
  }
  l.retry_on_timeout = on.count("timeout") > 0;
  l.from["client.retry_on_timeout"] =
      l.from["proxy_next_upstream"] +
      (l.retry_on_timeout ? ": timeout passes a timed-out attempt to the next server"
                          : ": no timeout, a timed-out attempt is not retried");
  double deadline = 0;
  from = s.r.file + ": proxy_next_upstream_timeout left out (0: no limit)";
  if (const Directive* d = s.get("proxy_next_upstream_timeout")) {
    deadline = nginx_time(s.arg(*d), s.where(*d));
    from = s.where(*d).text() + ": " + d->args[0] + (deadline == 0 ? " (no limit)" : "");
    l.settings["proxy_next_upstream_timeout"] = d->args[0];
  }
  l.deadline_s = deadline;
  l.from["client.deadline_s"] = from;
  if (deadline > 0 && l.retries > 0)
    l.notes.push_back(
        "proxy_next_upstream_timeout stops new tries once it has passed but does not end a "
        "started one (ngx_http_upstream_next); read as the request's deadline");
}

// Which error answers proxy_next_upstream passes on: ngx_http_upstream_next
// (src/http/ngx_http_upstream.c) tries the next server only when the
// failure's ft_type is in the mask; `error` covers a refused connection and
// one reset or closed before a full answer, http_503 and http_429 those answers.
void read_retried_answers(LayerPolicy& l, const std::set<std::string>& on) {
  l.retried_answers = 0;
  if (on.count("error"))
    l.retried_answers |= answer_bit(FailureClass::refused) | answer_bit(FailureClass::reset);
  if (on.count("http_503")) l.retried_answers |= answer_bit(FailureClass::http_503);
  if (on.count("http_429")) l.retried_answers |= answer_bit(FailureClass::http_429);
  l.from["client.retry_on"] = l.from["proxy_next_upstream"] + ": retries " +
                              answer_set_text(l.retried_answers) +
                              (on.count("http_503") ? "" : " (a 503 answer is not passed on)");
}

void note_unmodelled(LayerPolicy& l, const std::set<std::string>& on, const Upstream& u) {
  if (l.retries <= 0) return;
  l.notes.push_back(
      "nginx retries each request on another server of the upstream, never twice on the same "
      "entry; the model retries against one pool");
  if (!on.count("non_idempotent"))
    l.notes.push_back(
        "POST, LOCK and PATCH requests are not passed to the next server once sent "
        "(non_idempotent not listed); the model retries every request");
  if (u.fails_mark_down)
    l.notes.push_back(
        "a failed try takes the server entry out for fail_timeout (max_fails, default 1 in "
        "10 s): fewer servers are tried while it lasts; not modelled");
}

}  // namespace

bool looks_like_nginx(const std::string& text) {
  // Main and http context directives a configuration or snippet starts with
  // (any proxy_* directive too).
  static const std::string starts =
      " http server location upstream events worker_processes user error_log pid include map "
      "daemon master_process load_module env worker_rlimit_nofile pcre_jit thread_pool "
      "timer_resolution lock_file working_directory stream ";
  size_t p = 0;
  const size_t n = std::min<size_t>(text.size(), 64 * 1024);
  while (p < n) {  // the first word that is not a comment
    while (p < n && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
    if (p < n && text[p] == '#') {
      while (p < n && text[p] != '\n') ++p;
      continue;
    }
    break;
  }
  size_t e = p;
  while (e < n && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
  const std::string first = text.substr(p, e - p);
  bool known = starts.find(" " + first + " ") != std::string::npos;
  if (e == p || (!known && first.rfind("proxy_", 0) != 0)) return false;
  // "server:" is YAML; nginx has a blank, ';' or '{' after a name.
  return e < n && (text[e] == ' ' || text[e] == '\t' || text[e] == '{' || text[e] == ';' ||
                   text[e] == '\n' || text[e] == '\r');
}

void read_nginx(const std::string& text, Reader& r) {
  LayerPolicy& l = r.layer;
  if (text.size() > kMaxInputBytes) fail({r.file, "", 0}, "larger than 4 MiB");
  check_utf8(text, r.file);
  Lexer lx(text, r.file);
  Directive root{"", {}, 0, true, parse_block(lx, r.file, 0, 0)};
  if (root.children.empty()) fail({r.file, "", 0}, "empty: no settings to import");
  Chain chain, best;
  int count = 0;
  if (!find_target(root, chain, best, count,
                   [](const Directive& b) { return direct(b, "proxy_pass") != nullptr; })) {
    find_target(root, chain, best, count, [](const Directive& b) {
      for (const char* n : {"proxy_next_upstream", "proxy_next_upstream_tries",
                            "proxy_next_upstream_timeout", "proxy_read_timeout"})
        if (direct(b, n)) return true;
      return false;
    });
  }
  if (best.empty())
    fail({r.file, "", 1},
         "no proxy_pass or proxy_next_upstream* directive: nothing here proxies requests");
  // The stream module proxies TCP: its proxy_next_upstream is on or off and
  // its timeout is proxy_timeout (src/stream/ngx_stream_proxy_module.c), not
  // the http module's directives read here.
  for (const Directive* b : best)
    if (b->name == "stream")
      fail({r.file, "stream", b->line},
           "a stream (TCP) proxy: its retries are not HTTP's (proxy_next_upstream on|off, "
           "proxy_timeout) and are not read; give the http block's location");
  const Directive& target = *best.back();
  std::string label = target.name.empty() ? std::string("top level") : target.name;
  for (const auto& a : target.args) label += " " + a;
  if (count > 1)
    r.warn({r.file, label, target.line},
           std::to_string(count) +
               " blocks proxy requests; this one is read (give each layer "
               "its own file)");
  Scope s{best, r};
  l.format = "nginx " + label;
  l.has_retry_policy = true;
  l.has_budget_part = true;
  Upstream u = find_upstream(s, root, r);
  l.host = u.name;
  std::set<std::string> on = read_conditions(s, l);
  std::string cond;
  for (const auto& c : on) cond += (cond.empty() ? "" : " ") + c;
  l.settings["proxy_next_upstream"] = cond;
  read_tries(s, l, u, on.count("off") > 0);
  read_timeouts(s, l, on);
  read_retried_answers(l, on);
  l.backoff = Backoff{0, 2, 0, Jitter::none};
  l.from["client.backoff.base_s"] = l.from["client.backoff.cap_s"] =
      l.from["client.backoff.multiplier"] = l.from["client.backoff.jitter"] =
          "nginx passes a failed request to the next server at once (ngx_http_upstream_next)";
  note_unmodelled(l, on, u);
  l.budget.kind = BudgetKind::none;
  l.budget_from = "nginx has no retry budget";
  l.from["client.budget.kind"] = l.budget_from;
}

namespace {

// What the lab runs of an nginx file (inside its own http { }): the blocks
// and directives the importer reads, and a few that only shape the proxying;
// nothing that names a file, a program or another address (docs/lab.md,
// "--config").
const std::set<std::string> kLabDirectives = {"upstream",
                                              "server",
                                              "location",
                                              "listen",
                                              "server_name",
                                              "proxy_pass",
                                              "proxy_next_upstream",
                                              "proxy_next_upstream_tries",
                                              "proxy_next_upstream_timeout",
                                              "proxy_connect_timeout",
                                              "proxy_read_timeout",
                                              "proxy_send_timeout",
                                              "proxy_http_version",
                                              "proxy_set_header",
                                              "proxy_buffering",
                                              "keepalive",
                                              "keepalive_timeout",
                                              "keepalive_requests",
                                              "least_conn",
                                              "random"};
const std::set<std::string> kLabUpstreamServerOptions = {"max_fails", "fail_timeout", "weight",
                                                         "backup",    "down",         "max_conns"};

struct LabRewrite {
  const std::string& file;
  const std::string& backend;
  int port;
  std::set<std::string> upstreams;
  int server_blocks = 0;
};

[[noreturn]] void not_in_lab(const LabRewrite& r, const Directive& d, const std::string& what) {
  fail({r.file, d.name, d.line},
       what +
           " is not run by the lab: it runs only the retry settings the importer reads "
           "(docs/lab.md, \"--config\")");
}

void lab_upstream_server(const LabRewrite& r, Directive& d) {
  if (d.args.empty()) fail({r.file, d.name, d.line}, "a server needs an address");
  d.args[0] = r.backend;  // the lab's backend stands in for every server
  for (size_t i = 1; i < d.args.size(); ++i)
    if (!kLabUpstreamServerOptions.count(d.args[i].substr(0, d.args[i].find('='))))
      not_in_lab(r, d, "the server option '" + d.args[i] + "'");
}

// proxy_pass to an upstream of the file stays; any other address becomes
// the backend's.
void lab_proxy_pass(const LabRewrite& r, Directive& d) {
  const std::string& url = d.args.empty() ? "" : d.args[0];
  if (url.rfind("http://", 0) != 0) not_in_lab(r, d, "proxy_pass '" + url + "' (not http://)");
  size_t host_end = url.find('/', 7);
  std::string host = url.substr(7, host_end == std::string::npos ? host_end : host_end - 7);
  if (!r.upstreams.count(host))
    d.args[0] = "http://" + r.backend + (host_end == std::string::npos ? "" : url.substr(host_end));
}

void lab_block(LabRewrite& r, std::vector<Directive>& block, const std::string& parent) {
  for (auto d = block.begin(); d != block.end();) {
    if (!kLabDirectives.count(d->name)) not_in_lab(r, *d, "'" + d->name + "'");
    if (d->name == "listen") {  // the server block gets the lab's own
      d = block.erase(d);
      continue;
    }
    if (d->name == "server" && parent == "upstream") lab_upstream_server(r, *d);
    if (d->name == "server" && d->is_block && ++r.server_blocks > 1)
      fail({r.file, "server", d->line}, "a second server { } block; the lab runs one");
    if (d->name == "proxy_pass") lab_proxy_pass(r, *d);
    if (d->is_block) lab_block(r, d->children, d->name);
    if (d->name == "server" && d->is_block)
      d->children.insert(
          d->children.begin(),
          Directive{"listen", {"127.0.0.1:" + std::to_string(r.port)}, d->line, false, {}});
    ++d;
  }
}

void write_block(const std::vector<Directive>& block, int depth, std::string& out) {
  std::string indent(static_cast<size_t>(depth) * 4, ' ');
  for (const Directive& d : block) {
    out += indent + config_word(d.name);
    for (const auto& a : d.args) out += " " + config_word(a);
    if (!d.is_block) {
      out += ";\n";
      continue;
    }
    out += " {\n";
    write_block(d.children, depth + 1, out);
    out += indent + "}\n";
  }
}

}  // namespace

LabProxyConfig lab_nginx_config(const std::string& text, const std::string& file,
                                const std::string& backend_address, int listen_port) {
  if (text.size() > kMaxInputBytes) fail({file, "", 0}, "larger than 4 MiB");
  check_utf8(text, file);
  Lexer lx(text, file);
  std::vector<Directive> root = parse_block(lx, file, 0, 0);
  LabRewrite r{file, backend_address, listen_port, {}};
  for (const Directive& d : root)
    if (d.name == "upstream" && !d.args.empty()) r.upstreams.insert(d.args[0]);
  lab_block(r, root, "");
  if (r.server_blocks == 0)
    fail({file, "server", 0},
         "no server { } block; the lab needs one, with the location that "
         "proxies");
  LabProxyConfig out;
  write_block(root, 0, out.text);
  return out;
}

}  // namespace retrystorm::configs
