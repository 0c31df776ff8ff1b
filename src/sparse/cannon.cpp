// Block-sparse Cannon (seed 001, Algorithm 1): set-up (image directories) -> pre-shift ->
// V = lcm(PR, PC) ticks of "post the next A and B images (Isend/Irecv), multiply the current
// ones, wait", each image in pieces (SpMultiplyOptions::cannon_pieces) so that a rank never
// holds two whole images of an operand -> this rank's C panel. The schedule is SpgemmPlan's
// (spgemm_plan.hpp).
#include "spgemm_exec.hpp"
#include "tessel/core/trace.hpp"
#include "tessel/layout/grid2d.hpp"

namespace tessel::sparse::detail {

namespace {
constexpr int kTagMeta = comm::tag::kCannonMeta, kTagData = comm::tag::kCannonData;

std::vector<ImageSize> sizes_of(const std::vector<PanelBuf>& home) {
  std::vector<ImageSize> out;
  for (const auto& p : home)
    out.push_back({static_cast<std::int64_t>(p.meta.size() / kMeta),
                   static_cast<std::int64_t>(p.data.size())});
  return out;
}

std::int64_t panel_bytes(std::initializer_list<const std::vector<PanelBuf>*> sets) {
  std::int64_t n = 0;
  for (const auto* v : sets)
    for (const auto& p : *v) n += p.held_bytes();
  return n;
}

/// My home images first .. first + count - 1, one buffer each.
std::vector<PanelBuf> pack_home(const BlockSparseMatrix<double>& m, const BlockSizes& rows,
                                const BlockSizes& cols, const std::vector<int>& kv, bool by_col,
                                int first, int count, RowRange only = {}) {
  std::vector<PanelBuf> out(static_cast<std::size_t>(count));
  auto sizes = image_sizes(m.local(), rows, cols, kv, by_col, first, count, only);
  for (int q = 0; q < count; ++q) {
    auto& p = out[static_cast<std::size_t>(q)];
    p.resize(sizes[static_cast<std::size_t>(q)].nblocks, sizes[static_cast<std::size_t>(q)].ndata);
    pack_images(m.local(), rows, cols, kv, by_col, first + q, 1, p.meta.data(), p.data.data(),
                only);
  }
  return out;
}

void post_send(const comm::Comm& c, const PanelBuf& p, int dest, comm::RequestSet& rs) {
  c.isend(p.meta.data(), static_cast<std::int64_t>(p.meta.size()), dest, kTagMeta, rs);
  c.isend(p.data.data(), static_cast<std::int64_t>(p.data.size()), dest, kTagData, rs);
}
void post_recv(const comm::Comm& c, PanelBuf& p, const ImageSize& s, int src,
               comm::RequestSet& rs) {
  p.resize(s.nblocks, s.ndata);
  c.irecv(p.meta.data(), static_cast<std::int64_t>(p.meta.size()), src, kTagMeta, rs);
  c.irecv(p.data.data(), static_cast<std::int64_t>(p.data.size()), src, kTagData, rs);
}

/// Pre-shift of one operand along a ring of `n` ranks (my position `me`): slot q < per gets
/// image img(me, q), homed on position img / per; my home images go to every position whose
/// start window contains them.
void preshift(const comm::Comm& ring, int n, int me, int per,
              const std::function<int(int pos, int q)>& img, std::vector<PanelBuf>& home,
              const std::vector<ImageSize>& dir, std::vector<PanelBuf>& slots) {
  comm::RequestSet rs;
  for (int q = 0; q < per; ++q) {
    int v = img(me, q), src = v / per;
    if (src != me)
      post_recv(ring, slots[static_cast<std::size_t>(q)], dir[static_cast<std::size_t>(v)], src,
                rs);
  }
  for (int pos = 0; pos < n; ++pos) {
    if (pos == me) continue;
    for (int q = 0; q < per; ++q) {
      int v = img(pos, q);
      if (v / per == me) post_send(ring, home[static_cast<std::size_t>(v - me * per)], pos, rs);
    }
  }
  rs.wait_all();
  for (int q = 0; q < per; ++q) {  // local images last: the sends above read `home`
    int v = img(me, q);
    if (v / per == me)
      slots[static_cast<std::size_t>(q)] = std::move(home[static_cast<std::size_t>(v - me * per)]);
  }
}
}  // namespace

std::vector<int> image_pieces(const std::vector<int>& kv, int images, int pieces) {
  if (pieces == 1) return kv;
  std::vector<std::int64_t> count(static_cast<std::size_t>(images), 0), seen(count);
  for (int v : kv) ++count[static_cast<std::size_t>(v)];
  std::vector<int> out(kv.size());
  for (std::size_t k = 0; k < kv.size(); ++k) {
    const auto v = static_cast<std::size_t>(kv[k]);
    const std::int64_t piece = seen[v]++ * pieces / count[v];
    out[k] = kv[k] * pieces + static_cast<int>(piece);
  }
  return out;
}

namespace {
constexpr int kGridReused = 1, kGridRebuilt = 2;  // the bits of cannon_grid's agreement

/// The PR x PC grid of `plan`: the cache's when it holds this communicator's (and ledger's)
/// grid of that shape, else a new one (a collective communicator split). Collective when
/// `cache` is given: one allreduce of two bits in the set-up phase, so that a cache holding
/// the grid on some ranks and not on others (only some would enter the split: a hang) is an
/// InputError on every rank instead.
const layout::ProcessGrid2D& cannon_grid(Context& ctx, const SpgemmPlan& plan,
                                         SpMultiplyCache::State* cache,
                                         std::optional<layout::ProcessGrid2D>& own) {
  std::optional<layout::ProcessGrid2D>& slot = cache ? cache->grid : own;
  const bool reuse =
      slot && slot->pr() == plan.pr && slot->pc() == plan.pc &&
      (!cache || (cache->grid_comm == ctx.comm().raw() && cache->grid_ledger == &ctx.ledger()));
  if (cache) {
    PhaseScope ph(ctx.ledger(), kPhaseSetup);
    int any = reuse ? kGridReused : kGridRebuilt;
    ctx.comm().allreduce(&any, 1, MPI_BOR);
    TESSEL_CHECK(any != (kGridReused | kGridRebuilt), InputError,
                 "spgemm cannon: the SpMultiplyCache differs between ranks: this rank's ",
                 reuse ? "holds" : "does not hold", " the ", plan.pr, " x ", plan.pc,
                 " grid of this communicator and another rank's ", reuse ? "does not" : "does",
                 " (pass the same cache, or none, to the multiply on every rank)");
  }
  if (!reuse) {
    slot.reset();
    slot.emplace(ctx.comm(), plan.pr, plan.pc);
    if (cache) {
      cache->grid_comm = ctx.comm().raw();
      cache->grid_ledger = &ctx.ledger();
    }
  }
  return *slot;
}
}  // namespace

// Images are cut into Q = opt.cannon_pieces pieces (image_pieces): piece c of image v is image
// v Q + c of the refined map, slot s of an operand is buffers s Q .. s Q + Q - 1, and a tick
// moves and multiplies its images piece by piece, freeing each piece once it is multiplied and
// sent: a rank holds its current images plus one piece of the next per operand.
ExecResult run_cannon(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache) {
  CommLedger& ledger = ctx.ledger();
  ExecResult res;
  std::optional<layout::ProcessGrid2D> own;
  const layout::ProcessGrid2D& grid = cannon_grid(ctx, plan, cache, own);
  const int i = grid.prow(), j = grid.pcol(), V = plan.v, Q = opt.cannon_pieces;
  const int a = plan.a_per_col(), b = plan.b_per_row();
  const std::vector<int> kq = image_pieces(ops.kv, V, Q);
  auto piece_of = [Q](int v, int c) { return v * Q + c; };

  // Set-up: my home pieces and the size of every piece of my row (A) and column (B).
  std::vector<PanelBuf> home_a =
      pack_home(*ops.a, *ops.rows, *ops.inner, kq, true, j * a * Q, a * Q, opt.a_rows);
  std::vector<PanelBuf> sa(static_cast<std::size_t>((a + 1) * Q)),
      sb(static_cast<std::size_t>((b + 1) * Q));
  std::vector<PanelBuf> home_b;
  MemoryCharge panels = ledger.charge(MemKind::Buffers);
  auto account = [&] { panels.set(panel_bytes({&home_a, &home_b, &sa, &sb})); };
  account();
  std::vector<ImageSize> dir_a, dir_b;
  {
    PhaseScope ph(ledger, kPhaseSetup);
    dir_a = gather_image_sizes(grid.row(), sizes_of(home_a));  // by piece v Q + c
  }
  // Pre-shift: A slots 0..a-1 hold images v(i, j, 0..a-1), B slots 0..b-1 v(i, j, 0..b-1).
  // A's pre-shift ends (and its home copies go) before B's home images are packed.
  {
    PhaseScope ph(ledger, kPhaseA);
    preshift(
        grid.row(), plan.pc, j, a * Q,
        [&](int pos, int q) { return piece_of(plan.cannon_image(i, pos, q / Q), q % Q); }, home_a,
        dir_a, sa);
  }
  home_a = {};  // sent (or moved into a slot): the pre-shift's copies are not needed any more
  home_b = pack_home(*ops.b, *ops.inner, *ops.cols, kq, false, i * b * Q, b * Q);
  account();
  {
    PhaseScope ph(ledger, kPhaseSetup);
    dir_b = gather_image_sizes(grid.col(), sizes_of(home_b));  // the directory of B images
  }
  {
    PhaseScope ph(ledger, kPhaseB);
    preshift(
        grid.col(), plan.pr, i, b * Q,
        [&](int pos, int q) { return piece_of(plan.cannon_image(pos, j, q / Q), q % Q); }, home_b,
        dir_b, sb);
  }
  home_b = {};
  account();

  // Ticks: piece by piece, shift the next images' piece while the current one is multiplied.
  CAccumulator& acc = res.product.emplace(ops.rows, ops.cols);
  acc.charge_to(ledger.charge(MemKind::Buffers));
  for (int t = 0; t < V; ++t) {
    for (int c = 0; c < Q; ++c) {
      comm::RequestSet rs;
      auto& cur_a = sa[static_cast<std::size_t>((t % (a + 1)) * Q + c)];
      auto& cur_b = sb[static_cast<std::size_t>((t % (b + 1)) * Q + c)];
      if (t < V - a) {
        PhaseScope ph(ledger, kPhaseA);
        post_recv(grid.row(), sa[static_cast<std::size_t>(((t + a) % (a + 1)) * Q + c)],
                  dir_a[static_cast<std::size_t>(piece_of(plan.cannon_image(i, j, t + a), c))],
                  (j + 1) % plan.pc, rs);
        post_send(grid.row(), cur_a, (j + plan.pc - 1) % plan.pc, rs);
      }
      if (t < V - b) {
        PhaseScope ph(ledger, kPhaseB);
        post_recv(grid.col(), sb[static_cast<std::size_t>(((t + b) % (b + 1)) * Q + c)],
                  dir_b[static_cast<std::size_t>(piece_of(plan.cannon_image(i, j, t + b), c))],
                  (i + 1) % plan.pr, rs);
        post_send(grid.col(), cur_b, (i + plan.pr - 1) % plan.pr, rs);
      }
      TickProgress progress(&rs, MPI_COMM_NULL, opt.progress_poll, &ctx.comm());  // p2p only
      cur_a.index(*ops.rows, *ops.inner);  // offsets of the received (or home) images: meta
      cur_b.index(*ops.inner, *ops.cols);  // only, so the sends may still be reading them
      {
        KernelSpan span(&ledger, "block products");  // --trace: the tick's local kernel
        multiply_images(cur_a.view(), cur_b.view(), *ops.rows, *ops.inner, *ops.cols, opt.row_thr,
                        opt.allowed, acc, res.stats, opt.kernel, [&] { progress(); });
        charge_skipped_products(res.stats);
      }
      account();  // the next images' piece is allocated
      rs.wait_all();
      cur_a = PanelBuf{};  // multiplied and sent: its memory goes before the next piece comes
      cur_b = PanelBuf{};
      acc.recharge();
      account();
    }
  }
  return res;
}

}  // namespace tessel::sparse::detail
