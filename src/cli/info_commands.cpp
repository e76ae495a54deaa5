#include "cli/info_commands.hpp"

#include <iostream>
#include <memory>

#include "formats/session_report.hpp"
#include "formats/text_report.hpp"
#include "server/server.hpp"

namespace retrystorm::cli {

void add_presets_command(CLI::App& app, CommandTable& table) {
  auto* cmd = app.add_subcommand("presets", "list the presets with their descriptions");
  table.add(cmd, [] {
    std::cout << presets_text();
    return 0;
  });
}

void add_keys_command(CLI::App& app, CommandTable& table) {
  auto* cmd =
      app.add_subcommand("keys", "list the scenario keys: type, allowed values, default, meaning");
  table.add(cmd, [] {
    std::cout << keys_markdown();
    return 0;
  });
}

void add_calibrate_command(CLI::App& app, CommandTable& table) {
  auto seeds = std::make_shared<int>(40);
  auto* cmd = app.add_subcommand(
      "calibrate",
      "the scheduler presets against the post-mortem's figures (docs/scheduler-calibration.md)");
  cmd->add_option("--seeds", *seeds, "seeds 1 to N (default 40)")->check(CLI::Range(1, 1000));
  table.add(cmd, [seeds] {
    std::cout << calibration_page(scheduler_calibration_of_presets(*seeds), *seeds);
    return 0;
  });
}

void add_serve_command(CLI::App& app, CommandTable& table) {
  struct Serve {
    std::string host = "127.0.0.1";
    int port = 8080;
    ServerLimits limits;
  };
  auto c = std::make_shared<Serve>();
  auto* cmd = app.add_subcommand("serve", "the web explorer and its JSON API");
  cmd->add_option("--host", c->host, "address to bind (default 127.0.0.1, loopback only)");
  cmd->add_option("--port", c->port, "port (default 8080)")->check(CLI::Range(1, 65535));
  cmd->add_option("--allow-host", c->limits.allowed_hosts,
                  "another Host name to answer, NAME or NAME:PORT (repeatable; default: the "
                  "bound address, localhost and 127.0.0.1; see docs/http-api.md)")
      ->allow_extra_args(false);
  cmd->add_option("--run-deadline", c->limits.run_deadline_s,
                  "seconds any one request may run before it is stopped and answered 503 "
                  "(default 180)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            // CLI::Range lets NaN through, and NaN turned the deadline off.
            double v = 0;
            if (!CLI::detail::lexical_cast(value, v) || !(v >= 0.1 && v <= 86400))
              return "'" + value + "' is not a number of seconds from 0.1 to 86400";
            return "";
          },
          "SECONDS in [0.1, 86400]"));
  table.add(cmd, [c] { return serve(c->host, c->port, c->limits); });
}

}  // namespace retrystorm::cli
