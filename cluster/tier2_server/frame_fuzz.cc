// libFuzzer target: any bytes, read as a stream of frames the way a Tier 2 server or client reads
// them (cluster/tier2_server/frame.h). Each header is decoded from a buffer of exactly kFrameHeaderBytes, each
// body from one of exactly its length (so AddressSanitizer sees a read past either), and the body
// is parsed as both a request and a response. Whatever the bytes, decoding refuses or succeeds; a
// body that parses encodes again into a frame that decodes to the same message.
//
//   scripts/fuzz.sh 60        (builds build-fuzz/ with clang, runs every fuzz target for 60 s)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "cluster/tier2_server/frame.h"
#include "proto/cluster.pb.h"

namespace neardup::cluster {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();  // a broken invariant: libFuzzer reports it with the input
}

// A copy of `bytes` in an allocation of exactly its size.
std::unique_ptr<char[]> Exact(std::string_view bytes) {
  std::unique_ptr<char[]> copy(new char[bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  return copy;
}

// A message that parsed: framed again, it decodes to the same bytes.
template <typename Message>
void RoundTrip(MessageType type, const Message& message) {
  std::string frame;
  if (!EncodeFrame(type, message, &frame).ok()) {
    Check(message.ByteSizeLong() > MaxBodyBytes(type));
    return;
  }
  auto header = DecodeFrameHeader(frame.data());
  Check(header.ok() && header->type == type && header->length == frame.size() - kFrameHeaderBytes);
  Message back;
  Check(DecodeFrameBody(*header, std::string_view(frame).substr(kFrameHeaderBytes), &back).ok());
  Check(back.SerializeAsString() == message.SerializeAsString());
}

template <typename Message>
void Body(const FrameHeader& header, std::string_view body, bool whole, MessageType as) {
  Message message;
  const Status s = DecodeFrameBody(header, body, &message);
  if (!whole) Check(!s.ok());  // a body shorter than its header says is refused
  if (s.ok()) RoundTrip(as, message);
}

}  // namespace
}  // namespace neardup::cluster

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs each string field that is not UTF-8 (and refuses the message): millions of lines.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace neardup::cluster;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (in.size() >= kFrameHeaderBytes) {
    const std::unique_ptr<char[]> header_bytes = Exact(in.substr(0, kFrameHeaderBytes));
    auto header = DecodeFrameHeader(header_bytes.get());
    if (!header.ok()) return 0;  // a reader closes the connection here
    Check(header->length <= MaxBodyBytes(header->type));
    in.remove_prefix(kFrameHeaderBytes);
    const bool whole = header->length <= in.size();
    const std::string_view body = in.substr(0, header->length);
    const std::unique_ptr<char[]> body_bytes = Exact(body);
    const std::string_view exact(body_bytes.get(), body.size());
    Body<neardup::pb::Tier2Request>(*header, exact, whole, MessageType::kTier2Request);
    Body<neardup::pb::Tier2Response>(*header, exact, whole, MessageType::kTier2Response);
    if (!whole) return 0;
    in.remove_prefix(body.size());
  }
  return 0;
}
