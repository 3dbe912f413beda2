// The neardup subcommands. Each Register* adds one subcommand to the CLI11 app; its callback runs
// the command and stores the process exit code in *exit_code (0 ok, 1 failure, 2 bad usage).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace neardup::cli {

void RegisterBaseline(CLI::App& app, int* exit_code);
void RegisterGenCrawl(CLI::App& app, int* exit_code);
void RegisterBench(CLI::App& app, int* exit_code);
void AddBenchTier2(CLI::App* bench, int* exit_code);  // bench_tier2.cc
void RegisterConfig(CLI::App& app, int* exit_code);
void RegisterPartition(CLI::App& app, int* exit_code);
void RegisterExperiment(CLI::App& app, int* exit_code);
void RegisterEval(CLI::App& app, int* exit_code);        // eval (experiment_command.cc)
void RegisterTier2Server(CLI::App& app, int* exit_code);  // tier2_server_command.cc
void RegisterTier1Server(CLI::App& app, int* exit_code);  // tier1_server_command.cc
void RegisterClients(CLI::App& app, int* exit_code);      // ingest (client_commands.cc)
void RegisterCluster(CLI::App& app, int* exit_code);      // cluster up / down (cluster_command.cc)
void RegisterCerts(CLI::App& app, int* exit_code);        // certs init (certs_command.cc)
// neardup status --server: each URL's answer from the API, a JSON line each; the exit code.
int StatusOverHttp(const std::string& server, const std::string& ca_file, const std::vector<std::string>& urls);
// neardup rebalance --server: starts a rebalance through the API's admin endpoint and follows it
// to its end; the last stdout line is its state as one JSON object. Exit code: 0 done, 1 failed,
// 2 refused (bad request, or one running), 3 the server did not answer.
struct RebalanceOverHttpArgs {
  std::string server, token, ca_file;  // ResolveClusterClient's
  uint32_t shards = 0;
  std::vector<std::string> tier2;
  double max_move = 0.1, max_mb_per_s = 0;
  double min_batch_share = 0;  // 0: the server's pipeline.move_min_batch_share
  bool dry_run = false;
};
int RebalanceOverHttp(const RebalanceOverHttpArgs& a);
void RegisterExtract(CLI::App& app, int* exit_code);      // extract (extract_command.cc)
void RegisterFaultProxy(CLI::App& app, int* exit_code);   // fault_proxy_command.cc
void RegisterEmail(CLI::App& app, int* exit_code);        // email induce / annotate / eval (email_command.cc)
void AddBenchEmail(CLI::App* bench, int* exit_code);      // bench_email.cc
// email threads / domains / gen-threads / gen-domains, bench email-threads (email_threads_command.cc)
void AddEmailThreads(CLI::App* email, int* exit_code);
void AddBenchEmailThreads(CLI::App* bench, int* exit_code);
void RegisterRun(CLI::App& app, int* exit_code);       // run, check, accuracy (run_command.cc)
void AddBenchStatus(CLI::App* bench, int* exit_code);  // run_command.cc
void AddBenchStatusHttp(CLI::App* bench, int* exit_code);  // bench_service.cc

}  // namespace neardup::cli
