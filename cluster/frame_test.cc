#include "cluster/frame.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/cluster.pb.h"

namespace neardup::cluster {
namespace {

TEST(Frame, RoundTripsARequest) {
  pb::Tier2Request q;
  q.set_id(42);
  q.set_shard(3);
  q.set_get("http://a/");
  std::string frame;
  ASSERT_TRUE(EncodeFrame(MessageType::kTier2Request, q, &frame).ok());
  ASSERT_EQ(frame.size(), kFrameHeaderBytes + q.ByteSizeLong());
  auto h = DecodeFrameHeader(frame.data());
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->type, MessageType::kTier2Request);
  EXPECT_EQ(h->version, kProtocolVersion);
  pb::Tier2Request back;
  ASSERT_TRUE(DecodeFrameBody(*h, std::string_view(frame).substr(kFrameHeaderBytes), &back).ok());
  EXPECT_EQ(back.id(), 42u);
  EXPECT_EQ(back.get(), "http://a/");
}

// Every way a header can be wrong is refused before anything is allocated for the body.
TEST(Frame, BadHeadersAreRefusedWithWhatIsWrong) {
  pb::Tier2Request q;
  q.set_id(1);
  std::string good;
  ASSERT_TRUE(EncodeFrame(MessageType::kTier2Request, q, &good).ok());
  auto refused = [&](std::string frame, const std::string& why) {
    auto h = DecodeFrameHeader(frame.data());
    ASSERT_FALSE(h.ok()) << why;
    EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(why), std::string::npos) << h.status().ToString();
  };
  std::string f = good;
  f[0] = 'G';  // "GET /" from an HTTP client
  refused(f, "bad magic");
  f = good;
  f[3] = 9;
  refused(f, "protocol version 9");
  f = good;
  f[5] = 77;
  refused(f, "unknown message type 77");
  f = good;
  f[7] = 1;
  refused(f, "flags");
  f = good;
  f[8] = '\x7f';  // a length of ~2 GB
  refused(f, "over the limit");
}

TEST(Frame, BodyMustMatchItsHeader) {
  pb::Tier2Request q;
  q.set_get("http://a/");
  std::string frame;
  ASSERT_TRUE(EncodeFrame(MessageType::kTier2Request, q, &frame).ok());
  auto h = DecodeFrameHeader(frame.data());
  ASSERT_TRUE(h.ok());
  pb::Tier2Request back;
  const std::string_view body = std::string_view(frame).substr(kFrameHeaderBytes);
  EXPECT_FALSE(DecodeFrameBody(*h, body.substr(1), &back).ok());  // truncated
  std::string garbage(body.size(), '\xff');
  EXPECT_FALSE(DecodeFrameBody(*h, garbage, &back).ok());
}

}  // namespace
}  // namespace neardup::cluster
