// Block-sparse Cannon (seed 001, Algorithm 1): set-up (image directories) -> pre-shift ->
// V = lcm(PR, PC) ticks of "post the next A and B images (Isend/Irecv), multiply the current
// ones, wait" -> this rank's C panel. The schedule is SpgemmPlan's (spgemm_plan.hpp).
#include "spgemm_exec.hpp"
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
                                int first, int count) {
  std::vector<PanelBuf> out(static_cast<std::size_t>(count));
  auto sizes = image_sizes(m.local(), rows, cols, kv, by_col, first, count);
  for (int q = 0; q < count; ++q) {
    auto& p = out[static_cast<std::size_t>(q)];
    p.resize(sizes[static_cast<std::size_t>(q)].nblocks, sizes[static_cast<std::size_t>(q)].ndata);
    pack_images(m.local(), rows, cols, kv, by_col, first + q, 1, p.meta.data(), p.data.data());
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

ExecResult run_cannon(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache) {
  CommLedger& ledger = ctx.ledger();
  ExecResult res;
  std::optional<layout::ProcessGrid2D> own;
  std::optional<layout::ProcessGrid2D>& slot = cache ? cache->grid : own;
  if (!slot ||
      (cache && (cache->grid_comm != ctx.comm().raw() || cache->grid_ledger != &ctx.ledger())) ||
      slot->pr() != plan.pr ||
      slot->pc() != plan.pc) {  // every rank decides alike (same cache history)
    slot.reset();
    slot.emplace(ctx.comm(), plan.pr, plan.pc);
    if (cache) {
      cache->grid_comm = ctx.comm().raw();
      cache->grid_ledger = &ctx.ledger();
    }
  }
  const layout::ProcessGrid2D& grid = *slot;
  const int i = grid.prow(), j = grid.pcol(), V = plan.v;
  const int a = plan.a_per_col(), b = plan.b_per_row();

  // Set-up: my home images and the size of every image of my row (A) and column (B).
  std::vector<PanelBuf> home_a = pack_home(*ops.a, *ops.rows, *ops.inner, ops.kv, true, j * a, a);
  std::vector<PanelBuf> sa(static_cast<std::size_t>(a + 1)), sb(static_cast<std::size_t>(b + 1));
  std::vector<PanelBuf> home_b;
  MemoryCharge panels = ledger.charge(MemKind::Buffers);
  auto account = [&] { panels.set(panel_bytes({&home_a, &home_b, &sa, &sb})); };
  account();
  std::vector<ImageSize> dir_a, dir_b;
  {
    PhaseScope ph(ledger, kPhaseSetup);
    dir_a = gather_image_sizes(grid.row(), sizes_of(home_a));  // by image v (column-major, row)
  }
  // Pre-shift: A slots 0..a-1 hold images v(i, j, 0..a-1), B slots 0..b-1 v(i, j, 0..b-1).
  // A's pre-shift ends (and its home copies go) before B's home images are packed.
  {
    PhaseScope ph(ledger, kPhaseA);
    preshift(
        grid.row(), plan.pc, j, a, [&](int pos, int q) { return plan.cannon_image(i, pos, q); },
        home_a, dir_a, sa);
  }
  home_a = {};  // sent (or moved into a slot): the pre-shift's copies are not needed any more
  home_b = pack_home(*ops.b, *ops.inner, *ops.cols, ops.kv, false, i * b, b);
  account();
  {
    PhaseScope ph(ledger, kPhaseSetup);
    dir_b = gather_image_sizes(grid.col(), sizes_of(home_b));  // the directory of B images
  }
  {
    PhaseScope ph(ledger, kPhaseB);
    preshift(
        grid.col(), plan.pr, i, b, [&](int pos, int q) { return plan.cannon_image(pos, j, q); },
        home_b, dir_b, sb);
  }
  home_b = {};
  account();

  // Ticks: shift the next images while the current ones are multiplied.
  CAccumulator& acc = res.product.emplace(ops.rows, ops.cols);
  acc.charge_to(ledger.charge(MemKind::Buffers));
  for (int t = 0; t < V; ++t) {
    comm::RequestSet rs;
    auto& cur_a = sa[static_cast<std::size_t>(t % (a + 1))];
    auto& cur_b = sb[static_cast<std::size_t>(t % (b + 1))];
    if (t < V - a) {
      PhaseScope ph(ledger, kPhaseA);
      post_recv(grid.row(), sa[static_cast<std::size_t>((t + a) % (a + 1))],
                dir_a[static_cast<std::size_t>(plan.cannon_image(i, j, t + a))], (j + 1) % plan.pc,
                rs);
      post_send(grid.row(), cur_a, (j + plan.pc - 1) % plan.pc, rs);
    }
    if (t < V - b) {
      PhaseScope ph(ledger, kPhaseB);
      post_recv(grid.col(), sb[static_cast<std::size_t>((t + b) % (b + 1))],
                dir_b[static_cast<std::size_t>(plan.cannon_image(i, j, t + b))], (i + 1) % plan.pr,
                rs);
      post_send(grid.col(), cur_b, (i + plan.pr - 1) % plan.pr, rs);
    }
    TickProgress progress(&rs, MPI_COMM_NULL, opt.progress_poll, &ctx.comm());  // p2p only
    cur_a.index(*ops.rows, *ops.inner);  // offsets of the received (or home) images: meta only,
    cur_b.index(*ops.inner, *ops.cols);  // so the sends of these buffers may still be reading
    multiply_images(cur_a.view(), cur_b.view(), *ops.rows, *ops.inner, *ops.cols, opt.row_thr,
                    opt.allowed, acc, res.stats, opt.comm_only,  // comm_only: symbolic
                    [&] { progress(); });
    account();  // the next images' buffers are allocated
    rs.wait_all();
    // A slot is refilled a + 1 (b + 1) ticks later; once no image comes into it any more
    // (the last a (b) ticks), its values are freed as soon as they are used and sent.
    if (t + 1 >= V - a) cur_a = PanelBuf{};
    if (t + 1 >= V - b) cur_b = PanelBuf{};
    acc.recharge();
    account();
  }
  return res;
}

}  // namespace tessel::sparse::detail
