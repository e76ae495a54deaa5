#include "io/logs/line_reader.hpp"

#include <cstring>

namespace retrystorm::logs {

namespace {

std::string quoted(std::string_view v) {
  constexpr size_t kShown = 40;
  std::string s(v.substr(0, kShown));
  return "'" + s + (v.size() > kShown ? "...'" : "'");
}

std::string_view unquote(std::string_view f) {
  while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
  while (!f.empty() && (f.back() == ' ' || f.back() == '\r' || f.back() == '\t'))
    f.remove_suffix(1);
  if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
  return f;
}

}  // namespace

LineReader::LineReader(std::string path)
    : path_(std::move(path)), file_(std::fopen(path_.c_str(), "rb"), &std::fclose) {
  if (!file_) throw InputError(path_ + ": cannot read the file");
  buf_.resize(kChunk + kMaxLine);
}

void LineReader::fail(const std::string& what) const {
  throw InputError(path_ + ":" + std::to_string(line_) + ": " + what);
}

bool LineReader::refill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ >= buf_.size()) {
    ++line_;
    fail("a line longer than " + std::to_string(kMaxLine) + " bytes; is this a log file?");
  }
  size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_.get());
  if (got == 0) {
    if (std::ferror(file_.get())) throw InputError(path_ + ": reading the file failed");
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (nl) {
      size_t len = static_cast<size_t>(nl - start);
      line = std::string_view(start, len);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      begin_ += len + 1;
      ++line_;
      return true;
    }
    if (!refill()) {
      if (begin_ == end_) return false;
      // The last line has no line end.
      line = std::string_view(buf_.data() + begin_, end_ - begin_);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      begin_ = end_;
      ++line_;
      return true;
    }
  }
}

void split(std::string_view line, char sep, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t at = 0;
  for (;;) {
    size_t next = line.find(sep, at);
    fields.push_back(unquote(line.substr(at, next == std::string_view::npos ? next : next - at)));
    if (next == std::string_view::npos) return;
    at = next + 1;
  }
}

CsvHeader::CsvHeader(std::string_view line, char sep) {
  std::vector<std::string_view> f;
  split(line, sep, f);
  for (auto name : f) {
    std::string n(name);
    if (names_.empty() && n.rfind("\xEF\xBB\xBF", 0) == 0) n.erase(0, 3);  // a byte-order mark
    names_.push_back(n);
  }
}

int CsvHeader::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

int CsvHeader::require(const LineReader& in, std::string_view name,
                       const std::string& needs) const {
  int i = find(name);
  if (i < 0)
    throw InputError(in.path() + ": no column '" + std::string(name) + "' in the header; " + needs);
  return i;
}

std::string_view Row::text(int column) const {
  if (column < 0 || static_cast<size_t>(column) >= fields_.size()) return {};
  return fields_[static_cast<size_t>(column)];
}

double Row::time(int column, std::string_view name) const {
  std::string_view v = text(column);
  if (v.empty()) in_.fail("column " + std::string(name) + ": empty; a time is needed here");
  auto t = parse_time(v, base_);
  if (!t)
    in_.fail("column " + std::string(name) + ": " + quoted(v) +
             " is not a time; write seconds (123.456), a clock (1d09:40:00) or a date-time "
             "(2024-03-10T19:40:00Z)");
  if (std::abs(*t) > kMaxTime)
    in_.fail("column " + std::string(name) + ": " + quoted(v) + " is more than " +
             std::to_string(static_cast<long long>(kMaxTime)) + " s from day 0");
  return *t;
}

double Row::amount(int column, std::string_view name, double fallback) const {
  std::string_view v = text(column);
  if (v.empty()) return fallback;
  auto n = parse_number(v);
  if (!n || *n < 0)
    in_.fail("column " + std::string(name) + ": " + quoted(v) +
             " is not a count; a number 0 or more is allowed");
  return *n;
}

int Row::flag(int column, std::string_view name) const {
  std::string_view v = text(column);
  if (v.empty()) return -1;
  if (v == "1" || v == "true" || v == "True") return 1;
  if (v == "0" || v == "false" || v == "False") return 0;
  in_.fail("column " + std::string(name) + ": " + quoted(v) + " is not 0 or 1");
}

void check_span(const LineReader& in, double start, double end, std::string_view start_name,
                std::string_view end_name) {
  if (end < start)
    in.fail(std::string(end_name) + " " + std::to_string(end) + " is before " +
            std::string(start_name) + " " + std::to_string(start) +
            "; a row must end after it starts");
  if (end - start > kMaxDuration)
    in.fail(std::string(end_name) + " is " + std::to_string(end - start) + " s after " +
            std::string(start_name) + "; at most " +
            std::to_string(static_cast<long long>(kMaxDuration)) + " s is allowed");
}

}  // namespace retrystorm::logs
