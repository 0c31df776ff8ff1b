#pragma once
/// @file gemm_plan.hpp
/// The pure planner (no MPI) of the communication-optimal dense multiply C = A * B
/// (COSMA, Kwasniewski et al., SC'19, §6.3 and §7.1–7.3) and of its 2D SUMMA baseline.
///
/// The executor runs on a grid pm x pn x pk (used = pm*pn*pk <= p ranks; the others idle):
/// rank (i, j, l) computes C[I_i, J_j] partial over K_l, where I, J, K are balanced splits
/// (layout::split_begin) of m, n, k into pm, pn, pk pieces. K_l is split (balanced) into
/// `rounds` consecutive chunks. Per round r the A panel A[I_i, K_l,r] is allgathered among the
/// pn ranks (i, *, l), the B panel B[K_l,r, J_j] among the pm ranks (*, j, l), and a local GEMM
/// accumulates; after the last round C[I_i, J_j] is reduce-scattered among the pk ranks
/// (i, j, *). Two A and two B round buffers (double buffering) let round r+1's transfer
/// overlap round r's GEMM.
///
/// All volumes and memory sizes are per rank, in words (matrix elements), maximised over the
/// ranks by using the largest piece sizes: dm = ceil(m/pm), dn = ceil(n/pn), dk = ceil(k/pk).
#include <cstdint>
#include <string>

namespace tessel::dense {

/// What to plan. Validated by make_gemm_plan / make_summa_plan.
struct GemmPlanRequest {
  std::int64_t m = 0, n = 0, k = 0;  ///< C is m x n, A is m x k, B is k x n
  int p = 1;                         ///< ranks available
  double memory_words = 0;           ///< per-rank budget S in words (elements); <= 0: unlimited
  /// Fraction of ranks allowed to idle if that lowers the volume: at most floor(delta * p)
  /// ranks idle. The COSMA paper used 3% on thousands of cores; at tens of ranks 3% is not one
  /// rank, so the default 0.15 lets a prime count such as 7 or 13 drop one rank for a grid
  /// that factors (compute per rank grows by at most 1/(1 - delta)).
  double delta = 0.15;
  int rounds = 0;                    ///< 0 = automatic; else forced number of rounds over k
};

/// Per-rank memory of the executor in words, term by term (see GemmPlan::memory()).
struct GemmMemory {
  double c_partial = 0;  ///< partial C[I_i, J_j]: dm*dn
  double a_piece = 0;    ///< own plan-layout piece of A[I_i, K_l]: ceil(dm*dk / pn)
  double b_piece = 0;    ///< own plan-layout piece of B[K_l, J_j]: ceil(dk*dn / pm)
  double a_rounds = 0;   ///< two A round buffers: 2 * dm*kr
  double b_rounds = 0;   ///< two B round buffers: 2 * kr*dn
  double c_out = 0;      ///< reduce-scatter output: dm * ceil(dn/pk)
  double c_recv = 0;     ///< reduce-scatter receive buffer: dm*dn
  double total() const {
    return c_partial + a_piece + b_piece + a_rounds + b_rounds + c_out + c_recv;
  }
};

/// A plan: the grid, the number of rounds and the predicted cost. Pure data.
struct GemmPlan {
  std::int64_t m = 0, n = 0, k = 0;
  int p = 1;                   ///< ranks available (Theorem 2 uses this p)
  int pm = 1, pn = 1, pk = 1;  ///< grid; used = pm*pn*pk <= p
  int rounds = 1;              ///< sequential steps over the local k range (>= 1)
  double delta = 0.15;         ///< as requested
  double memory_words = 0;     ///< budget as requested (<= 0: unlimited)

  int used() const { return pm * pn * pk; }
  int idle() const { return p - used(); }
  /// Largest local domain extents: ceil(m/pm), ceil(n/pn), ceil(k/pk).
  std::int64_t dom_m() const;
  std::int64_t dom_n() const;
  std::int64_t dom_k() const;
  /// Largest k chunk of one round: ceil(dom_k() / rounds) (rounds <= 0: this plan's rounds).
  std::int64_t k_per_round(int rounds = 0) const;

  /// Words received per rank (max over ranks): A dm*dk*(pn-1)/pn, B dk*dn*(pm-1)/pm,
  /// C dm*dn*(pk-1)/pk. Independent of the number of rounds.
  double recv_words_a() const;
  double recv_words_b() const;
  double recv_words_c() const;
  double recv_words() const;  ///< sum of the three

  /// The executor's per-rank memory with `rounds` rounds (<= 0: this plan's rounds), with
  /// kr = k_per_round(rounds). The executor allocates exactly these buffers.
  GemmMemory memory(int rounds = 0) const;
  /// memory().total(): the words per rank this plan needs.
  double memory_words_needed() const;
  /// memory(rounds).total().
  double memory_words_needed(int rounds) const;

  /// Theorem 2 lower bound per rank with p = this->p and S = memory_words:
  /// min{2mnk/(p sqrt S) + S, 3 (mnk/p)^(2/3)}; unlimited memory: 3 (mnk/p)^(2/3).
  /// Note: with X = mnk/p, 2X/sqrt(S) + S >= 3 X^(2/3) for every S > 0 (AM-GM, equality at
  /// S = X^(2/3)), so this min always equals 3 X^(2/3); see bound_words_eq4().
  double bound_words() const;
  /// The cost of the paper's memory-constrained optimal domain (eqs. 4-5): 2X/a + a^2 with
  /// X = mnk/p and a = min{sqrt S, X^(1/3)} (unlimited memory: a = X^(1/3), equal to
  /// bound_words()). Never below bound_words(); larger when S < X^(2/3).
  double bound_words_eq4() const;

  /// Multi-line human text for `--explain`: grid, idle ranks, local domain, rounds, k per
  /// round, predicted words per rank (A, B, C, total), Theorem 2 bound and ratio, memory
  /// needed vs budget.
  std::string to_string() const;
};

/// Most ranks that may idle: floor(delta * p) (with a tiny tolerance for rounding).
int gemm_max_idle(int p, double delta);

/// The communication-optimal plan. Not collective; deterministic (every rank gets the same).
///
/// Validation: m, n, k >= 0 (DimensionMismatch); p >= 1, 0 <= delta < 1, rounds >= 0,
/// memory_words not NaN (InputError). Any of m, n, k == 0: the trivial plan 1x1x1, 1 round.
///
/// Grid: every (pm, pn, pk) with pm*pn*pk = q for q in [p - gemm_max_idle(p, delta), p], with
/// pm <= m, pn <= n, pk <= k (a dimension of size d cannot use more than d ranks). If no such
/// grid exists (tiny matrices), the window is [qtop - gemm_max_idle(p, delta), qtop] where
/// qtop is the largest q <= p that has one. Grids whose memory does not fit even with one
/// k column per round (or, if rounds are forced, with the forced rounds) are skipped. Chosen:
/// least recv_words(); ties: more ranks used, then less compute dm*dn*dk, then fewer rounds,
/// then the first in (pm, pn) ascending order.
///
/// Rounds: t_min = the least t in [1, dk] with memory_words_needed(t) <= budget; rounds =
/// max(t_min, clamp(dk / 512, 1, 8)) so that transfers can overlap the GEMM. A forced
/// req.rounds is clamped to [1, max(1, dk)] and used as is.
///
/// Throws GridError if the budget is too small for every candidate grid (the message gives the
/// budget and the least memory needed, in words and MiB of 8-byte words), or for the forced
/// rounds.
GemmPlan make_gemm_plan(const GemmPlanRequest& req);

/// The 2D SUMMA baseline: pk = 1, pm*pn = p (all ranks), pm x pn the factorization of p
/// closest to square, in the orientation (pm <= pn or pm >= pn) with less volume (ties:
/// pm <= pn; an orientation whose memory does not fit is skipped). Rounds = ceil(k / 256)
/// unless forced, at least what memory needs, at most k. Same validation and errors as
/// make_gemm_plan (delta is only recorded).
GemmPlan make_summa_plan(const GemmPlanRequest& req);

}  // namespace tessel::dense
