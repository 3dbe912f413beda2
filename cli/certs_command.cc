// neardup certs init: a cluster's CA and a member certificate, for mutual TLS between its members
// (cluster/http/tls.h). For development and tests; a production cluster may bring certificates of its
// own CA (tier2_server.tls, tier1_server.tier2_tls).
#include <spdlog/spdlog.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cluster/http/tls.h"

namespace neardup::cli {

void RegisterCerts(CLI::App& app, int* exit_code) {
  auto* certs = app.add_subcommand("certs", "Certificates for mutual TLS between a cluster's members");
  certs->require_subcommand(1);
  auto* init = certs->add_subcommand(
      "init", "Make a cluster CA (DIR/ca.pem, ca.key) and a member certificate it signs (DIR/member.pem, member.key); "
              "a CA already in DIR signs the new member certificate");
  struct Args {
    std::string dir;
    std::vector<std::string> hosts = {"127.0.0.1", "localhost", "::1"};
    int days = 825;
  };
  auto a = std::make_shared<Args>();
  init->add_option("--dir", a->dir, "where the files go (keys mode 0600)")->required();
  init->add_option("--hosts", a->hosts, "the member certificate's names: IP addresses and DNS names, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  init->add_option("--days", a->days, "validity in days")->capture_default_str()->check(CLI::PositiveNumber);
  init->callback([a, exit_code] {
    if (Status s = cluster::MakeClusterCertificates(a->dir, a->hosts, a->days); !s.ok()) {
      spdlog::error("{}", s.message());
      *exit_code = s.code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    std::cout << "certs: " << a->dir << "/ca.pem (the cluster's CA), " << a->dir << "/member.pem and " << a->dir
              << "/member.key (a member's certificate and key)\n";
    *exit_code = 0;
  });
}

}  // namespace neardup::cli
