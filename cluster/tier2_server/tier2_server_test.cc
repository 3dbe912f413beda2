// A Tier 2 server against clients that misbehave: raw TCP clients send bad headers, garbage, a
// truncated frame, a body that is not a message, half a header, or nothing at all, while a
// well-behaved client (a RemoteShardSet) keeps calling the same server on another connection.
//
// What the server does with each (tier2_server.h):
//   - a header it refuses (bad magic, version, type or flags, a length over the type's maximum),
//     garbage, a frame that is not a request, a body that does not parse: the connection is closed
//     at once, nothing is answered;
//   - a frame cut short by the peer closing: the connection is closed;
//   - half a frame, then silence: closed after stall_timeout_ms;
//   - nothing at all, or nothing after a complete frame: kept open until idle_timeout_ms;
//   - a request that parses but asks for nothing the server does: answered with its error, and the
//     connection stays usable.
// Meanwhile the well-behaved client's calls are all answered, in time.
#include "common/clock.h"
#include "cluster/tier2_server/tier2_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "cluster/tier2_server/frame.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "cluster/tier2_server/tier2_service.h"
#include "cluster/tier2_server/tier2_messages.h"
#include "common/coding.h"
#include "common/config.h"
#include "proto/cluster.pb.h"
#include "testing/signatures.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint32_t kStallMs = 400;
constexpr uint32_t kIdleMs = 1500;
// A close the server decides on comes within its timeout plus this (a loaded machine, sanitizers).
constexpr milliseconds kSlack(1500);

// A frame header with the given fields, whatever they are.
std::string Header(uint16_t version, uint16_t type, uint16_t flags, uint32_t length) {
  std::string h(kFrameHeaderBytes, '\0');
  h[0] = 'N';
  h[1] = 'D';
  StoreBigEndian(h.data() + 2, version, 2);
  StoreBigEndian(h.data() + 4, type, 2);
  StoreBigEndian(h.data() + 6, flags, 2);
  StoreBigEndian(h.data() + 8, length, 4);
  return h;
}
std::string RequestHeader(uint32_t length) {
  return Header(kProtocolVersion, static_cast<uint16_t>(MessageType::kTier2Request), 0, length);
}

std::string Frame(const pb::Tier2Request& q) {
  std::string f;
  EXPECT_TRUE(EncodeFrame(MessageType::kTier2Request, q, &f).ok());
  return f;
}
pb::Tier2Request CommittedBatchRequest(uint64_t id) {
  pb::Tier2Request q;
  q.set_id(id);
  q.set_shard(0);
  q.set_committed_batch(true);
  return q;
}

// The process's peak resident memory, in bytes (VmHWM).
uint64_t PeakRss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// A raw TCP client whose every wait is bounded.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : socket_(io_) {
    boost::system::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  void Send(std::string_view bytes) {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
    EXPECT_FALSE(ec) << ec.message();
  }
  // Half-closes: the server reads the end of the stream.
  void ShutdownSend() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
  }

  // Reads `n` bytes into *out. Ok; Unavailable when the server closes first; DeadlineExceeded
  // after `timeout` (the connection is then not to be read again).
  Status Read(size_t n, milliseconds timeout, std::string* out) {
    out->assign(n, '\0');
    boost::system::error_code result = asio::error::would_block;
    asio::async_read(socket_, asio::buffer(*out), [&](const boost::system::error_code& ec, size_t) { result = ec; });
    io_.restart();
    io_.run_for(timeout);
    if (result == asio::error::would_block) {
      socket_.cancel();
      io_.restart();
      io_.run();
      return DeadlineExceeded("no " + std::to_string(n) + " bytes in time");
    }
    if (result) return Unavailable(result.message());
    return Status::Ok();
  }

  // The answer to one request.
  StatusOr<pb::Tier2Response> ReadResponse(milliseconds timeout = milliseconds(5000)) {
    std::string header, body;
    RETURN_IF_ERROR(Read(kFrameHeaderBytes, timeout, &header));
    ASSIGN_OR_RETURN(FrameHeader h, DecodeFrameHeader(header.data()));
    if (h.type != MessageType::kTier2Response) return Corruption("not a response");
    RETURN_IF_ERROR(Read(h.length, timeout, &body));
    pb::Tier2Response r;
    RETURN_IF_ERROR(DecodeFrameBody(h, body, &r));
    return r;
  }

  // Whether the server closes the connection (end of stream or reset) within `timeout`, with
  // nothing sent before; *took: how long it took.
  bool ClosedWithin(milliseconds timeout, Clock::duration* took = nullptr) {
    const auto start = Clock::now();
    std::string byte;
    const Status s = Read(1, timeout, &byte);
    if (took != nullptr) *took = Clock::now() - start;
    EXPECT_NE(s.code(), StatusCode::kOk) << "the server sent something";
    return s.code() == StatusCode::kUnavailable;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

class Tier2ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  // The server (with `configure`'s changes to its options) and the well-behaved client.
  void Start(const std::function<void(Tier2ServerOptions*)>& configure = nullptr, const TlsFiles& client_tls = {}) {
    Tier2ServerOptions so;
    so.store = dir_.File("tier2");
    so.stall_timeout_ms = kStallMs;
    so.idle_timeout_ms = kIdleMs;
    if (configure) configure(&so);
    auto s = Tier2Server::Start(so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    RemoteShardSetOptions remote;
    remote.servers = {"127.0.0.1:" + std::to_string(server_->port())};
    remote.connect_timeout_ms = 2000;
    remote.call_timeout_ms = 5000;
    remote.tls = client_tls;
    pipeline::ShardSetOptions options;
    options.config = DefaultConfig();
    options.config.mutable_tier2()->set_sync(false);
    options.shards = 1;
    auto set = OpenRemoteShardSet(remote, options);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    set_ = std::move(*set);
    // The well-behaved client: a call every few milliseconds for the whole test.
    good_ = std::thread([this] {
      while (!done_.load()) {
        const auto start = Clock::now();
        auto r = set_->CommittedBatch(0);
        const auto took = Clock::now() - start;
        if (r.ok()) good_calls_.fetch_add(1);
        else bad_calls_.fetch_add(1);
        if (took > slowest_.load()) slowest_.store(took);
        std::this_thread::sleep_for(milliseconds(5));
      }
    });
  }
  void TearDown() override {
    // Still answered after all the misbehaving clients of the test.
    if (good_.joinable()) {
      const int before = good_calls_.load();
      for (int i = 0; i < 500 && good_calls_.load() < before + 3; ++i) std::this_thread::sleep_for(milliseconds(10));
      EXPECT_GE(good_calls_.load(), before + 3);
    }
    done_.store(true);
    if (good_.joinable()) good_.join();
    EXPECT_GT(good_calls_.load(), 0);
    EXPECT_EQ(bad_calls_.load(), 0);
    EXPECT_LT(slowest_.load(), Clock::duration(kSlack));
  }

  uint16_t port() const { return server_->port(); }

  test::TempDir dir_;
  std::unique_ptr<Tier2Server> server_;
  std::unique_ptr<pipeline::ShardSet> set_;
  std::thread good_;
  std::atomic<bool> done_{false};
  std::atomic<int> good_calls_{0}, bad_calls_{0};
  std::atomic<Clock::duration> slowest_{Clock::duration::zero()};
};

// Reads that answer at once are served by TryHandleRead (on a network thread); everything else is
// left to Handle (the work pool), the request untouched.
TEST(Tier2Service, ReadsAnswerAtOnceAndTheRestIsLeftForThePool) {
  test::TempDir dir;
  Tier2Service service(dir.File("t2"));
  pb::Tier2Request q;
  q.set_id(3);
  q.set_committed_batch(true);
  auto r = service.TryHandleRead(q);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id(), 3u);
  EXPECT_EQ(static_cast<StatusCode>(r->code()), StatusCode::kFailedPrecondition) << r->message();  // nothing open
  q.Clear();
  q.set_id(4);
  q.set_get("http://a.example/");
  q.set_deadline_unix_ms(1);  // long past
  r = service.TryHandleRead(q);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(static_cast<StatusCode>(r->code()), StatusCode::kDeadlineExceeded) << r->message();
  q.Clear();
  q.set_id(5);
  q.set_commit(true);
  EXPECT_FALSE(service.TryHandleRead(q).has_value());
  EXPECT_TRUE(q.commit());  // still the caller's
  q.Clear();
  q.mutable_compare()->set_threshold(0.9);
  EXPECT_FALSE(service.TryHandleRead(q).has_value());
  EXPECT_EQ(q.compare().threshold(), 0.9);
}

// The deadline is measured on the service's clock: a request whose deadline is past by that
// clock stops at once, one in its future compares as usual.
TEST(Tier2Service, ARequestsDeadlineIsMeasuredOnTheServicesClock) {
  test::TempDir dir;
  ManualClock clock(1'800'000'000'000);
  Tier2Service service(dir.File("t2"), &clock);
  pb::Tier2Request q;
  q.set_id(1);
  *q.mutable_open()->mutable_config() = ConfigDefaults();
  q.mutable_open()->mutable_config()->mutable_tier2()->set_sync(false);
  q.mutable_open()->set_shards(1);
  ASSERT_EQ(service.Handle(q).code(), 0u);
  std::vector<uint64_t> text(20);
  for (size_t i = 0; i < text.size(); ++i) text[i] = 1000 + i * 7919;
  q.Clear();
  pb::ShardPageMsg* a = q.mutable_stage()->add_pages();
  *a->mutable_signature() = test::SignatureOf("http://a/", text);
  a->set_home(true);
  ASSERT_EQ(service.Handle(q).code(), 0u);
  q.Clear();
  q.mutable_apply()->set_batch(1);
  ASSERT_EQ(service.Handle(q).code(), 0u);
  auto compare = [&](int64_t deadline_unix_ms) {
    pb::Tier2Request c;
    c.mutable_compare()->set_threshold(0.9);
    *c.mutable_compare()->add_pages()->mutable_signature() = test::SignatureOf("http://b/", text);
    c.set_deadline_unix_ms(deadline_unix_ms);
    return service.Handle(c);
  };
  // A second past, by the service's clock (the machine's is years behind it).
  pb::Tier2Response r = compare(clock.NowMillis() - 1000);
  EXPECT_EQ(static_cast<StatusCode>(r.code()), StatusCode::kDeadlineExceeded) << r.message();
  r = compare(clock.NowMillis() + 60'000);
  EXPECT_EQ(r.code(), 0u) << r.message();
  EXPECT_EQ(r.compare().resident_size(), 1) << r.DebugString();  // b's copy, a
}

// A compare whose request's deadline passes while the shard works stops there: the service
// answers DeadlineExceeded at about the deadline, not once the work would have ended, and answers
// the next request as usual.
TEST(Tier2Service, ACompareStopsAtItsRequestsDeadline) {
  test::TempDir dir;
  Tier2Service service(dir.File("t2"));
  pb::Tier2Request q;
  q.set_id(1);
  *q.mutable_open()->mutable_config() = ConfigDefaults();
  // Every pair: a crowd of copies costs a compare the whole crowd.
  q.mutable_open()->mutable_config()->mutable_tier2()->set_max_matches_per_page(0);
  q.mutable_open()->mutable_config()->mutable_tier2()->set_sync(false);
  q.mutable_open()->set_shards(1);
  pb::Tier2Response r = service.Handle(q);
  ASSERT_EQ(r.code(), 0u) << r.message();
  std::vector<uint64_t> text(20);
  for (size_t i = 0; i < text.size(); ++i) text[i] = 1000 + i * 7919;
  auto copies = [&](const std::string& prefix, int n, google::protobuf::RepeatedPtrField<pb::ShardPageMsg>* out) {
    for (int i = 0; i < n; ++i) {
      pb::ShardPageMsg* m = out->Add();
      *m->mutable_signature() = test::SignatureOf(prefix + std::to_string(i), text);
      m->set_home(true);
    }
  };
  q.Clear();
  copies("http://copy/", 4000, q.mutable_stage()->mutable_pages());
  ASSERT_EQ(service.Handle(q).code(), 0u);
  q.Clear();
  q.mutable_apply()->set_batch(1);
  ASSERT_EQ(service.Handle(q).code(), 0u);

  q.Clear();
  q.mutable_compare()->set_threshold(0.9);
  copies("http://b/", 1000, q.mutable_compare()->mutable_pages());  // 4M verifications, 500k merges
  const auto t0 = Clock::now();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  q.set_deadline_unix_ms(std::chrono::duration_cast<milliseconds>(now).count() + 100);
  r = service.Handle(q);
  EXPECT_EQ(static_cast<StatusCode>(r.code()), StatusCode::kDeadlineExceeded) << r.message();
  EXPECT_NE(r.message().find("passed its deadline"), std::string::npos) << r.message();
  EXPECT_EQ(r.compare().resident_size(), 0);
  EXPECT_LT(Clock::now() - t0, milliseconds(100) + kSlack);

  q.Clear();
  q.set_stats(true);
  r = service.Handle(q);
  ASSERT_EQ(r.code(), 0u) << r.message();
  EXPECT_EQ(r.stats().resident_pages(), 4000u);
}

TEST(Tier2Server, TimeoutsOfZeroAreRefused) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  so.stall_timeout_ms = 0;
  EXPECT_EQ(Tier2Server::Start(so).status().code(), StatusCode::kInvalidArgument);
  so.stall_timeout_ms = 1000;
  so.idle_timeout_ms = 0;
  EXPECT_EQ(Tier2Server::Start(so).status().code(), StatusCode::kInvalidArgument);
}

// Closed at once: long before the stall timeout.
TEST_F(Tier2ServerTest, RefusedHeadersCloseTheConnectionAtOnce) {
  const uint16_t request = static_cast<uint16_t>(MessageType::kTier2Request);
  const std::pair<std::string, std::string> cases[] = {
      {"a length over the type's maximum", RequestHeader(MaxBodyBytes(MessageType::kTier2Request) + 1)},
      {"the largest length", RequestHeader(0xffffffffu)},
      {"a version from the future", Header(kProtocolVersion + 1, request, 0, 4)},
      {"version 0", Header(0, request, 0, 4)},
      {"an unknown type", Header(kProtocolVersion, 9, 0, 4)},
      {"a response sent to the server", Header(kProtocolVersion, static_cast<uint16_t>(MessageType::kTier2Response), 0, 0)},
      {"flags set", Header(kProtocolVersion, request, 1, 4)},
      {"an HTTP request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
  };
  for (const auto& [what, bytes] : cases) {
    SCOPED_TRACE(what);
    const uint64_t refused = server_->stats().refused_frames;
    RawClient c(port());
    c.Send(bytes);
    EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));
    // Closed as a refusal of its header (counted before the close), not by the stall timeout:
    // what the time alone cannot tell on a loaded machine.
    EXPECT_EQ(server_->stats().refused_frames, refused + 1);
  }
}

TEST_F(Tier2ServerTest, GarbageClosesTheConnection) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 8; ++round) {
    std::string garbage(100 + round * 500, '\0');
    for (char& b : garbage) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b = static_cast<char>(x);
    }
    garbage[0] = 'X';  // never the magic
    RawClient c(port());
    c.Send(garbage);
    EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack)) << "round " << round;
  }
}

TEST_F(Tier2ServerTest, BodyThatIsNotAMessageClosesTheConnection) {
  RawClient c(port());
  const std::string body(40, '\xff');  // a varint that never ends
  c.Send(RequestHeader(static_cast<uint32_t>(body.size())) + body);
  EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));
}

// A frame that parses but carries no step, or a shard the server does not hold, is answered with
// its error; the connection goes on.
TEST_F(Tier2ServerTest, RequestsTheServerCannotServeAreAnsweredWithTheirError) {
  RawClient c(port());
  c.Send(RequestHeader(0));  // an empty body: a request without a step
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(static_cast<StatusCode>(r->code()), StatusCode::kInvalidArgument) << r->message();
  pb::Tier2Request q = CommittedBatchRequest(7);
  q.set_shard(5);
  c.Send(Frame(q));
  r = c.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id(), 7u);
  EXPECT_NE(r->code(), 0u);
  c.Send(Frame(CommittedBatchRequest(8)));
  r = c.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id(), 8u);
  EXPECT_EQ(r->code(), 0u) << r->message();
}

// The peer closes in the middle of a frame: the server closes its side. A header that claims the
// type's whole maximum makes it reserve only what has arrived.
TEST_F(Tier2ServerTest, TruncatedFramesCloseTheConnectionWithoutReservingTheirLength) {
  const uint64_t rss_before = PeakRss();
  const std::string frame = Frame(CommittedBatchRequest(1));
  for (size_t cut : {size_t{1}, size_t{6}, kFrameHeaderBytes, frame.size() - 1}) {
    SCOPED_TRACE("cut after " + std::to_string(cut));
    RawClient c(port());
    c.Send(std::string_view(frame).substr(0, cut));
    c.ShutdownSend();
    EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));
  }
  std::vector<std::unique_ptr<RawClient>> huge;
  for (int i = 0; i < 4; ++i) {
    huge.push_back(std::make_unique<RawClient>(port()));
    huge.back()->Send(RequestHeader(MaxBodyBytes(MessageType::kTier2Request)) + std::string(1000, '\x01'));
  }
  std::this_thread::sleep_for(milliseconds(kStallMs / 2));  // the server has read what came
  for (auto& c : huge) c->ShutdownSend();
  for (auto& c : huge) EXPECT_TRUE(c->ClosedWithin(milliseconds(kStallMs) + kSlack));
  // Four frames of 1 GiB announced: had the server reserved them it would have grown by 4 GiB.
  EXPECT_LT(PeakRss() - rss_before, uint64_t{256} << 20);
}

// Half a frame, then silence: closed after the stall timeout, the others served meanwhile.
TEST_F(Tier2ServerTest, StalledFramesAreClosedAfterTheStallTimeout) {
  const std::string frame = Frame(CommittedBatchRequest(1));
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (size_t cut : {size_t{1}, size_t{5}, kFrameHeaderBytes, frame.size() - 1}) {
    stalled.push_back(std::make_unique<RawClient>(port()));
    stalled.back()->Send(std::string_view(frame).substr(0, cut));
  }
  // A complete frame, then half of the next.
  stalled.push_back(std::make_unique<RawClient>(port()));
  stalled.back()->Send(frame + frame.substr(0, 3));
  ASSERT_TRUE(stalled.back()->ReadResponse().ok());
  // The type's whole maximum announced, a little sent.
  stalled.push_back(std::make_unique<RawClient>(port()));
  stalled.back()->Send(RequestHeader(MaxBodyBytes(MessageType::kTier2Request)) + std::string(5000, '\x01'));
  const auto start = Clock::now();
  for (auto& c : stalled) {
    EXPECT_TRUE(c->ClosedWithin(milliseconds(kStallMs) + kSlack));
  }
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(kStallMs) - milliseconds(100));  // not closed before the stall timeout
  EXPECT_LT(took, milliseconds(kIdleMs));                       // not left for the idle timeout
}

// A connection with no frame begun is idle: kept past the stall timeout, closed after the idle one.
TEST_F(Tier2ServerTest, IdleConnectionsAreKeptUntilTheIdleTimeout) {
  RawClient silent(port());
  RawClient between(port());  // idle after a complete exchange
  between.Send(Frame(CommittedBatchRequest(1)));
  ASSERT_TRUE(between.ReadResponse().ok());
  const auto start = Clock::now();
  std::this_thread::sleep_for(milliseconds(kStallMs * 2));
  // `between` is still served on the same connection, and is idle again from its answer.
  between.Send(Frame(CommittedBatchRequest(2)));
  auto r = between.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id(), 2u);
  EXPECT_TRUE(silent.ClosedWithin(milliseconds(kIdleMs) + kSlack));
  EXPECT_GE(Clock::now() - start, milliseconds(kIdleMs) - milliseconds(100));
  EXPECT_TRUE(between.ClosedWithin(milliseconds(kIdleMs) + kSlack));
}

// Many misbehaving connections at once do not hold up the well-behaved client, and Stop closes
// them all at once.
TEST_F(Tier2ServerTest, ManyStalledConnectionsAndStop) {
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 32; ++i) {
    stalled.push_back(std::make_unique<RawClient>(port()));
    if (i % 2 == 0) stalled.back()->Send(RequestHeader(100));
  }
  std::this_thread::sleep_for(milliseconds(kStallMs / 2));
  const int calls = good_calls_.load();
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_GT(good_calls_.load(), calls);  // answered while 32 connections hang on
  done_.store(true);
  good_.join();
  const auto start = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  for (auto& c : stalled) EXPECT_TRUE(c->ClosedWithin(milliseconds(1000)));
}

}  // namespace
}  // namespace neardup::cluster

namespace neardup::cluster {
namespace {

// An OpenShards that asks for more shards than a store can have, or to serve a shard outside the
// store or twice, is answered with its error, logged, and changes nothing: the shards open stay
// open (the well-behaved client's calls go on; TearDown checks that none failed). It used to
// close every shard first, then fail.
TEST_F(Tier2ServerTest, AnOpenOutsideAStoresShapeIsRefusedAndTheOpenShardsStay) {
  RawClient c(port());
  uint64_t id = 100;
  auto open = [&](uint32_t shards, std::vector<uint32_t> serve) {
    pb::Tier2Request q;
    q.set_id(++id);
    pb::OpenShardsRequest* o = q.mutable_open();
    *o->mutable_config() = DefaultConfig();
    o->set_shards(shards);
    for (uint32_t m : serve) o->add_serve(m);
    c.Send(Frame(q));
    auto r = c.ReadResponse();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? static_cast<StatusCode>(r->code()) : StatusCode::kInternal;
  };
  EXPECT_EQ(open(0xffffffffu, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(open(0, {}), StatusCode::kInvalidArgument);
  EXPECT_EQ(open(4, {4}), StatusCode::kInvalidArgument);
  EXPECT_EQ(open(4, {1, 1}), StatusCode::kInvalidArgument);
  std::vector<uint32_t> many(2000, 0);
  EXPECT_EQ(open(1024, many), StatusCode::kInvalidArgument);
  c.Send(Frame(CommittedBatchRequest(7)));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->code(), 0u) << r->message();  // shard 0 still open
}

class Tier2ServerCapsTest : public Tier2ServerTest {
 protected:
  void SetUp() override {
    Start([](Tier2ServerOptions* o) {
      o->max_connections = 4;
      o->max_request_bytes = 1 << 20;
      o->max_inflight_bytes = (3 << 20) / 2;
    });
  }
};

// A frame over max_request_bytes is refused on its header; two frames that together would pass
// max_inflight_bytes cannot both be held: the second connection is closed. The memory a peer can
// make the server hold is the configuration's, not the peer's.
TEST_F(Tier2ServerCapsTest, RequestsOverTheirBytesAreRefusedOnTheHeader) {
  {
    RawClient c(port());
    c.Send(RequestHeader((1 << 20) + 1));
    EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));
  }
  RawClient first(port());
  first.Send(RequestHeader(1 << 20) + std::string(1000, 'x'));  // held: 1 MiB of the 1.5
  // (The well-behaved client's small requests come and go in the count too.)
  for (int i = 0; i < 400 && server_->stats().inflight_bytes < (uint64_t{1} << 20); ++i) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_GE(server_->stats().inflight_bytes, uint64_t{1} << 20);
  EXPECT_LT(server_->stats().inflight_bytes, (uint64_t{1} << 20) + 4096);
  const uint64_t refused = server_->stats().refused_frames;
  RawClient second(port());
  second.Send(RequestHeader(1 << 20));
  EXPECT_TRUE(second.ClosedWithin(milliseconds(kStallMs) + kSlack));
  EXPECT_EQ(server_->stats().refused_frames, refused + 1);  // refused on its header, not closed by the stall timeout
  EXPECT_TRUE(first.ClosedWithin(milliseconds(kStallMs) + kSlack));  // its stall
  for (int i = 0; i < 400 && server_->stats().inflight_bytes >= 4096; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_LT(server_->stats().inflight_bytes, 4096u);  // released when its connection closed
  EXPECT_GE(server_->stats().refused_frames, 2u);
}

// The process's resident memory (kB) from /proc/self/status: VmRSS, or VmHWM (its peak).
uint64_t StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return 0;
}

// A frame's body is read into one buffer of its length, never copied as it grows: the server's
// memory rises by what the peer sent, not by half as much again (a buffer that doubled as the
// bytes came would hold the old and the new at once). The server runs in this process: its peak
// resident memory (VmHWM, reset before the frame) tells.
TEST_F(Tier2ServerTest, AFramesBodyIsHeldOnceNotCopiedAsItGrows) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' allocators keep freed memory and shadow it: resident memory tells nothing here";
#endif
  constexpr uint32_t kBody = 48u << 20;
  const std::string frame = RequestHeader(kBody) + std::string(kBody, '\x01');  // resident before the reset
  if (!(std::ofstream("/proc/self/clear_refs") << "5").good() || StatusKb("VmHWM") == 0) {
    GTEST_SKIP() << "the peak resident memory cannot be reset here (/proc/self/clear_refs)";
  }
  const uint64_t before = StatusKb("VmHWM");
  RawClient c(port());
  c.Send(frame);
  EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));  // not a request: refused once read
  const uint64_t grew_mib = (StatusKb("VmHWM") - before) >> 10;
  EXPECT_GE(grew_mib, 40u);  // the body was held (else the test measures nothing)
  EXPECT_LE(grew_mib, 56u) << "a 48 MiB frame made the server's peak grow by " << grew_mib << " MiB";
}

// Past max_connections, a new connection is closed at once; the ones open are served.
TEST_F(Tier2ServerCapsTest, ConnectionsPastTheCapAreClosed) {
  // The well-behaved client holds one; three more fill the cap.
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(port()));
  for (int i = 0; i < 200 && server_->stats().open_connections < 4; ++i) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(server_->stats().open_connections, 4u);
  RawClient extra(port());
  EXPECT_TRUE(extra.ClosedWithin(milliseconds(kStallMs) + kSlack));
  EXPECT_GE(server_->stats().refused_connections, 1u);
  held[0]->Send(Frame(CommittedBatchRequest(9)));
  auto r = held[0]->ReadResponse();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->id(), 9u);
}

// A comparison's answer from a peer is checked before the batch loop indexes with it.
TEST(Tier2Service, ACompareAnswerNamingPagesOutsideTheBatchIsRefused) {
  pb::CompareResponse m;
  tier2::CompareResult out;
  m.add_resident()->set_page(2);
  m.mutable_resident(0)->set_similarity(0.95);
  EXPECT_TRUE(FromMessage(m, 3, &out).ok());
  EXPECT_EQ(out.resident.size(), 1u);
  EXPECT_EQ(FromMessage(m, 2, &out).code(), StatusCode::kCorruption);
  EXPECT_TRUE(out.resident.empty());
  m.mutable_resident(0)->set_similarity(std::nan(""));
  EXPECT_EQ(FromMessage(m, 3, &out).code(), StatusCode::kCorruption);
  m.clear_resident();
  pb::BatchMatchMsg* b = m.add_in_batch();
  b->set_a(1);
  b->set_b(1);
  b->set_similarity(1);
  EXPECT_EQ(FromMessage(m, 3, &out).code(), StatusCode::kCorruption);
  b->set_a(0);
  EXPECT_TRUE(FromMessage(m, 3, &out).ok());
  b->set_b(0xffffffffu);
  EXPECT_EQ(FromMessage(m, 3, &out).code(), StatusCode::kCorruption);
  m.clear_in_batch();
  m.add_superseded(3);
  EXPECT_EQ(FromMessage(m, 3, &out).code(), StatusCode::kCorruption);
  m.clear_superseded();
  m.add_empty(7);
  EXPECT_EQ(FromMessage(m, 3, &out).code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace neardup::cluster

namespace neardup::cluster {
namespace {

// The cluster's certificates (neardup certs init), and another cluster's.
class Tier2ServerTlsTest : public Tier2ServerTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeClusterCertificates(dir_.File("certs"), {"127.0.0.1"}, 2).ok());
    ASSERT_TRUE(MakeClusterCertificates(dir_.File("other"), {"127.0.0.1"}, 2).ok());
    Start([this](Tier2ServerOptions* o) { o->tls = TlsFiles::InDir(dir_.File("certs")); },
          TlsFiles::InDir(dir_.File("certs")));
  }
  // A shard set opened on the server with `tls`.
  StatusOr<std::unique_ptr<pipeline::ShardSet>> OpenWith(const TlsFiles& tls) {
    RemoteShardSetOptions remote;
    remote.servers = {"127.0.0.1:" + std::to_string(port())};
    remote.connect_timeout_ms = 1000;
    remote.call_timeout_ms = 3000;
    remote.tls = tls;
    pipeline::ShardSetOptions options;
    options.config = DefaultConfig();
    options.config.mutable_tier2()->set_sync(false);
    options.shards = 1;
    return OpenRemoteShardSet(remote, options);
  }
};

// With mutual TLS, the well-behaved client (a member certificate of the cluster) is served
// (TearDown checks its calls); a peer with another cluster's certificate, a TLS peer without a
// certificate and a plain TCP peer get nothing: their shards, signatures and writes stay out of
// reach.
TEST_F(Tier2ServerTlsTest, OnlyPeersWithACertificateOfTheClusterAreServed) {
  // Another cluster's member: the handshake fails (either side refuses the other's CA).
  auto other = OpenWith(TlsFiles::InDir(dir_.File("other")));
  EXPECT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kUnavailable) << other.status().ToString();
  // Plain TCP: a frame is no TLS handshake; the connection closes unanswered.
  {
    RawClient c(port());
    c.Send(Frame(CommittedBatchRequest(1)));
    EXPECT_TRUE(c.ClosedWithin(milliseconds(kStallMs) + kSlack));
  }
  // TLS that trusts the cluster's CA but presents no certificate: nothing is answered.
  {
    asio::io_context io;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.load_verify_file(TlsFiles::InDir(dir_.File("certs")).ca);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    asio::ssl::stream<tcp::socket> s(io, ctx);
    boost::system::error_code ec;
    s.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()), ec);
    ASSERT_FALSE(ec) << ec.message();
    s.handshake(asio::ssl::stream_base::client, ec);  // TLS 1.3: the server's refusal comes after
    if (!ec) {
      asio::write(s, asio::buffer(Frame(CommittedBatchRequest(2))), ec);
      char header[kFrameHeaderBytes];
      asio::read(s, asio::buffer(header), ec);
    }
    EXPECT_TRUE(ec) << "a peer without a certificate was answered";
  }
  for (int i = 0; i < 200 && server_->stats().refused_handshakes < 3; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_GE(server_->stats().refused_handshakes, 3u);
}

// Beyond loopback, a Tier 2 server needs mutual TLS.
TEST(Tier2Server, BeyondLoopbackWithoutTlsIsRefused) {
  test::TempDir dir;
  Tier2ServerOptions so;
  so.store = dir.File("tier2");
  so.listen = "0.0.0.0:0";
  auto s = Tier2Server::Start(so);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find("TLS"), std::string::npos) << s.status().ToString();
}

// certs init: a CA and a member certificate that load as both sides' contexts; keys for the owner
// alone; a second init keeps the CA and signs a new member certificate with it.
TEST(Tls, ClusterCertificatesLoadAndKeepTheirCa) {
  test::TempDir dir;
  ASSERT_TRUE(MakeClusterCertificates(dir.File("c"), {"127.0.0.1", "node-1.example"}, 30).ok());
  const TlsFiles f = TlsFiles::InDir(dir.File("c"));
  EXPECT_TRUE(MakeTlsContext(f, TlsRole::kServer).ok());
  EXPECT_TRUE(MakeTlsContext(f, TlsRole::kClient).ok());
  for (const std::string& key : {f.key, dir.File("c") + "/ca.key"}) {
    EXPECT_EQ(std::filesystem::status(key).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
        << key;
  }
  std::ifstream ca1(f.ca);
  const std::string before((std::istreambuf_iterator<char>(ca1)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(MakeClusterCertificates(dir.File("c"), {"127.0.0.1"}, 30).ok());
  std::ifstream ca2(f.ca);
  EXPECT_EQ(before, std::string((std::istreambuf_iterator<char>(ca2)), std::istreambuf_iterator<char>()));
  EXPECT_TRUE(MakeTlsContext(f, TlsRole::kServer).ok());
  // A key that is not the certificate's is refused by name.
  ASSERT_TRUE(MakeClusterCertificates(dir.File("d"), {"127.0.0.1"}, 30).ok());
  TlsFiles mixed = f;
  mixed.key = TlsFiles::InDir(dir.File("d")).key;
  auto bad = MakeTlsContext(mixed, TlsRole::kServer);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeTlsContext({.ca = f.ca, .cert = f.cert, .key = ""}, TlsRole::kClient).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neardup::cluster
