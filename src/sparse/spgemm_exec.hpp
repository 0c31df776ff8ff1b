#pragma once
// Private to src/sparse: the executors of the block-sparse multiply. multiply.cpp prepares the
// operands (conformed to the plan's image distribution) and calls one of them; each returns
// this rank's product panel alpha-free (C_own += op(A) op(B) over all images), to be merged
// into C by merge_into.
#include <vector>

#include "spgemm_panels.hpp"
#include "tessel/core/context.hpp"
#include "tessel/sparse/multiply.hpp"

namespace tessel::sparse::detail {

/// Ledger phases (nested under the caller's phase).
inline constexpr const char* kPhaseA = "spgemm/A panels";
inline constexpr const char* kPhaseB = "spgemm/B panels";
inline constexpr const char* kPhaseC = "spgemm/C panels";
inline constexpr const char* kPhaseSetup = "spgemm/setup";
inline constexpr const char* kPhaseConform = "spgemm/conform";

/// op(A) (rows as C, k blocks on process column kv / a) and op(B) (k blocks on process row
/// kv / b, columns as C), ready for the plan.
struct SpOperands {
  const BlockSparseMatrix<double>* a = nullptr;
  const BlockSparseMatrix<double>* b = nullptr;
  std::vector<int> kv;  // image of every k block
  const BlockSizes* rows = nullptr;
  const BlockSizes* inner = nullptr;
  const BlockSizes* cols = nullptr;
};

struct ExecOptions {
  double eps = 0;
  bool comm_only = false;
  const CAccumulator* allowed = nullptr;  // retain_sparsity: C's own pattern
};

struct ExecResult {
  PanelBuf product;  // this rank's C panel, sum over all images (not scaled by alpha)
  KernelStats stats;
  bool windows_created = false;
};

/// Collective over ctx. Seed Algorithm 1 (cannon.cpp).
ExecResult run_cannon(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt);
/// Collective over ctx. Seed Algorithm 2 (rma25d.cpp). `cache` may be null.
ExecResult run_rma25d(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache);

}  // namespace tessel::sparse::detail
