// The documents stay true to the program: the key table and the presets.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "formats/scenario_io.hpp"
#include "formats/text_report.hpp"

namespace retrystorm {
namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(RETRYSTORM_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Docs, ScenarioKeysPageIsTheKeyTable) {
  std::string page = read("docs/scenario-keys.md");
  EXPECT_NE(page.find(keys_markdown()), std::string::npos)
      << "docs/scenario-keys.md is stale: regenerate the table with `retrystorm keys`";
}

TEST(Docs, EveryPresetIsDocumented) {
  std::string page = read("docs/presets.md");
  for (const Preset& p : presets()) {
    EXPECT_NE(page.find("`" + p.name + "`"), std::string::npos) << p.name;
    EXPECT_NE(page.find(p.description), std::string::npos) << p.name;
  }
}

TEST(Docs, ReadmeOpensWithTheTwoCommands) {
  std::string head = read("README.md").substr(0, 400);
  EXPECT_NE(head.find("make run"), std::string::npos);
  EXPECT_NE(head.find("make test"), std::string::npos);
}

}  // namespace
}  // namespace retrystorm
