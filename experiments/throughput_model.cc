#include "experiments/throughput_model.h"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace neardup::experiments {
namespace {

// The three features of a part: its seconds = c0·f0 + c1·f1 + c2·f2.
Eigen::Vector3d Features(const MeasuredPart& p) {
  const double shards = p.shards, sends = static_cast<double>(p.sends);
  return {static_cast<double>(p.batches), sends * p.imbalance / shards,
          sends * p.imbalance * p.imbalance * p.resident / (shards * shards)};
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// A CSV file's rows as maps from the wanted columns to numbers, each with its line number.
struct CsvRow {
  size_t line;
  std::map<std::string, double> values;
};

Status ReadCsv(const std::string& path, const std::vector<std::string>& wanted, std::vector<CsvRow>* rows) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read " + path);
  std::string line;
  if (!std::getline(in, line)) return InvalidArgument(path + ": empty (expected a header line)");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = SplitCsv(line);
  std::vector<size_t> column(wanted.size());
  for (size_t w = 0; w < wanted.size(); ++w) {
    auto it = std::find(header.begin(), header.end(), wanted[w]);
    if (it == header.end()) return InvalidArgument(path + ":1: no column '" + wanted[w] + "' in the header");
    column[w] = static_cast<size_t>(it - header.begin());
  }
  for (size_t n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = SplitCsv(line);
    CsvRow row{n, {}};
    for (size_t w = 0; w < wanted.size(); ++w) {
      if (column[w] >= cells.size()) {
        return InvalidArgument(fmt::format("{}:{}: {} cells, no '{}' (column {})", path, n, cells.size(), wanted[w],
                                           column[w] + 1));
      }
      const std::string& c = cells[column[w]];
      double v = 0;
      auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
      if (ec != std::errc() || end != c.data() + c.size() || !std::isfinite(v) || v < 0) {
        return InvalidArgument(fmt::format("{}:{}: '{}' is '{}', not a number >= 0", path, n, wanted[w], c));
      }
      row.values[wanted[w]] = v;
    }
    rows->push_back(std::move(row));
  }
  if (rows->empty()) return InvalidArgument(path + ": no rows after the header");
  return Status::Ok();
}

Status Integer(const std::string& path, const CsvRow& r, const char* name, uint64_t* out) {
  const double v = r.values.at(name);
  if (v != std::floor(v) || v > 1e15) return InvalidArgument(fmt::format("{}:{}: '{}' is {}, not an integer", path, r.line, name, v));
  *out = static_cast<uint64_t>(v);
  return Status::Ok();
}

}  // namespace

Status FitCostModel(const std::vector<MeasuredPart>& parts, CostModel* model) {
  if (parts.size() < 3) return InvalidArgument(fmt::format("fitting 3 coefficients needs at least 3 measured parts, got {}", parts.size()));
  for (size_t i = 0; i < parts.size(); ++i) {
    const MeasuredPart& p = parts[i];
    if (p.shards == 0 || p.batches == 0 || p.sends == 0 || !(p.imbalance >= 1) || !(p.seconds > 0) || !(p.resident >= 0)) {
      return InvalidArgument(fmt::format("measured part {}: needs shards, batches and sends > 0, imbalance >= 1, resident >= 0 "
                                         "and seconds > 0 (shards {}, batches {}, sends {}, imbalance {}, resident {}, seconds {})",
                                         i, p.shards, p.batches, p.sends, p.imbalance, p.resident, p.seconds));
    }
  }
  // Rows scaled by 1 / measured seconds: least squares on relative errors.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(parts.size()), 3);
  Eigen::VectorXd b(static_cast<Eigen::Index>(parts.size()));
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto r = static_cast<Eigen::Index>(i);
    a.row(r) = Features(parts[i]).transpose() / parts[i].seconds;
    b(r) = 1.0;
  }
  // Columns scaled to unit norm so that the rank test compares like with like.
  const Eigen::Vector3d norms = a.colwise().norm().transpose();
  for (int c = 0; c < 3; ++c) {
    if (!(norms(c) > 0)) return FailedPrecondition(fmt::format("the measured parts do not determine coefficient c{}: its feature is 0 in every part", c));
    a.col(c) /= norms(c);
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-9);
  if (qr.rank() < 3) {
    return FailedPrecondition(fmt::format("the measured parts determine only {} of the 3 coefficients: vary the shard count and "
                                          "the collection size between parts", qr.rank()));
  }
  const Eigen::Vector3d c = qr.solve(b).cwiseQuotient(norms);
  model->c0 = c(0);
  model->c1 = c(1);
  model->c2 = c(2);
  double max_err = 0, sum_sq = 0;
  for (const MeasuredPart& p : parts) {
    const double err = std::abs(PredictPartSeconds(*model, p) - p.seconds) / p.seconds;
    max_err = std::max(max_err, err);
    sum_sq += err * err;
  }
  model->max_relative_error = max_err;
  model->rms_relative_error = std::sqrt(sum_sq / static_cast<double>(parts.size()));
  return Status::Ok();
}

double PredictPartSeconds(const CostModel& m, const MeasuredPart& p) {
  return Features(p).dot(Eigen::Vector3d(m.c0, m.c1, m.c2));
}

double PredictThroughput(const CostModel& m, const MapShape& s, double batch_pages, double resident) {
  const double shards = s.shards;
  const double pages = batch_pages * s.sends_per_page * s.imbalance / shards;  // on the most loaded shard
  const double seconds = m.c0 + m.c1 * pages + m.c2 * pages * resident * s.imbalance / shards;
  return seconds > 0 ? batch_pages / seconds : 0;
}

Status ReadMeasuredParts(const std::string& path, std::vector<MeasuredPart>* parts) {
  std::vector<CsvRow> rows;
  RETURN_IF_ERROR(ReadCsv(path, {"shards", "batches", "pages", "sends", "resident", "imbalance", "seconds"}, &rows));
  for (const CsvRow& r : rows) {
    MeasuredPart p;
    uint64_t shards = 0;
    RETURN_IF_ERROR(Integer(path, r, "shards", &shards));
    RETURN_IF_ERROR(Integer(path, r, "batches", &p.batches));
    RETURN_IF_ERROR(Integer(path, r, "pages", &p.pages));
    RETURN_IF_ERROR(Integer(path, r, "sends", &p.sends));
    if (shards == 0 || shards > 65536) return InvalidArgument(fmt::format("{}:{}: shards {} not in 1..65536", path, r.line, shards));
    p.shards = static_cast<uint32_t>(shards);
    p.resident = r.values.at("resident");
    p.imbalance = r.values.at("imbalance");
    p.seconds = r.values.at("seconds");
    if (p.imbalance < 1) return InvalidArgument(fmt::format("{}:{}: imbalance {} is below 1", path, r.line, p.imbalance));
    if (p.seconds <= 0) return InvalidArgument(fmt::format("{}:{}: seconds must be > 0", path, r.line));
    parts->push_back(p);
  }
  return Status::Ok();
}

Status ReadMapShapes(const std::string& path, std::vector<MapShape>* shapes) {
  std::vector<CsvRow> rows;
  RETURN_IF_ERROR(ReadCsv(path, {"dims", "shards", "imbalance", "sends_per_page"}, &rows));
  for (const CsvRow& r : rows) {
    MapShape s;
    uint64_t dims = 0, shards = 0;
    RETURN_IF_ERROR(Integer(path, r, "dims", &dims));
    RETURN_IF_ERROR(Integer(path, r, "shards", &shards));
    if (dims == 0 || dims > 16) return InvalidArgument(fmt::format("{}:{}: dims {} not in 1..16", path, r.line, dims));
    if (shards == 0 || shards > 65536) return InvalidArgument(fmt::format("{}:{}: shards {} not in 1..65536", path, r.line, shards));
    s.dims = static_cast<uint32_t>(dims);
    s.shards = static_cast<uint32_t>(shards);
    s.imbalance = r.values.at("imbalance");
    s.sends_per_page = r.values.at("sends_per_page");
    if (s.imbalance < 1) return InvalidArgument(fmt::format("{}:{}: imbalance {} is below 1", path, r.line, s.imbalance));
    if (s.sends_per_page < 1 || s.sends_per_page > static_cast<double>(s.shards)) {
      return InvalidArgument(fmt::format("{}:{}: sends_per_page {} not in [1, shards = {}]", path, r.line, s.sends_per_page, s.shards));
    }
    shapes->push_back(s);
  }
  return Status::Ok();
}

Status RunFig6Model(const Fig6ModelOptions& o) {
  std::vector<MeasuredPart> parts;
  std::vector<MapShape> shapes;
  RETURN_IF_ERROR(ReadMeasuredParts(o.measured, &parts));
  RETURN_IF_ERROR(ReadMapShapes(o.maps, &shapes));
  CostModel model;
  RETURN_IF_ERROR(FitCostModel(parts, &model));
  // Each shard count's last part: the largest collection it measured.
  std::map<uint32_t, MeasuredPart> last;
  for (const MeasuredPart& p : parts) last[p.shards] = p;
  auto one = last.find(1);
  if (one == last.end()) return InvalidArgument(o.measured + ": no part with 1 shard (the speed-up's reference)");
  const MeasuredPart& ref = one->second;
  const double ref_rate = static_cast<double>(ref.pages) / ref.seconds;
  const double batch_pages = static_cast<double>(ref.pages) / static_cast<double>(ref.batches);
  std::printf("cost model: t = %.6g + %.6g m + %.6g m R seconds per shard and batch (m pages compared, R resident); "
              "fit over %zu parts: rms relative error %.1f%%, max %.1f%%\n",
              model.c0, model.c1, model.c2, parts.size(), 100 * model.rms_relative_error, 100 * model.max_relative_error);
  if (model.c0 < 0 || model.c1 < 0 || model.c2 < 0) {
    std::printf("warning: a negative coefficient: the measured parts do not pin that cost down (vary batch sizes and "
                "collection sizes more)\n");
  }
  std::printf("simulated workload: batches of %.0f pages against %.0f resident pages (the 1-shard run's last part)\n",
              batch_pages, ref.resident);
  std::FILE* f = std::fopen(o.csv.c_str(), "w");
  if (f == nullptr) return IoError("cannot write " + o.csv);
  std::string out = "dims,shards,kind,pages_per_second,speedup,imbalance,sends_per_page\n";
  for (const auto& [shards, p] : last) {
    const double rate = static_cast<double>(p.pages) / p.seconds;
    out += fmt::format("3,{},measured,{:.1f},{:.4f},{:.4f},{:.4f}\n", shards, rate, rate / ref_rate, p.imbalance,
                       static_cast<double>(p.sends) / static_cast<double>(p.pages));
    std::printf("measured  3D %2u shards: %.0f pages/s, speed-up %.2f (model on this part: %.0f pages/s)\n", shards, rate,
                rate / ref_rate, static_cast<double>(p.pages) / PredictPartSeconds(model, p));
  }
  for (const MapShape& s : shapes) {
    const double rate = PredictThroughput(model, s, batch_pages, ref.resident);
    out += fmt::format("{},{},simulated,{:.1f},{:.4f},{:.4f},{:.4f}\n", s.dims, s.shards, rate, rate / ref_rate, s.imbalance,
                       s.sends_per_page);
    std::printf("simulated %uD %2u shards: %.0f pages/s, speed-up %.2f (imbalance %.3f, %.2f shards per page)\n", s.dims,
                s.shards, rate, rate / ref_rate, s.imbalance, s.sends_per_page);
  }
  const bool written = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  if (std::fclose(f) != 0 || !written) return IoError("writing " + o.csv + " failed");
  return Status::Ok();
}

}  // namespace neardup::experiments
