// The real retrying layers of the lab: HAProxy or nginx started on a free
// 127.0.0.1 port in front of the backend, configured from the scenario's
// export (`retrystorm export --to haproxy|nginx`) or from the user's file
// in the same shape (--config), and stopped by pid.
#pragma once

#include <string>

#include "lab/process.hpp"
#include "model/scenario.hpp"

namespace retrystorm::lab {

struct Proxy {
  ChildProcess process;
  int port = 0;
  std::string config;  // the whole file it runs with
};

// `retry_settings`: the export's text or the --config file's, confined to
// what the importer reads (configs::lab_haproxy_config, lab_nginx_config):
// every server becomes the backend, every listen the chosen port. `dir` holds the config,
// pid and logs; `connections`, the requests it may hold open at once
// (connections_in_flight), sizes its limits. `config_file`: the --config path
// the settings were read from (empty: the scenario's export). It tries again
// only when another process took its port; a proxy that refuses the
// configuration is an InputError naming `config_file` (proxy_refusal), and
// anything else that keeps it from starting a std::runtime_error.
Proxy start_proxy(const std::string& system, const std::string& retry_settings, int backend_port,
                  const std::string& dir, double client_timeout_s, double connections,
                  const std::string& config_file = "");

// The proxy's refusal of its configuration in `log` (its stderr and error
// log): nginx's [emerg] and [alert] lines, HAProxy's [ALERT] lines of its
// config parser. Empty when there is none; else the message for the user:
// the proxy's first such line, and where it names a line of `generated`, that
// line's text and the line of `user_text` (the --config file, `config_file`)
// that holds the same words, when exactly one does.
std::string proxy_refusal(const std::string& system, const std::string& log,
                          const std::string& generated, const std::string& config_file,
                          const std::string& user_text);

}  // namespace retrystorm::lab
