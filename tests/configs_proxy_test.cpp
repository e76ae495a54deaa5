// HAProxy 2.6 and nginx 1.22 as configuration formats: import (with the
// facts of each proxy's source cited where a test pins them), errors that
// name the file and line, export checked by the real programs (`haproxy -c`,
// `nginx -t`, no daemon started) and read back to the same keys, and lint.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>

#include "app/configs.hpp"
#include "cli_run.hpp"
#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "server/server.hpp"
#include "systems/export.hpp"
#include "systems/lint.hpp"

namespace retrystorm::configs {
namespace {

using namespace testing;
using retrystorm::testing::TempDir;
using retrystorm::testing::write_file;

ImportResult import_text(const std::string& name, const std::string& text) {
  return import_configs({{name, text}});
}

LayerPolicy layer_of(const std::string& name, const std::string& text,
                     std::vector<std::string>* warnings = nullptr) {
  std::vector<std::string> w;
  LayerPolicy l = import_file({name, text}, w);
  if (warnings) *warnings = w;
  return l;
}

std::string error_of(const std::string& name, const std::string& text,
                     const std::string& system = "") {
  try {
    if (system.empty()) {
      import_text(name, text);
    } else {
      std::vector<std::string> w;
      import_file({name, text}, w, system);
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

bool any_contains(const std::vector<std::string>& list, const std::string& part) {
  for (const auto& s : list)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

bool has_rule(const LintReport& r, const std::string& rule, const std::string& severity) {
  for (const auto& f : r.findings)
    if (f.rule == rule && severity_name(f.severity) == severity) return true;
  return false;
}

// ---------------------------------------------------------------- HAProxy

TEST(ConfigsHaproxy, BackendWithL7Retries) {
  ImportResult r = import_configs({fixture("haproxy/backend.cfg")});
  EXPECT_EQ(r.layers.at(0).system, System::haproxy);
  EXPECT_EQ(r.layers[0].format, "HAProxy backend app");
  // `retries` counts retries after the first attempt (back_handle_st_cer,
  // src/backend.c: retried while s->conn_retries < be->conn_retries).
  EXPECT_EQ(num(r, "client.retries"), 3);
  EXPECT_EQ(num(r, "client.timeout_s"), 2);         // timeout server
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));  // response-timeout
  EXPECT_EQ(num(r, "client.deadline_s"), 0);        // no per-request deadline
  // L7 retries start at once (do_l7_retry, src/http_ana.c).
  EXPECT_EQ(num(r, "client.backoff.base_s"), 0);
  EXPECT_EQ(str(r, "client.backoff.jitter"), "none");
  EXPECT_EQ(str(r, "client.budget.kind"), "none");
  EXPECT_EQ(num(r, "client.layers"), 1);
  const LayerPolicy& l = r.layers[0];
  EXPECT_EQ(l.settings.at("retry-on"), "503 conn-failure empty-response response-timeout");
  EXPECT_EQ(l.settings.at("option redispatch"), "-1");
  EXPECT_TRUE(any_contains(l.notes, "option redispatch"));
  EXPECT_NE(keys_text(r).find("haproxy/backend.cfg:13: retries: 3"), std::string::npos)
      << keys_text(r);
}

// Only conn-failure (HAProxy's default, proxy.c init_new_proxy: retry_type =
// PR_RE_CONN_FAILED): a timed-out attempt is not retried, and a connection
// retried on the same server waits MIN(1 s, timeout connect) first
// (back_handle_st_cer, src/backend.c).
TEST(ConfigsHaproxy, DefaultsOnlyRetryConnectionFailures) {
  ImportResult r = import_configs({fixture("haproxy/defaults.cfg")});
  EXPECT_EQ(r.layers[0].format, "HAProxy defaults");
  EXPECT_EQ(num(r, "client.retries"), 2);
  EXPECT_FALSE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(num(r, "client.timeout_s"), 5);
  EXPECT_DOUBLE_EQ(num(r, "client.backoff.base_s"), 0.3);
  EXPECT_EQ(num(r, "client.backoff.multiplier"), 1);
  EXPECT_TRUE(any_contains(r.layers[0].notes, "only failed connections are retried"));
}

// With option redispatch, a round-robin balance and two active servers, HAProxy
// 2.6 sends every connection retry to another server at once
// (stream_choose_redispatch, include/haproxy/stream.h: srv_act > 1 and
// BE_LB_KIND_RR), so there is no turn-around wait; persistence, a hash
// balance or one server keep it (tests/conformance: the real HAProxy).
TEST(ConfigsHaproxy, RedispatchOverSeveralServersRetriesAtOnce) {
  auto wait_of = [](const std::string& extra, const std::string& servers) {
    return num(
        import_text("r.cfg", "backend b\n  retries 3\n  timeout connect 300ms\n" + extra + servers),
        "client.backoff.base_s");
  };
  const std::string two = "  server a 10.0.0.1:80\n  server b 10.0.0.2:80\n";
  EXPECT_EQ(wait_of("  option redispatch\n", two), 0);
  EXPECT_EQ(wait_of("  option redispatch\n  balance static-rr\n", two), 0);
  EXPECT_DOUBLE_EQ(wait_of("", two), 0.3);                                         // no redispatch
  EXPECT_DOUBLE_EQ(wait_of("  option redispatch\n  balance source\n", two), 0.3);  // a hash
  EXPECT_DOUBLE_EQ(wait_of("  option redispatch\n", "  server a 10.0.0.1:80\n"), 0.3);
  EXPECT_DOUBLE_EQ(wait_of("  option redispatch\n", two + "  use-server a if TRUE\n"),
                   0.3);  // persistence
  EXPECT_DOUBLE_EQ(
      wait_of("  option redispatch\n", "  server a 10.0.0.1:80\n  server b 10.0.0.2:80 backup\n"),
      0.3);
  ImportResult r = import_text("r.cfg", "backend b\n  retries 3\n  option redispatch\n" + two);
  std::string from;
  for (const auto& k : r.keys)
    if (k.path == "client.backoff.base_s") from = k.from;
  EXPECT_NE(from.find("r.cfg:3: option redispatch: with balance roundrobin over 2 active servers"),
            std::string::npos)
      << from;
}

TEST(ConfigsHaproxy, DefaultsInheritedAndNamed) {
  // Left out everywhere: retries 3 (CONN_RETRIES), no timeout server.
  LayerPolicy bare = layer_of("b.cfg", "backend b\n  mode http\n");
  EXPECT_EQ(bare.retries, 3);
  EXPECT_TRUE(bare.per_try_timeout_unset);
  EXPECT_FALSE(bare.retry_on_timeout);
  const std::string named =
      "defaults base\n  mode http\n  retries 5\n  timeout server 4s\n"
      "defaults other\n  retries 1\n"
      "backend b from base\n  retry-on all-retryable-errors\n";
  LayerPolicy l = layer_of("n.cfg", named);
  EXPECT_EQ(l.retries, 5);
  EXPECT_EQ(*l.per_try_timeout_s, 4);
  EXPECT_TRUE(l.retry_on_timeout);  // all-retryable-errors has response-timeout
  // The last defaults before the backend, when it names none.
  LayerPolicy last = layer_of("n.cfg",
                              "defaults a\n retries 5\ndefaults b\n retries 1\n"
                              "backend x\n timeout server 1s\n");
  EXPECT_EQ(last.retries, 1);
  // retry-on none: never retries, whatever `retries` says.
  LayerPolicy none = layer_of("x.cfg", "backend x\n retries 4\n retry-on none\n");
  EXPECT_EQ(none.retries, 0);
  EXPECT_EQ(none.as_written, 4);
  // Several backends: the first is read, with a warning.
  std::vector<std::string> w;
  layer_of("two.cfg", "backend a\n retries 1\nbackend b\n retries 2\n", &w);
  EXPECT_TRUE(any_contains(w, "two.cfg:1: backend a: 2 backend/listen sections")) << w.at(0);
  // Times: a bare number is milliseconds (parse_time_err, src/tools.c).
  EXPECT_EQ(*layer_of("t.cfg", "listen l\n timeout server 1500\n").per_try_timeout_s, 1.5);
}

TEST(ConfigsHaproxy, ErrorsNameTheFileAndLine) {
  EXPECT_NE(error_of("q.cfg", "backend a\n  server s \"10.0.0.1\n").find("q.cfg:2: unterminated"),
            std::string::npos);
  EXPECT_NE(error_of("b.cfg", "# c\nretries 3\n", "haproxy")
                .find("b.cfg:2: retries: a setting before any"),
            std::string::npos);
  EXPECT_NE(error_of("t.cfg", "backend a\n timeout server 1.5s\n")
                .find("t.cfg:2: timeout server: '1.5s' is not a time"),
            std::string::npos);
  EXPECT_NE(error_of("o.cfg", "backend a\n timeout server 25d\n").find("2147483647 ms"),
            std::string::npos);
  EXPECT_NE(error_of("r.cfg", "backend a\n retry-on 503 sometimes\n")
                .find("r.cfg:2: retry-on: unknown keyword 'sometimes'"),
            std::string::npos);
  EXPECT_NE(error_of("f.cfg", "backend a from nowhere\n").find("no defaults section"),
            std::string::npos);
  EXPECT_NE(error_of("fe.cfg", "frontend a\n bind :80\n").find("no backend, listen or defaults"),
            std::string::npos);
  std::string many = "backend a\n option";
  for (int i = 0; i < 70; ++i) many += " x";
  EXPECT_NE(error_of("w.cfg", many + "\n").find("w.cfg:2: more than 64 words"), std::string::npos);
}

// `retries` as HAProxy 2.6 reads it: curproxy->conn_retries = atol(args[1])
// in cfg_parse_listen (src/cfgparse-listen.c), an int with no range check;
// only an empty value ("expects an integer argument") and a second one
// (alertif_too_many_args) are refused. A count at or below 0 never retries:
// back_handle_st_cer (src/backend.c) and do_l7_retry (src/http_ana.c) stop
// once s->conn_retries >= be->conn_retries. Checked with haproxy 2.6.12's
// %rc: "3x" 3, "abc" 0, "-1" 0, "1e3" 1, 4294967298 2.
TEST(ConfigsHaproxy, RetriesReadAsAtolReadsThem) {
  auto read = [](const std::string& value, std::vector<std::string>* w = nullptr) {
    return layer_of("r.cfg", "backend a\n retries " + value + "\n", w).retries;
  };
  EXPECT_EQ(read("3x"), 3);
  EXPECT_EQ(read("abc"), 0);
  EXPECT_EQ(read("1e3"), 1);
  std::vector<std::string> wrapped;
  EXPECT_EQ(read("4294967298", &wrapped), 2);
  EXPECT_TRUE(any_contains(wrapped,
                           "'4294967298' does not fit HAProxy's int: atol into an int "
                           "keeps 2: read as 2 retries"));  // the int keeps the low 32 bits
  EXPECT_EQ(read("99999999999999999999999"), 0);            // atol stops at LONG_MAX: -1 as an int
  EXPECT_EQ(read("\" 2\""), 2);                             // atol skips blanks
  std::vector<std::string> w;
  EXPECT_EQ(read("007", &w), 7);
  EXPECT_TRUE(w.empty()) << w.front();
  std::vector<std::string> neg;
  LayerPolicy l = layer_of("n.cfg", "backend a\n retries -1\n", &neg);
  EXPECT_EQ(l.retries, 0);
  ASSERT_EQ(neg.size(), 1u);
  // Both readings, as the import cannot know the version (see
  // RetriesOutside16BitsDependOnTheVersion).
  EXPECT_NE(neg[0].find("n.cfg:2: retries: '-1' is a negative count: HAProxy reads it with "
                        "atol, unchecked, as -1: HAProxy up to 3.0 never retries"),
            std::string::npos)
      << neg[0];
  EXPECT_NE(neg[0].find("3.1 and later retry 65535 times (unsigned short max_retries); read as 0 "
                        "retries, as up to 3.0"),
            std::string::npos)
      << neg[0];
  // A sign on a count is what it is, and one retry is singular.
  std::vector<std::string> plus;
  EXPECT_EQ(read("+1", &plus), 1);
  EXPECT_TRUE(any_contains(plus,
                           "'+1' is a count with a sign: HAProxy reads it with atol, "
                           "unchecked, as 1: read as 1 retry"))
      << plus.front();
  std::vector<std::string> zero;
  EXPECT_EQ(read("-0", &zero), 0);
  EXPECT_TRUE(any_contains(zero,
                           "'-0' is a count with a sign: HAProxy reads it with atol, "
                           "unchecked, as 0: read as 0 retries"))
      << zero.front();
  std::vector<std::string> junk;
  EXPECT_EQ(read("-1x", &junk), 0);
  EXPECT_TRUE(any_contains(junk, "'-1x' is not a whole number"));
  // HAProxy 3.1+ copies it into the stream's unsigned short max_retries
  // (stream_new, process_switching_rules in src/stream.c): -1 is 65535 there.
  EXPECT_TRUE(any_contains(l.notes, "so there it is 65535 retries; the import follows 2.6 (0)"));
  // Refused as HAProxy refuses them.
  EXPECT_NE(error_of("m.cfg", "backend a\n retries\n")
                .find("m.cfg:2: retries: a value is missing: HAProxy refuses the file"),
            std::string::npos);
  EXPECT_NE(error_of("e.cfg", "backend a\n retries \"\"\n").find("e.cfg:2: retries: a value is"),
            std::string::npos);
  EXPECT_NE(error_of("t.cfg", "backend a\n retries 3 4\n")
                .find("t.cfg:2: retries: '3 4': one value is allowed"),
            std::string::npos);
}

// Above the model's cap (client.retries at most 100): read at the cap with a
// warning naming the line, the value and the cap; lint says so too.
TEST(ConfigsHaproxy, RetriesAboveTheModelReadAtItsCap) {
  std::vector<std::string> w;
  LayerPolicy l = layer_of("big.cfg", "backend a\n retries 100000\n", &w);
  EXPECT_EQ(l.retries, 100);
  EXPECT_EQ(l.uncapped_retries, 100000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("big.cfg:2: retries: 100000 retries (100001 attempts per request) is more "
                      "than the model runs: at most 100 retries per layer, so this layer is "
                      "imported with 100"),
            std::string::npos)
      << w[0];
  EXPECT_TRUE(any_contains(l.notes, "there it is 34464 retries"));          // 100000 mod 65536
  ImportResult r = import_text("big.cfg", "backend a\n retries 100000\n");  // runnable
  EXPECT_EQ(num(r, "client.retries"), 100);
  LintReport lr = lint_configs({{"big.cfg", "backend a\n retries 100000\n"}});
  EXPECT_TRUE(has_rule(lr, "retries-above-model-cap", "warning"));
  // retry-on none: never retries, nothing capped (mode http: no warning about tcp mode).
  std::vector<std::string> quiet;
  LayerPolicy none =
      layer_of("x.cfg", "backend a\n mode http\n retries 100000\n retry-on none\n", &quiet);
  EXPECT_EQ(none.retries, 0);
  EXPECT_TRUE(quiet.empty()) << quiet.front();
}

// HAProxy up to 3.0 compares the stream's int count with the backend's int
// (back_handle_st_cer, src/backend.c: s->conn_retries >= s->be->conn_retries);
// from 3.1 stream_new and process_switching_rules (src/stream.c) copy it into
// the stream's unsigned short max_retries (include/haproxy/stream-t.h), and
// back_handle_st_cer compares s->conn_retries >= s->max_retries. Outside
// 0..65535 the versions differ; the import follows 2.6 (the conformance
// tests' HAProxy), lint says what 3.1 and later do.
TEST(ConfigsHaproxy, RetriesOutside16BitsDependOnTheVersion) {
  auto wrap = [](const std::string& value) -> std::optional<Finding> {
    LintReport lr = lint_configs({{"w.cfg", "backend a\n mode http\n retries " + value + "\n"}});
    for (const auto& f : lr.findings)
      if (f.rule == "retries-wrap-16-bit") return f;
    return std::nullopt;
  };
  auto neg = wrap("-1");
  ASSERT_TRUE(neg);
  EXPECT_EQ(neg->severity, Severity::warning);
  EXPECT_NE(neg->message.find("retries -1: HAProxy up to 3.0 never retries (a negative count); "
                              "3.1 and later keep the count in 16 bits (unsigned short "
                              "max_retries) and retry 65535 times: a retry storm there"),
            std::string::npos)
      << neg->message;
  EXPECT_EQ(neg->numbers.at("retries_haproxy_3_1"), 65535);
  auto big = wrap("100000");  // 100000 mod 65536
  ASSERT_TRUE(big);
  EXPECT_NE(big->message.find("up to 3.0 retries 100000 times; 3.1 and later keep the count in 16 "
                              "bits (unsigned short max_retries) and retry 34464 times"),
            std::string::npos)
      << big->message;
  EXPECT_EQ(big->message.find("storm"), std::string::npos) << big->message;
  auto whole = wrap("65536");
  ASSERT_TRUE(whole);
  EXPECT_NE(whole->message.find("and never retry"), std::string::npos) << whole->message;
  auto once = wrap("-65535");
  ASSERT_TRUE(once);
  EXPECT_NE(once->message.find("and retry 1 time: more retries than the import"), std::string::npos)
      << once->message;
  // Read the same by every version.
  EXPECT_FALSE(wrap("3"));
  EXPECT_FALSE(wrap("0"));
  EXPECT_FALSE(wrap("65535"));
  EXPECT_FALSE(wrap("abc"));  // atol: 0
  // retry-on none never retries, whatever the count.
  LintReport none =
      lint_configs({{"n.cfg", "backend a\n mode http\n retries -1\n retry-on none\n"}});
  EXPECT_FALSE(has_rule(none, "retries-wrap-16-bit", "warning"));
}

// ---------------------------------------------------------------- nginx

TEST(ConfigsNginx, LocationWithItsUpstream) {
  ImportResult r = import_configs({fixture("nginx/location.conf")});
  const LayerPolicy& l = r.layers.at(0);
  EXPECT_EQ(l.system, System::nginx);
  EXPECT_EQ(l.format, "nginx location /api/");
  // Tries: one per server, down ones left out, the backup in
  // (ngx_http_upstream_init_round_robin: t counts servers not down; the
  // backup peers' tries are added by ngx_http_upstream_tries).
  EXPECT_EQ(num(r, "client.retries"), 2);
  EXPECT_EQ(l.settings.at("servers"), "3");
  EXPECT_EQ(l.settings.at("proxy_next_upstream_tries"), "0");
  EXPECT_EQ(num(r, "client.timeout_s"), 3);  // from the server block
  EXPECT_TRUE(flag(r, "client.retry_on_timeout"));
  EXPECT_EQ(num(r, "client.deadline_s"), 8);  // proxy_next_upstream_timeout
  // The next server is tried at once: ngx_http_upstream_next calls
  // ngx_http_upstream_connect without a timer.
  EXPECT_EQ(num(r, "client.backoff.base_s"), 0);
  EXPECT_EQ(str(r, "client.budget.kind"), "none");
  EXPECT_TRUE(any_contains(l.notes, "POST, LOCK and PATCH"));
  EXPECT_TRUE(any_contains(l.notes, "fail_timeout"));
  EXPECT_TRUE(any_contains(l.notes, "does not end a started one"));
}

TEST(ConfigsNginx, TriesBoundedByServers) {
  const std::string up = "upstream app { server a:1; server b:1; server c:1; }\n";
  auto retries = [&](const std::string& loc) {
    return layer_of("n.conf", up + "location / { proxy_pass http://app; " + loc + " }\n").retries;
  };
  EXPECT_EQ(retries(""), 2);  // tries 0: every server once
  EXPECT_EQ(retries("proxy_next_upstream_tries 2;"), 1);
  EXPECT_EQ(retries("proxy_next_upstream_tries 9;"), 2);
  EXPECT_EQ(retries("proxy_next_upstream off;"), 0);
  // One server is never retried (ngx_http_upstream_free_round_robin_peer:
  // peers->single sets pc->tries = 0).
  EXPECT_EQ(layer_of("one.conf",
                     "upstream app { server a:1; }\nlocation / { proxy_pass http://app;\n"
                     "proxy_next_upstream_tries 5; }\n")
                .retries,
            0);
  // Without the upstream block: tries - 1, with a warning naming proxy_pass.
  std::vector<std::string> w;
  LayerPolicy l = layer_of("tries.conf", read_text(fixture_path("nginx/tries.conf")), &w);
  EXPECT_EQ(l.retries, 1);
  EXPECT_EQ(*l.per_try_timeout_s, 1.5);
  EXPECT_EQ(l.counting, "attempts");
  EXPECT_TRUE(any_contains(w,
                           "tries.conf:2: proxy_pass: 'app' is an upstream not in this file or "
                           "a host name"))
      << (w.empty() ? "" : w[0]);
  // proxy_pass to an address is an implicit upstream of one peer: one try
  // whatever proxy_next_upstream_tries says (ngx_http_upstream_init_round_robin
  // without us->servers: peers->single for one address;
  // ngx_http_upstream_free_round_robin_peer then sets pc->tries = 0).
  for (const char* address : {"10.0.0.7:8080", "10.0.0.7", "[::1]:8080", "unix:/run/app.sock"}) {
    std::vector<std::string> quiet;
    LayerPolicy one = layer_of("ip.conf",
                               std::string("location / { proxy_pass http://") + address +
                                   "/api; proxy_next_upstream error timeout http_503; "
                                   "proxy_next_upstream_tries 3; }\n",
                               &quiet);
    EXPECT_EQ(one.retries, 0) << address;
    EXPECT_TRUE(quiet.empty()) << address << ": " << quiet.front();
    EXPECT_NE(one.from["client.retries"].find("tried once whatever the tries say"),
              std::string::npos)
        << one.from["client.retries"];
  }
  // A server entry by host name may be several addresses: said, counted as one.
  std::vector<std::string> named;
  LayerPolicy by_name = layer_of(
      "n.conf",
      "upstream app { server app-1.internal:80; server 10.0.0.2:80; }\n"
      "location / { proxy_pass http://app; proxy_next_upstream error timeout http_503; }\n",
      &named);
  EXPECT_EQ(by_name.retries, 1);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_NE(named[0].find("server app-1.internal:80: a host name: nginx tries every address"),
            std::string::npos)
      << named[0];
  // Defaults: error timeout, read timeout 60 s, no next-upstream timeout.
  LayerPolicy d = layer_of("d.conf", up + "location / { proxy_pass http://app; }\n");
  EXPECT_TRUE(d.retry_on_timeout);
  EXPECT_EQ(*d.per_try_timeout_s, 60);
  EXPECT_EQ(*d.deadline_s, 0);
  // Times: units in order, a bare number is seconds (ngx_parse_time).
  LayerPolicy t = layer_of("t.conf",
                           "proxy_pass http://x; proxy_read_timeout 1m30s;\n"
                           "proxy_next_upstream_timeout 250ms;\n");
  EXPECT_EQ(*t.per_try_timeout_s, 90);
  EXPECT_EQ(*t.deadline_s, 0.25);
}

// proxy_next_upstream_tries as nginx reads it: ngx_conf_set_num_slot with
// ngx_atoi (src/core/ngx_conf_file.c, src/core/ngx_string.c): digits only,
// up to NGX_MAX_INT_T_VALUE, else "invalid number" (nginx -t 1.22.1 agrees).
// 0 sets no limit: ngx_http_upstream_init_request caps peer.tries only when
// next_upstream_tries is set.
TEST(ConfigsNginx, TriesReadAsNgxAtoiReadsThem) {
  auto with = [](const std::string& tries) {
    return "location / { proxy_pass http://app;\nproxy_next_upstream_tries " + tries + "; }\n";
  };
  for (std::string bad : {"+5", "-1", "1e3", "2.0", " 2", "9223372036854775808"})
    EXPECT_NE(error_of("b.conf", with("\"" + bad + "\""))
                  .find("b.conf:2: proxy_next_upstream_tries: '" + bad +
                        "': nginx refuses it (invalid number)"),
              std::string::npos)
        << bad;
  // Accepted by nginx, beyond the model: at the cap, with a warning.
  std::vector<std::string> w;
  LayerPolicy big = layer_of("big.conf", with("9223372036854775807"), &w);
  EXPECT_EQ(big.retries, 100);
  EXPECT_EQ(big.uncapped_retries, 9223372036854775806LL);
  EXPECT_TRUE(any_contains(w,
                           "big.conf:2: proxy_next_upstream_tries: 9223372036854775806 "
                           "retries (9223372036854775807 attempts per request) is more than "
                           "the model runs: at most 100"));
  // Tries 0 toward an upstream of 150 servers: 149 retries, read as 100.
  std::string up = "upstream app {";
  for (int i = 0; i < 150; ++i) up += " server 10.0.0." + std::to_string(i) + ":80;";
  std::vector<std::string> wide;
  LayerPolicy many = layer_of("up.conf", up + " }\n" + with("0"), &wide);
  EXPECT_EQ(many.retries, 100);
  EXPECT_TRUE(any_contains(wide, "up.conf:1: upstream app: 149 retries"));
  LintReport lr = lint_configs({{"up.conf", up + " }\n" + with("0")}});
  EXPECT_TRUE(has_rule(lr, "retries-above-model-cap", "warning"));
  // Tries 0 toward servers not in the file: every one is tried, how many is
  // unknown; read as 1 try, said plainly.
  std::vector<std::string> unknown;
  EXPECT_EQ(layer_of("u.conf", with("0"), &unknown).retries, 0);
  EXPECT_TRUE(any_contains(unknown,
                           "proxy_next_upstream_tries 0 sets no limit, so every one is "
                           "tried once, and how many there are is not known here"));
}

TEST(ConfigsNginx, GrammarQuotesCommentsAndErrors) {
  // Quotes, comments and ${var} inside words are one token each.
  LayerPolicy q = layer_of("q.conf",
                           "upstream \"app\" { server a:1; server 'b:1'; } # comment { ;\n"
                           "location ~ \"^/x{2}\" { proxy_pass http://app; "
                           "proxy_set_header X ${host}; }\n");
  EXPECT_EQ(q.retries, 1);
  EXPECT_NE(error_of("s.conf", "location / {\n proxy_pass http://a\n}\n")
                .find("s.conf:3: proxy_pass: unexpected }, expecting ';'"),
            std::string::npos);
  EXPECT_NE(error_of("b.conf", "location / {\n proxy_pass http://a;\n")
                .find("b.conf:3: unexpected end of file: the block opened on line 1 has no }"),
            std::string::npos);
  EXPECT_NE(error_of("c.conf", "proxy_pass http://a;\n}\n").find("c.conf:2: unexpected }"),
            std::string::npos);
  EXPECT_NE(error_of("u.conf", "proxy_pass \"http://a;\n\n").find("u.conf:1: unterminated"),
            std::string::npos);
  EXPECT_NE(error_of("t.conf", "proxy_pass http://a;\nproxy_read_timeout 1.5s;\n")
                .find("t.conf:2: proxy_read_timeout: '1.5s' is not an nginx time"),
            std::string::npos);
  EXPECT_NE(
      error_of("o.conf", "proxy_pass http://a; proxy_read_timeout 1s1m;\n").find("out of order"),
      std::string::npos);
  EXPECT_NE(error_of("n.conf", "proxy_pass http://a;\nproxy_next_upstream error http_418;\n")
                .find("n.conf:2: proxy_next_upstream: unknown condition 'http_418'"),
            std::string::npos);
  EXPECT_NE(error_of("e.conf",
                     "upstream a { server x:1 down; }\nlocation / {proxy_pass "
                     "http://a;}\n")
                .find("no server nginx can try"),
            std::string::npos);
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "location / {\n";
  EXPECT_NE(error_of("deep.conf", deep).find("nested deeper than 64"), std::string::npos);
  EXPECT_NE(error_of("none.conf", "events {}\nhttp { server { listen 80; } }\n")
                .find("nothing here proxies"),
            std::string::npos);
}

// Mutated seeds (a fixed random sequence: bytes flipped, cut, braces and
// quotes inserted) end in InputError or a layer, never anything else; each
// accepted input is also exported and read back, as fuzz/fuzz_import.cpp does.
TEST(ConfigsProxy, MutatedInputEndsInInputErrorOnly) {
  std::mt19937 rng(12);
  const char* seeds[] = {"haproxy/backend.cfg", "haproxy/defaults.cfg", "nginx/location.conf",
                         "nginx/tries.conf"};
  const std::string inserts[] = {"{", "}", ";", "\"", "'", "#", "\n", "\\", "${", " 0", "ms"};
  int accepted = 0, refused = 0;
  for (const char* seed : seeds) {
    const std::string base = read_text(fixture_path(seed));
    const std::string system = std::string(seed).substr(0, std::string(seed).find('/'));
    for (int i = 0; i < 400; ++i) {
      std::string t = base;
      for (int m = 0; m < 3; ++m) {
        size_t at = rng() % (t.size() + 1);
        switch (rng() % 3) {
          case 0:
            if (at < t.size()) t[at] = static_cast<char>(32 + rng() % 95);
            break;
          case 1:
            t = t.substr(0, at);
            break;
          default:
            t.insert(at, inserts[rng() % std::size(inserts)]);
        }
      }
      try {
        std::vector<std::string> w;
        LayerPolicy l = import_file({"m", t}, w, system);
        Scenario s;
        apply_keys(s, l.keys);
        import_file({"back", export_config(s, system).text}, w, system);
        ++accepted;
      } catch (const InputError&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 100);
}

// ------------------------------------------------------- detection, stacks

TEST(ConfigsProxy, DetectedAndStacked) {
  EXPECT_EQ(detect_system(fixture("haproxy/backend.cfg")), System::haproxy);
  EXPECT_EQ(detect_system(fixture("nginx/location.conf")), System::nginx);
  EXPECT_EQ(detect_system(fixture("nginx/tries.conf")), System::nginx);
  // Whole configuration files, as the real programs are given them.
  const std::string nginx_conf =
      "daemon off;\nworker_processes 1;\nevents {}\nhttp {\n  upstream a { server x:1; "
      "server y:1; }\n  server { listen 80; location / { proxy_pass http://a; } }\n}\n";
  EXPECT_EQ(detect_system({"nginx.conf", nginx_conf}), System::nginx);
  EXPECT_EQ(import_text("nginx.conf", nginx_conf).layers.at(0).retries, 1);
  const std::string haproxy_cfg =
      "global\n  maxconn 100\ndefaults\n  mode http\n  timeout server 1s\n"
      "frontend f\n  bind :80\n  default_backend b\nbackend b\n  retries 2\n"
      "  server s 127.0.0.1:80\n";
  EXPECT_EQ(detect_system({"haproxy.cfg", haproxy_cfg}), System::haproxy);
  EXPECT_EQ(import_text("haproxy.cfg", haproxy_cfg).layers.at(0).retries, 2);
  // YAML keys of the same names are not mistaken for them.
  EXPECT_EQ(detect_system({"e.yaml", "server:\n  retry_policy: {num_retries: 2}\n"}),
            System::envoy);
  // An HAProxy edge in front of an nginx layer: attempts multiply.
  ImportResult r = import_configs({fixture("haproxy/backend.cfg"), fixture("nginx/location.conf")});
  EXPECT_EQ(num(r, "client.layers"), 2);
  EXPECT_EQ(str(r, "client.stack_retries"), "3,2");
  EXPECT_EQ(num(r, "client.timeout_s"), 3);  // the innermost layer's
  LintReport lr = lint_configs({fixture("haproxy/backend.cfg"), fixture("nginx/location.conf")});
  bool layers = false, counting = false;
  for (const auto& f : lr.findings) {
    layers = layers || f.rule == "retries-at-several-layers";
    counting = counting || f.rule == "counting-trap";
  }
  EXPECT_TRUE(layers);
  EXPECT_TRUE(counting);  // retries (HAProxy) against tries (nginx)
}

// ---------------------------------------------------------------- export

struct Proc {
  int status = -1;
  std::string out;
};

// A check run of the real program (no daemon): bounded by `timeout`.
Proc run_check(const std::string& cmd) {
  Proc p;
  FILE* f = ::popen(("timeout 20 " + cmd + " 2>&1").c_str(), "r");
  if (!f) return p;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) p.out.append(buf, n);
  int raw = ::pclose(f);
  p.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return p;
}

bool installed(const char* path) {
  return std::filesystem::exists(path);
}

// The exported backend in a minimal haproxy.cfg: a frontend on a unix socket
// in the temp dir (never bound: -c only parses and checks).
Proc haproxy_check(const std::filesystem::path& dir, const std::string& exported) {
  std::string cfg =
      "defaults\n    mode http\n    timeout client 10s\n"
      "frontend f\n    bind unix@" +
      (dir / "h.sock").string() + "\n    default_backend retrystorm\n" + exported;
  write_file(dir / "haproxy.cfg", cfg);
  return run_check("/usr/sbin/haproxy -c -f " + (dir / "haproxy.cfg").string());
}

// The exported upstream and server in a minimal nginx.conf whose pid, logs
// and temp paths are all inside the temp dir (-t parses and checks only).
Proc nginx_check(const std::filesystem::path& dir, const std::string& exported) {
  std::string d = dir.string();
  std::string conf = "pid " + d + "/nginx.pid;\nerror_log " + d + "/error.log;\nevents {}\n" +
                     "http {\n    access_log off;\n    client_body_temp_path " + d +
                     "/cb;\n    proxy_temp_path " + d + "/px;\n    fastcgi_temp_path " + d +
                     "/fc;\n    uwsgi_temp_path " + d + "/uw;\n    scgi_temp_path " + d + "/sc;\n" +
                     exported + "}\n";
  write_file(dir / "nginx.conf", conf);
  return run_check("/usr/sbin/nginx -t -q -p " + d + "/ -e " + d + "/error.log -c " + d +
                   "/nginx.conf");
}

// The keys each proxy expresses, read back from its export.
void expect_same_keys(const Scenario& s, const std::string& system, const std::string& text,
                      const std::string& where) {
  std::vector<std::string> w;
  LayerPolicy l = import_file({"exported." + system, text}, w, "");
  EXPECT_TRUE(w.empty()) << where << ": " << w.at(0);
  int retries = s.layer_retries().back();
  EXPECT_EQ(l.retries, retries) << where << "\n" << text;
  EXPECT_NEAR(*l.per_try_timeout_s, std::max(0.001, s.client.timeout_s), 0.0005) << where;
  EXPECT_EQ(l.retry_on_timeout, retries > 0 && s.client.retry_on_timeout) << where;
  bool deadline = system == "nginx" && retries > 0;
  EXPECT_NEAR(*l.deadline_s, deadline ? s.client.deadline_s : 0, 0.0005) << where;
  EXPECT_EQ(l.backoff.base_s, 0) << where;
  EXPECT_EQ(l.budget.kind, BudgetKind::none) << where;
}

TEST(ConfigsProxyExport, AcceptedByTheRealProgramsAndReadBack) {
  if (!installed("/usr/sbin/haproxy") || !installed("/usr/sbin/nginx"))
    GTEST_SKIP() << "haproxy or nginx not installed (scripts/setup.sh installs both)";
  TempDir tmp("proxy_export");
  using Sets = std::vector<std::pair<std::string, std::string>>;
  const std::vector<Sets> variants = {
      {},
      {{"client.retries", "0"}},
      {{"client.retries", "4"}, {"client.retry_on_timeout", "false"}},
      {{"client.retries", "100"}, {"client.timeout_s", "10000000"}, {"client.deadline_s", "1"}},
  };
  int checked = 0;
  for (const auto& p : exportable_presets())
    for (const Sets& sets : variants) {
      Scenario s = p.scenario;
      try {
        for (const auto& [k, v] : sets) set_key_text(s, k, v);
        validate(s);
      } catch (const InputError&) {
        continue;
      }
      for (const char* system : {"haproxy", "nginx"}) {
        std::string where = p.name + " " + system + " (" + std::to_string(checked) + ")";
        ExportResult e = export_config(s, system);
        Proc c = std::string(system) == "haproxy" ? haproxy_check(tmp.path(), e.text)
                                                  : nginx_check(tmp.path(), e.text);
        EXPECT_EQ(c.status, 0) << where << "\n" << c.out << "\n" << e.text;
        EXPECT_EQ(c.out.find("[WARNING]"), std::string::npos) << where << "\n" << c.out;
        if (std::string(system) == "haproxy" && s.client.timeout_s > 2147483.647)
          EXPECT_TRUE(any_contains(e.notes, "clamped to 2147483647 ms")) << where;
        else
          expect_same_keys(s, system, e.text, where);
        ++checked;
      }
    }
  EXPECT_GT(checked, static_cast<int>(presets().size()) * 4);
}

TEST(ConfigsProxyExport, NotesSayWhatCannotBeExpressed) {
  Scenario s = preset_or_throw("order-status").scenario;
  set_key_text(s, "client.retries", "3");
  set_key_text(s, "client.backoff.base_s", "0.1");
  set_key_text(s, "client.deadline_s", "5");
  set_key_text(s, "client.budget.kind", "window");
  ExportResult h = export_config(s, "haproxy");
  EXPECT_TRUE(any_contains(h.notes, "HAProxy retries at once: the scenario's backoff"));
  EXPECT_TRUE(any_contains(h.notes, "HAProxy has no retry budget"));
  EXPECT_TRUE(any_contains(h.notes, "no per-request deadline"));
  EXPECT_NE(h.text.find("# HAProxy has no retry budget"), std::string::npos) << h.text;
  EXPECT_NE(h.text.find("retries 3"), std::string::npos);
  ExportResult n = export_config(s, "nginx");
  EXPECT_TRUE(any_contains(n.notes, "nginx retries at once"));
  EXPECT_TRUE(any_contains(n.notes, "nginx has no retry budget"));
  EXPECT_NE(n.text.find("proxy_next_upstream_tries 4;"), std::string::npos) << n.text;
  EXPECT_NE(n.text.find("proxy_next_upstream_timeout 5000ms;"), std::string::npos);
  // The same code answers POST /api/export/{haproxy,nginx}.
  ApiAnswer a = handle_api("/api/export/nginx", R"({"preset": "order-status"})");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body["text"], export_config(preset_or_throw("order-status").scenario, "nginx").text);
  EXPECT_EQ(handle_api("/api/export/haproxy", "{}").status, 200);
}

// ---------------------------------------------------------------- lint

TEST(ConfigsProxyLint, ProxyFindings) {
  // HAProxy replays every method on an L7 retry (do_l7_retry checks none).
  LintReport h = lint_configs({fixture("haproxy/backend.cfg")});
  EXPECT_TRUE(has_rule(h, "retries-non-idempotent", "warning"));
  EXPECT_TRUE(has_rule(h, "no-retry-budget", "warning"));
  EXPECT_TRUE(has_rule(h, "no-deadline", "info"));
  LintReport d = lint_configs({fixture("haproxy/defaults.cfg")});
  EXPECT_TRUE(has_rule(d, "retries-connection-failures-only", "info"));
  EXPECT_FALSE(has_rule(d, "retries-non-idempotent", "warning"));

  // nginx: tries 0 grows with the upstream; (2 + 1) x 3 s > 8 s.
  LintReport n = lint_configs({fixture("nginx/location.conf")});
  EXPECT_TRUE(has_rule(n, "unlimited-tries", "warning"));
  EXPECT_TRUE(has_rule(n, "per-try-timeouts-exceed-deadline", "warning"));
  for (const auto& f : n.findings) {
    if (f.rule == "per-try-timeouts-exceed-deadline") {
      EXPECT_NE(f.fix.find("proxy_read_timeout"), std::string::npos) << f.fix;
    }
  }
  LintReport single = lint_configs({{"one.conf",
                                     "upstream a { server x:1; }\nlocation / { proxy_pass "
                                     "http://a; proxy_next_upstream_tries 3; }\n"}});
  EXPECT_TRUE(has_rule(single, "tries-above-servers", "info"));
  LintReport ni = lint_configs({{"ni.conf",
                                 "upstream a { server x:1; server y:1; }\nlocation / { proxy_pass "
                                 "http://a; proxy_next_upstream error non_idempotent; "
                                 "proxy_next_upstream_tries 2; }\n"}});
  EXPECT_TRUE(has_rule(ni, "retries-non-idempotent", "warning"));
  EXPECT_FALSE(has_rule(ni, "unlimited-tries", "warning"));
  // --simulate runs with the imported policy; the budget finding has no keys
  // (neither proxy has a budget to add).
  app::LintRequest request;
  request.files = {fixture("nginx/location.conf")};
  request.options.simulate = true;
  LintReport sim = app::lint(request);
  EXPECT_TRUE(sim.simulation.has_value());  // with its as-configured run
}

// ---------------------------------------------------------------- CLI

TEST(ConfigsProxyCli, ImportExportLint) {
  TempDir tmp("proxy_cli");
  BinRun im = run_bin("import " + fixture_path("nginx/location.conf") + " --format json");
  EXPECT_EQ(im.status, 0) << im.err;
  EXPECT_EQ(nlohmann::json::parse(im.out)["client"]["retries"], 2);
  BinRun ex = run_bin("export --to haproxy --set client.retries=2");
  EXPECT_EQ(ex.status, 0) << ex.err;
  EXPECT_NE(ex.out.find("retries 2"), std::string::npos);
  write_file(tmp.path() / "h.cfg", ex.out);
  BinRun back = run_bin("import " + (tmp.path() / "h.cfg").string());
  EXPECT_EQ(back.status, 0) << back.err;
  EXPECT_NE(back.out.find("client.retries = 2"), std::string::npos) << back.out;
  BinRun li = run_bin("lint " + fixture_path("haproxy/backend.cfg"));
  EXPECT_EQ(li.status, 1);
  EXPECT_NE(li.out.find("retries-non-idempotent"), std::string::npos) << li.out;
  // Above the model's cap: imported at the cap (exit 0), the warning on
  // standard error; a value HAProxy refuses: exit 2.
  write_file(tmp.path() / "big.cfg", "backend a\n  retries 100000\n");
  BinRun big = run_bin("import " + (tmp.path() / "big.cfg").string());
  EXPECT_EQ(big.status, 0) << big.err;
  EXPECT_NE(big.out.find("client.retries = 100"), std::string::npos) << big.out;
  EXPECT_NE(big.err.find("big.cfg:2: retries: 100000 retries"), std::string::npos) << big.err;
  write_file(tmp.path() / "two.cfg", "backend a\n  retries 3 4\n");
  BinRun two = run_bin("import " + (tmp.path() / "two.cfg").string());
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("two.cfg:2: retries: '3 4': one value is allowed"), std::string::npos)
      << two.err;
  BinRun bad = run_bin("import " + fixture_path("nginx/location.conf") + " " +
                       (tmp.path() / "missing.conf").string());
  EXPECT_EQ(bad.status, 2);
  BinRun help = run_bin("export --help");
  EXPECT_NE(help.out.find("haproxy | nginx"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace retrystorm::configs
