// import --mesh and lint --mesh (docs/graph.md, "From the mesh's
// configuration"): the shop folder of tests/fixtures/mesh, each call's policy
// from the files that name its callee, a stack on one call as a proxy hop,
// the caller's replicas for a per-instance budget, and the messages.
#include "systems/mesh/mesh.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "app/configs.hpp"
#include "cli_run.hpp"
#include "engines/engine.hpp"
#include "formats/scenario_io.hpp"
#include "model/graph.hpp"
#include "model/keys.hpp"
#include "systems/prometheus/call_graph.hpp"
#include "systems/traces/call_graph.hpp"
#include "text/number.hpp"

namespace retrystorm::configs {
namespace {

namespace fs = std::filesystem;

const std::string kShop = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/mesh/shop";

MeshImport shop() {
  app::MeshFolder folder = app::read_mesh_folder(kShop);
  return app::import_mesh_folder(folder);
}

const ImportedKey& key(const MeshCall& c, const std::string& path) {
  for (const ImportedKey& k : c.keys)
    if (k.path == path) return k;
  throw std::runtime_error(c.from + " -> " + c.to + " has no " + path);
}

double number(const MeshCall& c, const std::string& path) {
  return std::get<double>(key(c, path).value);
}

std::string refusal(const std::vector<ConfigFile>& files, const std::string& calls) {
  try {
    import_mesh(files, {"calls.yaml", calls});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Mesh, HostsReadAsTheCallsFileNamesServices) {
  EXPECT_EQ(service_of_host("orders.shop.svc.cluster.local"), "orders");
  EXPECT_EQ(service_of_host("orders:8080"), "orders");
  EXPECT_EQ(service_of_host("http://Orders.example.com/api"), "orders");
  EXPECT_EQ(service_of_host("Orders"), "orders");
}

TEST(Mesh, TheShopFolderGivesEachCallItsPolicy) {
  MeshImport m = shop();
  EXPECT_NE(m.graph_from.find("calls.yaml: a calls file"), std::string::npos);
  ASSERT_EQ(m.calls.size(), 7u);  // six calls, one of them two layers
  ASSERT_EQ(m.skipped.size(), 1u);
  EXPECT_EQ(m.skipped[0].rfind("k8s/services.yaml:2: kind: 'Service'", 0), 0u) << m.skipped[0];

  // No file names the ingress: the calls file's own keys.
  EXPECT_EQ(m.calls[0].to, "ingress");
  EXPECT_TRUE(m.calls[0].files.empty());
  EXPECT_EQ(number(m.calls[0], "client.retries"), 0);

  // The edge Envoy's route to the gateway cluster.
  EXPECT_EQ(m.calls[1].files, std::vector<std::string>{"envoy/ingress.yaml"});
  EXPECT_EQ(number(m.calls[1], "client.retries"), 2);
  EXPECT_EQ(number(m.calls[1], "client.timeout_s"), 3);
  EXPECT_EQ(key(m.calls[1], "client.retries").from.rfind("envoy/ingress.yaml:13: ", 0), 0u);

  // The gateway's gRPC client, then its Istio sidecar: two hops through a proxy.
  EXPECT_EQ(m.calls[2].from + ">" + m.calls[2].to, "gateway>gateway-istio");
  EXPECT_EQ(m.calls[3].from + ">" + m.calls[3].to, "gateway-istio>orders");
  EXPECT_EQ(number(m.calls[2], "client.retries"), 2);  // maxAttempts 3
  EXPECT_EQ(number(m.calls[2], "client.deadline_s"), 4);
  EXPECT_EQ(number(m.calls[3], "client.retries"), 2);  // Istio attempts 2 are retries
  EXPECT_EQ(number(m.calls[3], "client.budget.ratio"), 0.2);
  // Istio's budget is per sidecar: the gateway's 4 replicas.
  EXPECT_EQ(number(m.calls[3], "client.budget.clients"), 4);
  EXPECT_EQ(key(m.calls[3], "client.budget.clients").from.rfind("k8s/deployments.yaml:4: ", 0), 0u);

  // Linkerd's ServiceProfile for search, its budget per gateway proxy.
  EXPECT_EQ(m.calls[4].files, std::vector<std::string>{"linkerd/search-profile.yaml"});
  EXPECT_EQ(number(m.calls[4], "client.budget.clients"), 4);
  // One gRPC config for the Db service: both callers of db.
  for (size_t i : {5u, 6u}) {
    EXPECT_EQ(m.calls[i].files, std::vector<std::string>{"db/client.json"});
    EXPECT_EQ(number(m.calls[i], "client.retries"), 3);
  }
  // The orders replicas do not reach db's calls: they have no budget.
  for (const ImportedKey& k : m.calls[5].keys) EXPECT_NE(k.path, "client.budget.clients");
}

// The calls file numbers its own calls: a call split into hops (a stack of
// retrying layers) moves the graph's numbers on, not the file's.
MeshImport shop_calls_with(const std::string& from, const std::string& to) {
  app::MeshFolder folder = app::read_mesh_folder(kShop);
  std::string& text = folder.calls->text;
  size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("no " + from);
  text.replace(at, from.size(), to);
  return import_mesh(folder.files, *folder.calls);
}

const std::string kShopIncident =
    "incident: {service: db, start_s: 30, duration_s: 20, capacity_factor: 0.3}";

TEST(Mesh, TheCallsFilesIncidentCallIsItsOwnCall) {
  // calls[4] of the file is orders -> db, the graph's calls[5].
  MeshImport m = shop_calls_with(kShopIncident, "incident: {call: 4, delay_s: 2}");
  ASSERT_EQ(m.scenario.incident.call, 5);
  EXPECT_EQ(m.calls[5].from + ">" + m.calls[5].to, "orders>db");
  // A fault on the split call: on the attempts, the hop that reaches orders;
  // on the call, before the gateway's own retries.
  m = shop_calls_with(kShopIncident, "incident: {call: 2, delay_s: 2}");
  EXPECT_EQ(m.scenario.incident.call, 3);
  m = shop_calls_with(kShopIncident, "incident: {call: 2, delay_s: 2, fault_on: calls}");
  EXPECT_EQ(m.scenario.incident.call, 2);
  try {
    shop_calls_with(kShopIncident, "incident: {call: 6, delay_s: 2}");
    ADD_FAILURE() << "calls[6] of six calls";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "calls.yaml: incident.call: 6 names no call; the file has calls[0] to calls[5]"),
              std::string::npos)
        << e.what();
  }
  // A message about a call after the split names the file's call.
  try {
    shop_calls_with("- {from: search, to: db}", "- {from: search, to: db, count: 0}");
    ADD_FAILURE() << "count 0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("calls[5].count"), std::string::npos) << e.what();
  }
  try {
    shop_calls_with(kShopIncident, "incident: {call: 4}");
    ADD_FAILURE() << "a fault that does nothing";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("incident.call: 4"), std::string::npos) << e.what();
  }
  // What a message quotes is the user's own text, left as written, and a
  // number past any call is no crash.
  try {
    shop_calls_with("- {from: search, to: db}",
                    "- {from: search, to: db, retry_on: \"calls[99999999999999999999999]\"}");
    ADD_FAILURE() << "a retry_on of no class";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("calls[99999999999999999999999]"), std::string::npos)
        << e.what();
  }
  try {
    shop_calls_with("- {from: gateway, to: search, optional: true}",
                    "- {from: gateway, to: search, optional: yes please}");
    ADD_FAILURE() << "optional: a text";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("calls[3].optional"), std::string::npos) << e.what();
  }
}

TEST(Mesh, TheGraphIsTheScenarioAndReadsBackAsWritten) {
  MeshImport m = shop();
  EXPECT_EQ(m.scenario.engine, Engine::agent);
  EXPECT_EQ(m.scenario.graph.calls.size(), 7u);
  EXPECT_EQ(m.scenario.step_s, 0.1);  // every timeout a whole number of 0.1 s
  // The proxy between the two layers is a service without a server.
  EXPECT_EQ(m.document["services"]["gateway-istio"], nlohmann::json::object());
  Scenario again = scenario_from_json(m.document);
  EXPECT_EQ(scenario_to_json(again), scenario_to_json(m.scenario));
  // 3 x 3 gateway attempts at orders, 3 x 4 x 9 at db through orders, x 3 from the ingress.
  std::vector<double> worst = worst_case_attempts(m.scenario);
  EXPECT_EQ(worst[service_index(m.scenario.graph, "orders")], 27);
  std::string text = mesh_text(m);
  EXPECT_NE(text.find("calls[3].budget.clients = 4"), std::string::npos) << text;
  EXPECT_NE(text.find("# skipped: k8s/services.yaml"), std::string::npos);
}

TEST(Mesh, MessagesNameTheFileAndTheKey) {
  const std::vector<ConfigFile> none;
  EXPECT_NE(refusal(none, "calls: []").find("calls.yaml: a calls file is a mapping with `calls`"),
            std::string::npos);
  EXPECT_NE(refusal(none, "calls: [{from: user}]").find("calls.yaml: calls[0]: needs from and to"),
            std::string::npos);
  // A call's own key must be a client key (the fuzzer's "retries" beside "retries.").
  EXPECT_NE(refusal(none,
                    "services: {api: {capacity_per_s: 5}}\n"
                    "calls: [{from: user, to: api, retries: 1, \"retries.\": 2}]")
                .find("calls.yaml: calls[0].retries.: unknown key"),
            std::string::npos);
  EXPECT_NE(
      refusal(none, "calls: [{from: user, to: api, retry: 1}]").find("calls[0].retry: unknown key"),
      std::string::npos);
  std::vector<ConfigFile> one = {
      {"a/vs.yaml",
       "kind: VirtualService\napiVersion: networking.istio.io/v1\nspec:\n  hosts: [api]\n  "
       "http:\n  - route:\n    - destination: {host: api}\n    retries: {attempts: 1}\n"}};
  std::string pinned = refusal(
      one,
      "services: {api: {capacity_per_s: 5}}\ncalls: [{from: user, to: api, configs: [b.yaml]}]");
  EXPECT_NE(pinned.find("calls[0].configs: 'b.yaml' is not a retry configuration of the folder "
                        "(they are: a/vs.yaml)"),
            std::string::npos)
      << pinned;
  EXPECT_NE(refusal(one, "calls: [{from: user, to: api, retries: lots}]").find("calls[0].retries"),
            std::string::npos);
  // A file whose destination no call has is said, not dropped silently.
  MeshImport m = import_mesh(one, {"calls.yaml",
                                   "services: {web: {capacity_per_s: 5}}\n"
                                   "calls: [{from: user, to: web}]"});
  bool said = false;
  for (const std::string& w : m.warnings)
    said = said || w == "a/vs.yaml: its destination api is the callee of no call; not used";
  EXPECT_TRUE(said);
}

// The call graph from a saved Prometheus answer: Istio's request rates by
// source_workload and destination_workload (an instant vector), the folder's
// files for each call's policy and no calls file.
const std::string kFixtures = std::string(RETRYSTORM_SOURCE_DIR) + "/tests/fixtures/mesh";

MeshImport observed(const std::string& answer, const std::optional<ConfigFile>& calls) {
  app::MeshFolder folder = app::read_mesh_folder(kShop);
  ConfigFile metrics{answer, testing::read_all(kFixtures + "/" + answer)};
  return import_mesh_observed(folder.files, metrics, calls);
}

bool warned(const MeshImport& m, const std::string& text) {
  for (const std::string& w : m.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(MeshObserved, IstioRatesGiveTheCallsAndTheirCounts) {
  // A calls file without calls: only what the metrics cannot say, the capacities.
  ConfigFile servers{"servers.yaml", "services: {db: {capacity_per_s: 1000}}\n"};
  MeshImport m = observed("shop-calls-istio.json", servers);
  EXPECT_NE(m.graph_from.find("Istio's source_workload and destination_workload"),
            std::string::npos);
  // user -> ingress at the rate from outside the mesh (200/s), then breadth first.
  EXPECT_EQ(m.scenario.demand.rate_per_s, 200);
  const Graph& g = m.scenario.graph;
  // Seven: the gateway's gRPC client and its Istio sidecar both retry orders.
  ASSERT_EQ(g.calls.size(), 7u);
  EXPECT_EQ(g.calls[0].from, "user");
  EXPECT_EQ(g.calls[0].to, "ingress");
  auto count = [&](const std::string& from, const std::string& to) {
    for (const GraphCall& c : g.calls)
      if (c.from == from && c.to == to) return c.count;
    return -1;
  };
  EXPECT_EQ(count("ingress", "gateway"), 1);
  EXPECT_EQ(count("orders", "db"), 2);  // 400/s over the 200/s orders receives
  EXPECT_EQ(count("gateway", "search"), 1);
  EXPECT_TRUE(warned(m,
                     "gateway -> search is 0.6 calls per request at gateway (120/s over "
                     "200/s), taken as 1"));
  EXPECT_TRUE(warned(m, "5/s from outside the mesh into db left out"));
  EXPECT_TRUE(warned(m, "orders calls outside the mesh (10/s); left out"));
  // Undeclared services are proxies, as with a calls file.
  EXPECT_TRUE(warned(m, "services.orders is not declared"));
  EXPECT_EQ(count("gateway", "gateway-istio"), 1);
  // Without any capacity the graph has no server: refused, naming what to give.
  try {
    observed("shop-calls-istio.json", std::nullopt);
    ADD_FAILURE() << "a graph of proxies only was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("none sets capacity_per_s"), std::string::npos);
  }
}

// Istio's canonical service labels name services, as the calls file does:
// reviews-v1, -v2 and -v3 are one callee, reviews (they were three, each
// "0.33 calls per request, taken as 1"). Linkerd's owner labels other than
// deployment name callers too: a StatefulSet's calls were read as traffic
// from outside the mesh, and its callee became the entry.
TEST(MeshObserved, CanonicalServicesAndEveryOwnerKindNameTheServices) {
  auto answer = [](const std::string& series) {
    return R"({"status":"success","data":{"resultType":"vector","result":[)" + series + "]}}";
  };
  auto sample = [](const std::string& labels, double rate) {
    return "{\"metric\":{" + labels + "},\"value\":[1700000000,\"" + number_text(rate) + "\"]}";
  };
  std::string istio;
  for (const char* version : {"v1", "v2", "v3"})
    istio += (istio.empty() ? "" : ",") +
             sample(R"("source_canonical_service":"productpage","destination_canonical_service":)"
                    R"("reviews","destination_workload":"reviews-)" +
                        std::string(version) + "\"",
                    10);
  istio += "," + sample(R"("source_canonical_service":"unknown","destination_canonical_service":)"
                        R"("productpage")",
                        30);
  ObservedCalls seen = read_observed_calls(answer(istio), "rates.json");
  ASSERT_EQ(seen.calls.size(), 2u);
  EXPECT_EQ(seen.labels, "Istio's source_canonical_service and destination_canonical_service");
  for (const ObservedCall& c : seen.calls) {
    if (c.to == "reviews") {
      EXPECT_EQ(c.rate_per_s, 30);
    }
  }
  std::string linkerd = sample(R"("statefulset":"ledger","dst_deployment":"db")", 5) + "," +
                        sample(R"("deployment":"web","dst_statefulset":"ledger")", 5) + "," +
                        sample(R"("deployment":"web","dst_service":"cache")", 2);
  ObservedCalls owners = read_observed_calls(answer(linkerd), "rates.json");
  ASSERT_EQ(owners.calls.size(), 3u);
  for (const ObservedCall& c : owners.calls) EXPECT_FALSE(c.from.empty()) << c.to;
}

TEST(MeshObserved, ACallsFileAddsItsKeysAndAnEntryFromLinkerdsRange) {
  // Linkerd's outbound request_total by deployment and dst_deployment, a range:
  // each series' mean; nobody calls the ingress, so it is the entry.
  ConfigFile calls{"calls.yaml",
                   "services: {db: {capacity_per_s: 1000}}\n"
                   "calls:\n  - {from: search, to: db, optional: true, retries: 0}\n"};
  MeshImport m = observed("shop-calls-linkerd.json", calls);
  EXPECT_NE(m.graph_from.find("Linkerd's deployment and dst_deployment"), std::string::npos);
  EXPECT_NE(m.graph_from.find("calls.yaml's keys over them"), std::string::npos);
  EXPECT_TRUE(warned(m, "no requests into ingress from outside the mesh"));
  EXPECT_EQ(m.scenario.demand.rate_per_s, 200);  // ingress -> gateway: (198 + 202) / 2
  const Graph& g = m.scenario.graph;
  ASSERT_EQ(g.calls.size(), 7u);
  const GraphCall& search_db = g.calls.back();
  EXPECT_EQ(search_db.from, "search");
  EXPECT_TRUE(search_db.optional);
  EXPECT_EQ(std::get<double>(graph_key_value(m.scenario, "calls[6].retries")), 0);
  EXPECT_EQ(g.services[static_cast<size_t>(service_index(g, "db"))].serves(), true);
}

TEST(MeshObserved, AnswersThatGiveNoGraphAreRefusedByName) {
  app::MeshFolder folder = app::read_mesh_folder(kShop);
  auto refused = [&](const std::string& body) {
    try {
      import_mesh_observed(folder.files, {"rates.json", body}, std::nullopt);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto answer = [](const std::string& series) {
    return R"({"status":"success","data":{"resultType":"vector","result":[)" + series + "]}}";
  };
  EXPECT_NE(refused(answer(R"({"metric":{"job":"x"},"value":[1,"3"]})"))
                .find("rates.json: a series without a callee label"),
            std::string::npos);
  EXPECT_NE(refused(answer(R"({"metric":{"source_workload":"a","destination_workload":"b"},)"
                           R"("value":[1,"3"]},{"metric":{"source_workload":"c",)"
                           R"("destination_workload":"d"},"value":[1,"3"]})"))
                .find("several services nobody calls (a, c)"),
            std::string::npos);
  EXPECT_NE(refused(answer("")).find("rates.json: the answer has no series"), std::string::npos);
  EXPECT_NE(refused(R"({"status":"error","error":"bad query"})").find("Prometheus says: bad query"),
            std::string::npos);
  EXPECT_NE(refused(answer(R"({"metric":{"source_workload":"a","destination_workload":"b"},)"
                           R"("value":[1,"-3"]})"))
                .find("a negative rate"),
            std::string::npos);
}

TEST(Mesh, TheCommandLine) {
  testing::TempDir dir("mesh");
  testing::Outcome imported = testing::run_cli(
      dir.path(), {"import", "--mesh", kShop, "--format", "yaml", "--out", "mesh.yaml"});
  ASSERT_EQ(imported.status, 0) << imported.err;
  Scenario s = scenario_from_text(testing::read_all(dir.path() / "mesh.yaml"), "mesh.yaml");
  EXPECT_EQ(s.graph.calls.size(), 7u);
  // The findings that need the graph: exit 1.
  testing::Outcome linted = testing::run_cli(dir.path(), {"lint", "--mesh", kShop});
  EXPECT_EQ(linted.status, 1) << linted.err;
  EXPECT_NE(linted.out.find("retries-multiply-across-hops"), std::string::npos);
  EXPECT_NE(linted.out.find("one user request makes 108 attempts at db"), std::string::npos);
  EXPECT_NE(linted.out.find("inner-timeout-longer"), std::string::npos);
  // Each budgeted call's instances: the caller's replicas where a Deployment gives them.
  EXPECT_NE(linted.out.find("client instances: per call: calls[1] 100 (the model's default); "
                            "calls[3] 4; calls[4] 4"),
            std::string::npos)
      << linted.out;
  // Bad input: exit 2 with the path.
  testing::Outcome missing = testing::run_cli(dir.path(), {"import", "--mesh", "nowhere"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("--mesh nowhere: not a folder"), std::string::npos) << missing.err;
  testing::Outcome no_calls = testing::run_cli(dir.path(), {"import", "--mesh", "."});
  EXPECT_EQ(no_calls.status, 2);
  EXPECT_NE(no_calls.err.find("no calls.yaml in the folder"), std::string::npos) << no_calls.err;
  // run --format csv --per: a graph's rows per service; refused without a graph.
  testing::Outcome per = testing::run_cli(
      dir.path(), {"run", "--scenario", "mesh.yaml", "--format", "csv", "--per", "service"});
  EXPECT_EQ(per.status, 0) << per.err;
  EXPECT_EQ(per.out.rfind("t_s,service,first_attempts,", 0), 0u) << per.out.substr(0, 200);
  testing::Outcome no_graph = testing::run_cli(
      dir.path(), {"run", "--preset", "order-status", "--format", "csv", "--per", "call"});
  EXPECT_EQ(no_graph.status, 2);
  EXPECT_NE(no_graph.err.find("--per: 'call' needs --format csv and a scenario with services"),
            std::string::npos)
      << no_graph.err;
  testing::Outcome both = testing::run_cli(dir.path(), {"import", "x.yaml", "--mesh", kShop});
  EXPECT_EQ(both.status, 2);
  testing::Outcome alone =
      testing::run_cli(dir.path(), {"import", "--calls-from-metrics", "rates.json"});
  EXPECT_EQ(alone.status, 2);
  EXPECT_NE(alone.err.find("--calls-from-metrics goes with --mesh DIR"), std::string::npos)
      << alone.err;
  // The calls from the metrics: exit 0, the graph's source on the first line.
  testing::Outcome rates = testing::run_cli(
      dir.path(),
      {"import", "--mesh", kShop, "--calls-from-metrics", kFixtures + "/shop-calls-istio.json"});
  EXPECT_EQ(rates.status, 0) << rates.err;
  EXPECT_EQ(rates.out.rfind("# the call graph: " + kFixtures +
                                "/shop-calls-istio.json: a "
                                "Prometheus answer",
                            0),
            0u)
      << rates.out;
}

}  // namespace
}  // namespace retrystorm::configs

namespace retrystorm::configs {
namespace {

// The shop folder with `text` added to one file and the calls file's
// incident replaced by a window alone.
app::MeshFolder shop_with(const std::string& file, const std::string& text) {
  app::MeshFolder folder = app::read_mesh_folder(kShop);
  for (ConfigFile& f : folder.files)
    if (f.name == file) f.text += text;
  std::string& calls = folder.calls->text;
  calls = calls.substr(0, calls.find("incident:")) + "incident: {start_s: 30, duration_s: 20}\n";
  return folder;
}

const ImportedKey& incident_key(const MeshImport& m, const std::string& path) {
  for (const ImportedKey& k : m.incident)
    if (k.path == path) return k;
  throw std::runtime_error("no " + path);
}

// Istio's VirtualService fault: TranslateFault (istio/istio
// pilot/pkg/networking/core/route/route.go) makes it Envoy's fault filter
// in the caller's sidecar, which runs before the router (envoyproxy/envoy
// source/extensions/filters/http/fault/fault_filter.cc, decodeHeaders):
// the sidecar's retries never see it, the gRPC client above them does.
// A link in the folder that leads nowhere, or in a loop, is no configuration
// file: skipped, where the loop's filesystem error ended the import.
TEST(Mesh, ALinkThatLeadsNowhereIsSkipped) {
  testing::TempDir dir("mesh_links");
  const fs::path mesh = dir.path() / "shop";
  fs::copy(kShop, mesh, fs::copy_options::recursive);
  fs::create_symlink("loopb.yaml", mesh / "loopa.yaml");
  fs::create_symlink("loopa.yaml", mesh / "loopb.yaml");
  fs::create_symlink("gone.yaml", mesh / "dangling.yaml");
  testing::Outcome imported = testing::run_cli(dir.path(), {"import", "--mesh", "shop"});
  EXPECT_EQ(imported.status, 0) << imported.err;
  testing::Outcome linted = testing::run_cli(dir.path(), {"lint", "--mesh", "shop"});
  EXPECT_EQ(linted.status, 1) << linted.err;
}

// One file with a VirtualService for orders and a DestinationRule for
// search: each resource is read for its own host (Istio applies a
// DestinationRule to its `host` only), not the pair as orders' one layer.
TEST(Mesh, AVirtualServiceAndADestinationRuleForTwoHostsInOneFile) {
  const std::string calls =
      "services: {gateway: {capacity_per_s: 100}, orders: {capacity_per_s: 100},\n"
      "  search: {capacity_per_s: 100}}\n"
      "calls:\n  - {from: user, to: gateway}\n  - {from: gateway, to: orders}\n"
      "  - {from: gateway, to: search}\n";
  const std::string istio =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders}\n"
      "spec:\n  hosts: [orders]\n  http:\n  - route:\n    - destination: {host: orders}\n"
      "    retries: {attempts: 4, perTryTimeout: 1s, retryOn: 5xx}\n"
      "---\n"
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: search}\n"
      "spec:\n  host: search\n  trafficPolicy:\n"
      "    retryBudget: {percent: 10, minRetryConcurrency: 2}\n"
      "    outlierDetection: {consecutive5xxErrors: 3}\n";
  MeshImport m = import_mesh({{"istio.yaml", istio}}, {"calls.yaml", calls});
  ASSERT_EQ(m.calls.size(), 3u);
  const MeshCall& orders = m.calls[1];
  const MeshCall& search = m.calls[2];
  EXPECT_EQ(orders.to, "orders");
  EXPECT_EQ(number(orders, "client.retries"), 4);
  for (const ImportedKey& k : orders.keys) {
    EXPECT_NE(k.path, "client.budget.ratio") << k.from;
    EXPECT_NE(k.path, "client.outlier_5xx") << k.from;
  }
  EXPECT_EQ(search.to, "search");
  EXPECT_EQ(number(search, "client.budget.ratio"), 0.1);
  EXPECT_EQ(key(search, "client.budget.ratio").from.rfind("istio.yaml:", 0), 0u);
}

// A retry file of a known system that cannot be read leaves its call to the
// defaults: said on stderr whatever the format, by import and by lint; and
// lint --mesh's --set applies to the folder's graph, not to a preset.
TEST(Mesh, AnUnreadFileIsSaidAndSetAppliesToTheGraph) {
  testing::TempDir dir("mesh_unread");
  const fs::path mesh = dir.path() / "shop";
  fs::copy(kShop, mesh, fs::copy_options::recursive);
  {
    std::ofstream vs(mesh / "istio" / "orders-vs.yaml", std::ios::app);
    vs << "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\n"
          "metadata: {name: search}\nspec:\n  hosts: [search]\n  http:\n"
          "  - route:\n    - destination: {host: search}\n"
          "    retries: {attempts: 3, perTryTimeout: 2x}\n";
  }
  for (const char* format : {"json", "yaml"}) {
    testing::Outcome imported =
        testing::run_cli(dir.path(), {"import", "--mesh", "shop", "--format", format});
    EXPECT_EQ(imported.status, 0) << imported.err;
    EXPECT_NE(imported.err.find("not read, so its calls take the defaults: "
                                "istio/orders-vs.yaml:"),
              std::string::npos)
        << imported.err;
    EXPECT_NE(imported.err.find("'2x' is not a duration"), std::string::npos) << imported.err;
  }
  testing::Outcome linted =
      testing::run_cli(dir.path(), {"lint", "--mesh", "shop", "--format", "json"});
  EXPECT_EQ(linted.status, 1) << linted.err;
  EXPECT_NE(linted.err.find("not read, so its calls take the defaults"), std::string::npos)
      << linted.err;

  testing::Outcome set = testing::run_cli(
      dir.path(), {"lint", "--mesh", "shop", "--set", "services.db.capacity_per_s=100000", "--set",
                   "calls[1].retries=0"});
  EXPECT_EQ(set.status, 1) << set.err;
  EXPECT_EQ(set.err.find("no such service"), std::string::npos) << set.err;
  EXPECT_EQ(set.err.find("the scenario has 0 calls"), std::string::npos) << set.err;
}

TEST(MeshFault, AnIstioRouteFaultIsTheIncidentOnItsCall) {
  app::MeshFolder folder = shop_with("istio/orders-vs.yaml",
                                     "    fault:\n"
                                     "      delay: {percentage: {value: 50}, fixedDelay: 200ms}\n"
                                     "      abort: {percentage: {value: 40}, httpStatus: 503}\n");
  MeshImport m = app::import_mesh_folder(folder);
  ASSERT_EQ(m.calls[3].to, "orders");  // gateway-istio -> orders: the sidecar's hop
  EXPECT_EQ(m.scenario.incident.call, 3);
  EXPECT_EQ(m.scenario.incident.fault_on, FaultOn::calls);
  EXPECT_EQ(m.scenario.incident.delay_s, 0.2);
  EXPECT_EQ(m.scenario.incident.delay_share, 0.5);
  EXPECT_EQ(m.scenario.incident.abort_share, 0.4);
  EXPECT_EQ(m.scenario.incident.abort_status, FailureClass::http_503);
  EXPECT_EQ(incident_key(m, "incident.abort_share").from.rfind("istio/orders-vs.yaml:", 0), 0u)
      << incident_key(m, "incident.abort_share").from;
  std::string text = mesh_text(m);
  EXPECT_NE(text.find("the incident: a fault on a call"), std::string::npos) << text;
  EXPECT_NE(text.find("incident.call = 3"), std::string::npos) << text;
  RunResult r = run_engine(m.scenario);
  double aborted = 0, sidecar_retries = 0, client_retries = 0;
  for (size_t t = 0; t < r.graph.edges[3].aborted.size(); ++t) {
    aborted += r.graph.edges[3].aborted[t];
    client_retries += r.graph.edges[2].retries[t];
    sidecar_retries += r.graph.edges[3].retries[t];
  }
  EXPECT_GT(aborted, 0);
  EXPECT_GE(client_retries, aborted * 0.5);   // the gRPC client retries the aborts
  EXPECT_LT(sidecar_retries, aborted * 0.1);  // the sidecar's own retries do not
}

TEST(MeshFault, AnEnvoyFaultFilterOnTheRouteAndStatusesWithoutAClass) {
  app::MeshFolder folder = shop_with(
      "envoy/ingress.yaml",
      "    typed_per_filter_config:\n"
      "      envoy.filters.http.fault:\n"
      "        '@type': type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault\n"
      "        abort: {http_status: 502, percentage: {numerator: 25, denominator: HUNDRED}}\n"
      "        headers: [{name: x-chaos, present_match: true}]\n");
  MeshImport m = app::import_mesh_folder(folder);
  EXPECT_EQ(m.scenario.incident.call, 1);  // ingress -> gateway
  EXPECT_EQ(m.scenario.incident.abort_share, 0.25);
  EXPECT_EQ(m.scenario.incident.delay_s, 0);
  EXPECT_NE(incident_key(m, "incident.abort_status").from.find("read as 503"), std::string::npos);
  // A status the model has no class for: the abort is left out, with a warning.
  std::vector<std::string> warnings;
  ConfigFile vs{"vs.yaml",
                "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\n"
                "spec:\n  hosts: [a]\n  http:\n  - route: [{destination: {host: a}}]\n"
                "    fault: {abort: {httpStatus: 404, percentage: {value: 10}}}\n"};
  LayerPolicy l = import_file(vs, warnings);
  EXPECT_FALSE(l.fault);
  ASSERT_FALSE(warnings.empty());
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("answers 404"), std::string::npos) << all;
  // Left out percentage: Envoy injects nothing.
  warnings.clear();
  vs.text =
      vs.text.substr(0, vs.text.find("    fault:")) + "    fault: {delay: {fixedDelay: 1s}}\n";
  EXPECT_FALSE(import_file(vs, warnings).fault);
  EXPECT_NE(warnings.back().find("injects nothing"), std::string::npos) << warnings.back();
}

}  // namespace
}  // namespace retrystorm::configs

namespace retrystorm::configs {
namespace {

std::string traced_refusal(const std::string& body) {
  try {
    read_traced_calls(body, "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The shop's 20 requests as Jaeger, Zipkin and OTLP exports: the same calls,
// counts and patterns from each (gateway's calls to orders and search
// overlap: parallel; orders calls db twice, one after the other).
TEST(MeshTraced, JaegerZipkinAndOtlpGiveTheSameGraph) {
  std::optional<nlohmann::json> first;
  for (const char* format : {"jaeger", "zipkin", "otlp"}) {
    SCOPED_TRACE(format);
    app::MeshFolder folder = app::read_mesh_folder(kShop, kShop + "/calls.yaml", "",
                                                   kFixtures + "/shop-traces-" + format + ".json");
    MeshImport m = app::import_mesh_folder(folder);
    EXPECT_NE(m.graph_from.find("(20 traces, 240 spans)"), std::string::npos) << m.graph_from;
    EXPECT_EQ(m.document["services"]["gateway"]["pattern"], "parallel");
    EXPECT_FALSE(m.document["services"]["orders"].contains("pattern"));
    if (!first) first = m.document;
    EXPECT_EQ(m.document["calls"], (*first)["calls"]);
  }
  ObservedCalls seen = read_traced_calls(testing::read_all(kFixtures + "/shop-traces-zipkin.json"),
                                         "shop-traces-zipkin.json");
  std::map<std::string, double> rate;
  for (const ObservedCall& c : seen.calls) rate[c.from + ">" + c.to] = c.rate_per_s;
  EXPECT_EQ(rate.size(), 6u);
  EXPECT_DOUBLE_EQ(rate["orders>db"], 2 * rate[">ingress"]);
  EXPECT_DOUBLE_EQ(rate["search>db"], rate[">ingress"]);
  // 20 requests over the 0.959 s the traces span.
  EXPECT_NEAR(rate[">ingress"], 20 / 0.959, 1e-9);
  EXPECT_EQ(seen.source, "traces");
}

TEST(MeshTraced, SharedSpansOrphansAndRefusals) {
  // Zipkin's shared span: the server half has its client's id.
  ObservedCalls shared = read_traced_calls(
      R"([{"traceId":"t","id":"1","localEndpoint":{"serviceName":"web"}},)"
      R"({"traceId":"t","id":"2","parentId":"1","kind":"CLIENT","localEndpoint":{"serviceName":"web"}},)"
      R"({"traceId":"t","id":"2","parentId":"1","kind":"SERVER","shared":true,)"
      R"("localEndpoint":{"serviceName":"api"}},)"
      R"({"traceId":"t","id":"9","parentId":"gone","localEndpoint":{"serviceName":"api"}}])",
      "z.json");
  std::map<std::string, double> n;
  for (const ObservedCall& c : shared.calls) n[c.from + ">" + c.to] = c.rate_per_s;
  EXPECT_EQ(n["web>api"], 1);
  EXPECT_EQ(n[">api"], 1);  // its parent is not in the file: from outside
  EXPECT_NE(shared.labels.find("1 whose parent is not in the file"), std::string::npos);
  EXPECT_NE(traced_refusal("{\"spans\": []}").find("not a trace export"), std::string::npos);
  EXPECT_NE(traced_refusal("[]").find("no spans"), std::string::npos);
  EXPECT_NE(traced_refusal(R"([{"traceId":"t","id":"1"}])").find("[0]: no localEndpoint"),
            std::string::npos);
  EXPECT_NE(traced_refusal(R"({"data":[{"traceID":"t","spans":[{"traceID":"t","spanID":"1",)"
                           R"("processID":"p9"}],"processes":{}}]})")
                .find("processID 'p9' is not in the trace's processes"),
            std::string::npos);
  EXPECT_NE(traced_refusal(R"({"resourceSpans":[{"scopeSpans":[]}]})")
                .find("no resource attribute service.name"),
            std::string::npos);
  // b's span is called from a, whose spans are each other's parents.
  EXPECT_NE(traced_refusal(R"([{"traceId":"t","id":"1","parentId":"2","localEndpoint":)"
                           R"({"serviceName":"a"}},{"traceId":"t","id":"2","parentId":"1",)"
                           R"("localEndpoint":{"serviceName":"a"}},{"traceId":"t","id":"3",)"
                           R"("parentId":"1","localEndpoint":{"serviceName":"b"}}])")
                .find("make a cycle"),
            std::string::npos);
  EXPECT_NE(traced_refusal(R"([{"traceId":"t","id":7,"localEndpoint":{"serviceName":"a"}}])")
                .find("[0].id: must be a string"),
            std::string::npos);
}

TEST(MeshTraced, SampledRatesAreSaidAndTheSourceIsOne) {
  ConfigFile traces{"t.json", testing::read_all(kFixtures + "/shop-traces-otlp.json")};
  ConfigFile calls{"calls.yaml", "services: {ingress: {}, db: {capacity_per_s: 900}}\n"};
  MeshImport m = import_mesh_traced({}, traces, calls);
  bool said = false;
  for (const std::string& w : m.warnings)
    said = said || w.find("which sampling lowers") != std::string::npos;
  EXPECT_TRUE(said);
  testing::TempDir dir("traced");
  testing::Outcome both =
      testing::run_cli(dir.path(), {"import", "--mesh", kShop, "--calls-from-metrics", "a.json",
                                    "--calls-from-traces", kFixtures + "/shop-traces-otlp.json"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("give the call graph's source once"), std::string::npos) << both.err;
  testing::Outcome alone = testing::run_cli(
      dir.path(), {"lint", "--calls-from-traces", kFixtures + "/shop-traces-otlp.json"});
  EXPECT_EQ(alone.status, 2);
  EXPECT_NE(alone.err.find("--calls-from-traces goes with --mesh DIR"), std::string::npos)
      << alone.err;
}

const std::string kFrontendOrders =
    "demand: {rate_per_s: 10}\nservices:\n  frontend: {capacity_per_s: 1000}\n"
    "  orders: {capacity_per_s: 1000}\ncalls:\n"
    "  - {from: user, to: frontend, retries: 0, timeout_s: 10}\n"
    "  - {from: frontend, to: orders}\n";

std::string virtual_service(const std::string& ns, const std::string& host, int attempts) {
  return "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders, "
         "namespace: " +
         ns + "}\nspec:\n  hosts: [" + host +
         "]\n  http:\n  - route: [{destination: {host: " + host +
         "}}]\n    retries: {attempts: " + std::to_string(attempts) + ", perTryTimeout: 1s}\n";
}

bool any_has(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

// Two namespaces' VirtualServices for `orders`: one sidecar applies one, so the
// call is one hop (they were stacked, and lint said 16 attempts where 4 are
// made); an egress rule for api.stripe.com is no policy of the service `api`.
TEST(MeshHosts, OneSidecarAppliesOnePolicyAndOutsideHostsAreNoServices) {
  MeshImport m = import_mesh(
      {{"orders-billing.yaml", virtual_service("billing", "orders.billing.svc.cluster.local", 3)},
       {"orders-shop.yaml", virtual_service("shop", "orders.shop.svc.cluster.local", 3)}},
      {"calls.yaml", kFrontendOrders});
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].files, std::vector<std::string>{"orders-billing.yaml"});
  EXPECT_EQ(number(m.calls[1], "client.retries"), 3);
  EXPECT_TRUE(any_has(m.warnings, "both give this call's policy at one layer")) << m.warnings[0];
  MeshImport egress =
      import_mesh({{"stripe.yaml", virtual_service("shop", "orders.stripe.com", 5)}},
                  {"calls.yaml", kFrontendOrders});
  EXPECT_TRUE(egress.calls[1].files.empty());
  EXPECT_NE(egress.calls[1].note.find("no configuration file names orders"), std::string::npos);
}

// A DestinationRule in its own file brings its outlier detection to the
// call, as it does in the VirtualService's file (only its budget came).
TEST(MeshHosts, ADestinationRuleInItsOwnFileBringsItsOutlierDetection) {
  const std::string rule =
      "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: orders, "
      "namespace: shop}\nspec:\n  host: orders.shop.svc.cluster.local\n  trafficPolicy:\n"
      "    outlierDetection: {consecutive5xxErrors: 3, interval: 10s, baseEjectionTime: 30s}\n";
  MeshImport m =
      import_mesh({{"orders-dr.yaml", rule},
                   {"orders-vs.yaml", virtual_service("shop", "orders.shop.svc.cluster.local", 2)}},
                  {"calls.yaml", kFrontendOrders});
  EXPECT_EQ(number(m.calls[1], "client.outlier_5xx"), 3);
  EXPECT_EQ(number(m.calls[1], "client.outlier_ejection_s"), 30);
  // The text names the engine key as itself, not under the call's name.
  EXPECT_EQ(mesh_text(m).find("calls[1] = agent"), std::string::npos) << mesh_text(m);
}

// A cluster's connection limit is a client guard the graph engine does not
// run (a call that sets one is refused): the mesh leaves it out and says so,
// and the imported mesh runs; the cluster's retry budget stays.
TEST(MeshHosts, AClustersConnectionLimitIsLeftOutAndSaid) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) +
                   "/tests/fixtures/configs/envoy/cluster.yaml");
  const std::string cluster((std::istreambuf_iterator<char>(in)), {});
  MeshImport m = import_mesh({{"orders-cluster.yaml", cluster}}, {"calls.yaml", kFrontendOrders});
  EXPECT_THROW(key(m.calls[1], "client.max_connections"), std::runtime_error);
  EXPECT_EQ(to_string(key(m.calls[1], "client.budget.kind").value), "envoy_concurrency");
  EXPECT_TRUE(any_has(m.warnings, "client.max_connections 1024 left out")) << mesh_text(m);
  EXPECT_NO_THROW(run_engine(m.scenario));
}

// A file of a known system that cannot be read (a TCP-only route, a stream
// proxy) is skipped with its reason; the mesh is read (it was refused whole).
TEST(MeshHosts, AFileThatCannotBeReadIsSkippedNotTheMesh) {
  MeshImport m =
      import_mesh({{"orders.yaml", virtual_service("shop", "orders.shop.svc.cluster.local", 2)},
                   {"db.conf",
                    "stream {\n  upstream db { server 10.0.0.1:5432; server 10.0.0.2:5432; }\n"
                    "  server { listen 5432; proxy_pass db; }\n}\n"}},
                  {"calls.yaml", kFrontendOrders});
  EXPECT_EQ(number(m.calls[1], "client.retries"), 2);
  EXPECT_TRUE(any_has(m.skipped, "stream (TCP) proxy"));
}

// A VirtualService with retries and no timeout at all: an attempt waits as
// long as it takes. The call said the scenario's default 5 s, with no source,
// and lint called it a warning where the inner call outlasts any caller.
TEST(MeshHosts, APolicyWithoutATimeoutIsUnbounded) {
  const std::string vs =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders, "
      "namespace: shop}\nspec:\n  hosts: [orders.shop.svc.cluster.local]\n  http:\n"
      "  - route: [{destination: {host: orders.shop.svc.cluster.local}}]\n"
      "    retries: {attempts: 2, retryOn: 5xx}\n";
  MeshImport m = import_mesh({{"orders.yaml", vs}}, {"calls.yaml", kFrontendOrders});
  const ImportedKey& t = key(m.calls[1], "client.timeout_s");
  EXPECT_EQ(std::get<double>(t.value), key_or_throw("client.timeout_s").max);
  EXPECT_NE(t.from.find("no per-attempt timeout and no deadline"), std::string::npos) << t.from;
}

// One file with a VirtualService for orders and one for search: each call
// gets its own (search fell back to the model's defaults, and lint reported
// its retries: "retried 3 times").
TEST(MeshHosts, EachResourceOfAFileGivesItsOwnCallsPolicy) {
  const std::string calls =
      "demand: {rate_per_s: 10}\nservices:\n  frontend: {capacity_per_s: 1000}\n"
      "  orders: {capacity_per_s: 1000}\n  search: {capacity_per_s: 1000}\ncalls:\n"
      "  - {from: user, to: frontend, retries: 0, timeout_s: 10}\n"
      "  - {from: frontend, to: orders}\n  - {from: frontend, to: search}\n";
  const std::string routes = virtual_service("shop", "orders.shop.svc.cluster.local", 1) + "---\n" +
                             virtual_service("shop", "search.shop.svc.cluster.local", 0);
  MeshImport m = import_mesh({{"routes.yaml", routes}}, {"calls.yaml", calls});
  ASSERT_EQ(m.calls.size(), 3u);
  EXPECT_EQ(number(m.calls[1], "client.retries"), 1);
  EXPECT_EQ(number(m.calls[2], "client.retries"), 0);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"routes.yaml"});
  // Line numbers stay the file's: search's retries are on line 17.
  EXPECT_NE(key(m.calls[2], "client.retries").from.find("routes.yaml:17"), std::string::npos)
      << key(m.calls[2], "client.retries").from;
}

// A VirtualService bound to a gateway (no "mesh") is the policy of the call
// that enters through it, not of a sidecar's call to the same service: it
// gave frontend -> orders 10 retries.
TEST(MeshHosts, AGatewaysRulesAreTheEntrysOnly) {
  const std::string gateway =
      "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: o, namespace: "
      "shop}\nspec:\n  hosts: [orders]\n  gateways: [istio-system/public]\n  http:\n"
      "  - route: [{destination: {host: orders}}]\n    retries: {attempts: 10, perTryTimeout: "
      "2s}\n";
  MeshImport m = import_mesh({{"gateway.yaml", gateway}}, {"calls.yaml", kFrontendOrders});
  EXPECT_TRUE(m.calls[1].files.empty());
  const std::string entry =
      "demand: {rate_per_s: 10}\nservices:\n  orders: {capacity_per_s: 1000}\n"
      "calls:\n  - {from: user, to: orders}\n";
  MeshImport e = import_mesh({{"gateway.yaml", gateway}}, {"calls.yaml", entry});
  EXPECT_EQ(number(e.calls[0], "client.retries"), 10);
}

// A file split per resource keeps every document but workloads (a Service's
// Linkerd annotations were dropped), and a call that pins the file gets the
// part for its callee (the name matched every part, and was refused).
TEST(MeshHosts, APinnedFileOfSeveralResourcesGivesTheCalleesPart) {
  const std::string calls =
      "demand: {rate_per_s: 10}\nservices:\n  frontend: {capacity_per_s: 1000}\n"
      "  orders: {capacity_per_s: 1000}\n  search: {capacity_per_s: 1000}\n"
      "  payments: {capacity_per_s: 1000}\ncalls:\n"
      "  - {from: user, to: frontend, retries: 0, timeout_s: 10}\n"
      "  - {from: frontend, to: orders, configs: [routes.yaml]}\n"
      "  - {from: frontend, to: search}\n  - {from: frontend, to: payments}\n";
  const std::string routes =
      virtual_service("shop", "orders.shop.svc.cluster.local", 1) + "---\n" +
      virtual_service("shop", "search.shop.svc.cluster.local", 2) + "---\n" +
      "apiVersion: v1\nkind: Service\nmetadata:\n  name: payments\n  annotations:\n"
      "    retry.linkerd.io/http: 5xx\n    retry.linkerd.io/limit: \"4\"\n";
  MeshImport m = import_mesh({{"istio/routes.yaml", routes}}, {"calls.yaml", calls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(number(m.calls[1], "client.retries"), 1);
  EXPECT_EQ(number(m.calls[2], "client.retries"), 2);
  EXPECT_EQ(number(m.calls[3], "client.retries"), 4);
}

// lint --mesh reports a storm of more attempts than a run allows (exit 1,
// retries-multiply-across-hops); it was refused as bad input (exit 2).
TEST(MeshHosts, LintReportsAStormPastTheRunLimit) {
  testing::TempDir dir("mesh-storm");
  std::string calls =
      "demand: {rate_per_s: 50}\nservices:\n  a: {}\n  b: {}\n  c: {}\n  d: {}\n"
      "  e: {capacity_per_s: 1000}\ncalls:\n"
      "  - {from: user, to: a, retries: 0, timeout_s: 30}\n";
  for (const char* hop : {"a, to: b", "b, to: c", "c, to: d", "d, to: e"})
    calls += "  - {from: " + std::string(hop) + ", retries: 10, timeout_s: 1}\n";
  testing::write_file(dir.path() / "calls.yaml", calls);
  testing::Outcome linted = testing::run_cli(dir.path(), {"lint", "--mesh", "."});
  EXPECT_EQ(linted.status, 1) << linted.err;
  EXPECT_NE(linted.out.find("one user request makes 14,641 attempts at e"), std::string::npos)
      << linted.out;
  testing::Outcome run = testing::run_cli(dir.path(), {"import", "--mesh", "."});
  EXPECT_EQ(run.status, 0) << run.err;
}

}  // namespace
}  // namespace retrystorm::configs
