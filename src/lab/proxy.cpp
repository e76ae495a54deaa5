#include "lab/proxy.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "model/keys.hpp"
#include "systems/common.hpp"
#include "systems/fix_text.hpp"
#include "systems/import.hpp"

namespace retrystorm::lab {

namespace {

// The proxy's connection limit: the requests it may hold at once, and no
// less than 8,000 (a cap below what the run holds failed its requests).
long long connection_limit(double connections) {
  return static_cast<long long>(std::max(8000.0, std::ceil(connections)));
}

// HAProxy 2.6 in the foreground (-db). The lab's frontend carries its own
// settings, and an empty defaults section after it gives the user's sections
// HAProxy's built-in defaults, as the importer reads them (the lab's defaults
// had put a missing `mode` to http and filled in `timeout server`). The
// frontend waits longer than any request can take, so only the backend's
// timeouts and retries act; its mode is the backend's.
std::string haproxy_config(const configs::LabProxyConfig& settings, int port,
                           double client_timeout_s, double connections) {
  // HAProxy refuses timers above 2^31 - 1 ms ("timer overflow"): a longer
  // patience is the same as that one for a run of at most 600 s.
  long long client_ms =
      static_cast<long long>(std::min(client_timeout_s * 1000 + 5000, 2147483647.0));
  return "global\n  maxconn " + std::to_string(connection_limit(connections)) +
         "\nfrontend lab\n  mode " + settings.mode + "\n  timeout client " +
         std::to_string(client_ms) + "ms\n  bind 127.0.0.1:" + std::to_string(port) +
         "\n  default_backend " + configs::config_word(settings.backend) + "\ndefaults\n" +
         settings.text + "\n";
}

// nginx 1.22 with one worker; its pid, logs and temp files under `dir`. A
// proxied request holds two connections, the caller's and the backend's.
std::string nginx_config(const configs::LabProxyConfig& settings, const std::string& dir,
                         double connections) {
  std::string temp;
  for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    temp += "  " + std::string(kind) + "_temp_path " + dir + "/" + kind + ";\n";
  const long long limit = 2 * connection_limit(connections);
  return "worker_processes 1;\nworker_rlimit_nofile " + std::to_string(limit + 100) +
         ";\nerror_log " + dir + "/error.log;\npid " + dir + "/nginx.pid;\nevents { " +
         "worker_connections " + std::to_string(limit) + "; }\nhttp {\n  access_log off;\n" + temp +
         settings.text + "\n}\n";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Its stderr and its error log (nginx writes a refusal to both).
std::string proxy_logs(const std::string& dir, const std::string& system) {
  return read_text(dir + "/" + system + ".stderr") + "\n" + read_text(dir + "/error.log");
}

// The proxy's own logs say its port was taken (bind: EADDRINUSE).
bool port_taken(const std::string& dir, const std::string& system) {
  return proxy_logs(dir, system).find("Address already in use") != std::string::npos;
}

// A line's words without a comment and without nginx's ; { }: what the
// lab's rewrite keeps of a directive, so the user's line can be found again.
std::vector<std::string> words_of(std::string line) {
  if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
  for (char& c : line)
    if (c == ';' || c == '{' || c == '}') c = ' ';
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The line number the proxy names: nginx "in PATH:N", HAProxy "parsing [PATH:N]".
std::optional<size_t> line_named(const std::string& message) {
  std::smatch m;
  static const std::regex nginx(R"( in \S+:(\d+)\s*$)"), haproxy(R"(parsing \[[^\]]*:(\d+)\])");
  if (std::regex_search(message, m, haproxy) || std::regex_search(message, m, nginx))
    return static_cast<size_t>(std::stoul(m[1].str()));
  return std::nullopt;
}

bool refusal_line(const std::string& system, const std::string& line) {
  if (system == "nginx")
    return line.find("[emerg]") != std::string::npos || line.find("[alert]") != std::string::npos;
  return line.find("[ALERT]") != std::string::npos &&
         (line.find(": config :") != std::string::npos ||
          line.find("parsing [") != std::string::npos);
}

// An executable of that name on PATH (execvp's search).
bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (::access(((d.empty() ? "." : d) + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

std::string proxy_refusal(const std::string& system, const std::string& log,
                          const std::string& generated, const std::string& config_file,
                          const std::string& user_text) {
  std::string first;
  for (const std::string& line : configs::fix_text::lines_of(log))
    if (refusal_line(system, line)) {
      first = line;
      break;
    }
  if (first.empty()) return {};
  while (!first.empty() && (first.back() == '\r' || first.back() == ' ')) first.pop_back();
  std::string from = config_file.empty()
                         ? "the configuration the lab made from the scenario's export"
                         : "--config " + config_file;
  std::string message = system + " refused " + from + ": " + first;
  std::optional<size_t> n = line_named(first);
  std::vector<std::string> made = configs::fix_text::lines_of(generated);
  if (!n || *n == 0 || *n > made.size()) return message;
  std::string text = made[*n - 1];
  text.erase(0, text.find_first_not_of(' '));
  // The lab rewrites the settings (lab_nginx_config, lab_haproxy_config:
  // comments dropped, one directive a line), so no offset maps the lines:
  // the user's line is the one with the same words, when only one has them.
  std::vector<std::string> words = words_of(text);
  std::vector<size_t> same;
  std::vector<std::string> users = configs::fix_text::lines_of(user_text);
  for (size_t i = 0; i < users.size() && !config_file.empty() && !words.empty(); ++i)
    if (words_of(users[i]) == words) same.push_back(i + 1);
  if (same.size() == 1)
    return message + " (that is " + config_file + ":" + std::to_string(same[0]) + ": " + text + ")";
  return message + " (line " + std::to_string(*n) +
         " of the file the lab generated from it: " + text + ")";
}

Proxy start_proxy(const std::string& system, const std::string& retry_settings, int backend_port,
                  const std::string& dir, double client_timeout_s, double connections,
                  const std::string& config_file) {
  if (!on_path(system))
    throw std::runtime_error(system +
                             " is not installed (not found on PATH; see scripts/setup.sh)");
  std::string backend = "127.0.0.1:" + std::to_string(backend_port);
  // A port free a moment ago can be taken before the proxy binds it: try
  // again then, and only then.
  Proxy p;
  for (int tries = 0; tries < 3; ++tries) {
    p = Proxy();
    p.port = free_port();
    std::vector<std::string> argv;
    if (system == "haproxy") {
      p.config = haproxy_config(configs::lab_haproxy_config(retry_settings, "--config", backend),
                                p.port, client_timeout_s, connections);
      write_text(dir + "/haproxy.cfg", p.config);
      argv = {"haproxy", "-db", "-f", dir + "/haproxy.cfg"};
    } else {
      p.config = nginx_config(
          configs::lab_nginx_config(retry_settings, "--config", backend, p.port), dir, connections);
      write_text(dir + "/nginx.conf", p.config);
      write_text(dir + "/error.log", "");  // a try before may have left its bind error
      argv = {"nginx", "-p",         dir + "/", "-e", dir + "/error.log", "-c", dir + "/nginx.conf",
              "-g",    "daemon off;"};
    }
    p.process = ChildProcess(argv, dir + "/" + system + ".stderr");
    // Another process that took the port answers the connect too, while
    // nginx goes on trying to bind it for seconds: its "Address already in
    // use" says the listener is not the proxy's.
    if (port_accepts(p.port, std::chrono::milliseconds(3000)) && p.process.running() &&
        !port_taken(dir, system))
      return p;
    p.process.stop();
    if (!port_taken(dir, system)) break;
  }
  if (port_taken(dir, system))
    throw std::runtime_error(system + " did not start: another process took its port three times");
  std::string logs = proxy_logs(dir, system);
  std::string refused = proxy_refusal(system, logs, p.config, config_file, retry_settings);
  if (!refused.empty()) {
    if (config_file.empty()) throw std::runtime_error(refused);  // the export's: the lab's fault
    throw InputError(refused);
  }
  std::string why = read_text(dir + "/" + system + ".stderr");
  throw std::runtime_error(system + " did not start" +
                           (why.empty() ? "" : ": " + why.substr(0, 400)));
}

}  // namespace retrystorm::lab
