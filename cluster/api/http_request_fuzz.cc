// libFuzzer target: any bytes, read as HTTP requests on one kept-alive connection the way the
// crawlers' API reads them (cluster/http/http_server.h's limits on header and body), then:
//   1. what the API reads of each request (cluster/http/http_request.h): the url parameter of its
//      target and, for a body, the ingest check. Whatever the bytes, parsing refuses or succeeds;
//      an accepted body's records each parse again, one per line, and their URLs are absolute
//      http(s) URLs.
//   2. the real handlers: each request goes to HttpApi::Handle over a Tier1Service on a store of
//      its own (the sample crawl's map, the email endpoints with their three stores mounted, no
//      token, so that the writers are reached too). No handler may throw (an exception there
//      used to skip a connection's release: cluster/http/http_server.cc), and every answer is a status
//      code the API documents with, for a JSON answer, a body that parses as JSON.
// The service's batch loop decides what the fuzzer ingests in the background; its backlog is
// kept small (429 past it), so a long run does not fill the disk.
//
//   scripts/fuzz.sh 60        (builds build-fuzz/ with clang, runs every fuzz target for 60 s)
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "cluster/email_api/email_api.h"
#include "cluster/api/http_api.h"
#include "cluster/http/http_request.h"
#include "common/config.h"
#include "document/crawl_reader.h"
#include "pipeline/pipeline.h"

// As in http_api.cc: g++ at -O1 takes a coroutine frame's Asio new/delete pair for a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using neardup::cluster::HttpApi;
using neardup::cluster::HttpRequest;
using neardup::cluster::HttpResponse;

void Check(bool ok) {
  if (!ok) std::abort();  // a broken invariant: libFuzzer reports it with the input
}

// What the API reads of one parsed request, apart from the service.
void Read(const HttpRequest& request) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string url = neardup::cluster::QueryParam(target, "url");
  Check(url.size() <= target.size());
  std::string lines;
  std::vector<std::pair<std::string, uint64_t>> urls;
  const neardup::Status s = neardup::cluster::CheckIngestBody(request.body(), 64 << 10, &lines, &urls);
  if (!s.ok()) {
    Check(lines.empty() && urls.empty() && s.message().rfind("line ", 0) == 0);
    return;
  }
  uint64_t at = 0;
  neardup::CrawlRecord r;
  for (const auto& [u, end] : urls) {
    Check(end > at && end <= lines.size() && lines[end - 1] == '\n');
    const std::string_view line(lines.data() + at, end - at - 1);
    Check(neardup::ParseCrawlRecord(line, &r).ok() && r.url == u && neardup::IsAbsoluteHttpUrl(u));
    at = end;
  }
  Check(at == lines.size());
}

// The service, its email endpoints and the API, made once for the process, on a temporary
// directory removed at exit.
struct Served {
  std::string dir;
  std::unique_ptr<neardup::cluster::Tier1Service> service;
  std::unique_ptr<neardup::cluster::EmailApi> email;
  std::unique_ptr<HttpApi> api;

  ~Served() {
    if (service) service->Stop();
    if (api) api->Stop();
    if (email) (void)email->Stop();
    api.reset();
    email.reset();
    service.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

void Fail(const std::string& what) {
  spdlog::critical("http_request_fuzz: {}", what);
  std::abort();
}

Served* Serve() {
  static Served* served = [] {
    spdlog::set_level(spdlog::level::off);
    auto* s = new Served;
    std::string tmpl = (std::filesystem::temp_directory_path() / "neardup-http-fuzz-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) Fail("cannot make a temporary directory");
    s->dir = tmpl;
    std::atexit([] { delete served; });
    // The sample crawl's map, from an embedded run.
    neardup::pipeline::PipelineOptions run;
    run.input = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl";
    run.store = s->dir + "/sample-store";
    run.groups_out = s->dir + "/sample-groups.jsonl";
    run.config = neardup::DefaultConfig();
    run.config.mutable_pipeline()->set_shards(2);
    run.config.mutable_tier1()->set_sync(false);
    run.config.mutable_tier2()->set_sync(false);
    run.batch_pages = 100;
    run.progress = false;
    if (auto r = neardup::pipeline::RunPipeline(run); !r.ok()) Fail("sample run: " + r.status().ToString());
    neardup::cluster::Tier1ServiceOptions o;
    o.config = neardup::DefaultConfig();
    o.config.mutable_tier1()->set_sync(false);
    o.config.mutable_tier2()->set_sync(false);
    o.batch_pages = 100;
    auto* c = o.config.mutable_tier1_server();
    c->set_store(s->dir + "/svc");
    c->set_map(run.store + "/map.pb");
    c->set_sync(false);
    c->set_linger_ms(20);
    c->set_max_backlog_bytes(1 << 20);
    auto svc = neardup::cluster::Tier1Service::Open(o);
    if (!svc.ok()) Fail("service: " + svc.status().ToString());
    s->service = std::move(*svc);
    neardup::cluster::HttpApiOptions ao = HttpApi::OptionsFrom(o.config, "", "", true);
    ao.work_threads = 1;
    s->api = std::make_unique<HttpApi>(s->service.get(), ao);
    auto e = neardup::cluster::EmailApi::Open({.config = o.config.email(),
                                               .store = s->dir + "/email",
                                               .bearer_token = "",
                                               .work_threads = 1,
                                               .threads_store = s->dir + "/threads",
                                               .domains_store = s->dir + "/domains",
                                               .max_records = 1000});
    if (!e.ok()) Fail("email API: " + e.status().ToString());
    s->email = std::move(*e);
    s->api->set_email(s->email.get());
    return s;
  }();
  return served;
}

// Runs the real handler on one request, on an io_context of this thread (its pool's work comes
// back to it), and checks the answer.
void Handle(HttpRequest request) {
  Served* s = Serve();
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  bool done = false;
  HttpResponse response;
  asio::co_spawn(io, s->api->Handle(request), [&](std::exception_ptr e, HttpResponse r) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        Fail(std::string("a handler threw: ") + x.what());
      } catch (...) {
        Fail("a handler threw");
      }
    }
    response = std::move(r);
    done = true;
    guard.reset();
  });
  io.run();
  Check(done);
  const unsigned code = response.result_int();
  Check(code >= 200 && code < 600);
  const auto type = response.find(http::field::content_type);
  if (type != response.end() && type->value() == "application/json") {
    simdjson::dom::parser p;
    simdjson::dom::element root;
    // An answer is one JSON document, or JSON Lines (the email annotations): the first line parses.
    std::string_view body = response.body();
    body = body.substr(0, body.find('\n'));
    if (!body.empty() && p.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) {
      Fail("not JSON: " + std::string(body.substr(0, 200)));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  beast::flat_buffer buffer;
  {
    auto b = buffer.prepare(size);
    if (size > 0) std::memcpy(b.data(), data, size);
    buffer.commit(size);
  }
  // Requests one after another, as keep-alive brings them, until the bytes end or one is bad.
  for (int i = 0; i < 16 && buffer.size() > 0; ++i) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16384);
    parser.body_limit(1 << 20);
    parser.eager(true);
    beast::error_code ec;
    size_t used = 0;
    while (!parser.is_done() && buffer.size() > 0) {
      const size_t n = parser.put(buffer.data(), ec);
      buffer.consume(n);
      used += n;
      if (ec == http::error::need_more) {
        ec = {};
        break;  // the connection would wait for more (and time out)
      }
      if (ec || n == 0) break;
    }
    if (ec || !parser.is_done()) return 0;  // answered 400/413/431 and closed, or still waiting
    Read(parser.get());
    Handle(parser.release());
    if (used == 0) return 0;
  }
  return 0;
}
