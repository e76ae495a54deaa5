#include "cli/common.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "io/scenario_io.hpp"
#include "model/keys.hpp"

namespace retrystorm::cli {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the file");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Scenario build_scenario(const std::string& preset, const std::string& file,
                        const std::vector<std::string>& sets, const std::string& fallback) {
  if (!preset.empty() && !file.empty())
    throw InputError("--preset and --scenario: give one of them, not both");
  Scenario s;
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError("--scenario: cannot read '" + file + "'");
    s = scenario_from_text(read_file(file), file);
  } else {
    s = preset_or_throw(preset.empty() ? fallback : preset).scenario;
  }
  for (const std::string& kv : sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set: '" + kv + "' must look like PATH=VALUE, e.g. client.retries=0");
    set_key_text(s, kv.substr(0, eq), kv.substr(eq + 1));
  }
  validate(s);
  return s;
}

void emit(const std::string& text, const std::string& out) {
  if (out.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(out, ec))
    throw InputError("--out: '" + out + "' is a directory; name a file");
  std::string tmp = out + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError("--out: cannot write '" + out + "'");
    f << text;
    f.flush();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw InputError("--out: writing '" + out + "' failed");
    }
  }
  std::filesystem::rename(tmp, out, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError("--out: cannot write '" + out + "'");
  }
}

void check_format(const std::string& format, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (format == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw InputError("--format: '" + format + "' is not allowed here; choose one of " + list);
}

}  // namespace retrystorm::cli
