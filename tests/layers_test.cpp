// The layers run one way (README "Layout"): each directory
// of src/ includes only its own headers and those of lower layers, and
// src/core does no I/O. The model knows no engine (each engine brings its
// own checks through the engine table, engines/engine.cpp), the engines know
// no analysis, and nothing below the application layer knows a command.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace retrystorm {
namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(RETRYSTORM_SOURCE_DIR) / "src";

// The rank of each room: a file may include a room of a lower rank, or its
// own; rooms of the same rank stay apart.
const std::map<std::string, int> kRank = {
    {"text", 0},        {"model", 1},    {"random", 1},  {"histogram", 1}, {"parallel", 1},
    {"session_log", 1}, {"policies", 2}, {"engines", 3}, {"analysis", 4},  {"formats", 5},
    {"logs", 5},        {"systems", 6},  {"app", 7},     {"lab", 7},       {"server", 8},
    {"python", 8},      {"cli", 9},
};

// Includes against the layers that are known and being removed ("file
// includes room/"); each must still be there, so the list only shrinks.
const std::set<std::string> kKnownCrossings = {};

// The room of a file: src/core/<room>/... or src/<room>/...
std::string room_of(const fs::path& relative) {
  auto it = relative.begin();
  std::string first = it->string();
  return first == "core" && ++it != relative.end() ? it->string() : first;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Layers, EachRoomIncludesOnlyItselfAndLowerRooms) {
  const std::regex include_line(R"re(#include "([a-z_]+)/)re");
  std::string wrong;
  std::set<std::string> known;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kSrc)) {
    std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    fs::path relative = fs::relative(e.path(), kSrc);
    std::string room = room_of(relative);
    ASSERT_TRUE(kRank.count(room)) << relative << ": a room with no rank; add it to kRank";
    ++files;
    std::string text = read(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), include_line), end; m != end; ++m) {
      std::string target = (*m)[1].str();
      if (target == room || !kRank.count(target)) continue;
      if (kRank.at(target) < kRank.at(room)) continue;
      std::string crossing = "src/" + relative.generic_string() + " includes " + target + "/";
      if (kKnownCrossings.count(crossing))
        known.insert(crossing);
      else
        wrong += "  " + crossing + "\n";
    }
  }
  EXPECT_GT(files, 100);
  EXPECT_TRUE(wrong.empty()) << "includes against the layers:\n" << wrong;
  for (const auto& c : kKnownCrossings)
    EXPECT_TRUE(known.count(c)) << c << ": gone; take it off kKnownCrossings";
}

TEST(Layers, CoreDoesNoIo) {
  const char* io[] = {"<fstream>", "<filesystem>", "<iostream>",
                      "fopen(",    "std::cout",    "std::cerr"};
  std::string wrong;
  for (const auto& e : fs::recursive_directory_iterator(kSrc / "core")) {
    if (!e.is_regular_file()) continue;
    std::string text = read(e.path());
    for (const char* needle : io)
      if (text.find(needle) != std::string::npos)
        wrong += "  " + fs::relative(e.path(), kSrc).generic_string() + ": " + needle + "\n";
  }
  EXPECT_TRUE(wrong.empty()) << "I/O in src/core (it belongs in src/formats or src/logs):\n"
                             << wrong;
}

// src/io was split into rooms (README "Layout"): formats, logs and one folder
// per real system under systems. Nothing may land there again.
TEST(Layers, NoCatchAllIoRoom) {
  EXPECT_FALSE(fs::exists(kSrc / "io")) << "src/io is back; put its files in formats, logs or "
                                           "systems/<system>";
}

// Everything one real system knows sits in its own folder: the importer, the
// exporter, and nothing about it elsewhere under systems/ but the table.
TEST(Layers, EachRealSystemHasItsRoom) {
  for (const char* system :
       {"envoy", "grpc", "istio", "linkerd", "aws", "haproxy", "nginx", "prometheus", "retrystorm"})
    EXPECT_TRUE(fs::is_directory(kSrc / "systems" / system)) << system;
}

}  // namespace
}  // namespace retrystorm
