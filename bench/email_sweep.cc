#include "bench/email_sweep.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace neardup::bench {

int RunEmailSweep(const EmailSweepOptions& a) {
  std::printf("%-8s %-10s %10s %9s %10s %11s %9s %9s %8s\n", "alpha", "threads", "emails", "seconds", "emails/s",
              "cache hits", "stored", "templates", "dropped");
  auto run = [&](double alpha, uint32_t c, uint32_t f, const char* label) {
    email::BenchOptions o = a.run;
    o.alpha = alpha;
    o.cluster_threads = c;
    o.formation_threads = f;
    o.dir = a.dir;
    auto r = email::RunEmailBench(o);
    if (!r.ok()) {
      spdlog::error("bench email: {}", r.status().message());
      return false;
    }
    char threads[32];
    std::snprintf(threads, sizeof threads, "%s%u:%u", label, c, f);
    std::printf("%-8.3f %-10s %10llu %9.2f %10.0f %11llu %9llu %9llu %8llu\n", alpha, threads,
                static_cast<unsigned long long>(r->emails), r->seconds, r->emails_per_second,
                static_cast<unsigned long long>(r->cache_hits), static_cast<unsigned long long>(r->stored),
                static_cast<unsigned long long>(r->templates_formed), static_cast<unsigned long long>(r->dropped));
    std::fflush(stdout);
    return true;
  };
  for (double alpha : a.alphas) {
    if (!run(alpha, a.tuned_cluster, a.tuned_formation, "tuned ")) return 1;
  }
  for (uint32_t t : a.threads) {
    if (!run(1.1, t, t, "fixed ")) return 1;
  }
  std::printf("(the paper: 25,000 emails/s per clustering server; mean body %.1f KB)\n", 10.0);
  return 0;
}

}  // namespace neardup::bench
