// What the pipeline's tests (and the cluster's, which run the pipeline over the network) share: a
// run of the bundled sample crawl (1,000 records, 10 batches, 3 shards) in a test directory.
#pragma once

#include <string>

#include "common/config.h"
#include "pipeline/pipeline.h"
#include "testing/files.h"
#include "testing/temp_dir.h"

namespace neardup::pipeline::test_util {

using ::neardup::test::ReadFile;

// A run of data/sample-crawl.jsonl into `dir`: store, --out and --status-out named after `name`.
// NEARDUP_SOURCE_DIR is the test's compile definition.
inline PipelineOptions SampleRun(const test::TempDir& dir, const std::string& name) {
  PipelineOptions o;
  o.input = std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl";
  o.store = dir.File(name + "-store");
  o.groups_out = dir.File(name + "-groups.jsonl");
  o.status_out = dir.File(name + "-status.jsonl");
  o.config = DefaultConfig();
  o.config.mutable_pipeline()->set_shards(3);
  o.config.mutable_tier2()->set_sync(false);
  o.config.mutable_tier1()->set_sync(false);
  o.threshold = 0.9;
  o.batch_pages = 100;
  o.threads = 2;
  o.progress = false;
  return o;
}

}  // namespace neardup::pipeline::test_util
