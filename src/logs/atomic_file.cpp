#include "logs/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "model/keys.hpp"

namespace retrystorm {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void cannot(const std::string& option, const std::string& path,
                         const std::string& why) {
  throw InputError(option + ": cannot write '" + path + "': " + why);
}

// The permissions a new file gets from the shell: 0666 less the umask.
mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Where `out` writes (a link's target), refused when it cannot be a file.
std::string output_path(const std::string& out, const std::string& option) {
  std::string path = out;
  struct stat st {};
  if (::lstat(out.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    struct stat target {};
    // A link to a pipe or a terminal (/dev/stdout into `| head`) has no path
    // to resolve to: it is opened through the link itself.
    bool stream = ::stat(out.c_str(), &target) == 0 && !S_ISREG(target.st_mode) &&
                  !S_ISDIR(target.st_mode) && !S_ISBLK(target.st_mode);
    std::error_code ec;
    if (!stream) path = fs::canonical(out, ec).string();  // where the link points, kept a link
    if (ec) cannot(option, out, "a symbolic link to nothing");
  }
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    throw InputError(option + ": '" + out + "' is a directory; name a file");
  if (exists && S_ISBLK(st.st_mode))
    throw InputError(option + ": '" + out + "' is a block device; name a file");
  return path;
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path, const std::string& option)
    : path_(output_path(path, option)), option_(option) {
  struct stat st {};
  bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {  // /dev/null, a FIFO, a terminal
    fd_ = ::open(path_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) cannot(std::strerror(errno));
    return;
  }
  fs::path p(path_);
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  temporary_ = (dir / ("." + p.filename().string() + ".XXXXXX")).string();
  fd_ = ::mkstemp(temporary_.data());
  if (fd_ < 0) {
    temporary_.clear();
    cannot(std::strerror(errno));
  }
  if (::fchmod(fd_, exists ? (st.st_mode & 07777) : new_file_mode()) != 0) {
    int error = errno;
    ::close(fd_);  // a constructor that throws runs no destructor
    ::unlink(temporary_.c_str());
    cannot(std::strerror(error));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void AtomicFile::cannot(const std::string& why) const {
  retrystorm::cannot(option_, path_, why);
}

void AtomicFile::write(std::string_view text) {
  if (fd_ < 0) cannot("the file is already closed");
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cannot(std::strerror(errno ? errno : EIO));
    done += static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) cannot("the file is already closed");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) cannot(std::strerror(errno));
  if (!temporary_.empty() && ::rename(temporary_.c_str(), path_.c_str()) != 0)
    cannot(std::strerror(errno));
  committed_ = true;
}

void write_files(const std::vector<OutputFile>& files, const std::string& option) {
  std::vector<std::unique_ptr<AtomicFile>> open;
  for (const OutputFile& f : files) {
    open.push_back(std::make_unique<AtomicFile>(f.path, option));
    open.back()->write(f.text);
  }
  for (auto& f : open) f->commit();
}

std::optional<FileIdentity> regular_file_identity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

void check_output_path(const std::string& out, const std::string& option) {
  if (out.empty()) return;
  fs::path path = output_path(out, option);
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (::access(dir.c_str(), W_OK) != 0)
    cannot(option, out,
           "its directory cannot be written to (" + std::string(std::strerror(errno)) + ")");
}

}  // namespace retrystorm
