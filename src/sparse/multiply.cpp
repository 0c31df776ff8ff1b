// multiply(): check -> plan -> conform the operands to the plan's images -> executor (Cannon or
// rma25d) -> merge alpha * product into beta * C, final filter -> report.
#include "tessel/sparse/multiply.hpp"

#include <libxsmm.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "access.hpp"
#include "spgemm_exec.hpp"

namespace tessel::sparse {

SpVolumeModel volume_model(Context& ctx, const BlockSparseMatrix<double>& a,
                           const BlockSparseMatrix<double>& b, const BlockSparseMatrix<double>& c,
                           const SpMultiplyOptions& options) {
  double t[4] = {0, 0, 0, 0};
  auto sum = [](const BlockSparseMatrix<double>& m, double per_block) {
    double s = 0;
    m.for_each_block(
        [&](int, int, const double*, int nr, int nc) { s += per_block + 8.0 * nr * nc; });
    return s;
  };
  auto images = [](const BlockSparseMatrix<double>& m) {
    double s = 0;
    m.for_each_block([&](int, int, const double*, int nr, int nc) {
      s += static_cast<double>(detail::image_block_bytes(nr, nc));
    });
    return s;
  };
  t[0] = images(a);
  t[1] = images(b);
  // C wire: 8 per block + 8 per value; retain: values + a bitmap over C's pattern (1/8 B per block)
  t[2] = options.product_bytes_hint > 0 ? 0 : sum(c, options.retain_sparsity ? 0.125 : 8);
  t[3] = options.retain_sparsity ? 8.0 * static_cast<double>(c.local_nblocks()) : 0.0;
  ctx.comm().allreduce(t, 4, MPI_SUM);
  SpVolumeModel m{t[0], t[1], t[2], t[3], options.retain_sparsity, {}};
  if (options.product_bytes_hint > 0)
    m.c = options.product_bytes_hint;
  else if (m.c == 0)
    m.c = std::max(m.a, m.b);
  return m;
}

namespace {
/// Pure. The image of every k block under `plan` (k_images on the operands' own distributions:
/// an operand whose k blocks are already on image-compatible ranks is not moved).
std::vector<int> images_of_k(const SpgemmPlan& plan, SpOp opa, const Distribution& da, SpOp opb,
                             const Distribution& db) {
  const BlockSizes& inner = opa == SpOp::N ? da.col_blocks() : da.row_blocks();
  return k_images(plan, inner.count(), opa == SpOp::N ? &da.col_dist() : nullptr,
                  opb == SpOp::N ? &db.row_dist() : nullptr);
}
}  // namespace

void add_image_bytes(Context& ctx, SpOp opa, const BlockSparseMatrix<double>& a, SpOp opb,
                     const BlockSparseMatrix<double>& b, const Distribution& dc, int max_layers,
                     SpVolumeModel& m) {
  const int pr = dc.pr(), pc = dc.pc();
  std::vector<SpVolumeModel::Images> out;
  std::vector<std::int64_t> all;  // every L's A table, then its B table
  for (int L : valid_layers(pr, pc)) {
    if (L > std::max(1, max_layers)) continue;
    const SpgemmPlan plan = make_spgemm_plan(SpAlgorithm::Rma25d, pr, pc, L);
    const std::vector<int> kv = images_of_k(plan, opa, a.distribution(), opb, b.distribution());
    SpVolumeModel::Images im{L, plan.v, std::vector<std::int64_t>(std::size_t(pr) * plan.v),
                             std::vector<std::int64_t>(std::size_t(plan.v) * pc)};
    a.for_each_block([&](int r, int c, const double*, int nr, int nc) {
      const int row = opa == SpOp::N ? r : c, k = opa == SpOp::N ? c : r;
      im.a[std::size_t(dc.row_owner(row)) * plan.v + kv[std::size_t(k)]] +=
          detail::image_block_bytes(nr, nc);
    });
    b.for_each_block([&](int r, int c, const double*, int nr, int nc) {
      const int k = opb == SpOp::N ? r : c, col = opb == SpOp::N ? c : r;
      im.b[std::size_t(kv[std::size_t(k)]) * pc + dc.col_owner(col)] +=
          detail::image_block_bytes(nr, nc);
    });
    all.insert(all.end(), im.a.begin(), im.a.end());
    all.insert(all.end(), im.b.begin(), im.b.end());
    out.push_back(std::move(im));
  }
  ctx.comm().allreduce(all.data(), static_cast<int>(all.size()), MPI_SUM);
  std::size_t at = 0;
  for (auto& im : out) {
    for (auto* t : {&im.a, &im.b}) {
      std::copy(all.begin() + static_cast<std::ptrdiff_t>(at),
                all.begin() + static_cast<std::ptrdiff_t>(at + t->size()), t->begin());
      at += t->size();
    }
    m.images.push_back(std::move(im));
  }
}

SpAlgorithm parse_sp_algorithm(const std::string& s) {
  if (s == "cannon") return SpAlgorithm::Cannon;
  if (s == "rma25d") return SpAlgorithm::Rma25d;
  throw InputError("spgemm: algorithm '" + s + "' (expected cannon or rma25d)");
}

namespace {
using detail::SpOperands;

SpPanelBytes bytes_of(const PhaseCounts& c) {
  return {c.recv_bytes(), c.sent_bytes(), c.p2p_sent_msgs + c.p2p_recv_msgs, c.rma_ops};
}
SpPanelBytes diff(const SpPanelBytes& x, const SpPanelBytes& y) {
  return {x.recv - y.recv, x.sent - y.sent, x.msgs - y.msgs, x.rma_ops - y.rma_ops};
}
/// This rank's counts of phase `<current>/<name>`.
SpPanelBytes phase_bytes(const CommLedger& l, const std::string& name) {
  std::string full = l.phase().empty() ? name : l.phase() + "/" + name;
  return bytes_of(l.total(full));
}

const char* op_name(SpOp o) { return o == SpOp::N ? "N" : "T"; }

void check_shapes(const Context& ctx, SpOp opa, const BlockSparseMatrix<double>& a, SpOp opb,
                  const BlockSparseMatrix<double>& b, const BlockSparseMatrix<double>& c) {
  TESSEL_CHECK(&c != &a && &c != &b, InputError,
               "spgemm: C must not be the same matrix as A or B (use a copy)");
  for (const BlockSparseMatrix<double>* m : {&a, &b, &c}) {
    const auto& d = m->distribution();
    TESSEL_CHECK(d.nranks() == ctx.size(), GridError, "spgemm: ", m->name(), " is on a ", d.pr(),
                 "x", d.pc(), " grid but the context has ", ctx.size(), " ranks");
  }
  const auto& dc = c.distribution();
  for (const auto* m : {&a, &b}) {
    const auto& d = m->distribution();
    TESSEL_CHECK(d.pr() == dc.pr() && d.pc() == dc.pc(), GridError, "spgemm: ", m->name(),
                 " is on a ", d.pr(), "x", d.pc(), " grid but C (", c.name(), ") on ", dc.pr(), "x",
                 dc.pc(), " (expected one grid)");
  }
  const auto& da = a.distribution();
  const auto& db = b.distribution();
  const BlockSizes& ar = opa == SpOp::N ? da.row_blocks() : da.col_blocks();
  const BlockSizes& ak = opa == SpOp::N ? da.col_blocks() : da.row_blocks();
  const BlockSizes& bk = opb == SpOp::N ? db.row_blocks() : db.col_blocks();
  const BlockSizes& bc = opb == SpOp::N ? db.col_blocks() : db.row_blocks();
  TESSEL_CHECK(ak == bk, DimensionMismatch, "spgemm: op", op_name(opa), "(", a.name(), ") is ",
               ar.extent(), " x ", ak.extent(), " (", ar.count(), " x ", ak.count(),
               " blocks) but op", op_name(opb), "(", b.name(), ") is ", bk.extent(), " x ",
               bc.extent(), " (", bk.count(), " x ", bc.count(),
               " blocks): inner block sizes differ");
  TESSEL_CHECK(ar == dc.row_blocks() && bc == dc.col_blocks(), DimensionMismatch, "spgemm: op(",
               a.name(), ") op(", b.name(), ") is ", ar.extent(), " x ", bc.extent(), " (",
               ar.count(), " x ", bc.count(), " blocks) but C (", c.name(), ") is ", c.rows(),
               " x ", c.cols(), " (", dc.row_blocks().count(), " x ", dc.col_blocks().count(),
               " blocks, or different block sizes)");
}

/// op(M) on `target`, without a copy when M (op N) is already there. Otherwise every local
/// block (transposed locally for op T) is put to its owner on `target`: one finalize().
const BlockSparseMatrix<double>* conform(Context& ctx, SpOp op, const BlockSparseMatrix<double>& m,
                                         const Distribution& target,
                                         std::optional<BlockSparseMatrix<double>>& store) {
  if (op == SpOp::N && m.distribution() == target) return &m;
  PhaseScope ph(ctx.ledger(), detail::kPhaseConform);
  store.emplace(ctx, target, m.name());
  put_all_blocks(m, *store, op == SpOp::T);
  store->finalize();
  return &*store;
}
/// Collective over ctx. The on-the-fly filter's threshold of every block row r of C, eps / n_r
/// with n_r the block products of row r in the whole multiply (op(B)'s row counts summed over
/// all ranks, then op(A)'s blocks of row r weighted by them and summed over all ranks): the
/// same on every grid, so the products skipped do not depend on the rank count. Two allreduces
/// of one count per block row (inner, then C's rows), in the setup phase.
std::vector<double> row_thresholds(Context& ctx, const SpOperands& ops, double eps) {
  PhaseScope ph(ctx.ledger(), detail::kPhaseSetup);
  std::vector<std::int64_t> b_rows(static_cast<std::size_t>(ops.inner->count()), 0);
  detail::add_row_counts(ops.b->local(), b_rows);
  ctx.comm().allreduce(b_rows.data(), static_cast<int>(b_rows.size()), MPI_SUM);
  std::vector<std::int64_t> products(static_cast<std::size_t>(ops.rows->count()), 0);
  detail::add_row_products(ops.a->local(), b_rows, products);
  ctx.comm().allreduce(products.data(), static_cast<int>(products.size()), MPI_SUM);
  return detail::row_thresholds(products, eps);
}

/// Cannon's pieces per image: `requested`, or with 0 (auto) as many as keep a piece of the
/// larger operand's local storage (max over ranks, one allreduce in the setup phase) within
/// kAutoPieceBytes, at most kMaxAutoPieces. Collective when auto.
int cannon_pieces(Context& ctx, const SpOperands& ops, int requested) {
  if (requested > 0) return requested;
  PhaseScope ph(ctx.ledger(), detail::kPhaseSetup);
  const double local = static_cast<double>(std::max(ops.a->local_bytes(), ops.b->local_bytes()));
  const double most = ctx.comm().allreduce_value(local, MPI_MAX);
  const double pieces = std::ceil(most / static_cast<double>(detail::kAutoPieceBytes));
  return static_cast<int>(std::clamp(pieces, 1.0, static_cast<double>(detail::kMaxAutoPieces)));
}

/// Conform the operands, run the executor once per row panel (SpMultiplyOptions::row_panels):
/// `take` gets this rank's product of each panel in turn (panel 0 first), to merge into C
/// before the next one is computed.
void run_multiply(Context& ctx, const SpgemmPlan& plan, double alpha, SpOp opa,
                  const BlockSparseMatrix<double>& a, SpOp opb, const BlockSparseMatrix<double>& b,
                  const BlockSparseMatrix<double>& c, const SpMultiplyOptions& options,
                  SpMultiplyCache* cache, const std::function<void(detail::ExecResult&)>& take) {
  const Distribution& dc = c.distribution();
  // Conform: op(A) rows as C's, k blocks on the plan's images; op(B) likewise.
  const auto& da = a.distribution();
  const auto& db = b.distribution();
  const BlockSizes& inner = opa == SpOp::N ? da.col_blocks() : da.row_blocks();
  if (const KernelTimes* t = ctx.product_times(); t && !options.comm_only)  // pure: all or none
    check_product_times(*t, dc.row_blocks(), inner, dc.col_blocks(),
                        t->source().empty() ? "ContextOptions::product_times" : t->source());
  SpOperands ops;
  ops.kv = images_of_k(plan, opa, da, opb, db);
  std::vector<int> acol(ops.kv.size()), brow(ops.kv.size());
  for (std::size_t k = 0; k < ops.kv.size(); ++k) {
    acol[k] = plan.a_home_col(ops.kv[k]);
    brow[k] = plan.b_home_row(ops.kv[k]);
  }
  Distribution ta(dc.row_blocks(), inner, dc.pr(), dc.pc(), dc.row_dist(), acol);
  Distribution tb(inner, dc.col_blocks(), dc.pr(), dc.pc(), brow, dc.col_dist());
  std::optional<BlockSparseMatrix<double>> sa, sb;
  ops.a = conform(ctx, opa, a, ta, sa);
  ops.b = conform(ctx, opb, b, tb, sb);
  ops.rows = &dc.row_blocks();
  ops.inner = &ta.col_blocks();
  ops.cols = &dc.col_blocks();

  std::optional<detail::CAccumulator> allowed;
  detail::ExecOptions eo;
  std::vector<double> thr;
  if (options.filter_eps > 0) {
    thr = row_thresholds(ctx, ops, options.filter_eps);
    eo.row_thr = thr.data();
  }
  if (options.filter_eps > 0 && options.drop_partial_blocks && plan.layers > 1)
    eo.partial_drop = options.filter_eps / (plan.layers * std::abs(alpha));
  eo.kernel = {options.comm_only                    ? detail::KernelMode::Symbolic
               : ctx.compute() == ComputeMode::Skip ? detail::KernelMode::Sampled
                                                    : detail::KernelMode::Compute,
               ctx.product_times(), options.time_products};
  eo.progress_poll = options.progress_poll;
  if (plan.algorithm == SpAlgorithm::Cannon)
    eo.cannon_pieces = cannon_pieces(ctx, ops, options.cannon_pieces);
  if (options.retain_sparsity) {
    allowed.emplace(detail::pattern_of(c));
    eo.allowed = &*allowed;
    eo.retain_c = &c;
  }
  for (const detail::RowRange& rows : detail::row_panels(*ops.rows, options.row_panels)) {
    eo.a_rows = options.row_panels > 1 ? rows : detail::RowRange{};
    detail::ExecResult res =
        plan.algorithm == SpAlgorithm::Cannon
            ? detail::run_cannon(ctx, plan, ops, eo, cache ? &cache->state() : nullptr)
            : detail::run_rma25d(ctx, plan, ops, eo, cache ? &cache->state() : nullptr);
    take(res);  // merged into C: the panel's product is freed before the next one
  }
}
}  // namespace

SpMultiplyReport multiply(Context& ctx, double alpha, SpOp opa, const BlockSparseMatrix<double>& a,
                          SpOp opb, const BlockSparseMatrix<double>& b, double beta,
                          BlockSparseMatrix<double>& c, const SpMultiplyOptions& options,
                          SpMultiplyCache* cache) {
  check_shapes(ctx, opa, a, opb, b, c);
  ctx.agree([&] {
    for (const BlockSparseMatrix<double>* m :
         {&a, &b, static_cast<const BlockSparseMatrix<double>*>(&c)})
      TESSEL_CHECK(m->is_finalized(), InputError, "spgemm: ", m->name(),
                   " has blocks put since the last finalize() (call finalize() first)");
  });
  TESSEL_CHECK(options.filter_eps >= 0, InputError, "spgemm: filter_eps = ", options.filter_eps,
               " (expected >= 0)");
  TESSEL_CHECK(std::isfinite(options.progress_poll) && options.progress_poll >= 0, InputError,
               "spgemm: progress_poll = ", options.progress_poll, " s (expected >= 0)");
  TESSEL_CHECK(options.cannon_pieces >= 0 && options.cannon_pieces <= detail::kMaxCannonPieces,
               InputError, "spgemm: cannon_pieces = ", options.cannon_pieces,
               " (expected 0 = auto, or 1 .. ", detail::kMaxCannonPieces, ")");
  TESSEL_CHECK(options.row_panels >= 1 && options.row_panels <= detail::kMaxRowPanels, InputError,
               "spgemm: row_panels = ", options.row_panels, " (expected 1 .. ",
               detail::kMaxRowPanels, ")");
  TESSEL_CHECK(options.row_panels == 1 || (options.algorithm == SpAlgorithm::Cannon &&
                                           beta == 0.0 && !options.retain_sparsity),
               InputError, "spgemm: row_panels = ", options.row_panels,
               " needs algorithm cannon, beta = 0 and no retain_sparsity (got ",
               options.algorithm == SpAlgorithm::Cannon ? "cannon" : "rma25d", ", beta = ", beta,
               options.retain_sparsity ? ", retain_sparsity" : "", ")");
  const Distribution& dc = c.distribution();
  SpMultiplyReport rep;
  if (options.algorithm == SpAlgorithm::Rma25d && options.layers == 0) {  // auto: eq. 7
    const SpVolumeModel m = volume_model(ctx, a, b, c, options);
    rep.plan = make_spgemm_plan(options.algorithm, dc.pr(), dc.pc(), 0, &m);
  } else {
    rep.plan = make_spgemm_plan(options.algorithm, dc.pr(), dc.pc(), options.layers);
  }
  const SpgemmPlan& plan = rep.plan;
  libxsmm_init();

  CommLedger& ledger = ctx.ledger();
  const char* names[] = {detail::kPhaseA,     detail::kPhaseB,       detail::kPhaseC,
                         detail::kPhaseSetup, detail::kPhaseConform, detail::kPhaseCPattern};
  constexpr int kPhases = 6;
  SpPanelBytes before[kPhases];
  for (int x = 0; x < kPhases; ++x) before[x] = phase_bytes(ledger, names[x]);

  // Each panel's product is merged as it comes: C = beta C + alpha P_0, then C + alpha P_p
  // (row_panels > 1 needs beta = 0: the panels' rows are disjoint, so every block is filtered
  // once, on its whole sum, as in one pass).
  bool first = true;
  auto take = [&](detail::ExecResult& res) {
    rep.partial_blocks_dropped += res.partial_blocks_dropped;
    const detail::CAccumulator* product = res.product ? &*res.product : nullptr;
    rep.product_blocks += product ? product->nblocks() : 0;
    rep.product_values += product ? product->nvalues() : 0;
    MemoryCharge merge = ledger.charge(MemKind::Buffers);
    rep.blocks_filtered += detail::merge_into(c, first ? beta : 1.0, alpha, product,
                                              options.retain_sparsity, options.filter_eps, &merge);
    first = false;
    rep.flops += res.stats.flops;
    rep.blocks_multiplied += res.stats.multiplied;
    rep.charged_s += res.stats.charged_s;
    add_to(rep.product_times, res.stats.timed);
    rep.blocks_skipped += res.stats.skipped;
    rep.windows_created = rep.windows_created || res.windows_created;
    res.product.reset();
    if (options.trim_heap) return_free_heap();
  };
  if (alpha != 0.0) {  // alpha = 0 (the same on every rank): C = beta C, nothing moves
    run_multiply(ctx, plan, alpha, opa, a, opb, b, c, options, cache, take);
  } else {
    detail::ExecResult none;
    take(none);
  }
  SpPanelBytes* outs[] = {&rep.a_panels, &rep.b_panels, &rep.c_panels,
                          &rep.setup,    &rep.conform,  &rep.c_pattern};
  for (int x = 0; x < kPhases; ++x) *outs[x] = diff(phase_bytes(ledger, names[x]), before[x]);
  return rep;
}

}  // namespace tessel::sparse
