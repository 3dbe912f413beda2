// The servers' network plumbing: host:port parsing, listening, and the io_context pool.
#include "cluster/http/net.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>

namespace neardup::cluster {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

TEST(ParseHostPort, SplitsAndRefuses) {
  std::string host;
  uint16_t port = 1;
  ASSERT_TRUE(ParseHostPort("127.0.0.1:0", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(ParseHostPort("[::1]:65535", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 65535);
  for (const char* bad : {"127.0.0.1", ":80", "127.0.0.1:", "h:65536", "h:8a", "h:-1"}) {
    const Status s = ParseHostPort(bad, &host, &port);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  }
}

// Each context runs on a thread of its own, and next() deals them out in turn.
TEST(IoContextPool, OneThreadPerContextRoundRobin) {
  IoContextPool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  std::set<asio::io_context*> dealt;
  for (int i = 0; i < 3; ++i) dealt.insert(&pool.next());
  EXPECT_EQ(dealt.size(), 3u);
  EXPECT_EQ(&pool.next(), &pool.context(0));  // the fourth wraps around
  pool.Run("nd-test");
  std::mutex mu;
  std::set<std::thread::id> threads;
  for (size_t c = 0; c < pool.size(); ++c) {
    // Many handlers per context: all run on that context's one thread.
    std::set<std::thread::id> seen;
    std::vector<std::future<void>> done;
    for (int k = 0; k < 20; ++k) {
      auto p = std::make_shared<std::promise<void>>();
      done.push_back(p->get_future());
      asio::post(pool.context(c), [&, p] {
        {
          std::lock_guard lock(mu);
          seen.insert(std::this_thread::get_id());
        }
        p->set_value();
      });
    }
    for (auto& f : done) ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(seen.size(), 1u) << "context " << c;
    threads.insert(seen.begin(), seen.end());
  }
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  pool.Stop();
  pool.Stop();  // idempotent
}

// A context with nothing to do keeps its thread until Stop (the work guard).
TEST(IoContextPool, IdleContextsLiveUntilStop) {
  IoContextPool pool(2);
  pool.Run("nd-test");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::promise<void> ran;
  asio::post(pool.context(1), [&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST(IoContextPool, AtLeastOneContext) {
  IoContextPool pool(0);
  EXPECT_EQ(pool.size(), 1u);
}

TEST(ListenOn, BindsAFreePortAndNamesWhatFails) {
  asio::io_context io;
  tcp::acceptor a(io);
  ASSERT_TRUE(ListenOn(a, "127.0.0.1:0", "test server").ok());
  const uint16_t port = a.local_endpoint().port();
  EXPECT_NE(port, 0);
  // The same port again: taken (SO_REUSEADDR does not let two listen on it).
  tcp::acceptor b(io);
  const Status taken = ListenOn(b, "127.0.0.1:" + std::to_string(port), "test server");
  EXPECT_EQ(taken.code(), StatusCode::kIoError);
  EXPECT_NE(taken.message().find("test server: cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << taken.message();
  tcp::acceptor c(io);
  const Status host = ListenOn(c, "localhost:0", "test server");
  EXPECT_EQ(host.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host.message().find("localhost is not an IP address"), std::string::npos) << host.message();
  tcp::acceptor d(io);
  EXPECT_EQ(ListenOn(d, "127.0.0.1", "test server").code(), StatusCode::kInvalidArgument);
}

// The listener accepts each connection onto the pool's contexts in turn and hands it over with
// the context it lives on; after Stop nothing is accepted.
TEST(TcpListener, HandsEachConnectionToTheNextContextAndStopsAccepting) {
  TcpListener listener(2);
  std::mutex mu;
  std::vector<asio::io_context*> homes;
  std::vector<tcp::socket> kept;
  std::promise<void> four;
  ASSERT_TRUE(listener
                  .Start("127.0.0.1:0", "test server", "nd-test",
                         [&](tcp::socket socket, asio::io_context& home) {
                           std::lock_guard lock(mu);
                           EXPECT_EQ(&socket.get_executor().context(), &home);
                           homes.push_back(&home);
                           kept.push_back(std::move(socket));
                           if (homes.size() == 4) four.set_value();
                         })
                  .ok());
  ASSERT_NE(listener.port(), 0);
  asio::io_context client_io;
  std::vector<tcp::socket> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back(client_io);
    clients.back().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), listener.port()));
  }
  ASSERT_EQ(four.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(homes[0], &listener.pool().context(0));
    EXPECT_EQ(homes[1], &listener.pool().context(1));
    EXPECT_EQ(homes[2], &listener.pool().context(0));
    EXPECT_EQ(homes[3], &listener.pool().context(1));
  }
  const uint16_t port = listener.port();
  listener.Stop();
  listener.Stop();  // idempotent
  tcp::socket late(client_io);
  boost::system::error_code ec;
  late.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_TRUE(ec) << "connected after Stop";
}

TEST(TcpListener, AnAddressItCannotListenOnIsNamed) {
  TcpListener listener(1);
  const Status s = listener.Start("example.com:80", "test server", "nd-test", [](tcp::socket, asio::io_context&) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("test server"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace neardup::cluster
