#include "cluster/ops/membership.h"

#include <google/protobuf/text_format.h>

#include "storage/file_env.h"

namespace neardup::cluster {
namespace {

class FileMembershipImpl final : public Membership {
 public:
  explicit FileMembershipImpl(std::string path) : path_(std::move(path)) {}

  StatusOr<pb::ClusterMembership> Read() const override {
    std::string text;
    Status s = ReadWholeFile(path_, &text);
    if (!s.ok()) return s;
    pb::ClusterMembership view;
    if (!google::protobuf::TextFormat::ParseFromString(text, &view)) {
      return Corruption("cluster membership " + path_ + " does not parse");
    }
    return view;
  }

  Status Write(pb::ClusterMembership view) override {
    StatusOr<pb::ClusterMembership> old = Read();
    view.set_version(old.ok() ? old->version() + 1 : 1);
    std::string text;
    google::protobuf::TextFormat::PrintToString(view, &text);
    return WriteFileAtomically(FileEnv::Default(), path_, text, /*sync=*/true);
  }

 private:
  static Status ReadWholeFile(const std::string& path, std::string* out) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return NotFound("no cluster membership at " + path);
    char buf[8192];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out->append(buf, n);
    std::fclose(f);
    return Status::Ok();
  }
  const std::string path_;
};

}  // namespace

std::unique_ptr<Membership> FileMembership(std::string path) { return std::make_unique<FileMembershipImpl>(std::move(path)); }

std::vector<uint32_t> ShardsOfServer(uint32_t shards, uint32_t servers, uint32_t i) {
  std::vector<uint32_t> out;
  for (uint32_t m = i; servers > 0 && m < shards; m += servers) out.push_back(m);
  return out;
}

}  // namespace neardup::cluster
