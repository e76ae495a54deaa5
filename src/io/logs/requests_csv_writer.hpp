// requests.csv (docs/log-formats.md): one row per attempt, written
// as the agent engine resolves it (rows are in resolution order, not by
// request). Its reader is requests_csv.cpp beside it.
#pragma once

#include <fstream>
#include <string>

#include "engines/agent/agent.hpp"

namespace retrystorm {

class RequestsCsv : public AttemptSink {
 public:
  // Opens (truncates) `path` and writes the header. Throws std::runtime_error.
  explicit RequestsCsv(const std::string& path);
  ~RequestsCsv() override;
  void row(const AttemptRow& r) override;
  // Writes what is buffered; throws std::runtime_error when writing failed.
  void close();

 private:
  void flush_buffer();
  std::ofstream out_;
  std::string buffer_;
  std::string path_;
};

}  // namespace retrystorm
