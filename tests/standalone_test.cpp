// The repository stands alone: a clone has every page the code and the
// README point to, and nothing points to files outside the repository (the
// model's description lives in the project's own docs directory).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace retrystorm {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = RETRYSTORM_SOURCE_DIR;

// Both needles are built from pieces so that this file does not match itself.
const std::vector<std::string> kOutsidePointers = {
    std::string("..") + "/" + "shared",
    std::string("shared") + "/" + "spec",
};
const std::string kDocsDir = std::string("docs") + "/";
// The specification pages the project was written from, which a clone does not
// have: a comment names the docs page that describes the same thing instead.
const std::vector<std::string> kSpecPages = {
    std::string("contract") + ".md",
    std::string("scheduler-incident") + ".md",
    std::string("session-log") + ".md",
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_text(const std::string& content) {
  return content.find('\0') == std::string::npos;
}

// Directories a walk skips: installed packages, build output, VCS data.
bool skipped_dir(const fs::path& p) {
  std::string name = p.filename().string();
  return name == "node_modules" || name == "dist" || name.rfind("build", 0) == 0 ||
         name.rfind('.', 0) == 0;
}

bool in_skipped_dir(const fs::path& relative) {
  for (const auto& part : relative.parent_path())
    if (skipped_dir(part)) return true;
  return false;
}

// Every file under `paths` (files or directories, relative to the root):
// what git tracks there or would track (new files not yet added); outside a
// git checkout, a walk of the tree.
std::vector<std::string> files_under(const std::vector<std::string>& paths) {
  std::string command =
      "git -C '" + kRoot.string() + "' ls-files --cached --others --exclude-standard --";
  for (const auto& p : paths) command += " '" + p + "'";
  command += " 2>/dev/null";
  std::vector<std::string> files;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (pipe) {
    char line[4096];
    while (std::fgets(line, sizeof line, pipe.get())) {
      std::string name(line);
      while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
      if (!name.empty() && !in_skipped_dir(name)) files.push_back(name);
    }
  }
  if (!files.empty()) return files;
  for (const auto& p : paths) {
    fs::path top = kRoot / p;
    if (fs::is_regular_file(top)) files.push_back(p);
    if (!fs::is_directory(top)) continue;
    for (auto it = fs::recursive_directory_iterator(top); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory() && skipped_dir(it->path())) {
        it.disable_recursion_pending();
      } else if (it->is_regular_file()) {
        files.push_back(fs::relative(it->path(), kRoot).string());
      }
    }
  }
  return files;
}

size_t line_of(const std::string& text, size_t at) {
  size_t line = 1;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return line;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// The pages a text names as the docs directory plus "NAME.md".
std::set<std::string> pages_named(const std::string& text) {
  std::set<std::string> pages;
  for (size_t at = text.find(kDocsDir); at != std::string::npos; at = text.find(kDocsDir, at + 1)) {
    if (at > 0 && name_char(text[at - 1])) continue;  // another directory's name
    size_t end = at + kDocsDir.size();
    while (end < text.size() && name_char(text[end])) ++end;
    if (end > at + kDocsDir.size() && text.compare(end, 3, ".md") == 0)
      pages.insert(text.substr(at, end + 3 - at));
  }
  return pages;
}

TEST(Standalone, NothingPointsOutsideTheRepository) {
  std::vector<std::string> found;
  for (const auto& f :
       files_under({"src", "tests", "web/src", "docs", "README.md", "web/README.md"})) {
    if (!fs::is_regular_file(kRoot / f)) continue;  // tracked, but moved in this tree
    std::string text = read(kRoot / f);
    if (!is_text(text)) continue;
    for (const auto& page : kSpecPages)
      for (size_t at = text.find(page); at != std::string::npos; at = text.find(page, at + 1))
        if (at == 0 || !name_char(text[at - 1]))
          found.push_back(f + ":" + std::to_string(line_of(text, at)) + ": " + page);
    for (const auto& needle : kOutsidePointers)
      for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        found.push_back(f + ":" + std::to_string(line_of(text, at)) + ": " + needle);
  }
  std::string list;
  for (const auto& f : found) list += "\n  " + f;
  EXPECT_TRUE(found.empty()) << "point to a page of the docs directory instead:" << list;
}

TEST(DocsLinks, EveryPageTheReadmeNamesExists) {
  std::string readme = read(kRoot / "README.md");
  std::set<std::string> pages = pages_named(readme);
  // The layout table's docs row names its pages without the directory.
  size_t row = readme.find("| `" + kDocsDir + "` |");
  ASSERT_NE(row, std::string::npos) << "README's layout table has no docs row";
  std::string cells = readme.substr(row, readme.find('\n', row) - row);
  for (size_t at = cells.find(".md`"); at != std::string::npos; at = cells.find(".md`", at + 1)) {
    size_t start = cells.rfind('`', at);
    pages.insert(kDocsDir + cells.substr(start + 1, at + 3 - start - 1));
  }
  EXPECT_GE(pages.size(), 10u);
  for (const auto& page : pages) EXPECT_TRUE(fs::is_regular_file(kRoot / page)) << page;
}

TEST(DocsLinks, EveryPathOfTheReadmeLayoutExists) {
  std::string readme = read(kRoot / "README.md");
  size_t from = readme.find("## Layout");
  ASSERT_NE(from, std::string::npos);
  size_t to = readme.find("\n## ", from + 1);
  std::istringstream table(readme.substr(from, to - from));
  int paths = 0;
  for (std::string line; std::getline(table, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::string first = line.substr(0, line.find(" |", 2));  // the first cell
    for (size_t at = first.find('`'); at != std::string::npos;) {
      size_t end = first.find('`', at + 1);
      std::string path = first.substr(at + 1, end - at - 1);
      if (auto glob = path.find('*'); glob != std::string::npos) path = path.substr(0, glob);
      EXPECT_TRUE(fs::exists(kRoot / path)) << "README layout names " << path;
      ++paths;
      at = first.find('`', end + 1);
    }
  }
  EXPECT_GE(paths, 10);
}

TEST(DocsLinks, EveryPageTheSourcesNameExists) {
  std::vector<std::string> missing;
  for (const auto& f : files_under({"src", "tests", "web/src", "fuzz", "bench", "CMakeLists.txt",
                                    "Makefile", "README.md", "web/README.md"})) {
    if (!fs::is_regular_file(kRoot / f)) continue;
    std::string text = read(kRoot / f);
    if (!is_text(text)) continue;
    for (const auto& page : pages_named(text))
      if (!fs::is_regular_file(kRoot / page)) missing.push_back(f + " names " + page);
  }
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "pages named but not in the docs directory:" << list;
}

TEST(DocsLinks, EveryPageTheDocsLinkExists) {
  for (const auto& entry : fs::directory_iterator(kRoot / "docs")) {
    if (entry.path().extension() != ".md") continue;
    std::string text = read(entry.path());
    std::string name = entry.path().filename().string();
    for (const auto& page : pages_named(text))
      EXPECT_TRUE(fs::is_regular_file(kRoot / page)) << name << " names " << page;
    // Relative Markdown links between pages: "](other.md" or "](other.md#part".
    for (size_t at = text.find("]("); at != std::string::npos; at = text.find("](", at + 1)) {
      size_t end = at + 2;
      while (end < text.size() && (name_char(text[end]) || text[end] == '.')) ++end;
      std::string target = text.substr(at + 2, end - at - 2);
      if (target.size() > 3 && target.compare(target.size() - 3, 3, ".md") == 0) {
        EXPECT_TRUE(fs::is_regular_file(kRoot / "docs" / target)) << name << " links " << target;
      }
    }
  }
}

}  // namespace
}  // namespace retrystorm
