// import --mesh with several Istio DestinationRules or VirtualServices for one
// host (docs/graph.md, "From the mesh's configuration"): each call gets the
// rule and the route Istio gives a sidecar of the caller's namespace, one
// namespace's rules are merged as istiod merges them, and what the manifests
// cannot tell is said. The last rule read won, with no warning, and the first
// route read.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "systems/mesh/mesh.hpp"

namespace retrystorm::configs {
namespace {

const std::string kCalls =
    "demand: {rate_per_s: 10}\nservices:\n  frontend: {capacity_per_s: 1000}\n"
    "  gateway: {capacity_per_s: 1000}\n  orders: {capacity_per_s: 1000}\ncalls:\n"
    "  - {from: user, to: frontend, retries: 0, timeout_s: 10}\n"
    "  - {from: frontend, to: gateway}\n"
    "  - {from: frontend, to: orders}\n"  // calls[2]
    "  - {from: gateway, to: orders}\n";  // calls[3]

// frontend in `frontend_ns` ("" gives it none), gateway and orders in shop.
ConfigFile deployments(const std::string& frontend_ns) {
  std::string text;
  const std::vector<std::pair<std::string, std::string>> workloads = {
      {"frontend", frontend_ns}, {"gateway", "shop"}, {"orders", "shop"}};
  for (const auto& [name, ns] : workloads)
    text += "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name +
            (ns.empty() ? std::string() : ", namespace: " + ns) + "}\nspec: {replicas: 2}\n";
  return {"k8s/deployments.yaml", text};
}

ConfigFile virtual_service() {
  return {"istio/orders-vs.yaml",
          "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: orders, "
          "namespace: shop}\nspec:\n  hosts: [orders.shop.svc.cluster.local]\n  http:\n"
          "  - route: [{destination: {host: orders.shop.svc.cluster.local}}]\n"
          "    retries: {attempts: 2, perTryTimeout: 1s}\n"};
}

// A DestinationRule (its namespace on line 5) with a retry budget of `percent`;
// `meta` and `spec` add lines to its metadata and spec.
ConfigFile rule(const std::string& file, const std::string& ns, const std::string& name,
                int percent, const std::string& spec = "", const std::string& meta = "") {
  return {file,
          "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: " + name +
              "\n  namespace: " + ns + "\n" + meta +
              "spec:\n  host: orders.shop.svc.cluster.local\n" + spec +
              "  trafficPolicy:\n    retryBudget: {percent: " + std::to_string(percent) + "}\n"};
}

double ratio(const MeshImport& m, size_t call) {
  for (const ImportedKey& k : m.calls[call].keys)
    if (k.path == "client.budget.ratio") return std::get<double>(k.value);
  return -1;  // no budget ratio
}

std::string said(const MeshImport& m, const std::string& needle) {
  for (const std::string& w : m.warnings)
    if (w.find(needle) != std::string::npos) return w;
  return "";
}

// pilot/pkg/model/push_context.go, PushContext.destinationRule: a sidecar takes
// the rule of its own namespace first, then the service's namespace's, then
// the root namespace's (istio-system).
TEST(MeshDestinationRule, EachCallerGetsTheRuleOfItsOwnNamespace) {
  MeshImport m = import_mesh(
      {deployments("web"), virtual_service(), rule("istio/dr-shop.yaml", "shop", "orders", 20),
       rule("istio/dr-web.yaml", "web", "orders", 50)},
      {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(ratio(m, 2), 0.5);  // frontend, in web: web's own rule
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/orders-vs.yaml, istio/dr-web.yaml"});
  EXPECT_EQ(ratio(m, 3), 0.2);  // gateway, in shop
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/orders-vs.yaml, istio/dr-shop.yaml"});
  EXPECT_EQ(said(m, "DestinationRule"), "");  // the manifests tell: nothing to say
}

// Where the caller's namespace is not given, the rule a caller of another
// namespace gets (the service's namespace's) is read, and both are named.
TEST(MeshDestinationRule, AnUnknownCallerNamespaceIsSaidNamingBothRules) {
  MeshImport m = import_mesh(
      {deployments(""), virtual_service(), rule("istio/dr-shop.yaml", "shop", "orders", 20),
       rule("istio/dr-web.yaml", "web", "orders", 50)},
      {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(m, 2), 0.2);
  EXPECT_EQ(ratio(m, 3), 0.2);
  const std::string w = said(m, "calls[2] (frontend -> orders): DestinationRules");
  EXPECT_NE(w.find("namespace shop (istio/dr-shop.yaml:5)"), std::string::npos) << w;
  EXPECT_NE(w.find("namespace web (istio/dr-web.yaml:5)"), std::string::npos) << w;
  EXPECT_NE(w.find("frontend's namespace is unknown"), std::string::npos) << w;
  EXPECT_EQ(said(m, "calls[3] (gateway"), "");  // gateway's is known
}

// pilot/pkg/model/destination_rule.go, mergeDestinationRule: one namespace's
// rules for one host are one, ordered by creation time then name
// (sortConfigBySelectorAndCreationTime); the first trafficPolicy is kept
// whole, the others only add subsets.
TEST(MeshDestinationRule, OneNamespacesRulesMergeAndTheOldestPolicyWins) {
  const ConfigFile b = rule("istio/b.yaml", "shop", "orders-b", 50);
  MeshImport by_name = import_mesh(
      {deployments("web"), virtual_service(), rule("istio/a.yaml", "shop", "orders-a", 20), b},
      {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(by_name, 2), 0.2);
  EXPECT_EQ(ratio(by_name, 3), 0.2);
  const std::string w = said(by_name, "each set a trafficPolicy");
  EXPECT_NE(w.find("istio/a.yaml:5 and istio/b.yaml:5"), std::string::npos) << w;
  EXPECT_NE(w.find("by name"), std::string::npos) << w;

  // The older by creationTimestamp wins, whatever the names.
  const std::string stamp = "  creationTimestamp: \"2024-0";
  MeshImport by_age =
      import_mesh({deployments("web"), virtual_service(),
                   rule("istio/a.yaml", "shop", "orders-a", 20, "", stamp + "2-01T00:00:00Z\"\n"),
                   rule("istio/b.yaml", "shop", "orders-b", 50, "", stamp + "1-01T00:00:00Z\"\n")},
                  {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(by_age, 3), 0.5);

  // A rule of subsets only merges in quietly: used, not read twice.
  const ConfigFile subsets{"istio/subsets.yaml",
                           "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n"
                           "metadata: {name: orders-v, namespace: shop}\nspec:\n"
                           "  host: orders.shop.svc.cluster.local\n"
                           "  subsets: [{name: v1, labels: {version: v1}}]\n"};
  MeshImport quiet =
      import_mesh({deployments("shop"), virtual_service(), subsets, b}, {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(quiet, 3), 0.5);
  EXPECT_EQ(said(quiet, "subsets.yaml"), "");
}

// exportTo: "." keeps a rule to its own namespace (setDestinationRules,
// isPrivateOnly), so web's sidecar takes istio-system's; a rule of another
// namespace only is given to no caller here, and said.
TEST(MeshDestinationRule, ExportToAndTheRootNamespace) {
  MeshImport m =
      import_mesh({deployments("web"), virtual_service(),
                   rule("istio/dr-shop.yaml", "shop", "orders", 20, "  exportTo: [\".\"]\n"),
                   rule("istio/dr-root.yaml", "istio-system", "orders", 30)},
                  {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(m, 2), 0.3);  // frontend, in web
  EXPECT_EQ(ratio(m, 3), 0.2);  // gateway, in shop

  const std::string calls = kCalls.substr(0, kCalls.find("  - {from: frontend, to: orders}"));
  MeshImport none = import_mesh(
      {deployments("web"), virtual_service(), rule("istio/dr-web.yaml", "web", "orders", 50)},
      {"calls.yaml", calls + "  - {from: gateway, to: orders}\n"});
  ASSERT_EQ(none.calls.size(), 3u);
  EXPECT_EQ(ratio(none, 2), -1);
  const std::string w = said(none, "istio/dr-web.yaml: Istio gives it to no caller here");
  EXPECT_NE(w.find("gateway (namespace shop, k8s/deployments.yaml:"), std::string::npos) << w;
}

// A short host is a service of the rule's own namespace
// (ResolveShortnameToFQDN, pilot/pkg/model/config.go): web's "orders" is not
// shop's; a workloadSelector's rule is for some pods only, and not read.
TEST(MeshDestinationRule, AShortHostAndAWorkloadSelector) {
  ConfigFile short_host = rule("istio/dr-web.yaml", "web", "orders", 50);
  short_host.text.replace(short_host.text.find("orders.shop.svc.cluster.local"),
                          std::string("orders.shop.svc.cluster.local").size(), "orders");
  ConfigFile selected = rule("istio/dr-canary.yaml", "shop", "orders-canary", 70,
                             "  workloadSelector: {matchLabels: {app: gateway}}\n");
  MeshImport m = import_mesh({deployments("web"), virtual_service(), short_host, selected,
                              rule("istio/dr-shop.yaml", "shop", "orders", 20)},
                             {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(m, 2), 0.2);  // web's rule is for orders.web
  EXPECT_EQ(ratio(m, 3), 0.2);
  EXPECT_NE(said(m,
                 "istio/dr-web.yaml: Istio gives it to no caller here: its host orders is a "
                 "service of namespace web"),
            "");
  EXPECT_NE(said(m, "istio/dr-canary.yaml: Istio gives it to no caller here: its workloadSelector"),
            "");
}

// A rule of host `host` in namespace `ns` ("" for none) with `body` as its
// spec's other lines.
ConfigFile host_rule(const std::string& file, const std::string& ns, const std::string& name,
                     const std::string& host, const std::string& body) {
  return {file, "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: " +
                    name + "\n" + (ns.empty() ? std::string() : "  namespace: " + ns + "\n") +
                    "spec:\n  host: " + host + "\n" + body};
}

std::string budget(int percent) {
  return "  trafficPolicy:\n    retryBudget: {percent: " + std::to_string(percent) + "}\n";
}

// pilot/pkg/model/push_context.go, PushContext.destinationRule, and
// config.go, MostSpecificHostMatch: each namespace's index is searched for the
// callee's own host, else the longest wildcard matching it, and the first
// namespace with a match ends the lookup.
TEST(MeshDestinationRule, AWildcardRuleOfTheCallersNamespaceEndsTheLookup) {
  const ConfigFile wild =
      host_rule("istio/web-wild.yaml", "web", "web-wild", "\"*.svc.cluster.local\"",
                "  exportTo: [\".\"]\n  trafficPolicy: {tls: {mode: ISTIO_MUTUAL}}\n");
  MeshImport m = import_mesh({deployments("web"), virtual_service(),
                              rule("istio/dr-shop.yaml", "shop", "orders", 20), wild},
                             {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(m, 2), -1);  // frontend, in web: web's wildcard, no budget
  EXPECT_EQ(m.calls[2].files,
            std::vector<std::string>{"istio/orders-vs.yaml, istio/web-wild.yaml"});
  EXPECT_EQ(ratio(m, 3), 0.2);              // gateway, in shop: exportTo "." keeps web's to web
  EXPECT_EQ(said(m, "web-wild.yaml"), "");  // used: not "the callee of no call"

  // In one namespace the callee's own host beats a wildcard, and the longer
  // wildcard the shorter.
  MeshImport specific = import_mesh({deployments("web"), virtual_service(), wild,
                                     host_rule("istio/web-shop.yaml", "web", "shop-wild",
                                               "\"*.shop.svc.cluster.local\"", budget(40))},
                                    {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(specific, 2), 0.4);
  MeshImport exact = import_mesh(
      {deployments("web"), virtual_service(), wild, rule("istio/dr-web.yaml", "web", "orders", 50)},
      {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(exact, 2), 0.5);
}

// push_context.go, setDestinationRules, indexes a rule by its namespace; one
// without metadata.namespace is where kubectl applies it: `default`, or the
// one namespace all of the folder's resources give.
TEST(MeshDestinationRule, ARuleWithoutANamespaceIsWhereKubectlAppliesIt) {
  const std::string fqdn = "orders.shop.svc.cluster.local";
  MeshImport one = import_mesh({deployments("shop"), virtual_service(),
                                host_rule("istio/dr.yaml", "", "orders", fqdn, budget(50))},
                               {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(one, 2), 0.5);  // the folder is shop's: read as shop's
  // Said: in another namespace frontend would not take it.
  EXPECT_NE(said(one, "read as in namespace shop (the one namespace the folder's resources give)"),
            "");

  // web and shop: read as in `default`, where frontend (web) does not look.
  MeshImport two = import_mesh(
      {deployments("web"), virtual_service(), rule("istio/dr-shop.yaml", "shop", "orders", 20),
       host_rule("istio/dr.yaml", "", "orders", fqdn, budget(50))},
      {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(two, 2), 0.2);
  const std::string w = said(two, "calls[2] (frontend -> orders): istio/dr.yaml:2 gives no");
  EXPECT_NE(w.find("read as in namespace default"), std::string::npos) << w;
  EXPECT_NE(w.find("in namespace web, frontend would take istio/dr.yaml"), std::string::npos) << w;
}

// Kubernetes keeps one object per kind, namespace and name: the later apply
// replaces the earlier, so istiod (setDestinationRules) never sees both.
TEST(MeshDestinationRule, TheSameNameTwiceIsOneRuleTheLaterRead) {
  MeshImport m = import_mesh(
      {deployments("shop"), virtual_service(), rule("istio/a.yaml", "shop", "orders", 20),
       rule("istio/b.yaml", "shop", "orders", 50)},
      {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(m, 3), 0.5);
  const std::string w = said(m, "istio/a.yaml:5 and istio/b.yaml:5: both are DestinationRule");
  EXPECT_NE(w.find("istio/b.yaml (later in the folder's file order) is read"), std::string::npos)
      << w;
  EXPECT_EQ(said(m, "each set a trafficPolicy"), "");  // not merged
}

// config.go, ResolveShortnameToFQDN expands only a host without dots, and
// MostSpecificHostMatch wants the service's full name: "orders.shop" and
// "orders.shop.svc" name no service.
TEST(MeshDestinationRule, AHostWithDotsThatIsNoFullNameAppliesToNothing) {
  for (const std::string host : {"orders.shop", "orders.shop.svc"}) {
    MeshImport m = import_mesh({deployments("shop"), virtual_service(),
                                host_rule("istio/dr.yaml", "shop", "orders", host, budget(50))},
                               {"calls.yaml", kCalls});
    EXPECT_EQ(ratio(m, 3), -1) << host;
    EXPECT_NE(said(m, "istio/dr.yaml: Istio gives it to no caller here: its host " + host +
                          " has dots but is no full name"),
              "")
        << host;
  }
}

// PushContext.destinationRule looks up the service's own hostname: with the
// callee's namespace unknown, web's "orders" (orders.web) and shop's
// orders.shop.svc.cluster.local cannot both be its; a VirtualService tells.
TEST(MeshDestinationRule, AnUnknownCalleeNamespaceIsSaidUnlessTheRouteTellsIt) {
  const ConfigFile no_orders{
      "k8s/deployments.yaml",
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: frontend, namespace: web}\n---\n"
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gateway, namespace: shop}\n"};
  const ConfigFile web = host_rule("istio/dr-web.yaml", "web", "orders", "orders", budget(50));
  const ConfigFile shop = rule("istio/dr-shop.yaml", "shop", "orders", 20);
  MeshImport unknown = import_mesh({no_orders, web, shop}, {"calls.yaml", kCalls});
  const std::string w = said(unknown, "calls[2] (frontend -> orders): the DestinationRules' hosts");
  EXPECT_NE(w.find("orders in web (istio/dr-web.yaml:5)"), std::string::npos) << w;
  EXPECT_NE(w.find("istio/dr-shop.yaml:5"), std::string::npos) << w;

  MeshImport routed =
      import_mesh({no_orders, virtual_service(), web, shop}, {"calls.yaml", kCalls});
  EXPECT_EQ(ratio(routed, 2), 0.2);  // orders is shop's: web's rule is orders.web's
  EXPECT_EQ(said(routed, "the DestinationRules' hosts"), "");
}

// A VirtualService for orders in `ns` retrying `attempts` times; `meta` and
// `spec` add lines to its metadata and spec.
ConfigFile route(const std::string& file, const std::string& ns, const std::string& name,
                 int attempts, const std::string& spec = "", const std::string& meta = "") {
  return {file, "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: " +
                    name + "\n  namespace: " + ns + "\n" + meta +
                    "spec:\n  hosts: [orders.shop.svc.cluster.local]\n" + spec +
                    "  http:\n  - route: [{destination: {host: orders.shop.svc.cluster.local}}]\n"
                    "    retries: {attempts: " +
                    std::to_string(attempts) + ", perTryTimeout: 1s}\n"};
}

std::string stamp(const std::string& at) {
  return "  creationTimestamp: \"" + at + "\"\n";
}

const std::string kOlder = "2024-01-01T00:00:00Z", kNewer = "2024-06-01T00:00:00Z";

// pilot/pkg/model/virtualservice.go, SelectVirtualServices: a sidecar reads
// the VirtualServices private to its namespace, then those exported to it,
// then the public ones; pilot/pkg/networking/core/httproute.go drops a later
// one's virtual host for the same domain ("duplicate domain"): the first wins.
TEST(MeshVirtualService, APrivateRouteOfTheCallersNamespaceComesFirst) {
  MeshImport m = import_mesh(
      {deployments("web"), route("istio/vs-shop.yaml", "shop", "orders", 2, "", stamp(kOlder)),
       route("istio/vs-web.yaml", "web", "orders", 5, "  exportTo: [\".\"]\n", stamp(kNewer))},
      {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-web.yaml"});   // frontend, web
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/vs-shop.yaml"});  // gateway, shop
  EXPECT_EQ(said(m, "both give this call's policy"), "");  // no longer "the first read"
  EXPECT_EQ(said(m, "VirtualServices for"), "");           // the manifests tell
  // web's private route alone: gateway, in shop, takes no route.
  MeshImport alone = import_mesh(
      {deployments("web"), route("istio/vs-web.yaml", "web", "orders", 5, "  exportTo: [\".\"]\n")},
      {"calls.yaml", kCalls});
  ASSERT_EQ(alone.calls.size(), 4u);
  EXPECT_EQ(alone.calls[2].files, std::vector<std::string>{"istio/vs-web.yaml"});
  EXPECT_TRUE(alone.calls[3].files.empty());
  EXPECT_NE(alone.calls[3].note.find("Istio gives gateway none of the files"), std::string::npos)
      << alone.calls[3].note;
}

// push_context.go, initVirtualServices: a VirtualService without exportTo is
// public (the mesh's default "*"), and public ones are ordered by creation
// time alone (configCompareByCreationTime, pilot/pkg/model/config.go): unlike
// DestinationRules, a public one of the caller's own namespace has no
// precedence.
TEST(MeshVirtualService, PublicRoutesTheOldestForEveryCaller) {
  MeshImport m = import_mesh(
      {deployments("web"), route("istio/vs-web.yaml", "web", "orders", 5, "", stamp(kNewer)),
       route("istio/vs-shop.yaml", "shop", "orders", 2, "", stamp(kOlder))},
      {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  EXPECT_NE(said(m, "istio/vs-web.yaml: Istio gives it to no caller here"), "");
  EXPECT_EQ(said(m, "VirtualServices for"), "");
}

// initVirtualServices files exportTo [web] of another namespace as exported
// to web, read before the public ones; "~" is seen by no one.
TEST(MeshVirtualService, ExportedBeforePublicAndTildeNowhere) {
  MeshImport m = import_mesh(
      {deployments("web"), route("istio/vs-shop.yaml", "shop", "orders", 2, "", stamp(kOlder)),
       route("istio/vs-ops.yaml", "ops", "orders", 5, "  exportTo: [web]\n", stamp(kNewer)),
       route("istio/vs-off.yaml", "web", "orders", 7, "  exportTo: [\"~\"]\n", stamp(kOlder))},
      {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-ops.yaml"});
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  EXPECT_NE(said(m, "istio/vs-off.yaml: Istio gives it to no caller here"), "");
}

// configCompareByCreationTime orders those created in the same second by
// name; with no creationTimestamp the manifests cannot give the apply order,
// so the choice by name is said.
TEST(MeshVirtualService, NoCreationTimeIsByNameAndSaid) {
  MeshImport m = import_mesh({deployments("web"), route("istio/vs-b.yaml", "shop", "orders-b", 5),
                              route("istio/vs-a.yaml", "web", "orders-a", 2)},
                             {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-a.yaml"});
  const std::string w = said(m, "calls[2] (frontend -> orders): VirtualServices for orders");
  EXPECT_NE(w.find("by name"), std::string::npos) << w;
  EXPECT_NE(w.find("istio/vs-a.yaml:5 read"), std::string::npos) << w;
}

// Where the caller's namespace is unknown and decides, the first file is read
// as before, and the files and their namespaces are named.
TEST(MeshVirtualService, AnUnknownCallerNamespaceIsSaidNamingBoth) {
  MeshImport m = import_mesh(
      {deployments(""), route("istio/vs-shop.yaml", "shop", "orders", 2, "", stamp(kNewer)),
       route("istio/vs-web.yaml", "web", "orders", 5, "  exportTo: [\".\"]\n", stamp(kOlder))},
      {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  const std::string w = said(m, "calls[2] (frontend -> orders): VirtualServices for orders");
  EXPECT_NE(w.find("istio/vs-shop.yaml:5"), std::string::npos) << w;
  EXPECT_NE(w.find("namespace web (istio/vs-web.yaml:5)"), std::string::npos) << w;
  EXPECT_NE(w.find("frontend's namespace is unknown"), std::string::npos) << w;
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/vs-shop.yaml"});  // shop: tells
}

// ResolveVirtualServiceShortnames (pilot/pkg/model/virtualservice.go): a
// short host is the service of the VirtualService's own namespace, so web's
// route for `orders` is web's orders, not shop's, and no caller of shop's
// orders takes it, however old.
TEST(MeshVirtualService, ARouteForAnotherNamespacesServiceIsNotTheCallees) {
  ConfigFile web = route("istio/vs-web.yaml", "web", "orders", 5, "", stamp(kOlder));
  web.text.replace(web.text.find("hosts: [orders.shop.svc.cluster.local]"), 38, "hosts: [orders]");
  MeshImport m = import_mesh({deployments("web"), web,
                              route("istio/vs-shop.yaml", "shop", "orders", 2, "", stamp(kNewer))},
                             {"calls.yaml", kCalls});
  ASSERT_EQ(m.calls.size(), 4u);
  EXPECT_EQ(m.calls[2].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  EXPECT_EQ(m.calls[3].files, std::vector<std::string>{"istio/vs-shop.yaml"});
  EXPECT_NE(said(m,
                 "istio/vs-web.yaml: Istio gives it to no caller here: its host orders is a "
                 "service of namespace web"),
            "");
}

}  // namespace
}  // namespace retrystorm::configs
