// Samples, percentiles and the table the benchmark prints. Header-only, no dependencies.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace fencekeeper::bench {

using Clock = std::chrono::steady_clock;

inline double nsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// Latencies in nanoseconds.
struct Samples {
  std::vector<double> ns;
  int failures = 0;

  void add(double v) { ns.push_back(v); }
  size_t n() const { return ns.size(); }
  // Nearest-rank percentile, q in [0, 100].
  double pct(double q) const {
    if (ns.empty()) return NAN;
    std::vector<double> s = ns;
    std::sort(s.begin(), s.end());
    size_t rank = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(s.size())));
    return s[std::min(s.size() - 1, rank == 0 ? 0 : rank - 1)];
  }
  double median() const { return pct(50); }
  double p99() const { return pct(99); }
  double max() const { return ns.empty() ? NAN : *std::max_element(ns.begin(), ns.end()); }
  double min() const { return ns.empty() ? NAN : *std::min_element(ns.begin(), ns.end()); }
  double mean() const {
    if (ns.empty()) return NAN;
    double sum = 0;
    for (double v : ns) sum += v;
    return sum / static_cast<double>(ns.size());
  }
};

// "12.3 us", "1.82 ms", "41 ns".
inline std::string human(double ns) {
  if (std::isnan(ns)) return "-";
  char buf[32];
  if (ns < 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  }
  return buf;
}

struct Row {
  std::string id;  // "1", "2b", ...: matches the numbered items in README.md
  std::string label;
  size_t n = 0;
  int failures = 0;
  double median = NAN, p99 = NAN, max = NAN;
  std::string note;   // ratio, rate, ...
  std::string value;  // a figure that is not a time ("41.2 MB", "1234/s"): shown as the median
};

class Table {
 public:
  Row& add(std::string id, std::string label, const Samples& s, std::string note = {}) {
    samples_.emplace_back(id, s.ns);
    rows_.push_back(Row{std::move(id),
                        std::move(label),
                        s.n(),
                        s.failures,
                        s.median(),
                        s.p99(),
                        s.max(),
                        std::move(note),
                        {}});
    return rows_.back();
  }
  // The row `id` added earlier in this run, if any.
  const Row* find(const std::string& id) const {
    for (const Row& r : rows_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }
  // A row that is one figure (ns/op), not a distribution.
  Row& addFigure(std::string id, std::string label, size_t n, double value, std::string note = {}) {
    rows_.push_back(
        Row{std::move(id), std::move(label), n, 0, value, NAN, NAN, std::move(note), {}});
    return rows_.back();
  }
  // A row whose figure is not a time.
  Row& addValue(std::string id, std::string label, size_t n, std::string value,
                std::string note = {}) {
    rows_.push_back(Row{std::move(id), std::move(label), n, 0, NAN, NAN, NAN, std::move(note),
                        std::move(value)});
    return rows_.back();
  }
  void print(FILE* out) const {
    std::fprintf(out, "%-6s %-54s %7s %10s %10s %10s  %s\n", "#", "what", "n", "median", "p99",
                 "max", "note");
    for (auto& r : rows_) {
      std::string n = std::to_string(r.n);
      if (r.failures) n += "!" + std::to_string(r.failures);
      std::fprintf(out, "%-6s %-54s %7s %10s %10s %10s  %s\n", r.id.c_str(), r.label.c_str(),
                   n.c_str(), r.value.empty() ? human(r.median).c_str() : r.value.c_str(),
                   human(r.p99).c_str(), human(r.max).c_str(), r.note.c_str());
    }
  }
  void printTsv(FILE* out) const {
    std::fprintf(out, "id\tlabel\tn\tfailures\tmedian_ns\tp99_ns\tmax_ns\tnote\n");
    for (auto& r : rows_) {
      std::fprintf(out, "%s\t%s\t%zu\t%d\t%.0f\t%.0f\t%.0f\t%s%s%s\n", r.id.c_str(),
                   r.label.c_str(), r.n, r.failures, r.median, r.p99, r.max, r.value.c_str(),
                   r.value.empty() ? "" : "; ", r.note.c_str());
    }
  }
  // Every distribution row's samples, one file per row (DIR/ID.txt, nanoseconds one a line), for
  // the plots. False when a file cannot be written.
  bool writeSamples(const std::string& dir) const {
    for (auto& [id, ns] : samples_) {
      FILE* f = std::fopen((dir + "/" + id + ".txt").c_str(), "w");
      if (!f) return false;
      for (double v : ns) std::fprintf(f, "%.0f\n", v);
      std::fclose(f);
    }
    return true;
  }

 private:
  std::vector<Row> rows_;
  std::vector<std::pair<std::string, std::vector<double>>> samples_;
};

inline std::string ratio(double num, double den, const char* what) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "x%.2f %s", num / den, what);
  return buf;
}

}  // namespace fencekeeper::bench
