// requests.csv (docs/log-formats.md): one row per attempt, written
// as the agent engine resolves it (rows are in resolution order, not by
// request), into an AtomicFile: whole or absent. The columns and outcomes are
// session_log/request_log.hpp's; the reader is requests_csv.cpp beside this.
#pragma once

#include <string>

#include "engines/agent/agent.hpp"
#include "logs/atomic_file.hpp"

namespace retrystorm {

class RequestsCsv : public AttemptSink {
 public:
  // Opens a temporary file beside `path`. Throws InputError naming `option`.
  // `graph`: the rows name their call (a column more).
  explicit RequestsCsv(const std::string& path, const std::string& option = "--log",
                       bool graph = false);
  void row(const AttemptRow& r) override;
  // Writes what is buffered and puts the file in place; throws InputError.
  void close();

 private:
  AtomicFile file_;
  std::string buffer_;
  bool graph_;
};

}  // namespace retrystorm
