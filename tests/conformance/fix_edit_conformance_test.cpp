// Lint's fixes as file edits, checked by the real systems (issue 26, part 5;
// docs/configs.md, "Fixes as file edits"): every edited fixture is accepted by
// the tool that reads it where one runs here: gRPC C-core's own service
// config parser (grpc::experimental::ValidateServiceConfigJSON) and grpc-js
// (a channel is made with it), nginx -t, and botocore's config loader with a
// client made from the profile (retry_mode is checked there). Envoy and Istio
// have no binary here: tests/fix_edit_test.cpp re-imports their edits.
#include <grpcpp/support/validate_service_config.h>

#include <iostream>

#include "configs_helpers.hpp"
#include "grpc_drivers.hpp"
#include "systems/lint.hpp"

namespace retrystorm::conformance {
namespace {

using testing::TempDir;

// The edits lint offers for one fixture.
std::vector<configs::FileEdit> edits_of(const std::string& name) {
  std::vector<configs::FileEdit> out;
  for (const auto& f : configs::lint_configs({configs::testing::fixture(name)}).findings)
    if (f.edit) out.push_back(*f.edit);
  EXPECT_FALSE(out.empty()) << name << ": no edit";
  return out;
}

// Runs argv to its end (bounded): its exit status, stderr kept in `err`.
int run_to_end(const std::vector<std::string>& argv, const fs::path& err) {
  Child child(argv, {}, err);
  child.read_all(std::chrono::seconds(30));
  auto status = child.wait(std::chrono::seconds(5));
  return status ? *status : -1;
}

TEST(FixEditsInRealSystems, GrpcParsesTheEditedServiceConfig) {
  TempDir dir("fix_grpc");
  int n = 0;
  for (const auto& e : edits_of("grpc/no-throttling.json")) {
    EXPECT_EQ(grpc::experimental::ValidateServiceConfigJSON(e.text), "") << e.change << "\n"
                                                                         << e.text;
    if (!node_ready()) continue;
    // grpc-js checks the service config when the channel is made (exit 3 if not).
    ClientRun run =
        run_client(Client::node, dir.path(), 1, e.text, {"--calls", "1", "--deadline-ms", "200"});
    EXPECT_EQ(run.exit, 0) << e.change;
    ++n;
  }
  std::cout << "[ fix edits ] gRPC: " << n << " edited service configs accepted\n";
}

// nginx -t on `edits`, each included in an http block: how many were checked.
int nginx_accepts(const std::vector<configs::FileEdit>& edits, const fs::path& dir_path) {
  std::string p = (dir_path / "nginx").string();
  fs::create_directories(dir_path / "nginx" / "logs");
  int n = 0;
  for (const auto& e : edits) {
    fs::path site = dir_path / ("site-" + std::to_string(++n) + ".conf");
    testing::write_file(site, e.text);
    std::string temp;
    for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
      temp += "  " + std::string(kind) + "_temp_path " + p + "/" + kind + ";\n";
    fs::path conf = dir_path / ("nginx-" + std::to_string(n) + ".conf");
    testing::write_file(conf, "error_log " + p + "/logs/error.log;\npid " + p +
                                  "/nginx.pid;\nevents {}\nhttp {\n  access_log off;\n" + temp +
                                  "  include " + site.string() + ";\n}\n");
    fs::path err = dir_path / ("nginx-" + std::to_string(n) + ".stderr");
    int status = run_to_end(
        {"nginx", "-t", "-q", "-p", p + "/", "-e", p + "/logs/error.log", "-c", conf.string()},
        err);
    EXPECT_EQ(status, 0) << e.change << "\n" << configs::testing::read_text(err.string()) << e.text;
  }
  return n;
}

TEST(FixEditsInRealSystems, NginxAcceptsTheEditedConfiguration) {
  TempDir dir("fix_nginx");
  int n = nginx_accepts(edits_of("nginx/location.conf"), dir.path());
  std::cout << "[ fix edits ] nginx -t: " << n << " edited configurations accepted\n";
}

// A location on one line: the tries directive goes inside it, after
// proxy_pass's `;` (on the next line it landed after the `}`, outside the
// location; nginx -t then refused it in the main context).
TEST(FixEditsInRealSystems, NginxAcceptsTheEditOfAOneLineLocation) {
  TempDir dir("fix_nginx_one_line");
  const std::string text =
      "upstream up { server 10.0.0.1:80; server 10.0.0.2:80; }\n"
      "server { listen 8081; location /api { proxy_pass http://up; } }\n";
  std::vector<configs::FileEdit> edits;
  for (const auto& f : configs::lint_configs({{"one.conf", text}}).findings)
    if (f.edit) edits.push_back(*f.edit);
  ASSERT_FALSE(edits.empty());
  EXPECT_NE(edits[0].text.find("proxy_pass http://up; proxy_next_upstream_tries"),
            std::string::npos)
      << edits[0].text;
  EXPECT_EQ(nginx_accepts(edits, dir.path()), static_cast<int>(edits.size()));
}

// The start of a script that reads the AWS config file argv[1] with
// botocore, and nothing else of the machine's.
const std::string kBotocoreSession =
    "import os, sys\n"
    "os.environ['AWS_CONFIG_FILE'] = sys.argv[1]\n"
    "os.environ['AWS_SHARED_CREDENTIALS_FILE'] = os.devnull\n"
    "import botocore.session\n";

// Profiles written as configparser allows (names in any case, `:` for `=`,
// a comment after the header): botocore's reading and import's agree
// (botocore/configloader.py raw_config_parse uses RawConfigParser, which
// lower-cases option names and splits at '=' or ':').
TEST(FixEditsInRealSystems, BotocoreAndImportReadTheSameProfile) {
  if (!fs::exists("/usr/lib/python3/dist-packages/botocore/retries"))
    GTEST_SKIP() << "python3-botocore is not installed (scripts/setup.sh)";
  TempDir dir("aws_parse");
  const std::string check = kBotocoreSession +
                            "s = botocore.session.Session(profile='default')\n"
                            "print(s.get_config_variable('retry_mode'), "
                            "s.get_config_variable('max_attempts'))\n";
  testing::write_file(dir.path() / "check.py", check);
  int n = 0;
  for (const char* text :
       {"[default]\nRetry_Mode = standard\nMAX_ATTEMPTS = 10\n",
        "[default]\nretry_mode: standard\nmax_attempts: 7\n",
        "[default]   # main profile\nretry_mode = standard\nmax_attempts = 4\n"}) {
    fs::path ini = dir.path() / ("config-" + std::to_string(++n));
    testing::write_file(ini, text);
    Child child({"/usr/bin/python3", (dir.path() / "check.py").string(), ini.string()}, {},
                dir.path() / ("check-" + std::to_string(n) + ".stderr"));
    std::string out = child.read_all(std::chrono::seconds(30));
    ASSERT_EQ(child.wait(std::chrono::seconds(5)), 0) << text;
    auto r = configs::import_configs({{"config", text}});
    EXPECT_EQ(out,
              "standard " +
                  std::to_string(static_cast<int>(configs::testing::num(r, "client.retries")) + 1) +
                  "\n")
        << text;
    EXPECT_EQ(configs::testing::str(r, "client.budget.kind"), "aws_quota") << text;
  }
}

TEST(FixEditsInRealSystems, BotocoreLoadsTheEditedProfile) {
  if (!fs::exists("/usr/lib/python3/dist-packages/botocore/retries"))
    GTEST_SKIP() << "python3-botocore is not installed (scripts/setup.sh)";
  TempDir dir("fix_aws");
  // The profile as botocore reads it, and a client made from it: an unknown
  // retry_mode or a bad max_attempts is refused there.
  const std::string check =
      kBotocoreSession +
      "s = botocore.session.Session(profile=sys.argv[2])\n"
      "c = s.create_client('logs', region_name='us-east-1', aws_access_key_id='a',\n"
      "                    aws_secret_access_key='b')\n"
      "r = c.meta.config.retries\n"
      "print(r.get('mode'), r.get('total_max_attempts'))\n";
  fs::path script = dir.path() / "check.py";
  testing::write_file(script, check);
  int n = 0;
  for (const char* name : {"aws/legacy.ini", "aws/defaults.ini"}) {
    for (const auto& e : edits_of(name)) {
      fs::path ini = dir.path() / ("config-" + std::to_string(++n));
      testing::write_file(ini, e.text);
      std::string profile = std::string(name) == "aws/legacy.ini" ? "legacy-app" : "default";
      Child child({"/usr/bin/python3", script.string(), ini.string(), profile}, {},
                  dir.path() / ("check-" + std::to_string(n) + ".stderr"));
      std::string out = child.read_all(std::chrono::seconds(30));
      EXPECT_EQ(child.wait(std::chrono::seconds(5)), 0) << e.change << "\n" << e.text;
      EXPECT_EQ(out.rfind("standard ", 0), 0u) << out;  // the quota's mode, as the edit says
    }
  }
  std::cout << "[ fix edits ] botocore: " << n << " edited profiles loaded\n";
}

}  // namespace
}  // namespace retrystorm::conformance
