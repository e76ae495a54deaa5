// The page's API types (web/src/types.ts) against the server's answers: each
// interface lists every key the server sends (the page knows every field),
// and every key the interface requires is sent. The answers come from
// handle_api(), the function serve() answers every /api/ call with; the name
// lists (SeriesName, SessionSeriesName) are also checked against the tables
// the answers are written from (kSeriesFields, kBucketFields).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "engines/series.hpp"
#include "engines/sessions/bucket_fields.hpp"
#include "server/server.hpp"

namespace retrystorm {
namespace {

using nlohmann::json;

std::string types_ts() {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/web/src/types.ts");
  std::stringstream text;
  text << in.rdbuf();
  // Comments out: they hold words and brackets that are not types.
  std::string code = std::regex_replace(text.str(), std::regex(R"(/\*[\s\S]*?\*/)"), "");
  return std::regex_replace(code, std::regex(R"(//[^\n]*)"), "");
}

// The fields of one interface: name to required (no `?`).
struct Fields {
  std::map<std::string, bool> required;
};

// The top-level field names of `export interface NAME { ... }`: what follows
// `{`, `;` or a line break at the interface's own depth, up to `:`.
Fields interface_fields(const std::string& ts, const std::string& name) {
  std::smatch m;
  std::regex head("export interface " + name + R"(\s*\{)");
  if (!std::regex_search(ts, m, head)) ADD_FAILURE() << "no interface " << name;
  Fields out;
  size_t i = static_cast<size_t>(m.position(0) + m.length(0));
  std::regex field(R"(^\s*([A-Za-z_][A-Za-z0-9_]*)(\?)?\s*:)");
  std::string chunk;
  for (int depth = 0; i < ts.size() && depth >= 0; ++i) {
    char c = ts[i];
    depth += (c == '{' || c == '[' || c == '(' || c == '<') -
             (c == '}' || c == ']' || c == ')' || c == '>');
    if (depth == 0 && (c == ';' || c == '\n')) {
      if (std::smatch f; std::regex_search(chunk, f, field)) out.required[f[1]] = !f[2].matched;
      chunk.clear();
    } else {
      chunk += c;
    }
  }
  if (std::smatch f; std::regex_search(chunk, f, field)) out.required[f[1]] = !f[2].matched;
  return out;
}

// The string literals of `export type NAME = 'a' | 'b' ...;`.
std::set<std::string> union_names(const std::string& ts, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(ts, m, std::regex("export type " + name + R"(\s*=([^;]*);)")))
    ADD_FAILURE() << "no type " << name;
  std::set<std::string> out;
  std::string body = m[1];
  std::regex literal("'([^']*)'");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), literal);
       it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

// Every key the answer sends is declared; every required field is sent.
void expect_matches(const std::string& ts, const std::string& name, const json& answer) {
  ASSERT_TRUE(answer.is_object()) << name << ": " << answer.dump().substr(0, 200);
  Fields fields = interface_fields(ts, name);
  for (const auto& [key, value] : answer.items())
    EXPECT_TRUE(fields.required.count(key)) << name << " in web/src/types.ts lacks '" << key << "'";
  for (const auto& [key, required] : fields.required) {
    if (required) {
      EXPECT_TRUE(answer.contains(key)) << name << ": the server does not send '" << key << "'";
    }
  }
}

json api(const std::string& path, const json& body) {
  ApiAnswer a = handle_api(path, body.dump());
  EXPECT_EQ(a.status, 200) << path << ": " << a.body.dump().substr(0, 300);
  return a.body;
}

TEST(PageTypes, RunAnswerOfEachStepEngine) {
  std::string ts = types_ts();
  json fluid = api("/api/run", {{"preset", "order-status"}});
  expect_matches(ts, "RunResult", fluid);
  expect_matches(ts, "Metrics", fluid["metrics"]);
  std::set<std::string> names = union_names(ts, "SeriesName");
  std::set<std::string> sent;
  for (const auto& [key, value] : fluid["series"].items()) sent.insert(key);
  EXPECT_EQ(names, sent) << "SeriesName against the series /api/run sends";
  std::set<std::string> table;
  for (const SeriesField& f : kSeriesFields) table.emplace(f.name);
  EXPECT_EQ(names, table) << "SeriesName against kSeriesFields";

  json agent = api("/api/run", {{"preset", "primary-failover"},
                                {"set", {{"engine", "agent"}, {"runs", 3}, {"horizon_s", 60}}}});
  expect_matches(ts, "RunResult", agent);
  expect_matches(ts, "Metrics", agent["metrics"]);
  expect_matches(ts, "MonteCarlo", agent["montecarlo"]);
  for (const auto& [figure, interval] : agent["montecarlo"]["metrics"].items())
    expect_matches(ts, "MetricInterval", interval);
  json batch =
      api("/api/montecarlo", {{"preset", "primary-failover"},
                              {"set", {{"engine", "agent"}, {"runs", 3}, {"horizon_s", 60}}}});
  expect_matches(ts, "MonteCarloBatch", batch);
  expect_matches(ts, "MonteCarlo", batch["montecarlo"]);
}

TEST(PageTypes, SessionAnswer) {
  std::string ts = types_ts();
  json r = api("/api/run", {{"preset", "scheduler-recovery-burst"}, {"set", {{"runs", 2}}}});
  expect_matches(ts, "SessionResult", r);
  expect_matches(ts, "SessionMetrics", r["metrics"]);
  ASSERT_FALSE(r["hours"].empty());
  expect_matches(ts, "SessionHour", r["hours"][0]);
  expect_matches(ts, "MonteCarlo", r["montecarlo"]);
  std::set<std::string> names = union_names(ts, "SessionSeriesName");
  names.insert("t_s");  // the series type adds t_s to the names
  std::set<std::string> sent, table;
  for (const auto& [key, value] : r["series"].items()) sent.insert(key);
  for (const sessions::BucketField& f : sessions::kBucketFields) table.emplace(f.name);
  EXPECT_EQ(names, sent) << "SessionSeriesName against the series /api/run sends";
  EXPECT_EQ(names, table) << "SessionSeriesName against kBucketFields";
}

TEST(PageTypes, LadderTippingSweepPresetsSchema) {
  std::string ts = types_ts();
  json ladder = api("/api/ladder", {{"preset", "brief-outage"}});
  ASSERT_FALSE(ladder["rows"].empty());
  for (const json& row : ladder["rows"]) expect_matches(ts, "LadderRow", row);
  expect_matches(ts, "Metrics", ladder["rows"][0]["metrics"]);
  expect_matches(ts, "Tipping", api("/api/tipping", {{"preset", "brief-outage"}}));
  json sweep =
      api("/api/sweep",
          {{"preset", "brief-outage"},
           {"vary", {{{"path", "incident.duration_s"}, {"from", 1}, {"to", 2}, {"step", 1}}}}});
  ASSERT_EQ(sweep["rows"].size(), 2u);
  for (const json& row : sweep["rows"]) expect_matches(ts, "SweepRow", row);
  json presets = handle_api("/api/presets", "").body;
  ASSERT_FALSE(presets["presets"].empty());
  for (const json& p : presets["presets"]) expect_matches(ts, "Preset", p);
  json schema = handle_api("/api/schema", "").body;
  ASSERT_FALSE(schema["keys"].empty());
  for (const json& key : schema["keys"]) expect_matches(ts, "SchemaKey", key);
}

}  // namespace
}  // namespace retrystorm
