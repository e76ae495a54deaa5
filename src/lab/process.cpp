#include "lab/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace retrystorm::lab {

namespace {

using Clock = std::chrono::steady_clock;

// In the child after fork: stdin from /dev/null, stdout to the pipe, stderr
// to a file or /dev/null, SIGTERM when the parent dies, then exec. `args`
// is built before the fork: only async-signal-safe calls after it.
[[noreturn]] void exec_child(const std::vector<char*>& args, int out_write,
                             const std::string& stderr_path,
                             const std::map<std::string, std::string>& env) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ::dup2(out_write, STDOUT_FILENO);
  int err = ::open(stderr_path.empty() ? "/dev/null" : stderr_path.c_str(),
                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err >= 0) ::dup2(err, STDERR_FILENO);
  int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) ::dup2(in, STDIN_FILENO);
  ::setpgid(0, 0);  // Ctrl-C reaches the lab only; the lab stops the child
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                           const std::map<std::string, std::string>& env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) exec_child(args, fds[1], stderr_path, env);
  ::close(fds[1]);
  out_ = fds[0];
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    stop();
    std::swap(pid_, o.pid_);
    std::swap(out_, o.out_);
    std::swap(exit_status_, o.exit_status_);
    buffer_.swap(o.buffer_);
  }
  return *this;
}

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_status_;
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (true) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0 || out_ < 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[512];
    ssize_t n = ::read(out_, chunk, sizeof chunk);
    if (n <= 0) return std::nullopt;  // the child closed stdout (it exited)
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string ChildProcess::read_all(std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  std::string all;
  while (auto line = read_line(std::chrono::duration_cast<std::chrono::milliseconds>(
             std::max(until - Clock::now(), Clock::duration::zero()))))
    all += *line + "\n";
  all += buffer_;  // a last line without its newline
  buffer_.clear();
  return all;
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
  if (out_ >= 0) ::close(out_);
  out_ = -1;
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  auto until = Clock::now() + grace;
  int status = 0;
  while (Clock::now() < until) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the running program: " + ec.message());
  return p.string();
}

bool port_accepts(int port, std::chrono::milliseconds timeout) {
  auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

namespace {
std::atomic<bool> interrupt_noted{false};
extern "C" void note_interrupt(int) {
  interrupt_noted = true;
}
}  // namespace

// Ctrl-C, kill, a closed terminal (SIGHUP) and Ctrl-\ (SIGQUIT) all end the
// run the same way: its processes stopped, its directory removed.
constexpr int kEndingSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr size_t kEndingCount = std::size(kEndingSignals);

InterruptGuard::InterruptGuard() : old_(new struct sigaction[kEndingCount]) {
  interrupt_noted = false;
  struct sigaction a {};
  a.sa_handler = note_interrupt;
  sigemptyset(&a.sa_mask);
  for (size_t i = 0; i < kEndingCount; ++i) ::sigaction(kEndingSignals[i], &a, &old_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < kEndingCount; ++i) ::sigaction(kEndingSignals[i], &old_[i], nullptr);
  delete[] old_;
}

void adopt_orphans() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

std::vector<pid_t> stop_strays(const std::vector<pid_t>& known) {
  std::vector<pid_t> strays;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (ppid != ::getpid() || std::find(known.begin(), known.end(), pid) != known.end()) continue;
    ::kill(pid, SIGKILL);  // a descendant of a process the lab started
    ::waitpid(pid, nullptr, 0);
    strays.push_back(pid);
  }
  return strays;
}

bool interrupted() {
  return interrupt_noted;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  if (port == 0) throw std::runtime_error("no free port on 127.0.0.1");
  return port;
}

}  // namespace retrystorm::lab
