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

namespace {

// One Cannon multiply at this rank's grid position (i, j). Images are cut into
// Q = opt.cannon_pieces pieces (image_pieces): piece c of image v is image v Q + c of the
// refined map, slot s of an operand is buffers s Q .. s Q + Q - 1, and a tick moves and
// multiplies its images piece by piece, freeing each piece once it is multiplied and sent: a
// rank holds its current images plus one piece of the next per operand.
class CannonRun {
 public:
  CannonRun(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops, const ExecOptions& opt,
            const layout::ProcessGrid2D& grid, ExecResult& res)
      : ctx_(ctx),
        ledger_(ctx.ledger()),
        plan_(plan),
        ops_(ops),
        opt_(opt),
        grid_(grid),
        i_(grid.prow()),
        j_(grid.pcol()),
        V_(plan.v),
        Q_(opt.cannon_pieces),
        a_(plan.a_per_col()),
        b_(plan.b_per_row()),
        kq_(image_pieces(ops.kv, V_, Q_)),
        res_(res) {}

  // Fills res_ (the caller's: the accumulator's memory charge is not moved).
  void run() {
    shift_in_a();
    shift_in_b();
    CAccumulator& acc = res_.product.emplace(ops_.rows, ops_.cols);
    acc.charge_to(ledger_.charge(MemKind::Buffers));
    for (int t = 0; t < V_; ++t)
      for (int c = 0; c < Q_; ++c) tick_piece(t, c, acc);
  }

 private:
  int piece_of(int v, int c) const { return v * Q_ + c; }
  PanelBuf& slot_a(int s, int c) { return sa_[static_cast<std::size_t>((s % (a_ + 1)) * Q_ + c)]; }
  PanelBuf& slot_b(int s, int c) { return sb_[static_cast<std::size_t>((s % (b_ + 1)) * Q_ + c)]; }
  // Index in the directories of piece c of the image this rank multiplies at tick s.
  std::size_t tick_piece_index(int s, int c) const {
    return static_cast<std::size_t>(piece_of(plan_.cannon_image(i_, j_, s), c));
  }
  // One operand's shift of a piece along `ring`: the next image's piece (`size`) in from
  // `from`, the current one out to `to`.
  static void post_shift(const comm::Comm& ring, PanelBuf& next, const ImageSize& size, int from,
                         const PanelBuf& cur, int to, comm::RequestSet& rs) {
    post_recv(ring, next, size, from, rs);
    post_send(ring, cur, to, rs);
  }
  void account() { panels_.set(panel_bytes({&home_a_, &home_b_, &sa_, &sb_})); }

  // Set-up and pre-shift of A: my home pieces, the size of every piece of my process row (by
  // piece v Q + c), then A slots 0..a-1 hold images v(i, j, 0..a-1). A's pre-shift ends (and
  // its home copies go) before B's home images are packed.
  void shift_in_a() {
    home_a_ =
        pack_home(*ops_.a, *ops_.rows, *ops_.inner, kq_, true, j_ * a_ * Q_, a_ * Q_, opt_.a_rows);
    account();
    {
      PhaseScope ph(ledger_, kPhaseSetup);
      dir_a_ = gather_image_sizes(grid_.row(), sizes_of(home_a_));
    }
    {
      PhaseScope ph(ledger_, kPhaseA);
      preshift(
          grid_.row(), plan_.pc, j_, a_ * Q_,
          [&](int pos, int q) { return piece_of(plan_.cannon_image(i_, pos, q / Q_), q % Q_); },
          home_a_, dir_a_, sa_);
    }
    home_a_ = {};  // sent (or moved into a slot): the pre-shift's copies are not needed any more
  }

  // Set-up and pre-shift of B, along my process column: B slots 0..b-1 hold v(i, j, 0..b-1).
  void shift_in_b() {
    home_b_ = pack_home(*ops_.b, *ops_.inner, *ops_.cols, kq_, false, i_ * b_ * Q_, b_ * Q_);
    account();
    {
      PhaseScope ph(ledger_, kPhaseSetup);
      dir_b_ = gather_image_sizes(grid_.col(), sizes_of(home_b_));  // the directory of B images
    }
    {
      PhaseScope ph(ledger_, kPhaseB);
      preshift(
          grid_.col(), plan_.pr, i_, b_ * Q_,
          [&](int pos, int q) { return piece_of(plan_.cannon_image(pos, j_, q / Q_), q % Q_); },
          home_b_, dir_b_, sb_);
    }
    home_b_ = {};
    account();
  }

  // Piece c of tick t: shift the next images' piece c (A to the left, B up) while the current
  // one is multiplied, then free the current one.
  void tick_piece(int t, int c, CAccumulator& acc) {
    comm::RequestSet rs;
    PanelBuf& cur_a = slot_a(t, c);
    PanelBuf& cur_b = slot_b(t, c);
    if (t < V_ - a_) {
      PhaseScope ph(ledger_, kPhaseA);
      post_shift(grid_.row(), slot_a(t + a_, c), dir_a_[tick_piece_index(t + a_, c)],
                 (j_ + 1) % plan_.pc, cur_a, (j_ + plan_.pc - 1) % plan_.pc, rs);
    }
    if (t < V_ - b_) {
      PhaseScope ph(ledger_, kPhaseB);
      post_shift(grid_.col(), slot_b(t + b_, c), dir_b_[tick_piece_index(t + b_, c)],
                 (i_ + 1) % plan_.pr, cur_b, (i_ + plan_.pr - 1) % plan_.pr, rs);
    }
    TickProgress progress(&rs, MPI_COMM_NULL, opt_.progress_poll, &ctx_.comm());  // p2p only
    cur_a.index(*ops_.rows, *ops_.inner);  // offsets of the received (or home) images: meta
    cur_b.index(*ops_.inner, *ops_.cols);  // only, so the sends may still be reading them
    {
      KernelSpan span(&ctx_.ledger(), "block products");  // --trace: the tick's local kernel
      multiply_images(cur_a.view(), cur_b.view(), *ops_.rows, *ops_.inner, *ops_.cols, opt_.row_thr,
                      opt_.allowed, acc, res_.stats, opt_.kernel, [&] { progress(); });
      charge_skipped_products(res_.stats);
    }
    account();  // the next images' piece is allocated
    rs.wait_all();
    cur_a = PanelBuf{};  // multiplied and sent: its memory goes before the next piece comes
    cur_b = PanelBuf{};
    acc.recharge();
    account();
  }

  Context& ctx_;
  CommLedger& ledger_;
  const SpgemmPlan& plan_;
  const SpOperands& ops_;
  const ExecOptions& opt_;
  const layout::ProcessGrid2D& grid_;
  const int i_, j_, V_, Q_, a_, b_;
  const std::vector<int> kq_;
  ExecResult& res_;
  std::vector<PanelBuf> home_a_, home_b_;
  std::vector<PanelBuf> sa_{static_cast<std::size_t>((a_ + 1) * Q_)};
  std::vector<PanelBuf> sb_{static_cast<std::size_t>((b_ + 1) * Q_)};
  MemoryCharge panels_{ledger_.charge(MemKind::Buffers)};
  std::vector<ImageSize> dir_a_, dir_b_;
};

}  // namespace

ExecResult run_cannon(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache) {
  std::optional<layout::ProcessGrid2D> own;
  const layout::ProcessGrid2D& grid = cannon_grid(ctx, plan, cache, own);
  ExecResult res;
  CannonRun(ctx, plan, ops, opt, grid, res).run();
  return res;
}

}  // namespace tessel::sparse::detail
