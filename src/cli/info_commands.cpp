#include "cli/info_commands.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string_view>

#include "formats/session_report.hpp"
#include "formats/text_report.hpp"
#include "server/server.hpp"
#include "text/printable.hpp"

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

namespace {

// One label of a host name (RFC 1123): letters, digits and '-', not at an end.
bool host_label(std::string_view label) {
  if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
    return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// --host is bad input unless it is an IP address or a host name: binding to
// anything else can only fail, and that is the value's fault, not the system's.
// An IPv6 address is written without brackets, as the server brackets it.
std::string host_error(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  // fe80::1%eth0: an IPv6 address with the zone (interface) it is on.
  const size_t zone = host.find('%');
  const std::string v6_part = host.substr(0, zone);
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
      (::inet_pton(AF_INET6, v6_part.c_str(), &v6) == 1 &&
       (zone == std::string::npos || zone + 1 < host.size())))
    return "";
  std::string_view name(host);
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  bool labels = !name.empty() && name.size() <= 253;
  std::string_view last;
  for (std::string_view rest = name; labels;) {
    const size_t dot = rest.find('.');
    last = rest.substr(0, dot);
    labels = host_label(last);
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  // All digits at the end is an IPv4 address that is not one (1.2.3.999), not a name.
  if (labels && last.find_first_not_of("0123456789") != std::string_view::npos) return "";
  return "'" + printable(host) +
         "' is not a host name or an IP address; give a name of letters, digits, '-' and '.' "
         "(localhost), an IPv4 address (127.0.0.1; 0.0.0.0 for every interface) or an IPv6 one "
         "without brackets (::1)";
}

}  // namespace

void add_serve_command(CLI::App& app, CommandTable& table) {
  struct Serve {
    std::string host = "127.0.0.1";
    int port = 8080;
    ServerLimits limits;
  };
  auto c = std::make_shared<Serve>();
  auto* cmd = app.add_subcommand("serve", "the web explorer and its JSON API");
  cmd->add_option("--host", c->host, "address to bind (default 127.0.0.1, loopback only)")
      ->check(CLI::Validator([](std::string& value) { return host_error(value); },
                             "a host name or an IP address"));
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
