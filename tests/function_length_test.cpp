// No function in src/ is longer than 80 lines (issue 14, item 8): a long
// function is split by what it computes. Tables are the exception: a function
// whose comment just above it holds the marker `function-length: table` (a
// list of facts, one per line, that reads best in one place) is not measured.
//
// The scanner below is a small brace counter, not a C++ parser: it blanks
// comments, string and character literals and preprocessor lines, then takes
// every `{` met at namespace or class scope whose head (the text since the
// previous `;`, `{` or `}`) has a parenthesis and no initializer `=` as the
// start of a function body. Its length runs from the first line of the head
// (template line included) to the closing brace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace retrystorm {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLines = 80;
const std::string kTableMarker = std::string("function-length:") + " table";

struct FunctionSpan {
  std::string file;
  std::string name;
  int first_line = 0;  // 1-based
  int lines = 0;
  bool table = false;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A ' inside a number token (1'000'000) is a digit separator, not a quote.
bool digit_separator(const std::string& text, size_t i) {
  size_t start = i;
  while (start > 0 && (word_char(text[start - 1]) || text[start - 1] == '.')) --start;
  return start < i && std::isdigit(static_cast<unsigned char>(text[start]));
}

// Blanks a literal that starts at `i` with `quote` (escapes honoured); returns
// the index after it. Newlines are kept so that line numbers stay right.
size_t blank_quoted(std::string& code, size_t i, char quote) {
  size_t j = i + 1;
  while (j < code.size() && code[j] != quote) {
    if (code[j] == '\\') code[j++] = ' ';
    if (j < code.size() && code[j] != '\n') code[j] = ' ';
    ++j;
  }
  return j + 1;
}

// R"delim( ... )delim": everything up to the closing delimiter.
size_t blank_raw_string(std::string& code, size_t i) {
  size_t open = code.find('(', i);
  std::string close = ")" + code.substr(i + 2, open - i - 2) + "\"";
  size_t end = code.find(close, open);
  end = end == std::string::npos ? code.size() : end + close.size();
  for (size_t j = i + 1; j < end; ++j)
    if (code[j] != '\n') code[j] = ' ';
  return end;
}

size_t blank_until(std::string& code, size_t i, const std::string& end_text) {
  size_t end = code.find(end_text, i);
  end = end == std::string::npos ? code.size() : end + end_text.size();
  for (size_t j = i; j < end; ++j)
    if (code[j] != '\n') code[j] = ' ';
  return end;
}

// A preprocessor line (with its continuations) at `i`, the start of a line.
size_t blank_directive(std::string& code, size_t i) {
  size_t j = i;
  while (j < code.size() && code[j] != '\n') {
    if (code[j] == '\\' && j + 1 < code.size() && code[j + 1] == '\n') j += 1;
    if (code[j] != '\n') code[j] = ' ';
    ++j;
  }
  return j;
}

// The source with comments, literals and directives turned into spaces.
std::string code_only(std::string code) {
  bool line_start = true;
  size_t i = 0;
  while (i < code.size()) {
    char c = code[i];
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (line_start && c == '#') {
      i = blank_directive(code, i);
    } else if (code.compare(i, 2, "//") == 0) {
      i = blank_until(code, i, "\n") - 1;
    } else if (code.compare(i, 2, "/*") == 0) {
      i = blank_until(code, i, "*/");
    } else if (c == 'R' && code.compare(i + 1, 1, "\"") == 0 &&
               (i == 0 || !word_char(code[i - 1]))) {
      i = blank_raw_string(code, i);
    } else if (c == '"' || (c == '\'' && !digit_separator(code, i))) {
      i = blank_quoted(code, i, c);
    } else {
      line_start = false;
      ++i;
    }
  }
  return code;
}

enum class Scope { space, type, function, other };

bool starts_with_word(const std::string& head, const std::string& word) {
  size_t at = head.find(word);
  while (at != std::string::npos) {
    bool before = at == 0 || !word_char(head[at - 1]);
    bool after = at + word.size() >= head.size() || !word_char(head[at + word.size()]);
    if (before && after) return true;
    at = head.find(word, at + 1);
  }
  return false;
}

// An `=` that initializes, outside parentheses and template brackets (not a
// default argument, ==, <=, >=, !=, operator=).
bool has_initializer(const std::string& head) {
  if (starts_with_word(head, "operator")) return false;
  int depth = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    char c = head[i];
    if (c == '(' || c == '<' || c == '[') ++depth;
    if (c == ')' || c == '>' || c == ']') --depth;
    if (c != '=' || depth > 0) continue;
    char before = i > 0 ? head[i - 1] : ' ';
    char after = i + 1 < head.size() ? head[i + 1] : ' ';
    if (after == '=' || before == '=' || before == '<' || before == '>' || before == '!') continue;
    return true;
  }
  return false;
}

// What a `{` opened at namespace or class scope begins.
Scope scope_of(const std::string& head) {
  if (starts_with_word(head, "namespace") || starts_with_word(head, "extern")) return Scope::space;
  if (has_initializer(head)) return Scope::other;
  size_t paren = head.find('(');
  bool type_word = starts_with_word(head, "class") || starts_with_word(head, "struct") ||
                   starts_with_word(head, "union");
  if (starts_with_word(head, "enum")) return Scope::other;
  if (paren == std::string::npos) return type_word ? Scope::type : Scope::other;
  return Scope::function;
}

// The function's name: the word (with its qualifiers) before the head's
// first '(' ("Accumulator::finish", "operator==").
std::string name_of(const std::string& head) {
  size_t end = head.find('(');
  if (end == std::string::npos) return "";
  size_t op = head.rfind("operator", end);
  if (op != std::string::npos) return head.substr(op, end - op);
  while (end > 0 && std::isspace(static_cast<unsigned char>(head[end - 1]))) --end;
  size_t start = end;
  while (start > 0 &&
         (word_char(head[start - 1]) || head[start - 1] == ':' || head[start - 1] == '~'))
    --start;
  return head.substr(start, end - start);
}

int line_at(const std::vector<size_t>& line_starts, size_t offset) {
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  return static_cast<int>(it - line_starts.begin());
}

// The comment lines just above line `line` (1-based) hold the table marker.
bool marked_table(const std::vector<std::string>& lines, int line) {
  for (int i = line - 2; i >= 0; --i) {
    std::string trimmed = lines[static_cast<size_t>(i)];
    trimmed.erase(0, trimmed.find_first_not_of(" \t"));
    if (trimmed.rfind("//", 0) != 0) return false;
    if (trimmed.find(kTableMarker) != std::string::npos) return true;
  }
  return false;
}

struct OpenBrace {
  Scope scope;
  FunctionSpan span;
};

std::vector<FunctionSpan> functions_in(const fs::path& file, const std::string& relative) {
  std::string text = read(file);
  std::string code = code_only(text);
  std::vector<size_t> line_starts{0};
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i] == '\n') line_starts.push_back(i + 1);

  std::vector<FunctionSpan> found;
  std::vector<OpenBrace> open;
  size_t head_start = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    char c = code[i];
    if (c == ';') head_start = i + 1;
    if (c == '{') {
      bool outside_code =
          open.empty() || open.back().scope == Scope::space || open.back().scope == Scope::type;
      Scope scope = Scope::other;
      FunctionSpan span;
      if (outside_code) {
        std::string head = code.substr(head_start, i - head_start);
        scope = scope_of(head);
        size_t first = code.find_first_not_of(" \t\n\r", head_start);
        span = {relative, name_of(head), line_at(line_starts, std::min(first, i)), 0, false};
        span.table = marked_table(lines, span.first_line);
      }
      open.push_back({scope, span});
      head_start = i + 1;
    } else if (c == '}') {
      if (open.empty()) continue;  // unbalanced: the brace counter gives up quietly
      OpenBrace done = open.back();
      open.pop_back();
      if (done.scope == Scope::function) {
        done.span.lines = line_at(line_starts, i) - done.span.first_line + 1;
        found.push_back(done.span);
      }
      head_start = i + 1;
    }
  }
  return found;
}

std::vector<FunctionSpan> functions_in_src() {
  const fs::path root = RETRYSTORM_SOURCE_DIR;
  std::vector<FunctionSpan> all;
  for (const auto& entry : fs::recursive_directory_iterator(root / "src")) {
    std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    std::string relative = fs::relative(entry.path(), root).generic_string();
    for (auto& f : functions_in(entry.path(), relative)) all.push_back(std::move(f));
  }
  std::sort(all.begin(), all.end(), [](const FunctionSpan& a, const FunctionSpan& b) {
    return a.lines != b.lines ? a.lines > b.lines : a.file + a.name < b.file + b.name;
  });
  return all;
}

// The scanner itself: it finds functions, skips literals and tables.
TEST(FunctionLength, ScannerMeasuresFunctionsNotLiteralsOrTables) {
  const fs::path dir = fs::temp_directory_path() / "retrystorm_function_length";
  fs::create_directories(dir);
  const fs::path file = dir / "sample.cpp";
  std::ofstream(file) << "namespace x {\n"
                         "struct S {\n"
                         "  int f() const { return 1; }\n"
                         "};\n"
                         "constexpr int kTable[] = {1, 2,\n"
                         "  3};\n"
                         "// function-length: table\n"
                         "int table() {\n"
                         "  return 0;\n"
                         "}\n"
                         "int g(int a = 2) {\n"
                         "  const char* s = \"{{{\"; // }\n"
                         "  int n = 1'000;\n"
                         "  if (a) { return n; }\n"
                         "  return R\"x({)x\"[0];\n"
                         "}\n"
                         "}  // namespace x\n";
  auto found = functions_in(file, "sample.cpp");
  fs::remove_all(dir);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "f");
  EXPECT_EQ(found[0].lines, 1);
  EXPECT_EQ(found[1].name, "table");
  EXPECT_TRUE(found[1].table);
  EXPECT_EQ(found[2].name, "g");
  EXPECT_EQ(found[2].first_line, 11);
  EXPECT_EQ(found[2].lines, 6);
}

TEST(FunctionLength, NoFunctionInSrcOver80Lines) {
  auto all = functions_in_src();
  ASSERT_GT(all.size(), 500u) << "the scanner found too few functions to be trusted";
  std::string report;
  for (const auto& f : all)
    if (!f.table && f.lines > kMaxLines)
      report += "  " + std::to_string(f.lines) + " lines  " + f.file + ":" +
                std::to_string(f.first_line) + "  " + f.name + "\n";
  EXPECT_TRUE(report.empty()) << "functions over " << kMaxLines
                              << " lines (split them by what they compute):\n"
                              << report;
}

}  // namespace
}  // namespace retrystorm
