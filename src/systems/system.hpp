// The real systems whose retry configuration retrystorm reads, writes and
// lints, as one enum and one table of facts: every list of systems shown (the
// CLI's --to, /api/systems, the page's export menu) is this table in order.
// Everything else a system knows sits in its room, src/systems/<name>/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace retrystorm::configs {

enum class System { envoy, grpc, istio, linkerd, aws, haproxy, nginx, retrystorm };

struct SystemFacts {
  System system;
  const char* name;       // "envoy": as files, flags, URLs and JSON spell it
  const char* label;      // "Envoy": as messages and notes name it
  const char* extension;  // of an exported file: "yaml", "json", "ini", "cfg", "conf"
  bool exported;          // `export --to NAME` and POST /api/export/NAME write it
};

// Every system, in table order.
const std::vector<SystemFacts>& system_table();
const SystemFacts& facts(System s);
inline const char* system_name(System s) {
  return facts(s).name;
}
inline const char* system_label(System s) {
  return facts(s).label;
}
// The system a name spells, or nothing.
std::optional<System> system_named(std::string_view name);

}  // namespace retrystorm::configs
