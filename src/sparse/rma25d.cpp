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
// KernelMode::Symbolic (comm_only): the block products are replaced by the symbolic product
// (same blocks, zero-filled), so every panel, the C partials included, has the size of the full
// run's. KernelMode::Sampled (ComputeMode::Skip): the same, with the products' estimated time
// charged to the simulated clock after every kernel call (charge_skipped_products).
// The schedule (which image, from whom) is SpgemmPlan's (spgemm_plan.hpp).
#include <algorithm>
#include <optional>
#include <string>

#include "spgemm_exec.hpp"
#include "tessel/core/trace.hpp"
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
/// The set-up flags ORed over the ranks (window_flags, then set_up): my panels outgrow the
/// windows; my last multiply on this cache threw midway; my windows must not shrink; my cache
/// holds this communicator, grid and L (same key) or does not. Both of the last two over the
/// ranks: the callers passed caches that disagree (an error on every rank, not a hang in the
/// split of the sub-communicators that only some ranks would enter).
constexpr int kFlagGrow = 1, kFlagThrew = 2, kFlagKeep = 4, kFlagSameKey = 8, kFlagNewKey = 16;
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
/// a count that cannot be right throws before anything is received. `values`: where the
/// received values live (ComputeMode::Skip: shared simulated memory, AccValues::Virtual).
std::string receive_partials(const comm::Comm& c, const std::vector<int>& srcs,
                             std::vector<std::int64_t>& heads, const CLimits& lim,
                             const CWire* pattern, ComputeMode values, CAccumulator& own) {
  c.test_received("rma25d: C partial heads", heads.data(), heads.size() * sizeof(std::int64_t));
  for (std::size_t q = 0; q < srcs.size(); ++q) {  // every count, before any receive
    check_count(c, heads[2 * q], lim.idx, srcs[q], "C partial index");
    check_count(c, heads[2 * q + 1], lim.data, srcs[q], "C partial value");
  }
  std::vector<CWire> in(srcs.size());
  comm::RequestSet rs;  // after `in`: abandoned before it is freed
  for (std::size_t q = 0; q < srcs.size(); ++q) {
    in[q].idx.resize(static_cast<std::size_t>(heads[2 * q]));
    in[q].data = Storage<double>(values, static_cast<std::size_t>(heads[2 * q + 1]));
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

/// A C pattern header with this bit set says the pattern follows; clear: it equals the one the
/// cache sent last (bit 62 of the first word).
constexpr std::int64_t kFollows = std::int64_t{1} << 62;

/// One rma25d multiply on this rank: the state its steps share, the steps as methods (in the
/// order run_rma25d calls them). Buffers that requests read or write are declared before the
/// RequestSets: when an exception unwinds the run, the requests are abandoned
/// (comm::RequestSet) before those buffers are freed.
class Rma25d {
 public:
  Rma25d(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops, const ExecOptions& opt,
         SpMultiplyCache::State& st)
      : ctx_(ctx),
        ledger_(ctx.ledger()),
        plan_(plan),
        ops_(ops),
        opt_(opt),
        st_(st),
        me_(ctx.rank()),
        i_(me_ / plan.pc),
        j_(me_ % plan.pc),
        ii_(i_ % plan.side_r),
        jj_(j_ % plan.side_c),
        a_(plan.a_per_col()),
        b_(plan.b_per_row()),
        L_(plan.layers),
        masked_(opt.retain_c && plan.layers > 1) {}

  void set_up();
  void expose_home_images();
  void prepare_panels();
  void start_ticks();
  void tick(int s);
  ExecResult finish();

 private:
  void post_reads(int s);
  const CAccumulator* allowed(std::size_t p) const {
    return p == own_ ? opt_.allowed : foreign_allowed_[p] ? &*foreign_allowed_[p] : nullptr;
  }
  /// Where the partial panels of the other layers keep their values: nowhere under
  /// KernelMode::Sampled (AccValues::Virtual: they did not fit the one simulator process).
  AccValues partial_values() const {
    return opt_.kernel.mode == KernelMode::Sampled ? AccValues::Virtual : AccValues::Held;
  }
  bool same_key() const;
  int window_flags(const std::int64_t need[4], bool same) const;
  void split_sub_comms();
  void create_windows(const std::int64_t need[4]);
  void exchange_patterns();
  void send_my_pattern(comm::RequestSet& rs_pat);
  void receive_patterns(comm::RequestSet& rs_pat);
  void use_patterns();
  void send_partial(std::size_t p);
  void account();
  void note(const std::string& what) {
    if (bad_.empty()) bad_ = what;  // "" notes nothing
  }

  Context& ctx_;
  CommLedger& ledger_;
  const SpgemmPlan& plan_;
  const SpOperands& ops_;
  const ExecOptions& opt_;
  SpMultiplyCache::State& st_;
  ExecResult res_;
  const int me_, i_, j_, ii_, jj_, a_, b_, L_;
  const bool masked_;  // retain_sparsity with L > 1: the C patterns go to the other layers
  std::vector<ImageSize> mine_a_, mine_b_;
  Directory dir_a_, dir_b_;
  std::optional<comm::LockAllEpoch> epochs_[4];
  int me_a_ = 0, me_b_ = 0;
  std::vector<std::pair<int, int>> panels_;  // the C panels my layer computes
  std::size_t own_ = 0;                      // the one of them I own
  std::vector<CAccumulator> acc_;
  std::vector<Fetch> fa_[2], fb_[2];  // the images of ticks s (buffer s % 2) and s + 1
  std::vector<CWire> outgoing_;
  MemoryCharge fetched_;
  comm::RequestSet rs_ab_[2];
  // The other layers of my fibre: they compute partials of my panel, I of theirs.
  std::vector<int> srcs_;
  std::vector<std::int64_t> heads_, out_heads_;
  CLimits limits_;
  // L > 1: the first malformed thing received (empty: none), thrown on every rank at the end.
  std::string bad_;
  std::optional<comm::ExchangeGuard> guard_;
  std::vector<std::optional<CAccumulator>> foreign_allowed_;
  std::vector<std::size_t> pattern_of_panel_;  // index into pat_in_
  CWire my_pattern_;
  std::vector<std::int64_t> pat_head_out_ = std::vector<std::int64_t>(2), pat_heads_;
  std::vector<CWire> pat_in_;
  comm::RequestSet rs_head_, rs_send_, rs_pat_send_;
};

// ---- set-up: sizes, the grow decision (nonblocking, overlapped), directories ----

/// Pure. Whether the cache holds this context's sub-communicators and windows for this grid and L.
bool Rma25d::same_key() const {
  return st_.key_comm == ctx_.comm().raw() && st_.key_ledger == &ctx_.ledger() &&
         st_.pr == plan_.pr && st_.pc == plan_.pc && st_.layers == L_ && !st_.a_meta.is_null();
}

/// Recreate the windows when one rank's panels outgrow them, or when every rank's panels fit
/// in a quarter of them (a solver's matrices shrink as well as grow: the cache must not keep
/// the largest panels ever seen). Bit 0: my panels outgrow the windows; bit 1: my last multiply
/// on this cache threw midway; bit 2: my windows must not shrink.
/// Not collective (the caller ORs the flags over the ranks).
int Rma25d::window_flags(const std::int64_t need[4], bool same) const {
  const std::int64_t have[4] = {st_.a_meta.size(), st_.a_data.size(), st_.b_meta.size(),
                                st_.b_data.size()};
  bool grow = !same, keep = have[1] + have[3] < kShrinkMinValues;
  for (int x = 0; x < 4; ++x) {
    grow |= need[x] > have[x];
    keep |= need[x] > have[x] / kShrinkBelow;
  }
  return (grow ? kFlagGrow : 0) | (st_.in_flight ? kFlagThrew : 0) | (keep ? kFlagKeep : 0) |
         (same ? kFlagSameKey : kFlagNewKey);
}

/// Collective. New sub-communicators (they depend only on the grid and L: every rank agrees on
/// same_key); the old windows and the pattern caches go first.
void Rma25d::split_sub_comms() {
  st_.pattern_sent_valid = false;
  st_.pattern_sent = {};
  st_.pattern_from.clear();
  st_.a_meta = {};  // windows over the old sub-communicators go first
  st_.a_data = {};
  st_.b_meta = {};
  st_.b_data = {};
  st_.acomm = ctx_.comm().split(ii_, me_);  // member x*PC + n is P(x*side_r + ii, n)
  st_.bcomm = ctx_.comm().split(jj_, me_);  // member m*LC + y is P(m, y*side_c + jj)
}

/// Collective over the sub-communicators. The four windows, `need` plus slack each.
void Rma25d::create_windows(const std::int64_t need[4]) {
  st_.a_meta = {};  // frees the old windows (collective), in creation order
  st_.a_data = {};
  st_.b_meta = {};
  st_.b_data = {};
  st_.creations += 1;
  st_.key_comm = ctx_.comm().raw();
  st_.key_ledger = &ctx_.ledger();
  st_.pr = plan_.pr;
  st_.pc = plan_.pc;
  st_.layers = L_;
  auto slack = [](std::int64_t n) { return n + n / kSlackDivisor + kSlackMin; };
  st_.a_meta = comm::Window<std::int64_t>(st_.acomm, slack(need[0]));
  st_.a_data = comm::Window<double>(st_.acomm, slack(need[1]));
  st_.b_meta = comm::Window<std::int64_t>(st_.bcomm, slack(need[2]));
  st_.b_data = comm::Window<double>(st_.bcomm, slack(need[3]));
  st_.windows = ledger_.charge(MemKind::Windows, 8 * (st_.a_meta.size() + st_.a_data.size() +
                                                      st_.b_meta.size() + st_.b_data.size()));
  res_.windows_created = true;
}

/// Collective. The grow decision's allreduce overlaps the directories' allgathers.
void Rma25d::set_up() {
  mine_a_ = image_sizes(ops_.a->local(), *ops_.rows, *ops_.inner, ops_.kv, true, j_ * a_, a_);
  mine_b_ = image_sizes(ops_.b->local(), *ops_.inner, *ops_.cols, ops_.kv, false, i_ * b_, b_);
  const std::int64_t need[4] = {total_meta(mine_a_), total_data(mine_a_), total_meta(mine_b_),
                                total_data(mine_b_)};
  PhaseScope ph(ledger_, kPhaseSetup);
  const bool same = same_key();
  const int flags = window_flags(need, same);
  // Comm::allreduce: the build's own choice (nonblocking and polled with a real MPI, the
  // blocking call under SMPI, whose nonblocking collectives cost the simulator O(p^2) per rank)
  int any = flags;
  ctx_.comm().allreduce(&any, 1, MPI_BOR);  // also: every rank has left its last multiply
  TESSEL_CHECK((any & kFlagSameKey) == 0 || (any & kFlagNewKey) == 0, InputError,
               "spgemm rma25d: the SpMultiplyCache differs between ranks: this rank's ",
               same ? "holds" : "does not hold",
               " windows for this communicator, grid and L = ", L_, " and another rank's ",
               same ? "does not" : "does",
               " (pass the same cache, or none, to the multiply on every rank)");
  if (!same) split_sub_comms();
  dir_a_.build(st_.acomm, mine_a_);
  dir_b_.build(st_.bcomm, mine_b_);
  if (any & kFlagThrew) {  // some rank's last multiply threw midway: its pattern cache may be stale
    st_.pattern_sent_valid = false;
    st_.pattern_from.clear();
  }
  st_.in_flight = true;
  if ((any & kFlagGrow) || !(any & kFlagKeep)) create_windows(need);
}

/// Collective. Packs my home images into the windows and opens the read epochs.
void Rma25d::expose_home_images() {
  pack_images(ops_.a->local(), *ops_.rows, *ops_.inner, ops_.kv, true, j_ * a_, a_,
              st_.a_meta.data(), st_.a_data.data());
  pack_images(ops_.b->local(), *ops_.inner, *ops_.cols, ops_.kv, false, i_ * b_, b_,
              st_.b_meta.data(), st_.b_data.data());
  epochs_[0].emplace(st_.a_meta);
  epochs_[1].emplace(st_.a_data);
  epochs_[2].emplace(st_.b_meta);
  epochs_[3].emplace(st_.b_data);
  st_.a_meta.sync();
  st_.a_data.sync();
  st_.b_meta.sync();
  st_.b_data.sync();
  {
    PhaseScope ph(ledger_, kPhaseSetup);
    ctx_.comm().barrier();  // every window is packed before anyone reads
  }
  me_a_ = st_.acomm.rank();
  me_b_ = st_.bcomm.rank();
}

// ---- ticks: my panels, the other layers of my fibre, the double-buffered reads ----

/// Not collective (the guard registers the communicator). My layer's C panels and their
/// accumulators, the other layers of my fibre (L > 1), the limits of the counts they send.
void Rma25d::prepare_panels() {
  panels_ = plan_.rma_panels(i_, j_);
  for (std::size_t p = 0; p < panels_.size(); ++p)
    if (panels_[p] == std::make_pair(i_, j_)) own_ = p;
  for (std::size_t p = 0; p < panels_.size(); ++p) {
    acc_.emplace_back(ops_.rows, ops_.cols, p == own_ ? AccValues::Held : partial_values());
    acc_.back().charge_to(ledger_.charge(MemKind::Buffers));
  }
  outgoing_.resize(panels_.size());
  fetched_ = ledger_.charge(MemKind::Buffers);
  if (L_ > 1)
    for (int x = 0; x < plan_.lr; ++x)
      for (int y = 0; y < plan_.lc; ++y) {
        const int src = plan_.rank_of(x * plan_.side_r + ii_, y * plan_.side_c + jj_);
        if (src != me_) srcs_.push_back(src);
      }
  out_heads_.resize(2 * panels_.size());
  // Counts received from another rank size buffers: check_count ends the exchange on one that
  // cannot be right (the guard sends failure notices; the peers throw PeerFailure).
  limits_ = {2 * static_cast<std::int64_t>(ops_.rows->count()) * ops_.cols->count(),
             static_cast<std::int64_t>(ops_.rows->offset(ops_.rows->count())) *
                 ops_.cols->offset(ops_.cols->count())};
  if (L_ > 1) guard_.emplace(ctx_.comm().raw());
  foreign_allowed_.resize(panels_.size());
  pattern_of_panel_.assign(panels_.size(), 0);
}

/// Not collective. Tick s's reads into buffer s % 2: the LR A images (x*side_r + ii, v) from
/// P(., v / a) and the LC B images (v, y*side_c + jj) from P(v / b, .), v = rma_image(s).
void Rma25d::post_reads(int s) {
  const int buf = s % 2, v = plan_.rma_image(i_, j_, s);
  fa_[buf].resize(static_cast<std::size_t>(plan_.lr));
  fb_[buf].resize(static_cast<std::size_t>(plan_.lc));
  {
    PhaseScope ph(ledger_, kPhaseA);
    for (int x = 0; x < plan_.lr; ++x)
      fetch(st_.a_meta, st_.a_data, dir_a_, x * plan_.pc + plan_.a_home_col(v), v % a_, me_a_,
            fa_[buf][static_cast<std::size_t>(x)], rs_ab_[buf]);
  }
  {
    PhaseScope ph(ledger_, kPhaseB);
    for (int y = 0; y < plan_.lc; ++y)
      fetch(st_.b_meta, st_.b_data, dir_b_, plan_.b_home_row(v) * plan_.lc + y, v % b_, me_b_,
            fb_[buf][static_cast<std::size_t>(y)], rs_ab_[buf]);
  }
}

/// Point-to-point with the other layers of my fibre (no collective). retain_sparsity (L > 1)
/// first: the C patterns, overlapping tick 0's reads. Then the heads of
/// the C partials: the owner receives from the L - 1 other layers of its fibre first the sizes
/// (posted now), then the values (posted once the sizes arrived).
void Rma25d::start_ticks() {
  if (masked_)
    exchange_patterns();
  else
    post_reads(0);
  if (L_ > 1) {
    PhaseScope ph(ledger_, kPhaseC);
    heads_.resize(2 * srcs_.size());
    for (std::size_t q = 0; q < srcs_.size(); ++q)
      ctx_.comm().irecv(&heads_[2 * q], 2, srcs_[q], kTagHead, rs_head_);
  }
}

/// Not collective (one-sided reads, point-to-point sends). Tick s: its images arrived -> the
/// next tick's reads posted -> the L panel products, the
/// next reads (and the reads of others from my windows) moving meanwhile; in the last tick
/// each foreign partial panel goes to its owner as soon as it is complete.
void Rma25d::tick(int s) {
  const int buf = s % 2;
  rs_ab_[buf].wait_all();
  for (auto& f : fa_[buf]) f.index(*ops_.rows, *ops_.inner);
  for (auto& f : fb_[buf]) f.index(*ops_.inner, *ops_.cols);
  if (s + 1 < plan_.ticks) post_reads(s + 1);
  const bool last = s + 1 == plan_.ticks;
  TickProgress progress(&rs_ab_[1 - buf], ctx_.comm().raw(), opt_.progress_poll, &ctx_.comm());
  for (std::size_t p = 0; p < panels_.size(); ++p) {
    auto x = p / static_cast<std::size_t>(plan_.lc), y = p % static_cast<std::size_t>(plan_.lc);
    {
      KernelSpan span(&ledger_, "block products");  // --trace: one panel product
      multiply_images(fa_[buf][x].view, fb_[buf][y].view, *ops_.rows, *ops_.inner, *ops_.cols,
                      opt_.row_thr, allowed(p), acc_[p], res_.stats, opt_.kernel,
                      [&] { progress(); });
      charge_skipped_products(res_.stats);
    }
    if (last && p != own_) send_partial(p);
    acc_[p].recharge();
  }
  account();
}

/// Not collective. Sends the complete partial panel p to its owner (Isend): its sizes, then the
/// C wire (masked: a bitmap over the owner's pattern), without the blocks below partial_drop.
void Rma25d::send_partial(std::size_t p) {
  PhaseScope ph(ledger_, kPhaseC);
  auto& o = outgoing_[p];
  o = masked_ ? acc_[p].pack_masked(pat_in_[pattern_of_panel_[p]], opt_.partial_drop,
                                    &res_.partial_blocks_dropped)
              : acc_[p].pack_wire(opt_.partial_drop, &res_.partial_blocks_dropped);
  const int dest = plan_.rank_of(panels_[p].first, panels_[p].second);
  out_heads_[2 * p] = static_cast<std::int64_t>(o.idx.size());
  out_heads_[2 * p + 1] = static_cast<std::int64_t>(o.data.size());
  ctx_.comm().isend(&out_heads_[2 * p], 2, dest, kTagHead, rs_send_);
  ctx_.comm().isend(o.idx.data(), static_cast<std::int64_t>(o.idx.size()), dest, kTagIdx, rs_send_);
  ctx_.comm().isend(o.data.data(), static_cast<std::int64_t>(o.data.size()), dest, kTagData,
                    rs_send_);
  acc_[p] = CAccumulator(ops_.rows, ops_.cols);  // packed: free its values now
}

/// Not collective. The bytes of the fetched images and the outgoing partials (MemKind::Buffers).
void Rma25d::account() {
  std::int64_t n = 0;
  for (auto* v : {&fa_[0], &fa_[1], &fb_[0], &fb_[1]})
    for (const auto& f : *v) n += f.buf.held_bytes() + capacity_bytes(f.off);
  for (const auto& o : outgoing_) n += o.held_bytes();
  fetched_.set(n);
}

/// Collective. L > 1: the partials of my panel received and added, my sends completed; the
/// first malformed thing any rank received thrown on every rank. My panel is the product.
ExecResult Rma25d::finish() {
  if (L_ > 1) {
    PhaseScope ph(ledger_, kPhaseC);
    rs_head_.wait_all();
    note(receive_partials(ctx_.comm(), srcs_, heads_, limits_, masked_ ? &my_pattern_ : nullptr,
                          wire_mode(partial_values()), acc_[own_]));
    rs_send_.wait_all();
  }
  if (!rs_pat_send_.empty()) {
    PhaseScope ph(ledger_, kPhaseCPattern);
    rs_pat_send_.wait_all();
  }
  guard_.reset();  // every message of the exchange completed
  if (L_ > 1) {
    PhaseScope ph(ledger_, kPhaseC);
    ctx_.agree([&] { TESSEL_CHECK(bad_.empty(), Error, bad_); });
  }
  st_.in_flight = false;
  res_.product.emplace(std::move(acc_[own_]));
  return std::move(res_);
}

// ---- retain_sparsity, L > 1: the C patterns ----
// Every owner sends its C pattern (C wire idx, no values: a 16-byte header and 8 bytes per
// block) to the L - 1 other layers of its fibre first, as DBCSR does; each layer then creates
// (and sends) only the partial blocks inside the owner's pattern, in the pattern's order with a
// bitmap instead of block indices (pack_masked). A pattern equal to the one this cache sent
// last is not sent again: the header says so (kFollows clear) and the layers use their copy.
// The pattern messages have tags of their own; each pattern is received completely before any
// partial is posted.

/// Collective over my fibre. Tick 0's reads overlap the patterns' arrival.
void Rma25d::exchange_patterns() {
  comm::RequestSet rs_pat;
  {
    PhaseScope ph(ledger_, kPhaseCPattern);
    send_my_pattern(rs_pat);
    rs_pat.wait_all();
    receive_patterns(rs_pat);
  }
  post_reads(0);
  {
    PhaseScope ph(ledger_, kPhaseCPattern);
    rs_pat.wait_all();
  }
  use_patterns();
}

/// Not collective. Posts the other layers' pattern heads and sends mine (and my pattern, when
/// it changed since the cache last sent it).
void Rma25d::send_my_pattern(comm::RequestSet& rs_pat) {
  my_pattern_ = pattern_wire(*opt_.retain_c);
  const bool follows = !(st_.pattern_sent_valid && st_.pattern_sent.idx == my_pattern_.idx);
  pat_head_out_[0] = static_cast<std::int64_t>(my_pattern_.idx.size()) | (follows ? kFollows : 0);
  pat_heads_.resize(2 * srcs_.size());
  for (std::size_t q = 0; q < srcs_.size(); ++q)
    ctx_.comm().irecv(&pat_heads_[2 * q], 2, srcs_[q], kTagPatternHead, rs_pat);
  for (int dest : srcs_) {
    ctx_.comm().isend(pat_head_out_.data(), 2, dest, kTagPatternHead, rs_pat_send_);
    if (follows)
      ctx_.comm().isend(my_pattern_.idx.data(), static_cast<std::int64_t>(my_pattern_.idx.size()),
                        dest, kTagPatternIdx, rs_pat_send_);
  }
  if (follows) {
    st_.pattern_sent = my_pattern_;
    st_.pattern_sent_valid = true;
  }
}

/// Not collective. Checks the heads that arrived; posts the receive of each new pattern, takes
/// an unchanged one from the cache (notes a cache that disagrees).
void Rma25d::receive_patterns(comm::RequestSet& rs_pat) {
  ctx_.comm().test_received("rma25d: C pattern heads", pat_heads_.data(),
                            pat_heads_.size() * sizeof(std::int64_t));
  pat_in_.resize(srcs_.size());
  for (std::size_t q = 0; q < srcs_.size(); ++q) {
    const std::int64_t head = pat_heads_[2 * q], n = head & (kFollows - 1);
    TESSEL_CHECK(head >= 0 && n % 2 == 0, Error, "rma25d: rank ", me_,
                 " received the C pattern header ", head, " from rank ", srcs_[q],
                 " (expected an even count, bit 62 the follows flag)");
    check_count(ctx_.comm(), n, limits_.idx, srcs_[q], "C pattern");
    if (head & kFollows) {
      pat_in_[q].idx.resize(static_cast<std::size_t>(n));
      ctx_.comm().irecv(pat_in_[q].idx.data(), n, srcs_[q], kTagPatternIdx, rs_pat);
      continue;
    }
    auto it = st_.pattern_from.find(srcs_[q]);
    if (it != st_.pattern_from.end() && static_cast<std::int64_t>(it->second.idx.size()) == n) {
      pat_in_[q] = it->second;
      continue;
    }
    note(tessel::detail::concat(
        "rma25d: rank ", srcs_[q], " sent its C pattern (", n / 2,
        " blocks) as unchanged, but rank ", me_, " holds ",
        it == st_.pattern_from.end()
            ? std::string("none from it")
            : tessel::detail::concat(it->second.idx.size() / 2, " blocks from it"),
        ": the pattern caches disagree"));
  }
}

/// Not collective. Each new pattern checked before it is used or kept; the panels of each
/// owner allowed only its pattern's blocks.
void Rma25d::use_patterns() {
  for (std::size_t q = 0; q < srcs_.size(); ++q) {
    if (pat_heads_[2 * q] & kFollows) {
      ctx_.comm().test_received("rma25d: C pattern received", pat_in_[q].idx.data(),
                                pat_in_[q].idx.size() * sizeof(std::int32_t));
      const std::string why = check_pattern(pat_in_[q], *ops_.rows, *ops_.cols);
      if (!why.empty()) {
        note(tessel::detail::concat("rma25d: the C pattern rank ", me_, " received from rank ",
                                    srcs_[q], ": ", why));
        pat_in_[q] = {};  // an empty pattern keeps the exchange going; the owner's check fails
      }
    }
    st_.pattern_from[srcs_[q]] = pat_in_[q];
    for (std::size_t p = 0; p < panels_.size(); ++p)
      if (plan_.rank_of(panels_[p].first, panels_[p].second) == srcs_[q]) {
        foreign_allowed_[p].emplace(ops_.rows, ops_.cols);
        foreign_allowed_[p]->mark(pat_in_[q]);
        pattern_of_panel_[p] = q;
      }
  }
}
}  // namespace

ExecResult run_rma25d(Context& ctx, const SpgemmPlan& plan, const SpOperands& ops,
                      const ExecOptions& opt, SpMultiplyCache::State* cache) {
  SpMultiplyCache::State local_state;
  Rma25d run(ctx, plan, ops, opt, cache ? *cache : local_state);
  run.set_up();              // image sizes -> grow decision || directories -> windows
  run.expose_home_images();  // pack -> lock_all -> barrier
  run.prepare_panels();      // accumulators, the other layers of my fibre
  run.start_ticks();         // (retain: C patterns ||) tick 0's reads; C partials' heads posted
  for (int s = 0; s < plan.ticks; ++s) run.tick(s);
  return run.finish();  // the partials of my panel added; a bad message thrown on every rank
}

}  // namespace detail
}  // namespace tessel::sparse
