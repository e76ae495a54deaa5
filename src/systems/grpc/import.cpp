// gRPC service config (JSON): methodConfig[].retryPolicy / timeout, retryThrottling.
#include <cctype>
#include <cmath>
#include <set>

#include "systems/readers.hpp"
#include "text/ascii.hpp"

namespace retrystorm::configs {

namespace {

// gRPC reads the service config's JSON names exactly, in lowerCamelCase
// (C-core's JSON loaders, ServiceConfigImpl::Create and RetryMethodConfig's
// JsonLoader; grpc-go's encoding/json structs; grpc-java by name): a
// snake_case field is ignored by every client, unlike protobuf's JSON parser.
std::string camel_case(const std::string& snake) {
  std::string out;
  for (size_t i = 0; i < snake.size(); ++i)
    out += snake[i] == '_' && i + 1 < snake.size()
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(snake[++i])))
               : snake[i];
  return out;
}

// The field as a client reads it: its lowerCamelCase name, else the same name
// in another case, which grpc-go's encoding/json matches (and C-core does not).
YAML::Node get(const YAML::Node& map, const std::string& snake) {
  if (!map.IsMap()) return missing();
  const std::string name = camel_case(snake);
  for (const auto& kv : map)
    if (key_of(kv.first) == name) return kv.second;
  for (const auto& kv : map)
    if (text::lower_ascii(key_of(kv.first)) == text::lower_ascii(name)) return kv.second;
  return missing();
}

// The fields of a map, `known` in snake_case: a snake_case field is ignored
// by every client (not imported), one in another case than lowerCamelCase is
// read by grpc-go only, and any other is unknown.
void check_grpc_fields(const Reader& r, const YAML::Node& map, const std::string& key,
                       std::initializer_list<const char*> known) {
  if (!map.IsMap()) return;
  for (const auto& kv : map) {
    const std::string k = key_of(kv.first);
    if (k.rfind('_', 0) == 0) continue;  // _comment: our own notes in JSON
    const std::string where = key.empty() ? k : key + "." + k;
    bool exact = false, other_case = false;
    for (const char* want : known) {
      exact = exact || k == camel_case(want);
      other_case = other_case || text::lower_ascii(k) == text::lower_ascii(camel_case(want));
    }
    if (k.find('_') != std::string::npos)
      r.warn(at(r.file, where, kv.first), "gRPC reads lowerCamelCase names only ('" +
                                              camel_case(k) + "'): every gRPC client ignores '" +
                                              k + "', so it is not imported");
    else if (!exact && other_case)
      r.warn(at(r.file, where, kv.first),
             "read as grpc-go reads it (its JSON matches names in any case); gRPC C-core and "
             "grpc-java read lowerCamelCase only and ignore '" +
                 k + "'");
    else if (!exact)
      r.unknown_field(key, k, kv.first, known);
  }
}

// gRPC reads durations as protobuf JSON strings ("0.1s"); other forms are
// read, with a warning, since gRPC itself rejects them.
double grpc_duration(const Reader& r, const YAML::Node& n, const std::string& key) {
  Where w = at(r.file, key, n);
  if (n.IsMap()) {
    double v = duration(n, w, {true, false, false});
    r.warn(w, "a {seconds, nanos} object: gRPC's JSON parser wants a string (\"" +
                  proto_duration(v) + "\") and rejects the service config otherwise");
    return v;
  }
  if (n.IsScalar()) {
    const std::string& t = n.Scalar();
    bool proto_form =
        !t.empty() && t.back() == 's' && t.find_first_not_of("0123456789.") == t.size() - 1;
    if (!proto_form) {
      double v = parse_duration_text(t, w, {false, false, true});
      r.warn(w, "'" + t + "': gRPC reads only seconds with an s suffix (\"" + proto_duration(v) +
                    "\") and rejects the service config otherwise");
      return v;
    }
  }
  return duration(n, w, {false, false, false});
}

const std::set<std::string> kStatusCodes = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// The method config read: the first that retries, else the first; with its
// path ("methodConfig[2]"). Null without methodConfig.
struct MethodConfigAt {
  YAML::Node mc = missing();
  std::string key;
};

MethodConfigAt pick_method_config(const YAML::Node& mcs, const Reader& r) {
  YAML::Node mc = missing();
  std::string mc_key;
  if (!mcs.IsSequence()) fail(at(r.file, "methodConfig", mcs), "must be a list");
  int with_retry = 0;
  for (size_t i = 0; i < mcs.size(); ++i) {
    std::string k = "methodConfig[" + std::to_string(i) + "]";
    const YAML::Node m = mcs[i];
    if (!m.IsMap()) fail(at(r.file, k, m), "must be an object");
    check_grpc_fields(r, m, k,
                      {"name", "wait_for_ready", "timeout", "max_request_message_bytes",
                       "max_response_message_bytes", "retry_policy", "hedging_policy"});
    if (get(m, "retry_policy") && get(m, "hedging_policy"))
      fail(at(r.file, k, m), "has both retryPolicy and hedgingPolicy; gRPC allows one");
    // A method config applies to the methods its names name: none, none
    // (grpc-go parseServiceConfig skips it; C-core registers only names;
    // grpc-js refuses the config).
    if (YAML::Node names = get(m, "name"); !names || !names.IsSequence() || names.size() == 0) {
      r.warn(at(r.file, k, m), "no name: gRPC applies this method config to no method; not read");
      continue;
    }
    bool has = get(m, "retry_policy") || get(m, "hedging_policy");
    if (has && ++with_retry == 1) {
      mc = m;
      mc_key = k;
    }
  }
  for (size_t i = 0; !mc && i < mcs.size(); ++i)  // the first with a name
    if (YAML::Node names = get(mcs[i], "name"); names && names.IsSequence() && names.size() > 0) {
      mc = mcs[i];
      mc_key = "methodConfig[" + std::to_string(i) + "]";
    }
  if (with_retry > 1)
    r.warn(
        at(r.file, "methodConfig", mcs),
        std::to_string(with_retry) + " method configs retry; the first (" + mc_key + ") is read");
  return {mc, mc_key};
}

// tokenRatio as gRPC C-core reads the number's text
// (RetryGlobalConfig::JsonPostLoad): without a decimal point the number
// counts thousandths; only with one is the whole part multiplied by 1000.
// grpc-go (a float64) and grpc-java (JsonUtil.getDouble) read the value as
// written; the import models C-core, as for perAttemptRecvTimeout. What
// C-core refuses, or cuts past three decimals, is read as grpc-go reads it.
double token_ratio(const YAML::Node& tr, const Where& tw, const Reader& r) {
  double ratio = number(tr, tw);
  if (ratio <= 0) fail(tw, "must be above 0");
  const std::string& written = tr.Scalar();
  if (written.find_first_of("eE") != std::string::npos) {
    r.warn(tw, written +
                   ": gRPC C-core reads digits and a decimal point only and refuses "
                   "the service config; read as grpc-go and grpc-java read it");
  } else if (written.find('.') == std::string::npos) {
    const double thousandths = ratio / 1000;
    r.warn(tw, written + " has no decimal point: gRPC C-core reads it in thousandths, " +
                   number_text(thousandths) + " tokens per success (grpc-go and grpc-java read " +
                   written + "); read as C-core reads it, write " + written + ".0 for " + written);
    ratio = thousandths;
  } else if (const double kept = std::floor(ratio * 1000 + 1e-9) / 1000; kept != ratio) {
    r.warn(tw, number_text(ratio) + ": gRPC C-core keeps 3 decimals, " +
                   (kept > 0 ? number_text(kept) + " (grpc-go reads the whole value)"
                             : std::string("0, and refuses the service config")));
  }
  return ratio;
}

// Budget: retryThrottling, per channel. Returns whether there is one.
bool read_throttling(const YAML::Node& d, Reader& r) {
  LayerPolicy& l = r.layer;
  // Budget: retryThrottling, per channel.
  YAML::Node th = get(d, "retry_throttling");
  l.has_budget_part = true;
  if (th) {
    if (!th.IsMap()) fail(at(r.file, "retryThrottling", th), "must be an object");
    check_grpc_fields(r, th, "retryThrottling", {"max_tokens", "token_ratio"});
    YAML::Node mt = get(th, "max_tokens"), tr = get(th, "token_ratio");
    if (!mt) fail(at(r.file, "retryThrottling", th), "maxTokens is required by gRPC");
    if (!tr) fail(at(r.file, "retryThrottling", th), "tokenRatio is required by gRPC");
    Where mw = at(r.file, "retryThrottling.maxTokens", mt),
          tw = at(r.file, "retryThrottling.tokenRatio", tr);
    long long max_tokens = whole(mt, mw, 1, 1000);
    double ratio = token_ratio(tr, tw, r);
    l.budget.kind = BudgetKind::grpc_throttling;
    l.set_budget("max_tokens", static_cast<double>(max_tokens));
    l.set_budget("token_ratio", ratio);
    l.from["client.budget.kind"] =
        at(r.file, "retryThrottling", th).text() + ": retries only while tokens > maxTokens / 2";
    l.from["client.budget.max_tokens"] = mw.text();
    l.from["client.budget.token_ratio"] = tw.text();
  } else {
    l.budget.kind = BudgetKind::none;
    l.from["client.budget.kind"] = r.file + ": no retryThrottling, so no retry budget";
  }
  l.budget_from = l.from["client.budget.kind"];

  return static_cast<bool>(th);
}

// The method's timeout: the call's deadline, which also ends every attempt.
void read_deadline(const MethodConfigAt& m, Reader& r) {
  LayerPolicy& l = r.layer;
  const YAML::Node& mc = m.mc;
  const std::string& mc_key = m.key;
  YAML::Node to = get(mc, "timeout");
  if (to) {
    double t = grpc_duration(r, to, mc_key + ".timeout");
    Where w = at(r.file, mc_key + ".timeout", to);
    l.deadline_s = t;
    l.from["client.deadline_s"] = w.text() + ": the call's deadline, all attempts included";
    if (t > 0) {
      l.per_try_timeout_s = t;
      l.from["client.timeout_s"] =
          w.text() + ": an attempt can take the whole deadline (no per-attempt timeout)";
    }
  } else {
    l.deadline_s = 0;
    l.from["client.deadline_s"] =
        at(r.file, mc_key, mc).text() + ": no timeout, so no deadline unless the caller sets one";
    l.notes.push_back(
        "no methodConfig timeout: calls have no deadline; client.timeout_s is not "
        "imported");
  }
}

// A field gRPC requires of a retry policy.
YAML::Node required(const YAML::Node& rp, const std::string& rk, const Reader& r, const char* snake,
                    const char* camel) {
  YAML::Node n = get(rp, snake);
  if (!n)
    fail(at(r.file, rk, rp), std::string(camel) +
                                 " is required by gRPC (it rejects the service config without "
                                 "it)");
  return n;
}

// maxAttempts, as gRPC caps it.
void read_attempts(const YAML::Node& ma, const std::string& rk, Reader& r) {
  LayerPolicy& l = r.layer;
  Where maw = at(r.file, rk + ".maxAttempts", ma);
  long long attempts = whole(ma, maw, 0, 1LL << 31);
  if (attempts < 2) fail(maw, std::to_string(attempts) + ": gRPC requires at least 2");
  l.as_written = attempts;
  long long used = attempts;
  if (attempts > 5) {
    l.capped_from = attempts;
    used = 5;
    r.warn(maw, std::to_string(attempts) + " attempts: gRPC silently uses 5");
  }
  l.retries = static_cast<int>(used - 1);
  l.from["client.retries"] = maw.text() + ": " + std::to_string(attempts) + " (attempts" +
                             (attempts > 5 ? ", capped to 5 by gRPC" : "") + "; " +
                             std::to_string(used - 1) + " retries)";
}

void read_backoff(const YAML::Node& ib, const YAML::Node& mb, const YAML::Node& bm,
                  const std::string& rk, Reader& r) {
  LayerPolicy& l = r.layer;
  Where ibw = at(r.file, rk + ".initialBackoff", ib), mbw = at(r.file, rk + ".maxBackoff", mb),
        bmw = at(r.file, rk + ".backoffMultiplier", bm);
  l.backoff.base_s = grpc_duration(r, ib, rk + ".initialBackoff");
  l.backoff.cap_s = grpc_duration(r, mb, rk + ".maxBackoff");
  l.backoff.multiplier = number(bm, bmw);
  if (l.backoff.base_s <= 0) fail(ibw, "must be above 0");
  if (l.backoff.cap_s <= 0) fail(mbw, "must be above 0");
  if (l.backoff.multiplier <= 0) fail(bmw, "must be above 0");
  if (l.backoff.multiplier < 1) {
    r.warn(bmw, number_text(l.backoff.multiplier) +
                    ": a multiplier below 1 shrinks the backoff; the model needs at least 1, "
                    "read as 1");
    l.backoff.multiplier = 1;
  }
  l.from["client.backoff.base_s"] = ibw.text() + ": " + human_duration(l.backoff.base_s);
  l.from["client.backoff.cap_s"] = mbw.text() + ": " + human_duration(l.backoff.cap_s);
  l.from["client.backoff.multiplier"] = bmw.text();
}

// retryableStatusCodes: names or numbers of gRPC status codes, never OK.
// Which error answers they retry: the client hears a 503 or 429 from a
// proxy, a refused connection and a reset as UNAVAILABLE (gRPC's
// doc/http-grpc-status-mapping.md; C-core's transport fails the stream
// with UNAVAILABLE); a gRPC server's own throttling is RESOURCE_EXHAUSTED.
void read_status_codes(const YAML::Node& rc, const std::string& rk, Reader& r,
                       const std::string& field = "retryableStatusCodes") {
  Where rcw = at(r.file, rk + "." + field, rc);
  if (!rc.IsSequence() || rc.size() == 0) fail(rcw, "must be a non-empty list of status codes");
  bool unavailable = false, exhausted = false;
  for (size_t i = 0; i < rc.size(); ++i) {
    Where w = at(r.file, rk + "." + field + "[" + std::to_string(i) + "]", rc[i]);
    std::string code = text(rc[i], w);
    bool numeric = !code.empty() && code.find_first_not_of("0123456789") == std::string::npos;
    if (numeric ? std::stoll(code.substr(0, 6)) > 16 : !kStatusCodes.count(code))
      fail(w, "'" + code + "' is not a gRPC status code (e.g. UNAVAILABLE)");
    if (code == "OK" || code == "0") fail(w, "OK cannot be retryable");
    if (numeric)  // RetryMethodConfig::JsonPostLoad loads the codes as strings
      r.warn(w,
             "a number: grpc-go reads it, gRPC C-core (C++, Python, Ruby, PHP) refuses the "
             "service config ('is not a string'); write the name, e.g. UNAVAILABLE");
    unavailable = unavailable || code == "UNAVAILABLE" || code == "14";
    exhausted = exhausted || code == "RESOURCE_EXHAUSTED" || code == "8";
  }
  LayerPolicy& l = r.layer;
  l.retried_answers = unavailable ? kAllAnswers : 0;
  if (exhausted) l.retried_answers |= answer_bit(FailureClass::http_429);
  l.from["client.retry_on"] =
      rcw.text() + ": retries " + answer_set_text(l.retried_answers) +
      (unavailable ? " (503, 429, a refused connection and a reset reach the client as UNAVAILABLE)"
                   : " (no UNAVAILABLE: a 503, a refused connection and a reset are not retried)");
  // Every gRPC client waits a server's grpc-retry-pushback-ms exactly
  // instead of its backoff (C-core RetryFilter's CallAttempt::ShouldRetry,
  // grpc-java RetriableStream, grpc-go's retry, grpc-js RetryingCall).
  l.pushback = Pushback::exact;
  l.from["client.pushback"] =
      "gRPC waits a server's grpc-retry-pushback-ms exactly, instead of the backoff";
}

// perAttemptRecvTimeout: a per-attempt timeout, in C-core only.
void read_per_attempt_timeout(const YAML::Node& rp, const std::string& rk, Reader& r) {
  LayerPolicy& l = r.layer;
  YAML::Node pa = get(rp, "per_attempt_recv_timeout");
  if (pa) {
    double t = grpc_duration(r, pa, rk + ".perAttemptRecvTimeout");
    Where w = at(r.file, rk + ".perAttemptRecvTimeout", pa);
    if (t <= 0) fail(w, "must be above 0");
    // Only C-core applies it: grpc-go has no such field in its service
    // config, grpc-java stores it (RetryPolicy.perAttemptRecvTimeoutNanos)
    // but RetriableStream never reads it. Read as C-core runs it.
    l.per_try_timeout_s = t;
    l.retry_on_timeout = true;
    l.per_try_c_core_only = true;
    l.from["client.timeout_s"] = w.text() + ": " + human_duration(t) + " per attempt (C-core)";
    l.from["client.retry_on_timeout"] =
        w.text() + ": an attempt that times out is retried (C-core)";
    // C-core itself parses the field only on a channel created with
    // grpc.experimental.enable_hedging (RetryMethodConfig's JSON loader in
    // retry_service_config.cc); checked on the real client in
    // docs/conformance.md.
    l.notes.push_back(w.text() +
                      ": only gRPC C-core (C++, Python, Ruby, PHP, ...) applies "
                      "perAttemptRecvTimeout, and only on a channel created with the argument "
                      "grpc.experimental.enable_hedging (off by default); grpc-js, grpc-go and "
                      "grpc-java ignore it, so there an attempt runs until the deadline and is "
                      "not retried; read as C-core runs it with that argument");
  }
}

void read_retry_policy(const YAML::Node& rp, const std::string& rk, Reader& r) {
  LayerPolicy& l = r.layer;
  if (!rp.IsMap()) fail(at(r.file, rk, rp), "must be an object");
  l.notes.push_back(
      "jitter read as gRPC C-core, grpc-go 1.69+ and grpc-java 1.71+ draw it (backoff x "
      "U(0.8, 1.2)); older grpc-go and grpc-java draw U(0, backoff): set "
      "client.backoff.jitter = full for those; gRPC C-core 1.51 (Debian 12) waits exactly "
      "initialBackoff before the first retry, later releases draw it like the others "
      "(docs/conformance.md)");
  check_grpc_fields(r, rp, rk,
                    {"max_attempts", "initial_backoff", "max_backoff", "backoff_multiplier",
                     "retryable_status_codes", "per_attempt_recv_timeout"});
  YAML::Node ma = required(rp, rk, r, "max_attempts", "maxAttempts");
  YAML::Node ib = required(rp, rk, r, "initial_backoff", "initialBackoff");
  YAML::Node mb = required(rp, rk, r, "max_backoff", "maxBackoff");
  YAML::Node bm = required(rp, rk, r, "backoff_multiplier", "backoffMultiplier");
  YAML::Node rc = required(rp, rk, r, "retryable_status_codes", "retryableStatusCodes");
  read_attempts(ma, rk, r);
  read_backoff(ib, mb, bm, rk, r);
  read_status_codes(rc, rk, r);
  read_per_attempt_timeout(rp, rk, r);
}

// hedgingPolicy: up to maxAttempts attempts, a new one every hedgingDelay
// while none has answered, and at once after a nonFatalStatusCodes answer
// (gRPC's retry design, A6; grpc-java's RetriableStream and grpc-js's
// RetryingCall hedge, gRPC C-core and grpc-go do not). Read as a hedging
// layer (client.hedging) of that many attempts whose timeout is hedgingDelay
// and which has no backoff; the fluid engine, which has no hedging, reads it
// as retries after that timeout (docs/policies.md, "Hedging").
void read_hedging_policy(const YAML::Node& hp, const std::string& hk, Reader& r) {
  LayerPolicy& l = r.layer;
  if (!hp.IsMap()) fail(at(r.file, hk, hp), "must be an object");
  check_grpc_fields(r, hp, hk, {"max_attempts", "hedging_delay", "non_fatal_status_codes"});
  read_attempts(required(hp, hk, r, "max_attempts", "maxAttempts"), hk, r);
  l.count_field = "hedgingPolicy.maxAttempts";
  l.hedging = Hedging::grpc;
  l.from["client.hedging"] = hk + ": every attempt stays in flight, the first answer wins";
  double delay = 0;
  std::string delay_from = hk + ": hedgingDelay left out (0s: every attempt at once)";
  if (YAML::Node hd = get(hp, "hedging_delay")) {
    delay = grpc_duration(r, hd, hk + ".hedgingDelay");
    delay_from = at(r.file, hk + ".hedgingDelay", hd).text() + ": " + human_duration(delay);
  }
  l.per_try_timeout_s = std::max(delay, 0.001);
  l.retry_on_timeout = true;
  l.from["client.timeout_s"] = delay_from + ": a new hedge when no attempt answered by then";
  l.from["client.retry_on_timeout"] = hk + ": hedges do not wait for a failure";
  l.backoff = Backoff{0, 1, 0, Jitter::none};
  l.from["client.backoff.base_s"] = l.from["client.backoff.cap_s"] =
      l.from["client.backoff.multiplier"] = l.from["client.backoff.jitter"] =
          "hedging has no backoff: the next hedge follows hedgingDelay";
  if (YAML::Node nf = get(hp, "non_fatal_status_codes"); nf && nf.IsSequence() && nf.size() > 0) {
    read_status_codes(nf, hk, r, "nonFatalStatusCodes");
  } else {
    l.retried_answers = 0;
    l.from["client.retry_on"] =
        hk + ": no nonFatalStatusCodes, so a failed answer ends the call (no hedge after it)";
  }
  l.notes.push_back(hk +
                    ": hedging, modelled by the agent engine (client.hedging); the fluid "
                    "engine reads it as retries after a per-attempt timeout of hedgingDelay "
                    "and abandons the earlier attempts (the server still serves them). "
                    "grpc-java and grpc-js hedge (after a failed hedge the model follows "
                    "grpc-js; grpc-java waits hedgingDelay unless pushed back); gRPC C-core and "
                    "grpc-go do not, and send one attempt");
}

}  // namespace

void read_grpc(const std::vector<YAML::Node>& docs, Reader& r) {
  LayerPolicy& l = r.layer;
  l.format = "gRPC service config";
  if (docs.size() != 1) fail({r.file, "", line_of(docs[1])}, "one service config per file");
  const YAML::Node& d = docs[0];
  if (!d.IsMap()) fail(at(r.file, "", d), "a service config is a JSON object");
  check_grpc_fields(r, d, "",
                    {"method_config", "retry_throttling", "load_balancing_config",
                     "load_balancing_policy", "health_check_config"});
  YAML::Node mcs = get(d, "method_config");
  MethodConfigAt m = mcs ? pick_method_config(mcs, r) : MethodConfigAt{};
  // Lint's edit goes to the method config read, not to every one.
  if (m.mc) l.spots["method_config"] = {std::stoi(m.key.substr(m.key.find('[') + 1)), 0};
  if (YAML::Node names = m.mc ? get(m.mc, "name") : missing();
      names && names.IsSequence() && names.size() > 0 && names[0].IsMap())
    if (YAML::Node service = get(names[0], "service"); service && service.IsScalar()) {
      // "shop.v1.Orders": the service is the last part, the package before it.
      const std::string& name = service.Scalar();
      l.host = name.substr(name.find_last_of('.') + 1);
    }
  bool throttled = read_throttling(d, r);
  if (!m.mc) {
    if (!throttled)
      fail(at(r.file, "", d), "no methodConfig and no retryThrottling: nothing to import");
    l.format = "gRPC service config (retryThrottling only)";
    return;
  }
  l.has_retry_policy = true;
  l.counting = "attempts";
  l.count_field = "retryPolicy.maxAttempts";
  // Read as gRPC C-core and current grpc-go / grpc-java run it; older Go and
  // Java releases drew U(0, window) (docs/policies.md, "Per system").
  l.backoff.jitter = Jitter::grpc;
  l.from["client.backoff.jitter"] =
      "gRPC: each delay is the backoff x U(0.8, 1.2) (C-core; grpc-go 1.69+, grpc-java 1.71+)";
  l.retry_on_timeout = false;
  l.from["client.retry_on_timeout"] =
      "gRPC has no per-attempt timeout: the call's deadline ends every attempt and is not retried";
  read_deadline(m, r);
  YAML::Node rp = get(m.mc, "retry_policy");
  std::string rk = m.key + ".retryPolicy";
  if (YAML::Node hp = get(m.mc, "hedging_policy"); hp && !rp)
    return read_hedging_policy(hp, m.key + ".hedgingPolicy", r);
  if (!rp) {
    l.retries = 0;
    l.from["client.retries"] = at(r.file, m.key, m.mc).text() + ": no retryPolicy, so no retries";
    l.has_retry_policy = true;
    l.backoff.base_s = 0;
    l.backoff.cap_s = 0;
    l.from["client.backoff.base_s"] = l.from["client.backoff.cap_s"] =
        l.from["client.backoff.multiplier"] = "no retryPolicy";
    return;
  }
  read_retry_policy(rp, rk, r);
}

}  // namespace retrystorm::configs
