#include "lab/proxy.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "systems/common.hpp"
#include "systems/import.hpp"

namespace retrystorm::lab {

namespace {

// HAProxy 2.6 in the foreground (-db); the frontend waits longer than any
// request can take, so only the backend's timeouts and retries act.
std::string haproxy_config(const configs::LabProxyConfig& settings, int port,
                           double client_timeout_s) {
  // HAProxy refuses timers above 2^31 - 1 ms ("timer overflow"): a longer
  // patience is the same as that one for a run of at most 600 s.
  long long client_ms =
      static_cast<long long>(std::min(client_timeout_s * 1000 + 5000, 2147483647.0));
  return "global\n  maxconn 8000\n"
         "defaults\n  mode http\n  timeout connect 1s\n  timeout client " +
         std::to_string(client_ms) + "ms\n  timeout server " + std::to_string(client_ms) +
         "ms\nfrontend lab\n  bind 127.0.0.1:" + std::to_string(port) + "\n  default_backend " +
         configs::config_word(settings.backend) + "\n" + settings.text + "\n";
}

// nginx 1.22 with one worker; its pid, logs and temp files under `dir`.
std::string nginx_config(const configs::LabProxyConfig& settings, const std::string& dir) {
  std::string temp;
  for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    temp += "  " + std::string(kind) + "_temp_path " + dir + "/" + kind + ";\n";
  return "worker_processes 1;\nerror_log " + dir + "/error.log;\npid " + dir +
         "/nginx.pid;\nevents { worker_connections 8000; }\nhttp {\n  access_log off;\n" + temp +
         settings.text + "\n}\n";
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

Proxy start_proxy(const std::string& system, const std::string& retry_settings, int backend_port,
                  const std::string& dir, double client_timeout_s) {
  std::string backend = "127.0.0.1:" + std::to_string(backend_port);
  // A port free a moment ago can be taken before the proxy binds it: try again.
  for (int tries = 0; tries < 3; ++tries) {
    Proxy p;
    p.port = free_port();
    std::vector<std::string> argv;
    if (system == "haproxy") {
      p.config = haproxy_config(configs::lab_haproxy_config(retry_settings, "--config", backend),
                                p.port, client_timeout_s);
      write_text(dir + "/haproxy.cfg", p.config);
      argv = {"haproxy", "-db", "-f", dir + "/haproxy.cfg"};
    } else {
      p.config =
          nginx_config(configs::lab_nginx_config(retry_settings, "--config", backend, p.port), dir);
      write_text(dir + "/nginx.conf", p.config);
      argv = {"nginx", "-p",         dir + "/", "-e", dir + "/error.log", "-c", dir + "/nginx.conf",
              "-g",    "daemon off;"};
    }
    p.process = ChildProcess(argv, dir + "/" + system + ".stderr");
    if (port_accepts(p.port, std::chrono::milliseconds(3000)) && p.process.running()) return p;
  }
  std::ifstream err(dir + "/" + system + ".stderr");
  std::string why((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  throw std::runtime_error(
      system + " did not start (is it installed? see scripts/setup.sh): " + why.substr(0, 400));
}

}  // namespace retrystorm::lab
