// `neardup bench status-http`: status queries over loopback HTTP with keep-alive, from N client
// connections on one thread, against a running Tier 1 server; optionally while another thread ingests at full
// speed, and side by side with redis-benchmark's GET against a local redis-server in the same
// minute (the reference figure for a keyed read over the network on this machine).
//
//   neardup bench status-http --server http://127.0.0.1:8080 --input crawl.jsonl [--clients 8]
//       [--seconds 10] [--ingest more.jsonl] [--redis]
//
// An https:// server (a cluster's API; --ca-file names the CA its certificate is checked against)
// is asked by blocking clients instead, a thread and an HttpClient each (--blocking asks a plain
// HTTP server the same way: HTTP against HTTPS with the same client).
//
// Thread safety: RunStatusHttpBench uses its own threads (the clients, the ingest).
#pragma once

#include <cstdint>
#include <string>

namespace neardup::bench {

struct StatusHttpBenchOptions {
  std::string server;   // the API, http://host:port or https://host:port
  std::string input;    // crawl whose URLs are asked about (at random)
  std::string ingest;   // a crawl ingested over and over meanwhile (empty: none)
  std::string ca_file;  // https: the CA the API's certificate is checked against
  bool blocking = false;
  int clients = 8;
  double seconds = 10;
  bool redis = false;
  uint32_t ingest_batch = 1000;
};

// Asks for `seconds` and prints the rate and latencies to stdout. Returns the exit code of `neardup
// bench status-http`: 0; 1 when a request failed or the connections could not be opened; 2 for an
// unreadable or empty input, a bad --server, or clients that could not be made (logged).
int RunStatusHttpBench(const StatusHttpBenchOptions& options);

}  // namespace neardup::bench
