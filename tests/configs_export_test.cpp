// Export: every system's configuration reads back (import(export(x)) keeps
// every key the system can express), notes name what it cannot, and every
// gRPC service config passes gRPC's own validator.
#if RETRYSTORM_WITH_GRPC
#include <grpcpp/support/validate_service_config.h>
#endif
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "configs_helpers.hpp"
#include "formats/scenario_io.hpp"
#include "policies/backoff.hpp"
#include "server/server.hpp"
#include "systems/export.hpp"

namespace retrystorm::configs {
namespace {

// gRPC's own service-config validator ("" when the text is valid). A build
// without grpc++ (RETRYSTORM_GRPC=OFF) has none; the round trips through our
// importer still check every exported text there.
std::string grpc_validation(const std::string& text) {
#if RETRYSTORM_WITH_GRPC
  return grpc::experimental::ValidateServiceConfigJSON(text);
#else
  (void)text;
  return "";
#endif
}

using namespace testing;

Scenario make(std::initializer_list<std::pair<const char*, const char*>> sets) {
  Scenario s = preset_or_throw("order-status").scenario;
  for (const auto& [k, v] : sets) set_key_text(s, k, v);
  return s;
}

// Policies to round-trip: each system gets the ones it can express, plus others.
std::vector<Scenario> policies() {
  return {
      make({{"client.retries", "3"},
            {"client.timeout_s", "2"},
            {"client.deadline_s", "10"},
            {"client.backoff.base_s", "0.1"},
            {"client.backoff.cap_s", "1"},
            {"client.backoff.jitter", "full"},
            {"client.budget.kind", "envoy_concurrency"},
            {"client.budget.ratio", "0.25"},
            {"client.budget.min_concurrency", "5"}}),
      make({{"client.retries", "2"},
            {"client.timeout_s", "1"},
            {"client.deadline_s", "0"},
            {"client.retry_on_timeout", "false"},
            {"client.backoff.base_s", "0.2"},
            {"client.backoff.multiplier", "1.5"},
            {"client.backoff.cap_s", "3"},
            {"client.backoff.jitter", "grpc"},
            {"client.budget.kind", "grpc_throttling"},
            {"client.budget.max_tokens", "20"},
            {"client.budget.token_ratio", "0.2"}}),
      make({{"client.retries", "4"},
            {"client.timeout_s", "0.5"},
            {"client.deadline_s", "4"},
            {"client.backoff.base_s", "1"},
            {"client.backoff.cap_s", "20"},
            {"client.backoff.jitter", "full"},
            {"client.budget.kind", "aws_quota"}}),
      make({{"client.retries", "2"},
            {"client.timeout_s", "3"},
            {"client.deadline_s", "12"},
            {"client.budget.kind", "ratio_ttl"},
            {"client.budget.ratio", "0.3"},
            {"client.budget.min_retries_per_s", "7"},
            {"client.budget.ttl_s", "15"}}),
      make({{"client.retries", "7"},
            {"client.timeout_s", "1"},
            {"client.budget.kind", "none"},
            {"client.backoff.cap_s", "0"},
            {"client.backoff.jitter", "none"}}),
      make({{"client.retries", "0"}, {"client.budget.kind", "window"}}),
      make({{"client.budget.kind", "envoy_concurrency"},
            {"client.budget.ratio", "0"},
            {"client.budget.min_concurrency", "4"},
            {"client.layers", "2"}}),
  };
}

Scenario reimport(const Scenario& s, const std::string& system, std::string& text) {
  ExportResult e = export_config(s, system);
  text = e.text;
  ImportResult r = import_configs({{"exported-" + system, e.text}});
  EXPECT_EQ(r.layers.size(), 1u);
  EXPECT_EQ(system_name(r.layers[0].system), system);
  Scenario back = s;
  apply_keys(back, r.keys);
  return back;
}

std::string sets_text(const std::vector<std::pair<std::string, std::string>>& sets) {
  std::string out;
  for (const auto& [k, v] : sets) out += k + "=" + v + " ";
  return out;
}

void expect_key(const Scenario& a, const Scenario& b, const std::string& path,
                const std::string& text) {
  EXPECT_EQ(to_string(key_or_throw(path).get(a)), to_string(key_or_throw(path).get(b)))
      << path << " after a round trip through:\n"
      << text;
}

TEST(ConfigsExport, EnvoyRoundTrip) {
  for (const Scenario& s : policies()) {
    std::string text;
    Scenario b = reimport(s, "envoy", text);
    EXPECT_EQ(b.client.retries, s.client.retries) << text;
    expect_key(b, s, "client.deadline_s", text);
    expect_key(b, s, "client.retry_on_timeout", text);
    if (s.client.retry_on_timeout) expect_key(b, s, "client.timeout_s", text);
    if (s.client.backoff.base_s > 0) expect_key(b, s, "client.backoff.base_s", text);
    if (s.client.backoff.cap_s > 0) expect_key(b, s, "client.backoff.cap_s", text);
    if (s.client.backoff.jitter == Jitter::full && s.client.backoff.multiplier == 2) {
      expect_key(b, s, "client.backoff.jitter", text);
      expect_key(b, s, "client.backoff.multiplier", text);
    }
    if (s.client.budget.kind == BudgetKind::envoy_concurrency) {
      expect_key(b, s, "client.budget.kind", text);
      expect_key(b, s, "client.budget.ratio", text);
      expect_key(b, s, "client.budget.min_concurrency", text);
    }
    if (s.client.budget.kind == BudgetKind::none) expect_key(b, s, "client.budget.kind", text);
  }
}

TEST(ConfigsExport, GrpcRoundTripAndValidator) {
  for (const Scenario& s : policies()) {
    ExportResult e = export_config(s, "grpc");
    EXPECT_EQ(grpc_validation(e.text), "") << e.text;
    EXPECT_TRUE(nlohmann::json::accept(e.text));
    std::string text;
    Scenario b = reimport(s, "grpc", text);
    EXPECT_EQ(b.client.retries, std::min(s.client.retries, 4)) << text;
    expect_key(b, s, "client.deadline_s", text);
    if (s.client.retries > 0) {
      expect_key(b, s, "client.retry_on_timeout", text);
      if (s.client.retry_on_timeout) expect_key(b, s, "client.timeout_s", text);
      expect_key(b, s, "client.backoff.base_s", text);
      expect_key(b, s, "client.backoff.multiplier", text);
      if (s.client.backoff.cap_s > 0) expect_key(b, s, "client.backoff.cap_s", text);
      if (s.client.backoff.jitter == Jitter::grpc) expect_key(b, s, "client.backoff.jitter", text);
    }
    if (s.client.budget.kind == BudgetKind::grpc_throttling) {
      expect_key(b, s, "client.budget.kind", text);
      expect_key(b, s, "client.budget.max_tokens", text);
      expect_key(b, s, "client.budget.token_ratio", text);
    }
    if (s.client.retries + 1 > 5) {
      bool noted = false;
      for (const auto& n : e.notes) noted = noted || n.find("at most 5") != std::string::npos;
      EXPECT_TRUE(noted) << text;
    }
  }
}

// client.retry_on and client.pushback through Envoy and back: retry_on and
// retriable_status_codes as envoy::retried_answers reads them, and
// rate_limited_retry_back_off for a pushback Envoy waits.
TEST(ConfigsExport, EnvoyRetryOnAndPushbackRoundTrip) {
  struct Case {
    const char* retry_on;
    bool timeouts;
    const char* back;  // what the import reads
  };
  const Case cases[] = {
      {"all", true, "all"},
      {"503,refused,reset", true, "503,refused,reset"},
      {"refused", false, "refused"},
      {"refused,429", false, "429,refused"},
      {"503", true, "503,refused,reset"},  // Envoy's 5xx retries both: noted
      {"refused", true, "refused,reset"},  // a timeout needs reset: noted
  };
  for (const Case& c : cases) {
    Scenario s = preset_or_throw("primary-failover").scenario;
    set_key_text(s, "client.retry_on", c.retry_on);
    s.client.retry_on_timeout = c.timeouts;
    std::string text;
    Scenario b = reimport(s, "envoy", text);
    EXPECT_EQ(b.client.retry_on, c.back) << c.retry_on << "\n" << text;
    EXPECT_EQ(b.client.retry_on_timeout, c.timeouts) << text;
  }
  Scenario s = preset_or_throw("primary-failover").scenario;
  set_key_text(s, "client.pushback", "envoy");
  set_key_text(s, "client.pushback_max_s", "30");
  std::string text;
  Scenario b = reimport(s, "envoy", text);
  EXPECT_EQ(b.client.pushback, Pushback::envoy) << text;
  EXPECT_EQ(b.client.pushback_max_s, 30) << text;
  EXPECT_EQ(reimport(preset_or_throw("primary-failover").scenario, "envoy", text).client.pushback,
            Pushback::ignore);
}

TEST(ConfigsExport, IstioRoundTrip) {
  for (const Scenario& s : policies()) {
    std::string text;
    Scenario b = reimport(s, "istio", text);
    EXPECT_EQ(b.client.retries, s.client.retries) << text;
    expect_key(b, s, "client.deadline_s", text);
    if (s.client.retries == 0) {
      // Istio drops a retries block of 0 attempts whole (ConvertPolicy,
      // pilot/pkg/networking/core/route/retry/retry.go), perTryTimeout with
      // it: the export writes none, and the import reads none.
      EXPECT_EQ(text.find("perTryTimeout:"), std::string::npos) << text;
      continue;
    }
    expect_key(b, s, "client.retry_on_timeout", text);
    if (s.client.retry_on_timeout) expect_key(b, s, "client.timeout_s", text);
    if (s.client.budget.kind == BudgetKind::envoy_concurrency ||
        s.client.budget.kind == BudgetKind::none) {
      expect_key(b, s, "client.budget.kind", text);
      if (s.client.budget.kind != BudgetKind::none) {
        expect_key(b, s, "client.budget.ratio", text);
        expect_key(b, s, "client.budget.min_concurrency", text);
      }
    }
  }
}

// Istio sets Envoy's floor only above 0 (applyRetryBudget,
// pilot/pkg/networking/core/cluster_traffic_policy.go): a 0 written came back
// as 3. The export writes the lowest floor Istio takes, and says so.
TEST(ConfigsExport, IstioWritesNoFloorItReadsAsThree) {
  Scenario s;
  s.client.budget.kind = BudgetKind::envoy_concurrency;
  s.client.budget.ratio = 0.25;
  s.client.budget.min_concurrency = 0;
  ExportResult e = export_config(s, "istio");
  EXPECT_NE(e.text.find("minRetryConcurrency: 1"), std::string::npos) << e.text;
  bool said = false;
  for (const std::string& n : e.notes) said = said || n.find("reads 0 as left out (3)") != n.npos;
  EXPECT_TRUE(said);
  std::string text;
  EXPECT_EQ(reimport(s, "istio", text).client.budget.min_concurrency, 1);
}

// Linkerd retries refused streams whatever /http says, and /limit alone
// makes a policy (parse_http_retry): a scenario retrying refused connections
// only is written without /http (it wrote 5xx, which retries every 503).
TEST(ConfigsExport, LinkerdRefusedOnlyHasNoStatusRanges) {
  Scenario s;
  s.client.retries = 2;
  s.client.retry_on = "refused";
  std::string text;
  Scenario back = reimport(s, "linkerd", text);
  EXPECT_EQ(text.find("retry.linkerd.io/http"), std::string::npos) << text;
  EXPECT_EQ(back.client.retry_on, "refused") << text;
  EXPECT_EQ(back.client.retries, 2);
}

TEST(ConfigsExport, LinkerdRoundTrip) {
  for (const Scenario& s : policies()) {
    std::string text;
    Scenario b = reimport(s, "linkerd", text);
    if (s.client.budget.kind == BudgetKind::ratio_ttl) {  // a ServiceProfile
      EXPECT_NE(text.find("kind: ServiceProfile"), std::string::npos);
      expect_key(b, s, "client.budget.kind", text);
      expect_key(b, s, "client.budget.ratio", text);
      expect_key(b, s, "client.budget.min_retries_per_s", text);
      expect_key(b, s, "client.budget.ttl_s", text);
      expect_key(b, s, "client.deadline_s", text);  // none stays none (Linkerd 2.9+)
    } else {                                        // annotations
      EXPECT_EQ(b.client.retries, s.client.retries) << text;
      expect_key(b, s, "client.deadline_s", text);
      // Without retries Linkerd has no per-try timeout: no retry annotation is written.
      if (s.client.retries > 0) expect_key(b, s, "client.retry_on_timeout", text);
      if (s.client.retries > 0 && s.client.retry_on_timeout)
        expect_key(b, s, "client.timeout_s", text);
      EXPECT_EQ(b.client.budget.kind, BudgetKind::none);
    }
  }
}

TEST(ConfigsExport, AwsRoundTrip) {
  for (const Scenario& s : policies()) {
    std::string text;
    Scenario b = reimport(s, "aws", text);
    EXPECT_EQ(b.client.retries, s.client.retries) << text;
    if (s.client.budget.kind == BudgetKind::aws_quota) expect_key(b, s, "client.budget.kind", text);
    if (s.client.budget.kind == BudgetKind::aws_quota)
      expect_key(b, s, "client.budget.quota_tokens", text);
    // No budget is written as standard mode, whose quota no setting turns off
    // (legacy is never written: see ConfigsExport.AwsNeverWritesLegacy).
    if (s.client.budget.kind == BudgetKind::none) {
      EXPECT_EQ(b.client.budget.kind, BudgetKind::aws_quota) << text;
      EXPECT_NE(text.find("this file adds one"), std::string::npos) << text;
    }
  }
}

TEST(ConfigsExport, NotesNameWhatCannotBeExpressed) {
  Scenario s = make({{"client.backoff.jitter", "equal"},
                     {"client.backoff.multiplier", "3"},
                     {"client.layers", "2"},
                     {"client.budget.kind", "aws_quota"}});
  ExportResult e = export_config(s, "envoy");
  EXPECT_NE(e.text.find("jitter 'equal' cannot be expressed"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("multiplier of 3"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("2 layers"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("no Envoy equivalent"), std::string::npos) << e.text;
  ExportResult g = export_config(s, "grpc");
  auto j = nlohmann::json::parse(g.text);
  ASSERT_TRUE(j.contains("_comment"));
  EXPECT_GT(j["_comment"].size(), 2u);
  EXPECT_THROW(export_config(s, "traefik"), InputError);  // not a system we write
}

// What the page shows (POST /api/export/SYSTEM, its "text") is the command
// line's `export --to SYSTEM` byte for byte, for every system.
TEST(ConfigsExport, PageExportUsesTheSameCode) {
  retrystorm::testing::TempDir dir("page_export");
  for (const auto& system : export_systems()) {
    ApiAnswer page = handle_api("/api/export/" + system, R"({"preset": "primary-failover"})");
    ASSERT_EQ(page.status, 200) << system << ": " << page.body.dump();
    retrystorm::testing::Outcome cli = retrystorm::testing::run_cli(
        dir.path(), {"export", "--to", system, "--preset", "primary-failover"});
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(page.body.value("text", ""), cli.out) << system;
    if (system == "envoy") {
      EXPECT_EQ(page.body.value("yaml", ""), cli.out);
    }
  }
}

TEST(ConfigsExport, EveryPresetExportsToEverySystem) {
  for (const auto& p : exportable_presets())
    for (const auto& system : export_systems()) {
      ExportResult e = export_config(p.scenario, system);
      if (system == "grpc") {
        EXPECT_EQ(grpc_validation(e.text), "");
      }
      std::vector<std::string> warnings;
      EXPECT_NO_THROW(import_file({p.name + "." + system, e.text}, warnings, system))
          << p.name << " " << system << "\n"
          << e.text;
      // A call without retries (a graph's entry) is no Linkerd retry policy:
      // read back as 0 retries, with that said.
      if (system == "linkerd" && p.scenario.client.retries == 0 && warnings.size() == 1 &&
          warnings[0].find("read as 0 retries") != std::string::npos)
        warnings.clear();
      EXPECT_TRUE(warnings.empty()) << p.name << " " << system << ": " << warnings.front();
    }
}

// The largest seconds a protobuf Duration holds; gRPC refuses more
// (grpc/grpc src/core/util/json/json_object_loader.cc, LoadDuration::LoadInto:
// "seconds must be in the range [0, 315576000000]").
constexpr double kProtoDurationMax = 315'576'000'000.0;

double seconds_of(const std::string& proto) {  // "8s", "0.5s"
  return std::stod(proto.substr(0, proto.size() - 1));
}

bool has_note(const ExportResult& e, const std::string& part) {
  for (const auto& n : e.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// Which failures the exported file retries, read back by our importer: the
// scenario's client.retry_on where the system can say it, else the nearest
// set with a note naming the difference (a 429 was left out of every proxy's
// file, and `retry_on none` wrote retries of 5xx).
TEST(ConfigsExport, RetriedFailuresRoundTripOrAreNoted) {
  struct Case {
    std::string system, retry_on, back;  // back: what the importer reads
    bool noted;
  };
  const std::vector<Case> cases = {
      {"istio", "429", "429,refused,reset", true},  // reset: a timeout's retry (noted)
      {"istio", "all", "all", false},
      {"nginx", "429", "429", false},
      {"nginx", "all", "all", false},
      {"nginx", "503", "503", false},
      {"linkerd", "429", "429,refused", true},  // refused streams are always retried
      {"linkerd", "all", "503,429,refused", true},
      {"haproxy", "429", "none", true},  // 429 needs HAProxy 3.1
      {"haproxy", "503", "503", false},
      {"grpc", "429", "429", false},
      {"grpc", "503", "all", true},  // UNAVAILABLE is how every failure reaches gRPC
      {"aws", "429", "all", true},
  };
  for (const Case& c : cases) {
    Scenario s = preset_or_throw("primary-failover").scenario;
    set_key_text(s, "client.retry_on", c.retry_on);
    validate(s);
    std::string text;
    Scenario back = reimport(s, c.system, text);
    EXPECT_EQ(back.client.retry_on, c.back) << c.system << " " << c.retry_on << ":\n" << text;
    const ExportResult e = export_config(s, c.system);
    bool noted = std::any_of(e.notes.begin(), e.notes.end(), [](const std::string& n) {
      return n.find("the scenario retries") != std::string::npos ||
             n.find("HAProxy 3.1") != std::string::npos ||
             n.find("Envoy retries a timed-out attempt") != std::string::npos;
    });
    EXPECT_EQ(noted, c.noted) << c.system << " " << c.retry_on << ":\n" << text;
  }
}

// A scenario that retries no failure (client.retry_on none, no retry on
// timeout) is written with no retries by every system, with a note.
TEST(ConfigsExport, RetriesOfNoFailureAreNoRetries) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  set_key_text(s, "client.retry_on", "none");
  set_key_text(s, "client.retry_on_timeout", "false");
  validate(s);
  for (const std::string system :
       {"envoy", "istio", "linkerd", "grpc", "aws", "haproxy", "nginx"}) {
    std::string text;
    Scenario back = reimport(s, system, text);
    EXPECT_EQ(back.client.retries, 0) << system << ":\n" << text;
    const ExportResult e = export_config(s, system);
    EXPECT_TRUE(std::any_of(e.notes.begin(), e.notes.end(), [](const std::string& n) {
      return n.find("retries no failure") != std::string::npos;
    })) << system;
  }
  // Hedges go on a timer; a system that cannot hedge writes no retries either
  // (nginx wrote `proxy_next_upstream ;`, which nginx refuses).
  set_key_text(s, "engine", "agent");
  set_key_text(s, "client.hedging", "envoy");
  validate(s);
  for (const std::string system : {"istio", "linkerd", "aws", "haproxy", "nginx"}) {
    std::string text;
    EXPECT_EQ(reimport(s, system, text).client.retries, 0) << system << ":\n" << text;
    EXPECT_EQ(text.find("proxy_next_upstream ;"), std::string::npos) << text;
  }
}

// A backoff cap below the base makes every window the cap
// (policies/backoff.hpp: backoff_window_s); Envoy and gRPC refuse a cap below
// the base, so both are written as the cap, with a note (the base was kept
// and the cap raised to it, silently: windows 4x too long).
TEST(ConfigsExport, ACapBelowTheBaseIsWrittenAsTheWindowItMakes) {
  Scenario s = preset_or_throw("primary-failover").scenario;
  set_key_text(s, "client.backoff.base_s", "2");
  set_key_text(s, "client.backoff.cap_s", "0.5");
  validate(s);
  for (const std::string system : {"envoy", "grpc"}) {
    std::string text;
    Scenario back = reimport(s, system, text);
    EXPECT_DOUBLE_EQ(back.client.backoff.base_s, 0.5) << system << ":\n" << text;
    EXPECT_DOUBLE_EQ(back.client.backoff.cap_s, 0.5) << system;
    for (int k = 1; k <= 4; ++k)
      EXPECT_DOUBLE_EQ(backoff_window_s(back.client.backoff, k),
                       backoff_window_s(s.client.backoff, k))
          << system << " retry " << k;
    const ExportResult e = export_config(s, system);
    EXPECT_TRUE(std::any_of(e.notes.begin(), e.notes.end(), [](const std::string& n) {
      return n.find("is below base_s") != std::string::npos;
    })) << system;
  }
}

// Issue 10, item 10: 100 retries without a cap wrote maxBackoff "6.3e29s"
// (2^99 s), which gRPC and our own import refuse. gRPC clamps maxAttempts to 5
// (grpc/grpc src/core/client_channel/retry_service_config.cc,
// RetryMethodConfig::JsonPostLoad, MAX_MAX_RETRY_ATTEMPTS), so the window it
// reaches is that of 4 retries; a larger one is clamped to what
// client.backoff.cap_s reads back, with a note.
TEST(ConfigsExport, GrpcBackoffOfManyRetriesStaysInRange) {
  Scenario s = make({{"client.retries", "100"}, {"client.backoff.cap_s", "0"}});
  ExportResult e = export_config(s, "grpc");
  EXPECT_EQ(grpc_validation(e.text), "") << e.text;
  auto rp = nlohmann::json::parse(e.text)["methodConfig"][0]["retryPolicy"];
  EXPECT_EQ(rp["maxAttempts"], 5);
  double base = s.client.backoff.base_s, mult = s.client.backoff.multiplier;
  EXPECT_DOUBLE_EQ(seconds_of(rp["maxBackoff"]), base * mult * mult * mult) << e.text;
  std::string text;
  Scenario b = reimport(s, "grpc", text);
  EXPECT_EQ(b.client.retries, 4);

  Scenario huge = make({{"client.retries", "100"},
                        {"client.backoff.cap_s", "0"},
                        {"client.backoff.base_s", "1000000"},
                        {"client.backoff.multiplier", "100"}});
  ExportResult h = export_config(huge, "grpc");
  EXPECT_EQ(grpc_validation(h.text), "") << h.text;
  rp = nlohmann::json::parse(h.text)["methodConfig"][0]["retryPolicy"];
  double cap_max = key_or_throw("client.backoff.cap_s").max;
  EXPECT_EQ(seconds_of(rp["maxBackoff"]), cap_max) << h.text;
  EXPECT_TRUE(has_note(h, "maxBackoff: 1000000000000 s is more than client.backoff.cap_s"))
      << h.text;
  b = reimport(huge, "grpc", text);
  EXPECT_EQ(b.client.backoff.cap_s, cap_max);
}

// grpc-js 1.14 reads "0.3s" as 0 s + 3 ns (service-config.ts,
// validateMethodConfig: the fraction's digits taken as nanoseconds), found by
// the conformance suite (docs/conformance.md): every fractional duration of a
// gRPC export carries all nine digits, which every client reads right.
TEST(ConfigsExport, GrpcDurationsCarryNineFractionDigits) {
  Scenario s = make({{"client.deadline_s", "2.5"},
                     {"client.timeout_s", "0.3"},
                     {"client.backoff.base_s", "0.05"},
                     {"client.backoff.cap_s", "1"}});
  ExportResult e = export_config(s, "grpc");
  EXPECT_EQ(grpc_validation(e.text), "") << e.text;
  auto mc = nlohmann::json::parse(e.text)["methodConfig"][0];
  EXPECT_EQ(mc["timeout"], "2.500000000s") << e.text;
  EXPECT_EQ(mc["retryPolicy"]["initialBackoff"], "0.050000000s");
  EXPECT_EQ(mc["retryPolicy"]["maxBackoff"], "1s");
  EXPECT_EQ(mc["retryPolicy"]["perAttemptRecvTimeout"], "0.300000000s");
  std::string text;
  Scenario b = reimport(s, "grpc", text);
  EXPECT_DOUBLE_EQ(b.client.deadline_s, 2.5);
  EXPECT_DOUBLE_EQ(b.client.backoff.base_s, 0.05);
}

// Envoy's max_interval had the same 2^99 s; its Percent allows at most 100
// and UInt32Value only whole numbers: each is clamped with a note and reads back.
TEST(ConfigsExport, EnvoyValuesClampedWithANote) {
  Scenario s = make({{"client.retries", "100"},
                     {"client.backoff.cap_s", "0"},
                     {"client.budget.kind", "envoy_concurrency"},
                     {"client.budget.ratio", "2"},
                     {"client.budget.min_concurrency", "2.5"}});
  ExportResult e = export_config(s, "envoy");
  double cap_max = key_or_throw("client.backoff.cap_s").max;
  EXPECT_NE(e.text.find("max_interval: 1000000s"), std::string::npos) << e.text;
  EXPECT_TRUE(has_note(e, "max_interval: ")) << e.text;
  EXPECT_TRUE(has_note(e, "budget_percent: 200% is above the 100%")) << e.text;
  EXPECT_TRUE(has_note(e, "min_retry_concurrency: 2.5 is not a whole number")) << e.text;
  std::string text;
  Scenario b = reimport(s, "envoy", text);
  EXPECT_EQ(b.client.retries, 100);
  EXPECT_EQ(b.client.backoff.cap_s, cap_max);
  EXPECT_EQ(b.client.budget.ratio, 1);
  EXPECT_EQ(b.client.budget.min_concurrency, 3);  // rounded half up
}

// Durations below a millisecond: gRPC, Envoy and Istio keep milliseconds, so
// "0.0001s" reads as 0, which they refuse (initialBackoff "must be greater
// than 0", RetryMethodConfig::JsonPostLoad). Written as 1 ms, with a note.
TEST(ConfigsExport, SubMillisecondDurationsClampedToOneMs) {
  Scenario s = make({{"client.retries", "2"}, {"client.backoff.base_s", "0.0001"}});
  for (const char* system : {"envoy", "grpc"}) {
    ExportResult e = export_config(s, system);
    EXPECT_TRUE(has_note(e, "clamped to 1 ms")) << system << "\n" << e.text;
    std::string text;
    Scenario b = reimport(s, system, text);
    EXPECT_EQ(b.client.backoff.base_s, 0.001) << text;
  }
  EXPECT_EQ(grpc_validation(export_config(s, "grpc").text), "");
}

// Every preset x every system x extreme values: the export passes gRPC's
// validator, our own import reads it back into a scenario `run` accepts, and
// the retries come back (gRPC: at most 4).
TEST(ConfigsExport, ExtremeValuesReimportForEveryPresetAndSystem) {
  using Sets = std::vector<std::pair<std::string, std::string>>;
  const std::vector<Sets> extremes = {
      {},
      {{"client.stack_retries", ""}, {"client.layers", "1"}, {"client.retries", "0"}},
      {{"client.stack_retries", ""}, {"client.layers", "1"}, {"client.retries", "100"}},
      {{"client.stack_retries", ""},
       {"client.layers", "1"},
       {"client.retries", "100"},
       {"client.backoff.cap_s", "0"},
       {"client.backoff.base_s", "1000000"},
       {"client.backoff.multiplier", "100"}},
      {{"client.stack_retries", ""}, {"client.layers", "6"}, {"client.retries", "3"}},
      {{"client.timeout_s", "10000000"}, {"client.deadline_s", "10000000"}},
      {{"client.backoff.base_s", "0.0001"}, {"client.backoff.cap_s", "1000000"}},
      {{"client.budget.kind", "envoy_concurrency"},
       {"client.budget.ratio", "100"},
       {"client.budget.min_concurrency", "2.5"}},
      {{"client.budget.kind", "grpc_throttling"},
       {"client.budget.max_tokens", "0.5"},
       {"client.budget.token_ratio", "0.0001"}},
      {{"client.budget.kind", "ratio_ttl"},
       {"client.budget.ttl_s", "0"},
       {"client.budget.min_retries_per_s", "0.4"}},
  };
  int exported = 0;
  for (const auto& preset : exportable_presets())
    for (const Sets& sets : extremes) {
      Scenario s = preset.scenario;
      try {
        for (const auto& [k, v] : sets) set_key_text(s, k, v);
        validate(s);
      } catch (const InputError&) {
        continue;  // not a scenario `export` accepts (e.g. a timeout off the step)
      }
      for (const auto& system : export_systems()) {
        std::string where = preset.name + " " + system + " " + sets_text(sets);
        ExportResult e = export_config(s, system);
        ++exported;
        if (system == "grpc") {
          EXPECT_EQ(grpc_validation(e.text), "") << where;
        }
        ImportResult r;
        try {
          r = import_configs({{"exported." + system, e.text}});
        } catch (const InputError& err) {
          ADD_FAILURE() << where << ": " << err.what() << "\n" << e.text;
          continue;
        }
        Scenario back = s;
        apply_keys(back, r.keys);
        int retries = s.layer_retries().back();
        if (system == "grpc") retries = std::min(retries, 4);
        bool profile = system == "linkerd" && s.client.budget.kind == BudgetKind::ratio_ttl;
        if (!profile) {
          EXPECT_EQ(back.client.retries, retries) << where << "\n" << e.text;
        }
      }
    }
  EXPECT_GT(exported, static_cast<int>(presets().size() * export_systems().size() * 5));
}

}  // namespace
}  // namespace retrystorm::configs
