// Streaming reads of incident logs: a file a line at a time in bounded
// memory, CSV headers and fields, and errors that name the file, the line,
// the column, the value and what is allowed.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/logs/times.hpp"
#include "model/keys.hpp"

namespace retrystorm::logs {

class LineReader {
 public:
  // Throws InputError when the file cannot be read.
  explicit LineReader(std::string path);
  // The next line without its end ("\n" or "\r\n"); false at the end.
  // Throws InputError on a line longer than kMaxLine.
  bool next(std::string_view& line);
  const std::string& path() const { return path_; }
  size_t line_number() const { return line_; }
  // InputError "path:line: what".
  [[noreturn]] void fail(const std::string& what) const;

  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kMaxLine = 1 << 20;

 private:
  bool refill();
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  size_t line_ = 0;
  bool eof_ = false;
};

// Splits a CSV line on commas into `fields` (quotes around a field are
// dropped; quoted commas are not supported by the log formats).
void split(std::string_view line, char sep, std::vector<std::string_view>& fields);

// A CSV file's header: where each named column is.
class CsvHeader {
 public:
  CsvHeader(std::string_view line, char sep = ',');
  // The column's index, or -1.
  int find(std::string_view name) const;
  // The column's index; InputError naming the file, the column and `needs` when absent.
  int require(const LineReader& in, std::string_view name, const std::string& needs) const;
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

// Field readers for one row; each throws InputError naming the line, the
// column and the value.
class Row {
 public:
  Row(const LineReader& in, const std::vector<std::string_view>& fields, TimeBase& base)
      : in_(in), fields_(fields), base_(base) {}
  std::string_view text(int column) const;
  // A time; `column` -1 or an empty field is an error.
  double time(int column, std::string_view name) const;
  // A count or amount >= 0; `fallback` when the column is absent or empty.
  double amount(int column, std::string_view name, double fallback) const;
  // 0 or 1 (also true/false); -1 when the column is absent or empty.
  int flag(int column, std::string_view name) const;

 private:
  const LineReader& in_;
  const std::vector<std::string_view>& fields_;
  TimeBase& base_;
};

// Times further than this from day 0, and durations longer than this, are
// taken as broken rather than spread over millions of hours.
inline constexpr double kMaxTime = 1e9;
inline constexpr double kMaxDuration = 1e7;
// InputError unless [start, end] is a span a log can hold.
void check_span(const LineReader& in, double start, double end, std::string_view start_name,
                std::string_view end_name);

}  // namespace retrystorm::logs
