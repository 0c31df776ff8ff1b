// Block-sparse 2.5D one-sided multiply (seed 001, Algorithm 2):
//   set-up: image directories (allgather on the A and B sub-communicators) overlapped with the
//           nonblocking allreduce that decides whether the cached windows must grow;
//   pack:   my A and B home images into the read-only windows (MPI_Win_allocate), lock_all;
//   ticks:  s = 0 .. V/L - 1: MPI_Rget of the next tick's LR A images and LC B images while the
//           L panel products of this tick run (double buffers; no pre-shift);
//   C:      during the last tick each foreign partial panel is sent (Isend) to its owner as soon
//           as it is complete, in the C wire format (8 bytes of metadata per block, CWire),
//           without the blocks whose norm bound is < eps / (L |alpha|) (the final filter would
//           drop most of them; the error stays < eps per block); the owner adds the L - 1
//           partials it receives into its own.
// retain_sparsity (L > 1): each owner first sends its C pattern (index only; only when it changed
//           since the cache last sent it) to the other layers, which then compute and send only
//           partial blocks inside it, as a bitmap over the pattern plus values (no index).
// Received data (L > 1: the C patterns and partials) is checked in release builds too: sizes
//           before anything is allocated for them (a bad one ends the exchange: failure notices),
//           contents before they are used; a failure is recorded and the exchange completes, and
//           one agreement at the end throws it on every rank.
// comm_only: the block products are replaced by the symbolic product (same blocks, zero-filled),
// so every panel, the C partials included, has the size of the full run's.
// The schedule (which image, from whom) is SpgemmPlan's (spgemm_plan.hpp).
#include <algorithm>
#include <optional>
#include <string>

#include "spgemm_exec.hpp"
#include "tessel/comm/nonblocking.hpp"
#include "tessel/comm/window.hpp"

namespace tessel::sparse {

SpMultiplyCache::SpMultiplyCache() : s_(std::make_unique<State>()) {}
SpMultiplyCache::~SpMultiplyCache() = default;
SpMultiplyCache::SpMultiplyCache(SpMultiplyCache&&) noexcept = default;
SpMultiplyCache& SpMultiplyCache::operator=(SpMultiplyCache&&) noexcept = default;
int SpMultiplyCache::creations() const { return s_->creations; }

namespace detail {

namespace {
/// Window sizes: need + need / kSlackDivisor + kSlackMin elements (room to grow a little
/// without recreating them); recreated smaller when every need is below size / kShrinkBelow.
/// Windows of fewer values than kShrinkMinValues (512 KiB) are never shrunk.
constexpr std::int64_t kSlackDivisor = 4, kSlackMin = 64, kShrinkBelow = 4,
                       kShrinkMinValues = std::int64_t{1} << 16;
// The C partials (kTagHead, kTagIdx, kTagData) and the retained C pattern (kTagPatternHead,
// kTagPatternIdx) are two protocols between the same ranks: each has tags of its own, so
// neither relies on the other's posting order.
constexpr int kTagHead = comm::tag::kRma25dHead, kTagIdx = comm::tag::kRma25dMeta,
              kTagData = comm::tag::kRma25dData, kTagPatternHead = comm::tag::kRma25dPatternHead,
              kTagPatternIdx = comm::tag::kRma25dPatternIdx;

/// Image sizes of every member of a sub-communicator (`per` images each): [member][q].
struct Directory {
  int per = 1;
  std::vector<ImageSize> size;                   // member * per + q
  std::vector<std::int64_t> meta_off, data_off;  // element offsets within the member's window
  void build(const comm::Comm& c, const std::vector<ImageSize>& mine) {
    per = static_cast<int>(mine.size());
    size = gather_image_sizes(c, mine);
    meta_off.resize(size.size());
    data_off.resize(size.size());
    for (std::size_t x = 0; x < size.size(); ++x) {
      bool first = x % static_cast<std::size_t>(per) == 0;
      meta_off[x] = first ? 0 : meta_off[x - 1] + kMeta * size[x - 1].nblocks;
      data_off[x] = first ? 0 : data_off[x - 1] + size[x - 1].ndata;
    }
  }
};

std::int64_t total_meta(const std::vector<ImageSize>& s) {
  std::int64_t n = 0;
  for (auto& x : s) n += kMeta * x.nblocks;
  return n;
}
std::int64_t total_data(const std::vector<ImageSize>& s) {
  std::int64_t n = 0;
  for (auto& x : s) n += x.ndata;
  return n;
}

/// One image to read: from `member` of the window's communicator, image q of its panel. `view`
/// is usable after the reads completed and index() ran.
struct Fetch {
  PanelBuf buf;
  PanelView view;
  std::vector<std::int64_t> off;
  void index(const BlockSizes& rows, const BlockSizes& cols) {
    block_offsets(view.meta, view.nblocks, rows, cols, off);
    view.off = off.data();
  }
};

/// Not collective. Why a received C pattern (idx: row, column per block) is malformed, or "":
/// an odd length, a block outside the block grid, blocks not sorted by (row, column).
std::string check_pattern(const CWire& p, const BlockSizes& rows, const BlockSizes& cols) {
  if (p.idx.size() % 2) return tessel::detail::concat(p.idx.size(), " entries, not 2 per block");
  for (std::size_t b = 0; b < p.idx.size(); b += 2) {
    const int r = p.idx[b], c = p.idx[b + 1];
    if (r < 0 || r >= rows.count() || c < 0 || c >= cols.count())
      return tessel::detail::concat("block ", b / 2, " is (", r, ", ", c, "), outside the ",
                                    rows.count(), " x ", cols.count(), " block grid");
    if (b > 0 && std::make_pair(p.idx[b - 2], p.idx[b - 1]) >= std::make_pair(r, c))
      return tessel::detail::concat("block ", b / 2, " (", r, ", ", c, ") is not after (",
                                    p.idx[b - 2], ", ", p.idx[b - 1], ")");
  }
  return {};
}

/// What a C pattern or partial from another rank can hold at most (all of C): index words and
/// values. A received count beyond it never sizes a buffer.
struct CLimits {
  std::int64_t idx = 0, data = 0;
};

/// Not collective. Throws Error naming both ranks when a count received from `src` cannot be
/// right (negative, or beyond `max`): it cannot be received safely.
void check_count(const comm::Comm& c, std::int64_t n, std::int64_t max, int src, const char* what) {
  TESSEL_CHECK(n >= 0 && n <= max, Error, "rma25d: rank ", c.rank(), " received a ", what,
               " count of ", n, " from rank ", src, " (expected 0 .. ", max, ")");
}

/// The owner's part of the C phase (L > 1): receives the partials of the other layers of its
/// fibre (`srcs`, whose counts `heads` have arrived), checks each (CAccumulator::add, or
/// add_masked against `pattern` when not null) and adds it into `own`. Returns the first
/// malformed partial's message ("" when none) instead of throwing, so the exchange completes;
/// a count that cannot be right throws before anything is received.
std::string receive_partials(const comm::Comm& c, const std::vector<int>& srcs,
                             std::vector<std::int64_t>& heads, const CLimits& lim,
                             const CWire* pattern, CAccumulator& own) {
  c.test_received("rma25d: C partial heads", heads.data(), heads.size() * sizeof(std::int64_t));
  for (std::size_t q = 0; q < srcs.size(); ++q) {  // every count, before any receive
    check_count(c, heads[2 * q], lim.idx, srcs[q], "C partial index");
    check_count(c, heads[2 * q + 1], lim.data, srcs[q], "C partial value");
  }
  std::vector<CWire> in(srcs.size());
  comm::RequestSet rs;  // after `in`: abandoned before it is freed
  for (std::size_t q = 0; q < srcs.size(); ++q) {
    in[q].idx.resize(static_cast<std::size_t>(heads[2 * q]));
    in[q].data.resize(static_cast<std::size_t>(heads[2 * q + 1]));
    c.irecv(in[q].idx.data(), heads[2 * q], srcs[q], kTagIdx, rs);
    c.irecv(in[q].data.data(), heads[2 * q + 1], srcs[q], kTagData, rs);
  }
  rs.wait_all();
  std::string bad;
  for (std::size_t q = 0; q < srcs.size(); ++q) {
    c.test_received("rma25d: C partial received", in[q].idx.data(),
                    in[q].idx.size() * sizeof(std::int32_t));
    try {
      if (pattern)
        own.add_masked(in[q], *pattern);
      else
        own.add(in[q]);
    } catch (const Error& e) {
      if (bad.empty())
        bad = tessel::detail::concat("rma25d: the partial C panel rank ", c.rank(),
                                     " received from rank ", srcs[q], ": ", e.what());
    }
  }
  return bad;
}

void fetch(comm::Window<std::int64_t>& wm, comm::Window<double>& wd, const Directory& dir,
           int member, int q, int me, Fetch& f, comm::RequestSet& rs) {
  std::size_t x = static_cast<std::size_t>(member) * static_cast<std::size_t>(dir.per) +
                  static_cast<std::size_t>(q);
  const ImageSize& s = dir.size[x];
  if (member == me) {  // my own image: read it in place
    f.view = {wm.data() + dir.meta_off[x], s.nblocks, wd.data() + dir.data_off[x], s.ndata};
    return;
  }
  f.buf.resize(s.nblocks, s.ndata);
  if (s.nblocks > 0) {
    wm.rget(f.buf.meta.data(), kMeta * s.nblocks, member, dir.meta_off[x], rs);
    wd.rget(f.buf.data.data(), s.ndata, member, dir.data_off[x], rs);
  }
  f.view = {f.buf.meta.data(), s.nblocks, f.buf.data.data(), s.ndata};
}
}  // namespace

ExecResult run_rma25d(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache) {
  CommLedger& ledger = ctx.ledger();
  ExecResult res;
  SpMultiplyCache::State local_state;
  SpMultiplyCache::State& st = cache ? *cache : local_state;
  const int me = ctx.rank(), i = me / plan.pc, j = me % plan.pc;
  const int ii = i % plan.side_r, jj = j % plan.side_c;
  const int a = plan.a_per_col(), b = plan.b_per_row(), L = plan.layers;

  // ---- set-up: sizes, the grow decision (nonblocking, overlapped), directories ----
  std::vector<ImageSize> mine_a =
      image_sizes(ops.a->local(), *ops.rows, *ops.inner, ops.kv, true, j * a, a);
  std::vector<ImageSize> mine_b =
      image_sizes(ops.b->local(), *ops.inner, *ops.cols, ops.kv, false, i * b, b);
  const std::int64_t need[4] = {total_meta(mine_a), total_data(mine_a), total_meta(mine_b),
                                total_data(mine_b)};
  Directory dir_a, dir_b;
  {
    PhaseScope ph(ledger, kPhaseSetup);
    bool same = st.key_comm == ctx.comm().raw() && st.key_ledger == &ctx.ledger() &&
                st.pr == plan.pr && st.pc == plan.pc && st.layers == L && !st.a_meta.is_null();
    // Recreate the windows when one rank's panels outgrow them, or when every rank's panels
    // fit in a quarter of them (a solver's matrices shrink as well as grow: the cache must not
    // keep the largest panels ever seen). Bit 0: my panels outgrow the windows; bit 1: my last
    // multiply on this cache threw midway; bit 2: my windows must not shrink.
    const std::int64_t have[4] = {st.a_meta.size(), st.a_data.size(), st.b_meta.size(),
                                  st.b_data.size()};
    int grow = !same, keep = have[1] + have[3] < kShrinkMinValues;
    for (int x = 0; x < 4; ++x) {
      grow |= need[x] > have[x];
      keep |= need[x] > have[x] / kShrinkBelow;
    }
    const int flags = grow | (st.in_flight ? 2 : 0) | (keep ? 4 : 0);
    int any = 0;
    comm::RequestSet rs;
    comm::iallreduce_raw(ctx.comm(), &flags, &any, 1, MPI_INT, sizeof(int), MPI_BOR, rs);
    if (!same) {  // the sub-communicators depend only on the grid and L (every rank agrees)
      st.pattern_sent_valid = false;
      st.pattern_sent = {};
      st.pattern_from.clear();
      st.a_meta = {};  // windows over the old sub-communicators go first
      st.a_data = {};
      st.b_meta = {};
      st.b_data = {};
      st.acomm = ctx.comm().split(ii, me);  // member x*PC + n is P(x*side_r + ii, n)
      st.bcomm = ctx.comm().split(jj, me);  // member m*LC + y is P(m, y*side_c + jj)
    }
    dir_a.build(st.acomm, mine_a);
    dir_b.build(st.bcomm, mine_b);
    rs.wait_all();  // also: every rank has left its previous multiply (windows are free)
    if (any & 2) {  // some rank's last multiply threw midway: its pattern cache may be stale
      st.pattern_sent_valid = false;
      st.pattern_from.clear();
    }
    st.in_flight = true;
    if ((any & 1) || !(any & 4)) {
      st.a_meta = {};  // frees the old windows (collective), in creation order
      st.a_data = {};
      st.b_meta = {};
      st.b_data = {};
      st.creations += 1;
      st.key_comm = ctx.comm().raw();
      st.key_ledger = &ctx.ledger();
      st.pr = plan.pr;
      st.pc = plan.pc;
      st.layers = L;
      auto slack = [](std::int64_t n) { return n + n / kSlackDivisor + kSlackMin; };
      st.a_meta = comm::Window<std::int64_t>(st.acomm, slack(need[0]));
      st.a_data = comm::Window<double>(st.acomm, slack(need[1]));
      st.b_meta = comm::Window<std::int64_t>(st.bcomm, slack(need[2]));
      st.b_data = comm::Window<double>(st.bcomm, slack(need[3]));
      st.windows = ledger.charge(MemKind::Windows, 8 * (st.a_meta.size() + st.a_data.size() +
                                                        st.b_meta.size() + st.b_data.size()));
      res.windows_created = true;
    }
  }
  // ---- pack my home images into the windows and open the read epochs ----
  pack_images(ops.a->local(), *ops.rows, *ops.inner, ops.kv, true, j * a, a, st.a_meta.data(),
              st.a_data.data());
  pack_images(ops.b->local(), *ops.inner, *ops.cols, ops.kv, false, i * b, b, st.b_meta.data(),
              st.b_data.data());
  comm::LockAllEpoch e1(st.a_meta), e2(st.a_data), e3(st.b_meta), e4(st.b_data);
  st.a_meta.sync();
  st.a_data.sync();
  st.b_meta.sync();
  st.b_data.sync();
  {
    PhaseScope ph(ledger, kPhaseSetup);
    ctx.comm().barrier();  // every window is packed before anyone reads
  }
  const int me_a = st.acomm.rank(), me_b = st.bcomm.rank();

  // ---- ticks ----
  auto panels = plan.rma_panels(i, j);
  std::vector<CAccumulator> acc;
  for (std::size_t p = 0; p < panels.size(); ++p) {
    acc.emplace_back(ops.rows, ops.cols);
    acc.back().charge_to(ledger.charge(MemKind::Buffers));
  }
  std::vector<Fetch> fa[2], fb[2];
  std::vector<CWire> outgoing(panels.size());
  MemoryCharge fetched = ledger.charge(MemKind::Buffers);
  auto account = [&] {
    std::int64_t n = 0;
    for (auto* v : {&fa[0], &fa[1], &fb[0], &fb[1]})
      for (const auto& f : *v) n += f.buf.held_bytes() + capacity_bytes(f.off);
    for (const auto& o : outgoing) n += o.held_bytes();
    fetched.set(n);
  };
  comm::RequestSet rs_ab[2];
  auto post = [&](int s) {
    int buf = s % 2, v = plan.rma_image(i, j, s);
    fa[buf].resize(static_cast<std::size_t>(plan.lr));
    fb[buf].resize(static_cast<std::size_t>(plan.lc));
    {
      PhaseScope ph(ledger, kPhaseA);
      for (int x = 0; x < plan.lr; ++x)  // A image (x*side_r + ii, v) on P(., v / a)
        fetch(st.a_meta, st.a_data, dir_a, x * plan.pc + plan.a_home_col(v), v % a, me_a,
              fa[buf][static_cast<std::size_t>(x)], rs_ab[buf]);
    }
    {
      PhaseScope ph(ledger, kPhaseB);
      for (int y = 0; y < plan.lc; ++y)  // B image (v, y*side_c + jj) on P(v / b, .)
        fetch(st.b_meta, st.b_data, dir_b, plan.b_home_row(v) * plan.lc + y, v % b, me_b,
              fb[buf][static_cast<std::size_t>(y)], rs_ab[buf]);
    }
  };
  // The other layers of my fibre: they compute partials of my panel, I of theirs.
  std::vector<int> srcs;
  std::vector<std::int64_t> heads;
  if (L > 1)
    for (int x = 0; x < plan.lr; ++x)
      for (int y = 0; y < plan.lc; ++y) {
        int src = plan.rank_of(x * plan.side_r + ii, y * plan.side_c + jj);
        if (src != me) srcs.push_back(src);
      }
  std::vector<std::int64_t> out_heads(2 * panels.size());
  std::size_t own = 0;
  for (std::size_t p = 0; p < panels.size(); ++p)
    if (panels[p] == std::make_pair(i, j)) own = p;
  // retain_sparsity: every owner sends its C pattern (C wire idx, no values: a 16-byte header
  // and 8 bytes per block) to the L - 1 other layers of its fibre first, as DBCSR does; each
  // layer then creates (and sends) only the partial blocks inside the owner's pattern, in the
  // pattern's order with a bitmap instead of block indices (pack_masked). A pattern equal to the
  // one this cache sent last is not sent again: the header says so (bit 62 of its first word
  // clear) and the layers use their copy. The pattern messages use the partials' tags: MPI's
  // non-overtaking order keeps them apart (each pattern is received completely before any
  // partial is posted).
  constexpr std::int64_t kFollows = std::int64_t{1} << 62;
  const bool masked = opt.retain_c && L > 1;
  // L > 1: the first malformed thing received (empty: none), thrown on every rank at the end.
  std::string bad;
  auto note = [&](const std::string& what) {
    if (bad.empty()) bad = what;  // "" notes nothing
  };
  // Counts received from another rank size buffers: check_count ends the exchange on one that
  // cannot be right (the guard sends failure notices; the peers throw PeerFailure).
  const CLimits limits{2 * static_cast<std::int64_t>(ops.rows->count()) * ops.cols->count(),
                       static_cast<std::int64_t>(ops.rows->offset(ops.rows->count())) *
                           ops.cols->offset(ops.cols->count())};
  std::optional<comm::ExchangeGuard> guard;
  if (L > 1) guard.emplace(ctx.comm().raw());
  std::vector<std::optional<CAccumulator>> foreign_allowed(panels.size());
  std::vector<std::size_t> pattern_of_panel(panels.size(), 0);  // index into pat_in
  CWire my_pattern;
  std::vector<std::int64_t> pat_head_out(2), pat_heads;
  std::vector<CWire> pat_in;
  // After the buffers they send from and receive into: when an exception unwinds this frame,
  // the requests are abandoned (comm::RequestSet) before those buffers are freed.
  comm::RequestSet rs_head, rs_send, rs_pat_send;
  if (masked) {
    comm::RequestSet rs_pat;
    {
      PhaseScope ph(ledger, kPhaseCPattern);
      my_pattern = pattern_wire(*opt.retain_c);
      const bool follows = !(st.pattern_sent_valid && st.pattern_sent.idx == my_pattern.idx);
      pat_head_out[0] = static_cast<std::int64_t>(my_pattern.idx.size()) | (follows ? kFollows : 0);
      pat_heads.resize(2 * srcs.size());
      for (std::size_t q = 0; q < srcs.size(); ++q)
        ctx.comm().irecv(&pat_heads[2 * q], 2, srcs[q], kTagPatternHead, rs_pat);
      for (int dest : srcs) {
        ctx.comm().isend(pat_head_out.data(), 2, dest, kTagPatternHead, rs_pat_send);
        if (follows)
          ctx.comm().isend(my_pattern.idx.data(), static_cast<std::int64_t>(my_pattern.idx.size()),
                           dest, kTagPatternIdx, rs_pat_send);
      }
      if (follows) {
        st.pattern_sent = my_pattern;
        st.pattern_sent_valid = true;
      }
      rs_pat.wait_all();
      ctx.comm().test_received("rma25d: C pattern heads", pat_heads.data(),
                               pat_heads.size() * sizeof(std::int64_t));
      pat_in.resize(srcs.size());
      for (std::size_t q = 0; q < srcs.size(); ++q) {
        const std::int64_t head = pat_heads[2 * q], n = head & (kFollows - 1);
        TESSEL_CHECK(head >= 0 && n % 2 == 0, Error, "rma25d: rank ", me,
                     " received the C pattern header ", head, " from rank ", srcs[q],
                     " (expected an even count, bit 62 the follows flag)");
        check_count(ctx.comm(), n, limits.idx, srcs[q], "C pattern");
        if (head & kFollows) {
          pat_in[q].idx.resize(static_cast<std::size_t>(n));
          ctx.comm().irecv(pat_in[q].idx.data(), n, srcs[q], kTagPatternIdx, rs_pat);
          continue;
        }
        auto it = st.pattern_from.find(srcs[q]);
        if (it != st.pattern_from.end() && static_cast<std::int64_t>(it->second.idx.size()) == n) {
          pat_in[q] = it->second;
          continue;
        }
        note(tessel::detail::concat(
            "rma25d: rank ", srcs[q], " sent its C pattern (", n / 2,
            " blocks) as unchanged, but rank ", me, " holds ",
            it == st.pattern_from.end()
                ? std::string("none from it")
                : tessel::detail::concat(it->second.idx.size() / 2, " blocks from it"),
            ": the pattern caches disagree"));
      }
    }
    post(0);  // tick 0's reads overlap the pattern's arrival
    {
      PhaseScope ph(ledger, kPhaseCPattern);
      rs_pat.wait_all();
    }
    for (std::size_t q = 0; q < srcs.size(); ++q) {
      if (pat_heads[2 * q] & kFollows) {  // a new pattern: checked before it is used or kept
        ctx.comm().test_received("rma25d: C pattern received", pat_in[q].idx.data(),
                                 pat_in[q].idx.size() * sizeof(std::int32_t));
        const std::string why = check_pattern(pat_in[q], *ops.rows, *ops.cols);
        if (!why.empty()) {
          note(tessel::detail::concat("rma25d: the C pattern rank ", me, " received from rank ",
                                      srcs[q], ": ", why));
          pat_in[q] = {};  // an empty pattern keeps the exchange going; the owner's check fails
        }
      }
      st.pattern_from[srcs[q]] = pat_in[q];
      for (std::size_t p = 0; p < panels.size(); ++p)
        if (plan.rank_of(panels[p].first, panels[p].second) == srcs[q]) {
          foreign_allowed[p].emplace(ops.rows, ops.cols);
          foreign_allowed[p]->mark(pat_in[q]);
          pattern_of_panel[p] = q;
        }
    }
  } else {
    post(0);
  }
  // C partials: the owner receives from the L - 1 other layers of its fibre: first the sizes
  // (posted now), then the values (posted once the sizes arrived).
  if (L > 1) {
    PhaseScope ph(ledger, kPhaseC);
    heads.resize(2 * srcs.size());
    for (std::size_t q = 0; q < srcs.size(); ++q)
      ctx.comm().irecv(&heads[2 * q], 2, srcs[q], kTagHead, rs_head);
  }
  for (int s = 0; s < plan.ticks; ++s) {
    int buf = s % 2;
    rs_ab[buf].wait_all();
    for (auto& f : fa[buf]) f.index(*ops.rows, *ops.inner);
    for (auto& f : fb[buf]) f.index(*ops.inner, *ops.cols);
    if (s + 1 < plan.ticks) post(s + 1);
    bool last = s + 1 == plan.ticks;
    // The next tick's reads (and the reads of others from my windows) move while I multiply.
    TickProgress progress(&rs_ab[1 - buf], ctx.comm().raw(), opt.progress_poll, &ctx.comm());
    for (std::size_t p = 0; p < panels.size(); ++p) {
      auto x = p / static_cast<std::size_t>(plan.lc), y = p % static_cast<std::size_t>(plan.lc);
      multiply_images(fa[buf][x].view, fb[buf][y].view, *ops.rows, *ops.inner, *ops.cols,
                      opt.row_thr,
                      p == own             ? opt.allowed
                      : foreign_allowed[p] ? &*foreign_allowed[p]
                                           : nullptr,
                      acc[p], res.stats, opt.comm_only, [&] { progress(); });
      if (last && p != own) {  // this partial panel is complete: send it to its owner now
        PhaseScope ph(ledger, kPhaseC);
        auto& o = outgoing[p];
        o = masked ? acc[p].pack_masked(pat_in[pattern_of_panel[p]], opt.partial_drop,
                                        &res.partial_blocks_dropped)
                   : acc[p].pack_wire(opt.partial_drop, &res.partial_blocks_dropped);
        int dest = plan.rank_of(panels[p].first, panels[p].second);
        out_heads[2 * p] = static_cast<std::int64_t>(o.idx.size());
        out_heads[2 * p + 1] = static_cast<std::int64_t>(o.data.size());
        ctx.comm().isend(&out_heads[2 * p], 2, dest, kTagHead, rs_send);
        ctx.comm().isend(o.idx.data(), static_cast<std::int64_t>(o.idx.size()), dest, kTagIdx,
                         rs_send);
        ctx.comm().isend(o.data.data(), static_cast<std::int64_t>(o.data.size()), dest, kTagData,
                         rs_send);
        acc[p] = CAccumulator(ops.rows, ops.cols);  // packed: free its values now
      }
      acc[p].recharge();
    }
    account();
  }
  if (L > 1) {
    PhaseScope ph(ledger, kPhaseC);
    rs_head.wait_all();
    note(receive_partials(ctx.comm(), srcs, heads, limits, masked ? &my_pattern : nullptr,
                          acc[own]));
    rs_send.wait_all();
  }
  if (!rs_pat_send.empty()) {
    PhaseScope ph(ledger, kPhaseCPattern);
    rs_pat_send.wait_all();
  }
  guard.reset();  // every message of the exchange completed
  if (L > 1) {
    PhaseScope ph(ledger, kPhaseC);
    ctx.agree([&] { TESSEL_CHECK(bad.empty(), Error, bad); });
  }
  st.in_flight = false;
  res.product.emplace(std::move(acc[own]));
  return res;
}

}  // namespace detail
}  // namespace tessel::sparse
