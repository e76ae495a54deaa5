#include "logs/line_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace retrystorm::logs {

namespace {

std::string quoted(std::string_view v) {
  constexpr size_t kShown = 40;
  return "'" + printable(v.substr(0, kShown)) + (v.size() > kShown ? "...'" : "'");
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
  if (!file_) throw InputError(printable(path_) + ": cannot read the file");
  struct stat st {};
  if (::fstat(::fileno(file_.get()), &st) == 0 && S_ISDIR(st.st_mode))
    throw InputError(printable(path_) + ": is a directory; give log files");
  buf_.resize(kFirstChunk);
}

LineReader::LineReader(std::string name, std::FILE* file)
    : path_(std::move(name)), file_(file, &std::fclose) {
  if (!file_) throw InputError(printable(path_) + ": cannot read the file");
  buf_.resize(kFirstChunk);
}

void LineReader::fail(const std::string& what) const {
  throw InputError(printable(path_) + ":" + std::to_string(line_) + ": " + what);
}

bool LineReader::refill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // No line end in what is here: a line already too long ("\r" aside).
  if (end_ > kMaxLine + 1) too_long();
  // Grows from kFirstChunk as lines need, up to a chunk after the longest line.
  if (end_ == buf_.size()) buf_.resize(std::min(2 * buf_.size(), kChunk + kMaxLine));
  size_t got = std::fread(buf_.data() + end_, 1, buf_.size() - end_, file_.get());
  if (got == 0) {
    if (std::ferror(file_.get())) throw InputError(printable(path_) + ": reading the file failed");
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

void LineReader::too_long() {
  ++line_;
  fail("a line longer than " + std::to_string(kMaxLine) + " bytes (1 MiB); is this a log file?");
}

void LineReader::take(size_t len, size_t skip) {
  line_begin_ = begin_;
  line_text_ = std::string_view(buf_.data() + begin_, len);
  if (line_ == 0 && line_text_.starts_with("\xEF\xBB\xBF")) line_text_.remove_prefix(3);
  if (!line_text_.empty() && line_text_.back() == '\r') line_text_.remove_suffix(1);
  if (line_text_.size() > kMaxLine) too_long();
  begin_ += len + skip;
  ++line_;
}

bool LineReader::next(std::string_view& line) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const char* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (nl) {
      take(static_cast<size_t>(nl - start), 1);
      line = line_text_;
      return true;
    }
    if (!refill()) {
      if (begin_ == end_) return false;
      take(end_ - begin_, 0);  // the last line has no line end
      line = line_text_;
      return true;
    }
  }
}

void LineReader::unread() {
  // The line is still in buf_: a refill moves only what lies after begin_.
  begin_ = line_begin_;
  --line_;
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

CsvHeader::CsvHeader(std::string_view line, char sep) : sep_(sep) {
  std::vector<std::string_view> f;
  split(line, sep, f);
  for (auto name : f) {
    std::string n(name);
    if (twice_.empty() && std::find(names_.begin(), names_.end(), n) != names_.end()) twice_ = n;
    names_.push_back(n);
  }
}

void CsvHeader::split_row(const LineReader& in, std::string_view line,
                          std::vector<std::string_view>& fields) const {
  split(line, sep_, fields);
  if (fields.size() < names_.size())
    in.fail(std::to_string(fields.size()) + " fields, the header names " +
            std::to_string(names_.size()));
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
    throw InputError(printable(in.path()) + ": no column '" + printable(name) +
                     "' in the header; " + needs);
  if (!twice_.empty())  // every reader requires a column, so every reader refuses this
    throw InputError(printable(in.path()) + ": the column '" + printable(twice_) +
                     "' appears twice in the header; which one holds the values is unclear");
  return i;
}

std::string_view Row::text(int column) const {
  if (column < 0 || static_cast<size_t>(column) >= fields_.size()) return {};
  return fields_[static_cast<size_t>(column)];
}

double Row::time(int column, std::string_view name) const {
  std::string_view v = text(column);
  if (v.empty()) in_.fail("column " + std::string(name) + ": empty; a time is needed here");
  return read_time(in_, "column " + std::string(name), v, base_);
}

double Row::count(int column, std::string_view name, double fallback) const {
  std::string_view v = text(column);
  if (v.empty()) return fallback;
  auto n = parse_number(v);
  if (!n) in_.fail("column " + std::string(name) + ": " + quoted(v) + " is not a count");
  return check_amount(in_, "column " + std::string(name), v, *n, kMaxCount, true);
}

double Row::amount(int column, std::string_view name, double fallback, double max) const {
  std::string_view v = text(column);
  if (v.empty()) return fallback;
  auto n = parse_number(v);
  if (!n) in_.fail("column " + std::string(name) + ": " + quoted(v) + " is not a number");
  return check_amount(in_, "column " + std::string(name), v, *n, max, false);
}

int Row::flag(int column, std::string_view name) const {
  std::string_view v = text(column);
  if (v.empty()) return -1;
  if (v == "1" || v == "true" || v == "True") return 1;
  if (v == "0" || v == "false" || v == "False") return 0;
  in_.fail("column " + std::string(name) + ": " + quoted(v) + " is not 0 or 1");
}

double read_time(const LineReader& in, std::string_view what, std::string_view text,
                 TimeBase& base) {
  const std::string w(what);
  auto t = parse_time(text, base);
  if (auto plain = parse_number(text); !t && plain && *plain > kAbsoluteBefore)
    in.fail(w + ": " + quoted(text) +
            " is later than any Unix time in seconds (after the year 2286); Unix "
            "milliseconds? write seconds (1710000000.250)");
  if (!t)
    in.fail(w + ": " + quoted(text) +
            " is not a time; write seconds (123.456), a clock (1d09:40:00) or a date-time "
            "(2024-03-10T19:40:00Z)");
  if (*t < 0) {
    auto plain = parse_number(text);
    if (plain && *plain < 0)
      in.fail(w + ": " + quoted(text) +
              " is a negative time; times are seconds from day 0, 00:00 (0 or more)");
    in.fail(w + ": " + quoted(text) +
            " is before day 0 (midnight UTC of the first day the logs show); give the file "
            "with the earliest times first");
  }
  if (*t > kMaxTime)
    in.fail(w + ": " + quoted(text) + " is more than " +
            std::to_string(static_cast<long long>(kMaxTime)) + " s after day 0");
  return *t;
}

double check_amount(const LineReader& in, std::string_view what, std::string_view text, double v,
                    double max, bool whole) {
  bool ok = v >= 0 && v <= max && (!whole || v == std::floor(v));
  if (!ok)
    in.fail(std::string(what) + ": " + quoted(text) + " is not allowed; " +
            (whole ? "a whole number" : "a number") + " from 0 to " +
            std::to_string(static_cast<long long>(max)) + " is");
  return v;
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
