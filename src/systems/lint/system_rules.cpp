#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "systems/lint/rules.hpp"
#include "systems/readers.hpp"

namespace retrystorm::configs::lint {

namespace {

// The proxies' own traps (HAProxy, nginx), from the settings they were read
// with (LayerPolicy::settings; facts in systems/haproxy/import.cpp, systems/nginx/import.cpp).
std::string setting(const LayerPolicy& l, const std::string& name) {
  auto it = l.settings.find(name);
  return it == l.settings.end() ? "" : it->second;
}

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

}  // namespace

// gRPC perAttemptRecvTimeout: honoured by C-core only (a timer per attempt in
// its retry filter); grpc-go does not parse it and grpc-java never reads the
// value it parses (docs/policies.md, "Per system").
void rule_c_core_only(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.retries <= 0 || !l.per_try_c_core_only || !l.per_try_timeout_s) return;
  double deadline = l.deadline_s.value_or(0);
  Finding f = finding(Severity::warning, "per-attempt-timeout-c-core-only", l.file);
  f.message = "retryPolicy.perAttemptRecvTimeout (" + human_duration(*l.per_try_timeout_s) +
              ") is applied only by gRPC C-core (C++, Python, Ruby, PHP, ...), and only on "
              "channels created with the argument grpc.experimental.enable_hedging; grpc-js, "
              "grpc-go and grpc-java ignore it: there an attempt runs until " +
              (deadline > 0 ? "the deadline (" + human_duration(deadline) + ")"
                            : std::string("the caller gives up (no methodConfig.timeout)")) +
              " and a timed-out attempt is never retried";
  f.fix =
      "set grpc.experimental.enable_hedging on C-core channels that rely on it; for other "
      "clients do not count on it: size methodConfig.timeout (and the callers' deadlines) "
      "for attempts that run to the deadline";
  f.numbers = {{"per_attempt_recv_timeout_s", *l.per_try_timeout_s}, {"deadline_s", deadline}};
  c.out.push_back(f);
}

// gRPC hedgingPolicy: hedges are sent whether or not the earlier attempts
// fail, so in an overload (every answer later than hedgingDelay) every call
// sends maxAttempts; only retryThrottling limits them (gRPC's design, A6:
// hedges take tokens like retries). Which client runs it matters: grpc-java
// and grpc-js hedge, gRPC C-core and grpc-go send one attempt.
void rule_hedging(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.hedging != Hedging::grpc || l.retries <= 0) return;
  bool throttled = l.budget.kind == BudgetKind::grpc_throttling;
  Finding f = finding(throttled ? Severity::info : Severity::warning, "hedging", l.file);
  f.message = "hedgingPolicy sends up to " + std::to_string(l.retries + 1) +
              " attempts per call, a new one every " +
              human_duration(l.per_try_timeout_s.value_or(0)) +
              " while none has answered, whether or not the earlier ones fail: when answers "
              "get slower than that, every call sends " +
              std::to_string(l.retries + 1) + " (" + std::to_string(l.retries + 1) + "x the load)" +
              (throttled ? "; retryThrottling takes a token per hedge and bounds them"
                         : ", and without retryThrottling nothing bounds them") +
              ". grpc-java and grpc-js hedge; gRPC C-core and grpc-go do not (one attempt)";
  f.fix = throttled ? "keep retryThrottling; size hedgingDelay above the latency a healthy call "
                      "has at its 95th percentile, so hedges stay rare"
                    : "add retryThrottling {\"maxTokens\": 10, \"tokenRatio\": 0.1}: hedges take "
                      "its tokens like retries";
  f.numbers = {{"attempts", l.retries + 1},
               {"hedging_delay_s", l.per_try_timeout_s.value_or(0)},
               {"throttled", throttled}};
  if (!throttled) f.fix_keys = room(l.system).budget_fix.keys;
  c.out.push_back(f);
}

// Hedging at two layers multiplies like retries, and sooner: each layer's
// hedges go out on a timer, not on failures.
void rule_hedging_layers(const Context& c) {
  std::string files;
  long long product = 1;
  int hedging = 0;
  for (const LayerPolicy* l : c.retrying)
    if (l->hedges() && l->retries > 0) {
      ++hedging;
      product *= l->retries + 1;
      files += (files.empty() ? "" : ", ") + l->file;
    }
  if (hedging < 2) return;
  Finding f = finding(Severity::warning, "hedging-at-several-layers", files);
  f.message = std::to_string(hedging) + " layers hedge (" + files + "): up to " +
              std::to_string(product) +
              " attempts reach the bottom for one call as soon as answers are slower than the "
              "hedging delays, with no failure needed";
  f.fix = "hedge at one layer only, the one nearest the dependency";
  f.numbers = {{"layers", hedging}, {"attempts", product}};
  c.out.push_back(f);
}

// AWS adaptive mode: the client-side rate limiter is imported
// (client.rate_limiter aws_adaptive) and run by the agent engine; lint's
// simulation runs the fluid engine on 503 rejections, where it never turns on.
void rule_adaptive_limiter(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.rate_limiter != RateLimiter::aws_adaptive) return;
  Finding f = finding(Severity::info, "adaptive-rate-limiter", l.file);
  f.message =
      "retry_mode = adaptive: after a throttling answer (429) each client holds every attempt, "
      "first attempts included, to a token bucket refilled at 0.7 x its measured rate (at least "
      "0.5 per second) that then grows back along a cubic curve; imported as "
      "client.rate_limiter aws_adaptive and run by the agent engine, one limiter per client "
      "instance; a simulation that answers 503 never turns it on";
  f.fix =
      "to see it, run the imported keys with engine=agent and server.reject_status=429 (or "
      "incident.failure=429)";
  f.numbers = {{"min_fill_rate_per_s", 0.5}, {"beta", 0.7}};
  c.out.push_back(f);
}

// Envoy's HTTP/1 pool with the route timeout disabled (timeout: 0s): an
// attempt that waits for a connection has no timer at all. The router starts
// its per-try timer only once the pool hands it a connection
// (UpstreamRequest::onPoolReady calls setupPerTryTimeout,
// source/common/router/upstream_request.cc), so the
// wait ends only when a connection frees or max_pending_requests overflows.
void rule_pool_wait_unbounded(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  auto pool = l.extra.find("client.max_connections");
  if (l.system != System::envoy || pool == l.extra.end() || l.deadline_s.value_or(1) > 0) return;
  auto pending_at = l.extra.find("client.max_pending_requests");
  const double pending = pending_at == l.extra.end() ? 1024 : std::get<double>(pending_at->second);
  if (pending <= 0) return;  // nothing waits: overflow is answered at once
  const double connections = std::get<double>(pool->second);
  Finding f = finding(Severity::warning, "pool-wait-unbounded", l.file);
  f.message = "the route timeout is disabled (timeout: 0s) and the cluster holds " +
              plural(static_cast<long long>(connections), "connection", "connections") +
              " with room for " +
              plural(static_cast<long long>(pending), "waiting request", "waiting requests") +
              ": an attempt waiting for a connection has no timer (Envoy starts the per-try "
              "timeout only once a connection is ready), so in an overload requests wait until "
              "a connection frees, long after their callers gave up, and each one's retries "
              "wait behind them";
  f.fix =
      "set the route's timeout (Envoy's default is 15s) so that waiting ends with the request; "
      "or lower max_pending_requests so that overflow is answered at once";
  f.numbers = {{"max_connections", connections}, {"max_pending_requests", pending}};
  c.out.push_back(f);
}

// Outlier detection whose max_ejection_percent is below one host's share:
// Envoy ejects only while 100 x (ejected + 1) / hosts <= max_ejection_percent
// (DetectorImpl::ejectHost, source/common/upstream/outlier_detection_impl.cc),
// so with the default 10 a cluster of fewer than 10 hosts never ejects any.
void rule_outlier_never_ejects(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  auto fives = l.extra.find("client.outlier_5xx");
  auto most = l.extra.find("client.outlier_max_percent");
  if (fives == l.extra.end() || most == l.extra.end() || std::get<double>(fives->second) <= 0)
    return;
  const double percent = std::get<double>(most->second);
  auto hosts_at = l.extra.find("server.hosts");
  const double hosts = hosts_at == l.extra.end() ? 0 : std::get<double>(hosts_at->second);
  // The fewest hosts of which one may be ejected: 100 / hosts <= percent.
  const double needed = percent > 0 ? std::ceil(100 / percent - 1e-9) : 0;
  if (percent > 0 && (needed <= 1 || (hosts > 0 && hosts >= needed))) return;
  Finding f =
      finding(hosts > 0 ? Severity::warning : Severity::info, "outlier-never-ejects", l.file);
  const std::string who =
      percent <= 0 ? "no host is ever ejected"
      : hosts > 0
          ? "these " + plural(static_cast<long long>(hosts), "host", "hosts") + " are never ejected"
          : "a cluster of fewer than " + number_text(needed) + " hosts never ejects one";
  f.message = "max_ejection_percent " + number_text(percent) +
              ": Envoy ejects a host only while the hosts ejected, this one included, stay "
              "within " +
              number_text(percent) + "% of the cluster, so " + who +
              ", however many 5xx a broken host answers";
  f.fix = "raise max_ejection_percent to one host's share, 100 / hosts rounded up" +
          (hosts > 0 ? " (" + number_text(std::ceil(100 / hosts)) + ")"
                     : std::string(" (34 for 3 hosts, 25 for 4)")) +
          ", and keep a panic threshold so that a cluster-wide overload does not eject its "
          "healthy hosts (text only)";
  f.numbers = {{"max_ejection_percent", percent}};
  if (percent > 0) f.numbers.push_back({"hosts_needed", needed});
  if (hosts > 0) f.numbers.push_back({"hosts", hosts});
  c.out.push_back(f);
}

// botocore before 1.34.107 caps each delay after the jitter in its standard
// and adaptive modes, min(U(0, 1) x 2^(n-1), 20) s (ExponentialBackoff.
// delay_amount in botocore/retries/standard.py): from retry 6 on, a share of
// the delays is exactly 20 s, which the model's U(0, 20) does not draw.
// 1.34.107 and later draw U(0, 1) x min(2^(n-1), 20), as the model does.
// Measured on Debian's 1.29 in docs/conformance.md ("AWS SDKs").
void rule_aws_cap_after_jitter(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  auto mode = l.settings.find("retry_mode");
  if (l.system != System::aws || mode == l.settings.end() || mode->second == "legacy") return;
  if (l.retries < 6) return;
  Finding f = finding(Severity::info, "backoff-cap-after-jitter", l.file);
  f.message = std::to_string(l.retries + 1) + " attempts in retry_mode = " + mode->second +
              ": botocore releases before 1.34.107 (boto3 before 1.34.107, Debian 12's 1.29 "
              "among them) cap each delay after drawing it, so from retry 6 on a delay is "
              "exactly 20 s in 37.5% of draws or more (retry 6 mean 13.75 s); the model draws "
              "U(0, 20) s there (mean 10 s), as botocore 1.34.107 and later do, so for the older "
              "releases it runs the long tail of the ladder shorter";
  f.fix =
      "with botocore before 1.34.107, read ladder totals past retry 5 as a lower bound, or keep "
      "max_attempts at 6 or below";
  f.numbers = {{"attempts", l.retries + 1.0}, {"cap_s", 20}};
  c.out.push_back(f);
}

// do_l7_retry (src/http_ana.c) checks no method: an L7 retry replays POSTs.
void rule_haproxy(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.system != System::haproxy || l.retries <= 0) return;
  std::string on = setting(l, "retry-on");
  std::vector<std::string> replays;
  for (const char* k : {"response-timeout", "empty-response", "junk-response"})
    if (has_word(on, k)) replays.push_back(k);
  if (!replays.empty()) {
    Finding f = finding(Severity::warning, "retries-non-idempotent", l.file);
    std::string list;
    for (const auto& k : replays) list += (list.empty() ? "" : ", ") + k;
    f.message = "retry-on " + list +
                ": the server may have done the work before it failed, and HAProxy replays "
                "every method (POST included; do_l7_retry checks none), " +
                plural(l.retries, "time", "times");
    f.fix =
        "keep response-timeout and empty-response for backends whose handlers are "
        "idempotent (request IDs); elsewhere retry-on conn-failure 503";
    f.numbers = {{"retries", l.retries}, {"retry_on", on}};
    c.out.push_back(f);
  }
  if (on == "conn-failure") {
    Finding f = finding(Severity::info, "retries-connection-failures-only", l.file);
    f.message = "retry-on conn-failure (HAProxy's default): the " +
                plural(l.retries, "retry covers", "retries cover") +
                " only connections that fail; a server that accepts and then answers 503 or "
                "times out is not retried";
    f.numbers = {{"retries", l.retries}, {"retry_on", on}};
    c.out.push_back(f);
  }
}

void rule_nginx(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.system != System::nginx) return;
  std::string tries = setting(l, "proxy_next_upstream_tries");
  int servers = std::atoi(setting(l, "servers").c_str());
  if (tries == "0" && l.retries > 0) {
    Finding f = finding(Severity::warning, "unlimited-tries", l.file);
    f.message = "proxy_next_upstream_tries 0 (the default) sets no limit: every one of the " +
                std::to_string(servers) +
                " servers is tried, so each server added to the upstream adds a retry (" +
                std::to_string(l.retries) + " now)";
    f.fix = "set proxy_next_upstream_tries 2 (one retry) or the attempts you mean";
    f.numbers = {{"servers", servers}, {"retries", l.retries}};
    f.fix_keys = c.retries_fix(index, std::min(l.retries, 1));
    c.out.push_back(f);
  }
  long long written = std::atoll(tries.c_str());
  if (servers > 0 && written > servers) {
    Finding f = finding(Severity::info, "tries-above-servers", l.file);
    f.message = "proxy_next_upstream_tries " + tries + " but the upstream has " +
                plural(servers, "server", "servers") +
                (servers == 1 ? ", which nginx never retries" : "") + ": at most " +
                plural(servers, "try", "tries") + " per request";
    f.numbers = {{"tries", written}, {"servers", servers}};
    c.out.push_back(f);
  }
  if (l.retries > 0 && has_word(setting(l, "proxy_next_upstream"), "non_idempotent")) {
    Finding f = finding(Severity::warning, "retries-non-idempotent", l.file);
    f.message =
        "proxy_next_upstream non_idempotent passes POST, LOCK and PATCH requests to the "
        "next server after they were sent: the work may be done twice";
    f.fix = "drop non_idempotent unless the handlers are idempotent (request IDs)";
    c.out.push_back(f);
  }
}

// More retries than the model runs: every number lint gives for this layer
// (and --simulate) is for the cap, below what the system does.
void rule_model_cap(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  if (l.uncapped_retries <= l.retries) return;
  Finding f = finding(Severity::warning, "retries-above-model-cap", l.file);
  f.message = "up to " + std::to_string(l.uncapped_retries + 1) +
              " attempts per request at this layer (" + std::to_string(l.uncapped_retries) +
              " retries), more than the model runs: it was read as " + std::to_string(l.retries) +
              " retries, so the findings here and --simulate count " +
              std::to_string(l.retries + 1) +
              " attempts and the retry load of an incident is higher than they show";
  f.fix = count_text(l, 1) + " (one retry), or the few retries you mean";
  f.numbers = {{"retries", l.uncapped_retries}, {"model_retries", l.retries}};
  c.out.push_back(f);
}

// HAProxy 3.1 and later copy `retries` into each stream's unsigned short
// max_retries (stream_new, process_switching_rules in src/stream.c;
// back_handle_st_cer in src/backend.c compares against it); up to 3.0 the
// int itself. Outside 0..65535 the versions differ: -1 never retries up to
// 3.0 and retries 65535 times from 3.1. The import follows 2.6.
void rule_haproxy_16_bit(const Context& c, size_t index) {
  const LayerPolicy& l = *c.retrying[index];
  const std::string held = setting(l, "retries held");
  if (l.system != System::haproxy || held.empty() || has_word(setting(l, "retry-on"), "none"))
    return;
  const long long n = std::atoll(held.c_str());
  if (n >= 0 && n <= 0xFFFF) return;
  const long long wrapped = static_cast<uint16_t>(n);
  Finding f = finding(Severity::warning, "retries-wrap-16-bit", l.file);
  f.message =
      "retries " + held + ": HAProxy up to 3.0 " +
      (n < 0 ? std::string("never retries (a negative count)")
             : "retries " + plural(n, "time", "times")) +
      "; 3.1 and later keep the count in 16 bits (unsigned short max_retries) and " +
      (wrapped == 0 ? std::string("never retry") : "retry " + plural(wrapped, "time", "times"));
  if (wrapped > std::max(n, 0LL))
    f.message += std::string(wrapped > model_retry_cap() ? ": a retry storm there, " : ": ") +
                 "more retries than the import (read as up to 3.0) and --simulate show";
  f.fix = count_text(l, 1) +
          " (one retry), or a count from 0 to 65535, which every HAProxy reads the same";
  f.numbers = {{"retries", n}, {"retries_haproxy_3_1", wrapped}};
  c.out.push_back(f);
}

}  // namespace retrystorm::configs::lint
