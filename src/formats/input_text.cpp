#include "formats/input_text.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "model/keys.hpp"
#include "text/printable.hpp"

namespace retrystorm {

using nlohmann::json;

namespace {

std::string size_text() {
  return std::to_string(kMaxInputBytes >> 20) + " MiB";
}

// "file:12: what", the form of compilers and of the configuration importers.
[[noreturn]] void fail_at(const std::string& source, int line, const std::string& what) {
  throw InputError(source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what);
}

[[noreturn]] void too_deep(const std::string& source, int line) {
  fail_at(source, line, "nested more than " + std::to_string(kMaxNesting) + " levels deep");
}

// Closes the descriptor whatever happens while reading.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Flow collections: brackets outside quoted strings.
void check_flow_nesting(const std::string& text, const std::string& source) {
  int depth = 0, line = 1;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') ++line;
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      // In YAML a quote inside a plain word (it's) opens nothing.
      if (i == 0 || std::strchr(" \t\n[{,:-", text[i - 1])) quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) too_deep(source, line);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

// Block collections: each line indented deeper than the one it belongs to
// opens a level; so does every "- " that starts a line's content.
void check_block_nesting(const std::string& text, const std::string& source) {
  std::vector<size_t> indents;
  int line = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line;
    size_t first = text.find_first_not_of(' ', pos);
    if (first < end && text[first] != '#' && text[first] != '\r') {
      size_t indent = first - pos;
      while (!indents.empty() && indents.back() >= indent) indents.pop_back();
      indents.push_back(indent);
      for (size_t i = first; i + 1 < end && text[i] == '-' && text[i + 1] == ' ';) {
        i = text.find_first_not_of(' ', i + 1);
        if (i >= end) break;  // "- " and nothing after it on the line
        indents.push_back(i - pos);
      }
      if (indents.size() > static_cast<size_t>(kMaxNesting)) too_deep(source, line);
    }
    pos = end + 1;
  }
}

// The length of the UTF-8 sequence at text[i], or 0 when it is not one.
size_t utf8_length(const std::string& text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size() || (n == 2 && c < 0xC2)) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  if (n == 3 && ((c == 0xE0 && byte(i + 1) < 0xA0) || (c == 0xED && byte(i + 1) >= 0xA0))) return 0;
  if (n == 4 &&
      ((c == 0xF0 && byte(i + 1) < 0x90) || c > 0xF4 || (c == 0xF4 && byte(i + 1) >= 0x90)))
    return 0;
  return n;
}

// yaml-cpp's Load reads the first document and drops the rest without a
// word; a second one ("---" after content) is refused instead. Found by line,
// not by YAML::LoadAll, which loops forever on some malformed input.
void check_one_document(const std::string& text, const std::string& source) {
  bool content = false;
  int line = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    ++line;
    std::string_view l(text.data() + pos, end - pos);
    bool separator = l.substr(0, 3) == "---" && (l.size() == 3 || std::strchr(" \t\r", l[3]));
    if (separator && content)
      fail_at(source, line, "a second YAML document ('---'); give one document per file");
    size_t first = l.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && l[first] != '#' && !separator) content = true;
    pos = end + 1;
  }
}

int line_at(const std::string& text, size_t offset) {
  int line = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse
// error at line 1, column 5:"; keep what follows the type tag.
std::string json_reason(const std::string& what) {
  auto syntax = what.find("syntax error");
  if (syntax != std::string::npos) return what.substr(syntax);
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

json yaml_scalar(const YAML::Node& node, const std::string& source) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: always a string
  if (text == "true" || text == "false") return text == "true";
  if (text == "null" || text == "~") return nullptr;
  double d = 0;
  switch (parse_decimal(text, d)) {
    case NumberText::ok:
      return d;
    case NumberText::out_of_range:
      fail_at(source, node.Mark().line + 1, text + " is outside the range of numbers");
    case NumberText::not_a_number:
      break;
  }
  return text;
}

// Aliases share nodes, so a small file can name a huge tree: the budget
// counts the values produced and their text, and stops the walk past
// kMaxValues or kMaxExpandedBytes, before the tree is built.
struct Expansion {
  size_t values = 0;
  size_t bytes = 0;
  void add(const YAML::Node& node, const std::string& source) {
    if (++values > kMaxValues)
      throw InputError(source + ": expands to more than " + std::to_string(kMaxValues) +
                       " values (aliases?); no scenario or configuration needs that many");
    if (node.IsScalar() && (bytes += node.Scalar().size()) > kMaxExpandedBytes)
      throw InputError(source + ": expands to more than " +
                       std::to_string(kMaxExpandedBytes >> 20) +
                       " MiB of text (aliases?); no scenario or configuration needs that much");
  }
};

// A second `<<` is the usual way to try merging two maps: say the legal one
// where merge keys are read (`merges`), else that this file does not read them.
[[noreturn]] void key_twice(const std::string& source, const YAML::Node& key, bool merges) {
  std::string what = "key '" + clip(key.Scalar()) + "' appears twice in the same mapping";
  if (is_merge_key(key))
    what += merges ? "; a mapping takes one merge key: merge several maps with `<<: [*A, *B]`"
                   : "; this kind of file does not read YAML merge keys (only Kubernetes "
                     "resources do), so `<<` is an ordinary key here";
  fail_at(source, key.Mark().line + 1, what);
}

// One walk of a YAML tree for both of its uses: kBuild makes the JSON value
// (parse_yaml_text); without it the walk only checks (check_yaml_document,
// for the configuration importers, which read the tree as YAML). Both refuse the
// same depth, expansion and duplicate keys.
template <bool kBuild>
json yaml_walk(const YAML::Node& node, const std::string& source, int depth, Expansion& budget,
               bool merges) {
  if (depth > kMaxNesting) too_deep(source, node.Mark().line + 1);
  budget.add(node, source);
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = kBuild ? json::object() : json();
      std::set<std::string> seen;
      for (const auto& kv : node) {
        budget.add(kv.first, source);
        const std::string& key = kv.first.Scalar();
        if (!seen.insert(key).second) key_twice(source, kv.first, merges);
        json value = yaml_walk<kBuild>(kv.second, source, depth + 1, budget, merges);
        if constexpr (kBuild) out[key] = std::move(value);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = kBuild ? json::array() : json();
      for (const auto& item : node) {
        json value = yaml_walk<kBuild>(item, source, depth + 1, budget, merges);
        if constexpr (kBuild) out.push_back(std::move(value));
      }
      return out;
    }
    case YAML::NodeType::Scalar:
      if constexpr (kBuild) return yaml_scalar(node, source);
      return nullptr;
    default:
      return nullptr;
  }
}

// Nesting and duplicate keys, checked in one pass over the text before the
// tree is built. (nlohmann's parser with a callback does the same, but its
// end_object walks the enclosing array each time: quadratic in a long list
// of objects.)
struct JsonShapeCheck : nlohmann::json_sax<json> {
  explicit JsonShapeCheck(const std::string& s) : source(s) {}
  const std::string& source;
  std::vector<std::set<std::string>> keys;  // per open object; arrays hold an empty one

  bool open() {
    if (keys.size() > static_cast<size_t>(kMaxNesting))
      too_deep(source, 0);  // as the callback parser counted
    keys.emplace_back();
    return true;
  }
  bool close() {
    keys.pop_back();
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second)
      throw InputError(source + ": key '" + k + "' appears twice in the same object");
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

}  // namespace

std::string read_input_file(const std::string& path, const std::string& option) {
  std::string who = option + ": '" + path + "'";
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (in.fd < 0) throw InputError(who + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw InputError(who + ": cannot read: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError(who + " is a directory; name a file");
  if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > kMaxInputBytes)
    throw InputError(who + " is larger than " + size_text());
  ::fcntl(in.fd, F_SETFL, ::fcntl(in.fd, F_GETFL) & ~O_NONBLOCK);  // opened without waiting
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(in.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(who + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxInputBytes) throw InputError(who + " is larger than " + size_text());
  }
  return text;
}

void check_utf8(const std::string& text, const std::string& source) {
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_length(text, i);
    if (n == 0) {
      fail_at(source, line_at(text, i),
              fmt::format("not UTF-8 text (byte 0x{:02X})", static_cast<unsigned char>(text[i])));
    }
    i += n;
  }
}

void check_nesting(const std::string& text, const std::string& source) {
  check_flow_nesting(text, source);
  check_block_nesting(text, source);
}

json parse_json_text(const std::string& text, const std::string& source, size_t max_bytes) {
  if (text.size() > max_bytes)
    throw InputError(source + ": larger than " + std::to_string(max_bytes >> 20) + " MiB");
  try {
    JsonShapeCheck check(source);
    if (!json::sax_parse(text, &check)) {
      json unreached = json::parse(text);  // throws the parser's own error, with its position
      throw InputError(source + ": not valid JSON");
    }
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail_at(source, line_at(text, e.byte > 0 ? e.byte - 1 : 0),
            "not valid JSON: " + json_reason(e.what()));
  } catch (const json::exception& e) {  // e.g. 1e400: "number overflow"
    throw InputError(source + ": not valid JSON: " + json_reason(e.what()));
  }
}

// yaml-cpp tags a plain scalar "?" and a quoted one "!".
bool is_merge_key(const YAML::Node& key) {
  return key.IsScalar() && key.Scalar() == "<<" &&
         (key.Tag() == "?" || key.Tag() == "tag:yaml.org,2002:merge");
}

void check_yaml_document(const YAML::Node& document, const std::string& source, bool merges) {
  Expansion budget;
  yaml_walk<false>(document, source, 0, budget, merges);
}

json parse_yaml_text(const std::string& text, const std::string& source) {
  if (text.size() > kMaxInputBytes) throw InputError(source + ": larger than " + size_text());
  check_utf8(text, source);
  check_nesting(text, source);
  check_one_document(text, source);
  Expansion budget;
  try {
    return yaml_walk<true>(YAML::Load(text), source, 0, budget, false);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) fail_at(source, 0, "not valid YAML: " + e.msg);
    fail_at(source, e.mark.line + 1,
            "not valid YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

}  // namespace retrystorm
