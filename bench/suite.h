// The rows that need a cluster of their own (7 throughput, 9 herd, 8 scale): one ZooKeeper (fsync
// on) and 4 sidecars allowing enough connections (when rows 7 or 9 run), started once for all
// three, stopped at the end.
// And the plots of a run (bench/plots.py).
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"

namespace fencekeeper::bench {

// Runs the sections of throughput, herd and scale that `opt` wants.
void benchSuite(const Options& opt, Table& table);

// Writes every distribution's samples to opt.outDir/samples/ and runs bench/plots.py there
// (/usr/bin/python3 with Debian's matplotlib), bounded. Says on stderr what it wrote.
void writePlots(const Options& opt, const Table& table);

}  // namespace fencekeeper::bench
