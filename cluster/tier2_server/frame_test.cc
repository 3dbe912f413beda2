#include "cluster/tier2_server/frame.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "common/coding.h"
#include "proto/cluster.pb.h"
#include "testing/files.h"
#include "testing/signatures.h"

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

// The seed corpus of the frame fuzz target (cluster/tier2_server/frame_fuzz.cc), file name → bytes: frames of
// each kind of request and response as the encoder writes them, and frames each refused for one
// reason ("bad-..."). cluster/tier2_server/fuzz/frame_corpus/ holds these files; after a change to the frames
// or the messages, write them again with
//   NEARDUP_WRITE_FUZZ_CORPUS=1 build/tests/frame_test --gtest_filter='FrameCorpus.*'
std::map<std::string, std::string> FrameSeeds() {
  std::map<std::string, std::string> seeds;
  auto request = [](pb::Tier2Request q) {
    std::string f;
    EXPECT_TRUE(EncodeFrame(MessageType::kTier2Request, q, &f).ok());
    return f;
  };
  auto response = [](pb::Tier2Response r) {
    std::string f;
    EXPECT_TRUE(EncodeFrame(MessageType::kTier2Response, r, &f).ok());
    return f;
  };
  auto page = [](pb::ShardPageMsg* m, const std::string& url, std::vector<uint64_t> hashes, bool home) {
    *m->mutable_signature() = test::SignatureOf(url, std::move(hashes));
    m->set_home(home);
  };
  pb::Tier2Request q;
  q.set_id(1);
  q.set_deadline_unix_ms(1700000000000);
  q.set_shard(2);
  q.set_get("http://example.com/a");
  seeds["valid-get-request"] = request(q);
  q.set_committed_batch(true);
  seeds["valid-two-requests"] = request(q) + seeds["valid-get-request"];
  seeds["valid-empty-request"] = request(pb::Tier2Request());
  q.Clear();
  q.set_id(2);
  pb::OpenShardsRequest* open = q.mutable_open();
  open->mutable_config()->mutable_tier2()->set_sync(false);  // not DefaultConfig(): the seed stays put
  open->mutable_config()->mutable_tier2()->set_batch_pages(100);
  open->set_shards(4);
  open->add_expected_postings(1000);
  open->add_serve(0);
  open->add_serve(2);
  seeds["valid-open-request"] = request(q);
  q.Clear();
  q.set_id(3);
  q.mutable_compare()->set_threshold(0.9);
  page(q.mutable_compare()->add_pages(), "http://example.com/a", {1, 2, 3, 4, 5}, true);
  page(q.mutable_compare()->add_pages(), "http://example.com/b", {2, 3, 4, 5, 6}, false);
  seeds["valid-compare-request"] = request(q);
  q.Clear();
  q.set_id(4);
  page(q.mutable_stage()->add_pages(), "http://example.com/c", {7, 8, 9}, true);
  seeds["valid-stage-request"] = request(q);
  q.Clear();
  q.set_id(5);
  q.mutable_publish()->add_removed("http://example.com/old");
  q.mutable_publish()->set_batch(9);
  seeds["valid-publish-request"] = request(q);

  pb::Tier2Response r;
  r.set_id(3);
  pb::CompareResponse* c = r.mutable_compare();
  pb::ResidentMatchMsg* m = c->add_resident();
  m->set_page(0);
  m->set_url("http://example.com/z");
  m->set_similarity(0.95);
  pb::BatchMatchMsg* b = c->add_in_batch();
  b->set_a(0);
  b->set_b(1);
  b->set_similarity(0.92);
  c->add_superseded(1);
  c->mutable_stats()->set_pages(2);
  c->mutable_stats()->set_verifications(3);
  seeds["valid-compare-response"] = response(r);
  r.Clear();
  r.set_id(6);
  r.mutable_stats()->set_resident_pages(100);
  r.mutable_stats()->set_open_seconds(0.25);
  seeds["valid-stats-response"] = response(r);
  r.Clear();
  r.set_id(7);
  r.set_code(static_cast<uint32_t>(StatusCode::kFailedPrecondition));
  r.set_message("tier2: no shards open (OpenShards first)");
  seeds["valid-error-response"] = response(r);

  const std::string get = seeds["valid-get-request"];
  std::string f = get;
  f[0] = 'G';
  seeds["bad-magic"] = f;
  f = get;
  f[3] = 9;
  seeds["bad-version"] = f;
  f = get;
  f[5] = 77;
  seeds["bad-type"] = f;
  f = get;
  f[7] = 1;
  seeds["bad-flags"] = f;
  f = get;
  StoreBigEndian(f.data() + 8, MaxBodyBytes(MessageType::kTier2Request) + 1, 4);
  seeds["bad-length-over-max"] = f;
  seeds["bad-truncated-body"] = get.substr(0, get.size() - 3);
  seeds["bad-half-header"] = get.substr(0, kFrameHeaderBytes / 2);
  f = get;
  for (size_t i = kFrameHeaderBytes; i < f.size(); ++i) f[i] = '\xff';
  seeds["bad-body-not-a-message"] = f;
  return seeds;
}

// Every frame of `bytes` decodes (as a request or a response), the bytes ending with a frame.
bool Decodes(const std::string& bytes) {
  std::string_view in(bytes);
  if (in.empty()) return false;
  while (!in.empty()) {
    if (in.size() < kFrameHeaderBytes) return false;
    auto h = DecodeFrameHeader(in.data());
    if (!h.ok() || in.size() - kFrameHeaderBytes < h->length) return false;
    const std::string_view body = in.substr(kFrameHeaderBytes, h->length);
    pb::Tier2Request q;
    pb::Tier2Response r;
    const Status s = h->type == MessageType::kTier2Request ? DecodeFrameBody(*h, body, &q) : DecodeFrameBody(*h, body, &r);
    if (!s.ok()) return false;
    in.remove_prefix(kFrameHeaderBytes + h->length);
  }
  return true;
}

TEST(FrameCorpus, SeedsAreTheEncodersFramesAndDecodeAsNamed) {
  const std::filesystem::path dir = std::filesystem::path(NEARDUP_SOURCE_DIR) / "cluster/tier2_server/fuzz/frame_corpus";
  const auto seeds = FrameSeeds();
  const char* write = std::getenv("NEARDUP_WRITE_FUZZ_CORPUS");
  if (write != nullptr && std::string(write) == "1") {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& [name, bytes] : seeds) std::ofstream(dir / name, std::ios::binary) << bytes;
  }
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.insert(e.path().filename().string());
  std::set<std::string> names;
  for (const auto& [name, bytes] : seeds) {
    names.insert(name);
    EXPECT_EQ(test::ReadFile((dir / name).string()), bytes)
        << name << " is stale: write the corpus again (NEARDUP_WRITE_FUZZ_CORPUS=1, see FrameSeeds)";
    EXPECT_EQ(Decodes(bytes), name.rfind("valid-", 0) == 0) << name;
    EXPECT_LT(bytes.size(), 4096u) << name;  // libFuzzer's default -max_len
  }
  EXPECT_EQ(files, names);
}

}  // namespace
}  // namespace neardup::cluster
