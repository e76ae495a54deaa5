#include "lab/proxy.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "systems/common.hpp"
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

// The proxy's own logs say its port was taken (bind: EADDRINUSE).
bool port_taken(const std::string& dir, const std::string& system) {
  for (const std::string& log : {dir + "/" + system + ".stderr", dir + "/error.log"}) {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("Address already in use") != std::string::npos) return true;
  }
  return false;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

Proxy start_proxy(const std::string& system, const std::string& retry_settings, int backend_port,
                  const std::string& dir, double client_timeout_s, double connections) {
  std::string backend = "127.0.0.1:" + std::to_string(backend_port);
  // A port free a moment ago can be taken before the proxy binds it: try again.
  for (int tries = 0; tries < 3; ++tries) {
    Proxy p;
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
  }
  std::ifstream err(dir + "/" + system + ".stderr");
  std::string why((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  throw std::runtime_error(
      system + " did not start (is it installed? see scripts/setup.sh): " + why.substr(0, 400));
}

}  // namespace retrystorm::lab
