// Every file retrystorm writes (a command's --out, the logs of --log, a
// streamed events.jsonl or requests.csv) is written whole or not at all: into
// a temporary file beside it, renamed into place at the end, so a failed or
// stopped run leaves what was there before. docs/cli.md, "Output files".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace retrystorm {

// One output file, written as the work goes. A regular file (or a new one)
// goes through a temporary file made with mkstemp beside it (O_EXCL: a
// planted name or symlink cannot be followed), with the mode the file has or
// would get (0666 less the umask); a terminal, pipe, FIFO, socket or
// /dev/null is written straight into; a directory or block device is refused.
// A symbolic link's target is written and the link kept. `option` names the
// flag in every error (InputError "--log: cannot write 'x': why").
class AtomicFile {
 public:
  AtomicFile(const std::string& path, const std::string& option);
  ~AtomicFile();  // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view text);
  // Closes the file and, unless written straight into, renames it into place.
  void commit();
  // The file written in the end (a link's target).
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void cannot(const std::string& why) const;
  std::string path_, temporary_, option_;
  int fd_ = -1;
  bool committed_ = false;
};

// Several whole files written as one: either all of them are in place
// afterwards or none has changed (the two logs of --log).
struct OutputFile {
  std::string path;
  std::string text;
};
void write_files(const std::vector<OutputFile>& files, const std::string& option);

// The regular file `path` names (device and inode), when it names one:
// two paths with the same identity are one file (a link, another spelling).
using FileIdentity = std::pair<unsigned long long, unsigned long long>;
std::optional<FileIdentity> regular_file_identity(const std::string& path);

// Refuses, before any work, a path AtomicFile could not write (a directory, a
// block device, a link to nothing, a directory that cannot be written to).
void check_output_path(const std::string& path, const std::string& option);

}  // namespace retrystorm
