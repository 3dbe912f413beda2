// The neardup subcommands, one file each (or one per family: bench_*, email_*), named after the
// subcommand. Each Register* adds one subcommand to the CLI11 app, each Add* one to a family's
// parent; its callback runs the command and stores the process exit code in *exit_code (0 ok,
// 1 failure, 2 bad usage). main.cc registers them in the order `neardup --help` lists them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace neardup::cli {

void RegisterBaseline(CLI::App& app, int* exit_code);     // baseline_command.cc
void RegisterGenCrawl(CLI::App& app, int* exit_code);     // gencrawl_command.cc
void RegisterExtract(CLI::App& app, int* exit_code);      // extract_command.cc
// bench (bench_command.cc: docmodel, route) and its workloads, logic in bench/
void RegisterBench(CLI::App& app, int* exit_code);
void AddBenchTier2(CLI::App* bench, int* exit_code);       // bench_tier2_command.cc
void AddBenchStatus(CLI::App* bench, int* exit_code);      // bench_status_command.cc
void AddBenchStatusHttp(CLI::App* bench, int* exit_code);  // bench_status_command.cc
void AddBenchEmail(CLI::App* bench, int* exit_code);       // bench_email_command.cc
void AddBenchEmailThreads(CLI::App* bench, int* exit_code);  // bench_email_command.cc
void RegisterConfig(CLI::App& app, int* exit_code);       // config_command.cc
void RegisterPartition(CLI::App& app, int* exit_code);    // partition build / route (partition_command.cc)
void RegisterRebalance(CLI::App& app, int* exit_code);    // rebalance_command.cc
void RegisterExperiment(CLI::App& app, int* exit_code);   // experiment_command.cc
void RegisterEval(CLI::App& app, int* exit_code);         // eval_command.cc
void RegisterRun(CLI::App& app, int* exit_code);          // run_command.cc
void RegisterCheck(CLI::App& app, int* exit_code);        // check_command.cc
void RegisterAccuracy(CLI::App& app, int* exit_code);     // accuracy_command.cc
void RegisterStatus(CLI::App& app, int* exit_code);       // status_command.cc
void RegisterTier2Server(CLI::App& app, int* exit_code);  // tier2_server_command.cc
void RegisterTier1Server(CLI::App& app, int* exit_code);  // tier1_server_command.cc
void RegisterIngest(CLI::App& app, int* exit_code);       // ingest_command.cc
void RegisterCluster(CLI::App& app, int* exit_code);      // cluster up / scale / down (cluster_command.cc)
void RegisterCerts(CLI::App& app, int* exit_code);        // certs init (certs_command.cc)
void RegisterFaultProxy(CLI::App& app, int* exit_code);   // fault_proxy_command.cc
// email (email_command.cc: induce, annotate, eval, serve) and its families
void RegisterEmail(CLI::App& app, int* exit_code);
void AddEmailThreads(CLI::App* email, int* exit_code);     // threads ingest / show (email_threads_command.cc)
void AddEmailDomains(CLI::App* email, int* exit_code);     // domains ingest / classify / counts (email_domains_command.cc)
void AddEmailGenThreads(CLI::App* email, int* exit_code);  // gen-threads (email_threads_command.cc)
void AddEmailGenDomains(CLI::App* email, int* exit_code);  // gen-domains (email_domains_command.cc)

// neardup status --server (status_command.cc): each URL's answer from the API, a JSON line each;
// the exit code.
int StatusOverHttp(const std::string& server, const std::string& ca_file, const std::vector<std::string>& urls);
// neardup rebalance --server (rebalance_command.cc): starts a rebalance through the API's admin
// endpoint and follows it to its end; the last stdout line is its state as one JSON object. Exit
// code: 0 done, 1 failed, 2 refused (bad request, or one running), 3 the server did not answer.
struct RebalanceOverHttpArgs {
  std::string server, token, ca_file;  // ResolveClusterClient's
  uint32_t shards = 0;
  std::vector<std::string> tier2;
  double max_move = 0.1, max_mb_per_s = 0;
  double min_batch_share = 0;  // 0: the server's pipeline.move_min_batch_share
  bool dry_run = false;
};
int RebalanceOverHttp(const RebalanceOverHttpArgs& a);

}  // namespace neardup::cli
