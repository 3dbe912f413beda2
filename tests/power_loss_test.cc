// A power cut under a running cluster, on a real file system: the cluster's directory is an ext4
// file system on a loop device over a sparse image file. Records are ingested over HTTP; then every
// process of the cluster is killed (SIGKILL) and, before anything syncs the file system, the image
// is copied. The copy holds only what ext4 had written to the device: what the processes wrote
// but never synced is still in the mounted file system's page cache (ext4 allocates a write's
// blocks only when it writes them back), and is not in the copy. The original is then detached,
// the copy mounted in its place (ext4 replays its journal, as after a power cut) and the cluster
// started again on it: every record acknowledged (202) before the cut must be known, pending or
// decided, then decided once the batch loop has caught up, and the group store must pass
// `neardup check`.
//
// The layer is shown to drop what was not synced, in the same cut: a file written and synced
// before it is whole after it, one written without a sync is gone or shorter. A cluster that
// acknowledges without syncing its ingest log (tier1_server.sync off) loses acknowledged records.
//
// What keeps the copy true to a power cut:
// - ext4 is mounted with commit=600 (no periodic journal commit while the test runs: a commit
//   comes only from a sync), noauto_da_alloc (no write-back started by a rename or truncate
//   without a sync) and noatime (reads dirty nothing), and made with its inode tables and journal
//   initialised (no background initialisation writes);
// - the kernel's flusher writes dirty pages back only once they are 30 s old
//   (vm.dirty_expire_centisecs): the test cuts well before, and prints how long after the mount;
// - a copy is taken only while the loop device has no write in flight and completes none during
//   it (its write counter in /sys/block/loopN/stat unchanged across the copy), so the copy is the
//   device at one moment, never torn between two writes; else it is taken again.
//
// Needs root and loop devices (losetup, mkfs.ext4, mount); skipped, saying why, without them.
// Every mount, loop device and image is removed on every exit path (RAII); every wait is bounded.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <simdjson.h>

#include "cluster/http/http_client.h"
#include "tests/binary_test.h"

namespace neardup {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Runs a shell command; its exit code (-1: did not run or was killed) and its output, stderr
// included.
Outcome Shell(const std::string& cmd) {
  Outcome o{-1, "", ""};
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) o.out.append(buf, n);
  const int rc = ::pclose(p);
  o.code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return o;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// An ext4 file system on a loop device over an image file, mounted at a directory; unmounted
// (lazily when busy), detached and its image removed when destroyed.
class LoopDisk {
 public:
  LoopDisk() = default;
  LoopDisk(const LoopDisk&) = delete;
  LoopDisk& operator=(const LoopDisk&) = delete;
  ~LoopDisk() { Detach(/*remove_image=*/true); }

  // A new image of `mb` MiB (sparse) with an ext4 file system; "" or the reason it cannot be made.
  static std::string Make(const std::string& image, int mb) {
    const int fd = ::open(image.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return "cannot create " + image + ": " + std::strerror(errno);
    const int r = ::ftruncate(fd, off_t{mb} << 20);
    ::close(fd);
    if (r != 0) return "cannot size " + image;
    Outcome mk = Shell("mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 " + image);
    return mk.code == 0 ? "" : "mkfs.ext4 failed: " + mk.out;
  }
  // Attaches `image` to a free loop device and mounts it at `dir`; "" or the reason it cannot.
  std::string Attach(const std::string& image, const std::string& dir) {
    image_ = image;
    Outcome lo = Shell("losetup -f --show " + image);
    if (lo.code != 0) return "losetup refused: " + lo.out;
    device_ = Trimmed(lo.out);
    std::filesystem::create_directories(dir);
    Outcome m = Shell("mount -t ext4 -o noatime,commit=600,noauto_da_alloc " + device_ + " " + dir);
    if (m.code != 0) return "mount refused: " + m.out;
    mount_ = dir;
    mounted_at_ = Clock::now();
    return "";
  }
  // Unmounts (lazily when a normal unmount fails) and detaches the loop device.
  void Detach(bool remove_image) {
    if (!mount_.empty() && Shell("umount " + mount_).code != 0) Shell("umount -l " + mount_);
    mount_.clear();
    if (!device_.empty()) Shell("losetup -d " + device_);
    device_.clear();
    if (remove_image && !image_.empty()) std::filesystem::remove(image_);
  }

  // Copies the image as the device holds it now to `to` (sparse: zero MiB blocks are left holes),
  // at a moment no write is in flight and none completes during the copy. The copies it took.
  int CopyQuiescent(const std::string& to) {
    for (int attempt = 1; attempt <= 20; ++attempt) {
      const std::string before = WriteState();
      if (before.empty()) {
        std::this_thread::sleep_for(milliseconds(50));
        continue;
      }
      if (!CopySparse(image_, to)) return 0;
      if (WriteState() == before) return attempt;
    }
    return 0;
  }

  const std::string& device() const { return device_; }
  double SecondsSinceMount() const { return std::chrono::duration<double>(Clock::now() - mounted_at_).count(); }

 private:
  // The loop device's completed write requests, or "" while a write is in flight.
  std::string WriteState() const {
    const std::string sys = "/sys/block/" + std::filesystem::path(device_).filename().string();
    std::istringstream inflight(test::ReadFile(sys + "/inflight"));
    uint64_t reads = 1, writes = 1;
    inflight >> reads >> writes;
    if (writes != 0) return "";
    std::istringstream stat(test::ReadFile(sys + "/stat"));
    std::string f[5];
    for (std::string& x : f) stat >> x;
    return f[4];  // write I/Os completed
  }
  static bool CopySparse(const std::string& from, const std::string& to) {
    const int in = ::open(from.c_str(), O_RDONLY);
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = in >= 0 && out >= 0;
    struct stat st {};
    ok = ok && ::fstat(in, &st) == 0 && ::ftruncate(out, st.st_size) == 0;
    std::vector<char> buf(1 << 20);
    for (off_t at = 0; ok && at < st.st_size;) {
      const ssize_t n = ::pread(in, buf.data(), buf.size(), at);
      if (n <= 0) { ok = false; break; }
      const bool zero = std::all_of(buf.begin(), buf.begin() + n, [](char c) { return c == 0; });
      if (!zero && ::pwrite(out, buf.data(), static_cast<size_t>(n), at) != n) ok = false;
      at += n;
    }
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    return ok;
  }

  std::string image_, device_, mount_;
  Clock::time_point mounted_at_;
};

// A process's parent and state from /proc/PID/stat (state 0: no such process).
struct ProcState {
  pid_t ppid = 0;
  char state = 0;
};
ProcState StateOf(pid_t pid) {
  const std::string s = test::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = s.rfind(')');
  ProcState p;
  if (close == std::string::npos || close + 4 >= s.size()) return p;
  p.state = s[close + 2];
  p.ppid = static_cast<pid_t>(std::strtol(s.c_str() + close + 4, nullptr, 10));
  return p;
}

// A cluster's processes killed at once, as by a power cut: its supervisor stopped (it starts no
// member from then on), each of its children killed, then itself; returns once none runs (gone or
// a zombie: its files closed), at most 10 s.
void KillCluster(pid_t supervisor) {
  if (supervisor <= 0 || StateOf(supervisor).state == 0) return;
  ::kill(supervisor, SIGSTOP);
  std::vector<pid_t> all{supervisor};
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (StateOf(pid).ppid == supervisor) all.push_back(pid);
  }
  for (size_t i = all.size(); i > 0; --i) ::kill(all[i - 1], SIGKILL);  // the members, then the supervisor
  for (int t = 0; t < 1000; ++t) {
    if (std::all_of(all.begin(), all.end(), [](pid_t p) { const char s = StateOf(p).state; return s == 0 || s == 'Z'; })) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

class PowerLossTest : public BinaryTest {
 protected:
  void SetUp() override {
    BinaryTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: it makes a file system on a loop device and mounts it";
    for (const char* tool : {"losetup", "mkfs.ext4", "mount", "umount"}) {
      if (Shell(std::string("command -v ") + tool).code != 0) GTEST_SKIP() << tool << " is not installed";
    }
  }

  // The supervisor's pid that `cluster up` printed (0: none).
  static pid_t SupervisorOf(const Outcome& up) {
    const size_t at = up.out.find("supervisor pid ");
    return at == std::string::npos ? 0 : static_cast<pid_t>(std::strtol(up.out.c_str() + at + 15, nullptr, 10));
  }
  // The API's URL that `cluster up` printed: https:// with the cluster's TLS (its default).
  static std::string ApiOf(const Outcome& up) {
    size_t at = up.out.find("https://");
    if (at == std::string::npos) at = up.out.find("http://");
    if (at == std::string::npos) return "";
    return up.out.substr(at, up.out.find('\n', at) - at);
  }
  // A metric's value from /metrics (-1 when absent or unreachable).
  static double Metric(cluster::HttpClient& c, const std::string& name) {
    auto r = c.Request("GET", "/metrics", "");
    if (!r.ok()) return -1;
    const size_t at = r->body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::strtod(r->body.c_str() + at + name.size() + 2, nullptr);
  }
  // The API's answer's status for `url` ("" when it gives none).
  static std::string StatusOf(cluster::HttpClient& c, const std::string& url) {
    auto r = c.Request("GET", "/v1/status?url=" + cluster::UrlEncode(url), "");
    if (!r.ok() || r->status != 200) return "";
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(r->body).get(e) != simdjson::SUCCESS) return "";
    std::string_view s;
    return e["status"].get(s) == simdjson::SUCCESS ? std::string(s) : "";
  }

  // The sample crawl's records with content (redirects left out), with their lines.
  std::vector<std::pair<std::string, std::string>> Records() {
    std::vector<std::pair<std::string, std::string>> v;
    std::istringstream in(Read(std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl"));
    simdjson::dom::parser p;
    for (std::string line; std::getline(in, line);) {
      simdjson::dom::element e;
      if (p.parse(line).get(e) != simdjson::SUCCESS || e["redirect_to"].error() == simdjson::SUCCESS) continue;
      v.emplace_back(std::string(e["url"].get_string().value_unsafe()), line + "\n");
    }
    return v;
  }

  // The cluster's configuration (its directory on the disk) written to cluster.textproto.
  void WriteConfig(const std::string& tier1_extra) {
    ASSERT_EQ(Neardup("partition build --input " + std::string(NEARDUP_SOURCE_DIR) +
                      "/data/sample-crawl.jsonl --shards 2 --out " + Path("map.pb")).code, 0);
    Write("cluster.textproto", "cluster { dir: \"" + Path("disk/cl") + "\" tier2_servers: 2 restart_min_ms: 100 }\n"
                               "tier1_server { listen: \"127.0.0.1:0\" map: \"" + Path("map.pb") + "\" " + tier1_extra +
                               " tier2_deadline_ms: 2000 retry_min_ms: 100 retry_max_ms: 500 }\n"
                               "tier2 { batch_pages: 100 }\n");
  }

  // Brings the disk up at disk/ (skips the test when the machine refuses it).
  void AttachNewDisk(LoopDisk* disk) {
    if (std::string why = LoopDisk::Make(Path("disk.img"), 128); !why.empty()) GTEST_SKIP() << "no ext4 image: " << why;
    if (std::string why = disk->Attach(Path("disk.img"), Path("disk")); !why.empty()) {
      GTEST_SKIP() << "loop devices are refused here: " << why;
    }
  }

  // The control of the layer, on the disk before the cut: 1 MiB synced (file and directory), then
  // 1 MiB written without a sync.
  void WriteControls() {
    const std::string bytes(1 << 20, 'c');
    for (const char* name : {"synced", "unsynced"}) {
      const int fd = ::open(Path(std::string("disk/") + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
      if (std::strcmp(name, "synced") == 0) {
        ASSERT_EQ(::fsync(fd), 0);
        const int d = ::open(Path("disk").c_str(), O_RDONLY | O_DIRECTORY);
        ASSERT_EQ(::fsync(d), 0);
        ::close(d);
      }
      ::close(fd);
    }
  }

  // The power cut: the cluster killed, the disk copied as it is, the original detached and the
  // copy mounted in its place. The unsynced control is lost or shorter, the synced one whole.
  void PowerCut(pid_t supervisor, std::unique_ptr<LoopDisk>* disk) {
    KillCluster(supervisor);
    const double seconds = (*disk)->SecondsSinceMount();
    const int copies = (*disk)->CopyQuiescent(Path("cut.img"));
    std::printf("power cut %.1f s after the mount (the flusher writes pages 30 s old back); %d copies to get one "
                "the device did not change during\n", seconds, copies);
    ASSERT_GT(copies, 0) << "the loop device never stayed still for a copy";
    EXPECT_LT(seconds, 25) << "the cut came late: the flusher may have written back unsynced pages";
    disk->reset();  // the original unmounted, detached, its image removed
    *disk = std::make_unique<LoopDisk>();
    ASSERT_EQ((*disk)->Attach(Path("cut.img"), Path("disk")), "");
    std::error_code ec;
    EXPECT_EQ(std::filesystem::file_size(Path("disk/synced"), ec), uintmax_t{1} << 20) << ec.message();
    const uintmax_t unsynced = std::filesystem::file_size(Path("disk/unsynced"), ec);
    EXPECT_TRUE(ec || unsynced < (uintmax_t{1} << 20)) << "the unsynced write survived the cut: the copy is no power cut";
    std::printf("control: synced file %ju bytes, unsynced file %s\n", std::filesystem::file_size(Path("disk/synced"), ec),
                ec ? "gone" : (std::to_string(unsynced) + " bytes of 1048576").c_str());
  }
};

// Records ingested while the batch loop commits batches; the power cut comes once some batches have
// committed and while more records arrive: after it, every acknowledged record is known at once,
// and decided once the loop has caught up; the group store checks clean.
TEST_F(PowerLossTest, AcknowledgedRecordsSurviveAPowerCut) {
  auto disk = std::make_unique<LoopDisk>();
  ASSERT_NO_FATAL_FAILURE(AttachNewDisk(disk.get()));
  if (IsSkipped()) return;
  pid_t supervisor = 0;
  struct Guard {  // the cluster killed before the disk goes, whatever the outcome
    pid_t* pid;
    ~Guard() { KillCluster(*pid); }
  } guard{&supervisor};
  ASSERT_NO_FATAL_FAILURE(WriteConfig("linger_ms: 100 max_batch_delay_ms: 500"));
  Outcome up = Neardup("cluster up --config " + Path("cluster.textproto"));
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("disk/cl/logs/supervisor.log"));
  supervisor = SupervisorOf(up);
  ASSERT_GT(supervisor, 0) << up.out;
  const std::string token = Trimmed(Read(Path("disk/cl/token")));
  auto client = cluster::HttpClient::Create(ApiOf(up), {.ca_file = Path("disk/cl/ca.pem")});
  ASSERT_TRUE(client.ok()) << up.out;

  // Ingest, 20 records a request, paced (about 800 records a second) so that the cut finds
  // batches committed and records only in the log.
  const auto records = Records();
  std::set<std::string> acked;
  std::atomic<bool> stop{false};
  std::atomic<size_t> acked_count{0};
  std::thread ingest([&] {
    auto c = cluster::HttpClient::Create(ApiOf(up), {.timeout = std::chrono::seconds(5), .ca_file = Path("disk/cl/ca.pem")});
    if (!c.ok()) return;
    for (size_t i = 0; i < records.size() && !stop;) {
      std::string body;
      const size_t end = std::min(records.size(), i + 20);
      for (size_t k = i; k < end; ++k) body += records[k].second;
      auto r = (*c)->Request("POST", "/v1/pages", body, {{"Authorization", "Bearer " + token}});
      if (!r.ok()) return;  // the server is gone
      if (r->status == 202) {
        for (size_t k = i; k < end; ++k) acked.insert(records[k].first);
        acked_count = acked.size();
        i = end;
      }
      std::this_thread::sleep_for(milliseconds(25));
    }
  });
  struct Join {
    std::thread* t;
    std::atomic<bool>* stop;
    ~Join() { *stop = true; if (t->joinable()) t->join(); }
  } join{&ingest, &stop};
  double batches = 0, committed = 0;  // committed: records, from /metrics
  for (int i = 0; i < 300 && batches < 3; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    batches = Metric(**client, "neardup_batches_total");
  }
  ASSERT_NO_FATAL_FAILURE(WriteControls());
  // The precondition of a meaningful cut, just before it: batches committed, and records
  // acknowledged past them while ingest goes on.
  committed = Metric(**client, "neardup_records_total");
  const size_t acked_before_cut = acked_count;
  ASSERT_GE(batches, 3) << Read(Path("disk/cl/logs/tier1.log"));
  ASSERT_GT(static_cast<double>(acked_before_cut), committed) << "no acknowledged record waited in the log";
  ASSERT_LT(acked_before_cut, records.size()) << "ingest ended before the cut";
  ASSERT_NO_FATAL_FAILURE(PowerCut(supervisor, &disk));
  supervisor = 0;
  stop = true;
  ingest.join();
  std::printf("just before the cut: %.0f records committed, %zu acknowledged; %zu acknowledged in all\n", committed,
              acked_before_cut, acked.size());

  // The cluster again, on the disk as the cut left it.
  up = Neardup("cluster up --config " + Path("cluster.textproto"));
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("disk/cl/logs/supervisor.log")) << Read(Path("disk/cl/logs/tier1.log"));
  supervisor = SupervisorOf(up);
  client = cluster::HttpClient::Create(ApiOf(up), {.ca_file = Path("disk/cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  int unknown = 0, pending = 0;
  for (const std::string& url : acked) {
    const std::string s = StatusOf(**client, url);
    pending += s == "pending";
    if (s.empty() || s == "unknown") {
      if (++unknown <= 3) ADD_FAILURE() << url << " was acknowledged, and is \"" << s << "\" after the cut";
    }
  }
  EXPECT_EQ(unknown, 0);
  std::printf("after the restart: %d acknowledged records unknown, %d pending at first look\n", unknown, pending);
  bool settled = false;
  for (int i = 0; i < 600 && !settled; ++i) {
    settled = Metric(**client, "neardup_pending_pages") == 0 && Metric(**client, "neardup_ingest_backlog_bytes") == 0;
    if (!settled) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(settled) << Read(Path("disk/cl/logs/tier1.log"));
  int undecided = 0;
  for (const std::string& url : acked) {
    const std::string s = StatusOf(**client, url);
    if (s != "unique" && s != "winner" && s != "duplicate") {
      if (++undecided <= 3) ADD_FAILURE() << url << " is \"" << s << "\" once the loop caught up";
    }
  }
  EXPECT_EQ(undecided, 0);
  Outcome down = Neardup("cluster down --config " + Path("cluster.textproto"));
  EXPECT_EQ(down.code, 0) << down.err;
  supervisor = 0;
  // neardup check reads a store as one directory: the Tier 1 server's (group store, map) with the
  // Tier 2 servers' shards beside it, linked.
  std::filesystem::create_directories(Path("whole"));
  for (const std::string from : {"disk/cl/tier1", "disk/cl/tier2-0", "disk/cl/tier2-1"}) {
    for (const auto& e : std::filesystem::directory_iterator(Path(from))) {
      const std::string name = e.path().filename().string();
      if (from.ends_with("tier1") || name.starts_with("shard-")) {
        std::filesystem::create_symlink(e.path(), Path("whole/" + name));
      }
    }
  }
  Outcome check = Neardup("check --store " + Path("whole"));
  std::printf("%s", check.out.c_str());
  EXPECT_EQ(check.code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("pages with signatures"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("\n0 violations"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("not checked"), std::string::npos) << check.out;
}

// The same cut under a cluster that acknowledges before its ingest log is synced
// (tier1_server.sync off) and cuts no batch meanwhile: the acknowledged records are lost, which the
// test above would catch.
TEST_F(PowerLossTest, AcknowledgedWithoutSyncAreLost) {
  auto disk = std::make_unique<LoopDisk>();
  ASSERT_NO_FATAL_FAILURE(AttachNewDisk(disk.get()));
  if (IsSkipped()) return;
  pid_t supervisor = 0;
  struct Guard {
    pid_t* pid;
    ~Guard() { KillCluster(*pid); }
  } guard{&supervisor};
  ASSERT_NO_FATAL_FAILURE(WriteConfig("sync: false linger_ms: 600000 max_batch_delay_ms: 600000"));
  Outcome up = Neardup("cluster up --config " + Path("cluster.textproto"));
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("disk/cl/logs/supervisor.log"));
  supervisor = SupervisorOf(up);
  ASSERT_GT(supervisor, 0) << up.out;
  auto client = cluster::HttpClient::Create(ApiOf(up), {.ca_file = Path("disk/cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  // Fewer records than a batch holds: none is cut, they wait in the log only.
  const auto records = Records();
  std::string body;
  for (size_t k = 0; k < 50; ++k) body += records[k].second;
  auto r = (*client)->Request("POST", "/v1/pages", body,
                              {{"Authorization", "Bearer " + Trimmed(Read(Path("disk/cl/token")))}});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->status, 202u) << r->body;
  ASSERT_EQ(Metric(**client, "neardup_batches_total"), 0);
  ASSERT_NO_FATAL_FAILURE(WriteControls());
  ASSERT_NO_FATAL_FAILURE(PowerCut(supervisor, &disk));
  supervisor = 0;
  std::printf("ingest log after the cut: %ju bytes (50 records acknowledged)\n",
              std::filesystem::exists(Path("disk/cl/tier1/ingest.jsonl"))
                  ? std::filesystem::file_size(Path("disk/cl/tier1/ingest.jsonl")) : uintmax_t{0});

  up = Neardup("cluster up --config " + Path("cluster.textproto"));
  ASSERT_EQ(up.code, 0) << up.err << Read(Path("disk/cl/logs/supervisor.log")) << Read(Path("disk/cl/logs/tier1.log"));
  supervisor = SupervisorOf(up);
  client = cluster::HttpClient::Create(ApiOf(up), {.ca_file = Path("disk/cl/ca.pem")});
  ASSERT_TRUE(client.ok());
  int unknown = 0;
  for (size_t k = 0; k < 50; ++k) unknown += StatusOf(**client, records[k].first) == "unknown";
  std::printf("acknowledged records unknown after the cut: %d of 50\n", unknown);
  EXPECT_GT(unknown, 0) << "an ingest log never synced kept every record across the cut";
  EXPECT_EQ(Neardup("cluster down --config " + Path("cluster.textproto")).code, 0);
  supervisor = 0;
}

}  // namespace
}  // namespace neardup
