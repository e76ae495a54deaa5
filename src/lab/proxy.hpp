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
// (connections_in_flight), sizes its limits. Throws std::runtime_error when it
// does not start.
Proxy start_proxy(const std::string& system, const std::string& retry_settings, int backend_port,
                  const std::string& dir, double client_timeout_s, double connections);

}  // namespace retrystorm::lab
