#include "systems/export.hpp"

#include "model/keys.hpp"
#include "systems/export_kit.hpp"

namespace retrystorm::configs {

const std::vector<std::string>& export_systems() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SystemFacts& f : system_table())
      if (f.exported) out.push_back(f.name);
    return out;
  }();
  return names;
}

ExportResult export_config(const Scenario& s, System system) {
  if (!s.graph.empty())
    throw InputError(
        "services: a graph has one retry policy per call; export one call with "
        "--call N (the HTTP API's \"call\" field; 0 to " +
        std::to_string(s.graph.calls.size() - 1) + ", in the order of calls)");
  const Room& r = room(system);
  if (!r.write)
    throw InputError(std::string("'") + system_name(system) + "' is not a system we write");
  kit::Draft d(system, s, r.min_duration_s);
  r.write(s, d);
  return std::move(d.result);
}

ExportResult export_config(const Scenario& s, std::string_view name, const std::string& option) {
  std::optional<System> system = system_named(name);
  if (!system || !facts(*system).exported) {
    const auto& names = export_systems();
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    throw InputError(option + ": '" + std::string(name) + "' is not a system we write; choose " +
                     list);
  }
  return export_config(s, *system);
}

}  // namespace retrystorm::configs
