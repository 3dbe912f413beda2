// HTTPS on the crawlers' API: HttpServer with a TLS context, HttpClient over https://, and what
// they refuse (a client that does not trust the server's CA, a certificate for another name, a
// plain HTTP client, a client that never completes its handshake).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "cluster/http/http_access.h"
#include "cluster/http/http_client.h"
#include "cluster/http/http_server.h"
#include "cluster/http/tls.h"
#include "testing/raw_exchange.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

using std::chrono::milliseconds;
using test::TempDir;

// Answers each request with its body's length (so a large body's arrival is seen whole).
HttpHandler LengthHandler() {
  return [](HttpRequest& request) -> boost::asio::awaitable<HttpResponse> {
    co_return JsonResponse(request, 200, "{\"length\":" + std::to_string(request.body().size()) + "}");
  };
}

// Whether the server closed a connection that sent `bytes` (maybe none) within `wait`.
bool ClosedWithin(uint16_t port, const std::string& bytes, milliseconds wait) {
  bool closed = false;
  (void)test::RawExchange(port, bytes, wait, &closed);
  return closed;
}

class HttpsTest : public ::testing::Test {
 protected:
  // A server speaking HTTPS with a member certificate of `certs` (made for `hosts`).
  void Start(const std::vector<std::string>& hosts = {"127.0.0.1", "localhost"},
             const std::function<void(HttpServerOptions*)>& configure = nullptr) {
    ASSERT_TRUE(MakeClusterCertificates(dir_.File("certs"), hosts, 2).ok());
    auto ctx = MakeHttpsServerContext(TlsFiles::InDir(dir_.File("certs")));
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    HttpServerOptions o;
    o.tls = *ctx;
    if (configure) configure(&o);
    auto s = HttpServer::Start(o, LengthHandler());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  std::string Url(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(server_->port());
  }
  std::string Ca() const { return dir_.File("certs") + "/ca.pem"; }
  // Waits (bounded) until the server's open connections fall to `n`.
  bool OpenFallsTo(uint64_t n) const {
    for (int i = 0; i < 300 && server_->stats().open_connections > n; ++i) std::this_thread::sleep_for(milliseconds(10));
    return server_->stats().open_connections <= n;
  }

  TempDir dir_;
  std::unique_ptr<HttpServer> server_;
};

// A client that trusts the cluster's CA is served, requests on one kept-alive connection, a body
// of megabytes whole; a client that trusts only the system's CAs, or another cluster's, is
// refused at the handshake, and so is a plain HTTP client on the HTTPS port.
TEST_F(HttpsTest, AClientThatTrustsTheClustersCaIsServedAndNoOtherIs) {
  Start();
  auto client = HttpClient::Create(Url(), {.timeout = milliseconds(5000), .ca_file = Ca()});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (int i = 0; i < 3; ++i) {
    auto r = (*client)->Request("GET", "/healthz", "");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200u);
  }
  const std::string big(3 << 20, 'x');
  auto r = (*client)->Request("POST", "/v1/pages", big);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "{\"length\":" + std::to_string(big.size()) + "}\n");
  EXPECT_EQ(server_->stats().connections, 1u);  // kept alive over TLS
  EXPECT_EQ(server_->stats().tls_failures, 0u);

  auto system_only = HttpClient::Create(Url(), {.timeout = milliseconds(5000)});
  ASSERT_TRUE(system_only.ok());
  r = (*system_only)->Request("GET", "/healthz", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("certificate"), std::string::npos) << r.status().ToString();

  ASSERT_TRUE(MakeClusterCertificates(dir_.File("other"), {"127.0.0.1"}, 2).ok());
  auto other = HttpClient::Create(Url(), {.timeout = milliseconds(5000), .ca_file = dir_.File("other") + "/ca.pem"});
  ASSERT_TRUE(other.ok());
  r = (*other)->Request("GET", "/healthz", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();

  auto plain = HttpClient::Create("http://127.0.0.1:" + std::to_string(server_->port()), {.timeout = milliseconds(5000)});
  ASSERT_TRUE(plain.ok());
  r = (*plain)->Request("GET", "/healthz", "");
  EXPECT_FALSE(r.ok() && r->status == 200u);
  EXPECT_GE(server_->stats().tls_failures, 3u);  // the three refused handshakes
  EXPECT_EQ(server_->stats().requests, 4u);      // only the trusting client's
  EXPECT_TRUE(OpenFallsTo(1));                   // the trusting client's connection alone stays
}

// The certificate must name the host the client asked for: one made for another name is refused
// although its CA is trusted; the name it carries is served.
TEST_F(HttpsTest, ACertificateForAnotherNameIsRefused) {
  Start({"localhost"});
  auto by_address = HttpClient::Create(Url("127.0.0.1"), {.timeout = milliseconds(5000), .ca_file = Ca()});
  ASSERT_TRUE(by_address.ok());
  auto r = (*by_address)->Request("GET", "/healthz", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  auto by_name = HttpClient::Create(Url("localhost"), {.timeout = milliseconds(5000), .ca_file = Ca()});
  ASSERT_TRUE(by_name.ok());
  r = (*by_name)->Request("GET", "/healthz", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200u);
}

// A connection that never completes its handshake (silent, or plain HTTP bytes) is cut off within
// the read timeout and its slot released; past max_connections a connection is closed before any
// handshake work.
TEST_F(HttpsTest, HandshakesThatNeverEndAreCutOffAndTheLimitHolds) {
  Start({"127.0.0.1"}, [](HttpServerOptions* o) {
    o->read_timeout_ms = 300;
    o->max_connections = 2;
  });
  // The slack: a sanitizer build on a busy machine is slow to notice the timer.
  EXPECT_TRUE(ClosedWithin(server_->port(), "", milliseconds(8000)));
  EXPECT_TRUE(ClosedWithin(server_->port(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", milliseconds(8000)));
  EXPECT_TRUE(OpenFallsTo(0));
  EXPECT_GE(server_->stats().tls_failures, 2u);

  // Two trusting clients hold the two slots; a third connection is closed at once.
  auto a = HttpClient::Create(Url(), {.timeout = milliseconds(5000), .ca_file = Ca()});
  auto b = HttpClient::Create(Url(), {.timeout = milliseconds(5000), .ca_file = Ca()});
  ASSERT_TRUE(a.ok() && b.ok());
  // The idle timeout is the server's default (10 s): both stay connected meanwhile.
  ASSERT_TRUE((*a)->Request("GET", "/", "").ok());
  ASSERT_TRUE((*b)->Request("GET", "/", "").ok());
  const uint64_t refused = server_->stats().refused_connections;
  EXPECT_TRUE(ClosedWithin(server_->port(), "", milliseconds(2000)));
  EXPECT_EQ(server_->stats().refused_connections, refused + 1);
}

// An IPv6 loopback server that answers requests addressed to loopback only: the client names it
// [::1] in its Host header, which the access check takes as loopback (a bare ::1 it did not).
TEST(HttpClientTest, AnIpv6LoopbackServerIsReachedByItsBracketedName) {
  HttpAccessOptions ao;
  ao.loopback_only = true;
  auto access = std::make_shared<HttpAccess>(ao);
  HttpServerOptions o;
  o.listen = "[::1]:0";
  auto server = HttpServer::Start(o, LengthHandler(), [access](const HttpRequest& h) {
    return access->Check(h, HttpAccess::kOpen, 1 << 20);
  });
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << server.status().ToString();
  auto client = HttpClient::Create("http://[::1]:" + std::to_string((*server)->port()), {.timeout = milliseconds(5000)});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto r = (*client)->Request("GET", "/healthz", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200u) << r->body;
  (*server)->Stop();
}

// A server that refuses a request on its header (401 without the token) answers and closes
// before the client has sent its body: the client's write fails, and it returns the answer
// rather than a broken connection (a writer without its token was retried for minutes as if
// the server were down). Over plain HTTP and HTTPS.
TEST(HttpClientTest, AnAnswerGivenBeforeTheBodyWasReadIsReturned) {
  TempDir dir;
  ASSERT_TRUE(MakeClusterCertificates(dir.File("certs"), {"127.0.0.1"}, 2).ok());
  auto ctx = MakeHttpsServerContext(TlsFiles::InDir(dir.File("certs")));
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  for (const bool tls : {false, true}) {
    SCOPED_TRACE(tls ? "https" : "http");
    HttpServerOptions o;
    if (tls) o.tls = *ctx;
    auto server = HttpServer::Start(o, LengthHandler(), [](const HttpRequest& h) {
      HeaderVerdict v;
      if (h.find(boost::beast::http::field::authorization) == h.end()) v.refuse = JsonResponse(h, 401, R"({"error":"no token"})");
      return v;
    });
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    const std::string url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string((*server)->port());
    auto client = HttpClient::Create(url, {.timeout = milliseconds(5000), .ca_file = tls ? dir.File("certs") + "/ca.pem" : ""});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    const auto start = std::chrono::steady_clock::now();
    auto r = (*client)->Request("POST", "/v1/pages", std::string(16 << 20, 'x'));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 401u) << r->body;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
    // The client goes on, on a new connection.
    r = (*client)->Request("POST", "/v1/pages", "{}", {{"Authorization", "Bearer t"}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200u) << r->body;
    (*server)->Stop();
  }
}

TEST(HttpClientTest, UrlsAndCaFilesAreChecked) {
  EXPECT_EQ(HttpClient::Create("ftp://127.0.0.1:1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpClient::Create("http://127.0.0.1:1", {.ca_file = "/nonexistent/ca.pem"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpClient::Create("https://127.0.0.1:1", {.ca_file = "/nonexistent/ca.pem"}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(HttpClient::Create("https://127.0.0.1:1").ok());
}

}  // namespace
}  // namespace neardup::cluster
