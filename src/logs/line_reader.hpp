// Streaming reads of incident logs: a file a line at a time in bounded
// memory, CSV headers and fields, and errors that name the file, the line,
// the column, the value and what is allowed.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "logs/times.hpp"
#include "model/keys.hpp"
#include "session_log/session_log.hpp"
#include "text/printable.hpp"

namespace retrystorm::logs {

class LineReader {
 public:
  // Throws InputError when the file cannot be read or is a directory.
  explicit LineReader(std::string path);
  // Reads an open stream (closed at the end), named `name` in errors: for
  // the fuzz targets, which read from memory (fmemopen).
  LineReader(std::string name, std::FILE* file);
  // The next line without its end ("\n" or "\r\n"); false at the end.
  // Throws InputError on a line longer than kMaxLine bytes (its end aside).
  // A UTF-8 byte-order mark at the start of the file is dropped.
  bool next(std::string_view& line);
  // The next call of next() gives the line it gave last once more (one line
  // back only): the format is told from a log's first line, which is then
  // read again as its header, from a file opened once (a pipe or FIFO can
  // be read only once).
  void unread();
  const std::string& path() const { return path_; }
  size_t line_number() const { return line_; }
  // InputError "path:line: what".
  [[noreturn]] void fail(const std::string& what) const;

  static constexpr size_t kFirstChunk = 1 << 16;  // small files, small buffers
  static constexpr size_t kChunk = 1 << 20;
  static constexpr size_t kMaxLine = 1 << 20;

 private:
  bool refill();
  [[noreturn]] void too_long();
  // The next `len` bytes are a line, followed by `skip` bytes of line end.
  void take(size_t len, size_t skip);
  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  size_t line_begin_ = 0;  // where the last line given starts in buf_ (unread)
  std::string_view line_text_;
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
  // Splits a row of the file into `fields`; InputError when it has fewer
  // fields than the header names (docs/log-formats.md).
  void split_row(const LineReader& in, std::string_view line,
                 std::vector<std::string_view>& fields) const;

 private:
  std::vector<std::string> names_;
  std::string twice_;  // the first name the header repeats
  char sep_;
};

// Field readers for one row; each throws InputError naming the line, the
// column and the value.
class Row {
 public:
  Row(const LineReader& in, const std::vector<std::string_view>& fields, TimeBase& base)
      : in_(in), fields_(fields), base_(base) {}
  std::string_view text(int column) const;
  // A time; `column` -1 or an empty field is an error (see read_time).
  double time(int column, std::string_view name) const;
  // A whole count, 0 to kMaxCount; `fallback` when the column is absent or empty.
  double count(int column, std::string_view name, double fallback) const;
  // An amount (seconds, a level), 0 to `max`; `fallback` when absent or empty.
  double amount(int column, std::string_view name, double fallback, double max) const;
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
inline constexpr double kMaxDuration = session_log::kMaxDurationS;
// A count in one row (error lines, calls, items, starts a second) above this
// is taken as broken: no session or second of a real log comes near it.
inline constexpr double kMaxCount = 1e9;

// The time `text` of `what` ("column start_s", "key t"), relative to day 0.
// InputError naming the line, `what` and the value unless it is a time from
// 0 (day 0, 00:00) to kMaxTime: a negative time, or an absolute one before
// the first day the logs show, is refused.
double read_time(const LineReader& in, std::string_view what, std::string_view text,
                 TimeBase& base);
// `v` unless it is an amount from 0 to `max` (whole when `whole`); InputError
// naming the line, `what`, the value `text` and what is allowed.
double check_amount(const LineReader& in, std::string_view what, std::string_view text, double v,
                    double max, bool whole);
// InputError unless [start, end] is a span a log can hold.
void check_span(const LineReader& in, double start, double end, std::string_view start_name,
                std::string_view end_name);

}  // namespace retrystorm::logs
