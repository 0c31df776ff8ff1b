#pragma once
/// @file spgemm_plan.hpp
/// SpgemmPlan: the schedule of the block-sparse multiply C = alpha op(A) op(B) + beta C on a
/// PR x PC grid (seed 001, Algorithms 1 and 2), as pure data: no MPI, printable, unit-tested.
///
/// Images. The inner (k) block dimension is cut into V "images" (seed sec. 2: the virtual
/// dimension): every k block belongs to one image kv[kb] in [0, V). A's panel of process
/// P(i, j) holds the images j*a .. j*a + a - 1 of block row panel i (a = V / PC), B's panel of
/// P(i, j) holds the images i*b .. i*b + b - 1 of block column panel j (b = V / PR). An "A image
/// (m, v)" is the part of A with block rows of process row m and k blocks of image v; its
/// home is P(m, v / a). A "B image (v, n)" lives on P(v / b, n).
///
/// Cannon (Algorithm 1): V = lcm(PR, PC) ticks. P(i, j) multiplies at tick t the images
/// v = (j*a + i*b + t) mod V of A (row i) and B (column j). Pre-shift: it starts with the A images
/// v(i, j, 0 .. a-1) and the B images v(i, j, 0 .. b-1), fetched from their homes. At tick
/// t < V - a it sends its current A image to P(i, j-1) and receives the one P(i, j+1) works on
/// (needed at tick t + a); B likewise up the column (t < V - b). For PR = PC this is the
/// classic Cannon with a = b = 1.
///
/// rma25d (Algorithm 2): L layers split as LR x LC (square grid: sqrt(L) x sqrt(L), eq. 5;
/// PR > PC: L x 1, PR < PC: 1 x L, eq. 4); side_r = PR / LR, side_c = PC / LC;
/// V = lcm(PR, PC, L). P(i, j) with i = i3*side_r + ii, j = j3*side_c + jj is layer
/// l = j3*LR + i3 of the fibre (ii, jj); it computes partial products for the L C panels
/// (x*side_r + ii, y*side_c + jj), x < LR, y < LC, over its share of the images:
/// tick s (0 <= s < V/L) uses image v = (off + l + L*s) mod V, off = ii*b + jj*a. It reads the
/// LR A images and LC B images of the tick with MPI_Rget from their homes (no pre-shift; A
/// windows on the ranks with the same ii, B windows on the ranks with the same jj), then
/// sends the L - 1 foreign partial panels to their owners during the last tick.
///
/// Volume (eq. 7 of the seed, in the exact per-rank form used by the tests): A bytes received
/// by a rank = sum of the sizes of the A images it reads from another rank (Cannon: the
/// pre-shift images not at home plus the images received at ticks 0 .. V-a-1; rma25d: the
/// LR * V/L images of its ticks not homed on itself), likewise B; C bytes = the L - 1 foreign
/// partial panels it sends. With S_A, S_B the mean image sizes this is V (S_A + S_B) for
/// Cannon and (V/L)(LR S_A + LC S_B) + (L - 1) S_C for rma25d, i.e. (V/sqrt(L))(S_A + S_B) +
/// (L - 1) S_C on square grids (eq. 7). Image size in bytes = 8 * values + 16 * blocks (two
/// int64 of metadata per block: row and column, norm); partial C panel = 8 * values +
/// 8 * blocks (two int32: row, column) + a 16-byte header.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessel::sparse {

enum class SpAlgorithm { Cannon, Rma25d };
/// "cannon" / "rma25d".
const char* to_string(SpAlgorithm a);

/// One read of the schedule: at `tick` (-1: pre-shift), the image `image` of `matrix` ('A'
/// or 'B') for panel row/column `panel` comes from context rank `from` (== the reader when
/// the data is already local).
struct SpRead {
  int tick = 0;
  char matrix = 'A';
  int image = 0;
  int panel = 0;
  int from = 0;
};

struct SpgemmPlan {
  SpAlgorithm algorithm = SpAlgorithm::Cannon;
  int pr = 1, pc = 1;
  int layers = 1;      // L
  int lr = 1, lc = 1;  // L = lr * lc
  int side_r = 1, side_c = 1;
  int v = 1;         // images along k
  int ticks = 1;     // Cannon: V; rma25d: V / L
  std::string note;  // why this L (layers = auto), empty otherwise

  int a_per_col() const { return v / pc; }  // a: images per process column of A
  int b_per_row() const { return v / pr; }  // b: images per process row of B
  int a_home_col(int image) const { return image / a_per_col(); }
  int b_home_row(int image) const { return image / b_per_row(); }
  int rank_of(int i, int j) const { return i * pc + j; }

  /// Cannon: the image P(i, j) multiplies at tick t (t may exceed V; taken mod V).
  int cannon_image(int i, int j, int t) const;
  /// rma25d: layer of P(i, j), and the image it uses at tick s.
  int layer_of(int i, int j) const;
  int rma_image(int i, int j, int s) const;
  /// rma25d: the C panels (process row m, process column n) P(i, j) computes, in the order it
  /// computes them within a tick (x outer, y inner); the own panel (i, j) is among them.
  std::vector<std::pair<int, int>> rma_panels(int i, int j) const;

  /// Every read of P(i, j), in schedule order.
  std::vector<SpRead> reads(int i, int j) const;
  /// The predicted bytes P(i, j) receives for A and B and sends for C, given the size in bytes
  /// of A image (m, v), of B image (v, n), and of P(i, j)'s partial C panel (m, n).
  struct Volume {
    std::int64_t a = 0, b = 0, c = 0;
  };
  Volume predict(int i, int j, const std::function<std::int64_t(int, int)>& a_image_bytes,
                 const std::function<std::int64_t(int, int)>& b_image_bytes,
                 const std::function<std::int64_t(int, int)>& c_panel_bytes) const;

  /// Multi-line description: algorithm, grid, L split, V, ticks, buffers, the note; with
  /// `rank` >= 0 also that rank's reads.
  std::string describe(int rank = -1) const;
};

/// Pure. The valid layer counts of rma25d on a PR x PC grid (always contains 1), increasing.
std::vector<int> valid_layers(int pr, int pc);

/// layers = auto considers L <= kAutoMaxLayers: every rank holds L partial C panels, so the
/// memory grows with L while eq. 7's A + B term shrinks only as 1 / sqrt(L); larger L only
/// when asked for.
constexpr int kAutoMaxLayers = 4;

/// What eq. 7 needs to choose L, as totals over the whole matrices (bytes in the wire formats):
/// op(A) and op(B) (8 per value + 32 per block) and the product op(A) op(B) before the final
/// filter (8 per value + 8 per block, the C wire format). A partial C panel is at most the
/// product's panel, so c / (PR PC) is eq. 7's S_C as an upper bound of a partial.
struct SpVolumeModel {
  double a = 0, b = 0, c = 0;
  /// retain_sparsity: C's pattern as sent to the other layers (8 bytes per block of C, summed
  /// over ranks); 0 without retain.
  double c_pattern = 0;
  bool retain = false;  // retain_sparsity: the pattern is sent (with a 16-byte header)
  /// Optional (add_image_bytes): the real size in bytes of every A image (m, v) and B image
  /// (v, n) under the plan with `layers` L (V = lcm(PR, PC, L) images along k, so the sizes
  /// depend on L). Where an L has its sizes here, predict_layers sums the images each rank
  /// reads (eq. 7's exact per-rank form: A and B equal the ledger to the byte); elsewhere it
  /// takes every image as a / (PR V), b / (PC V) (eq. 7 with mean sizes, exact in the mean at
  /// L = 1 only: at L > 1 images are read by different numbers of ranks).
  struct Images {
    int layers = 1, v = 1;
    std::vector<std::int64_t> a;  // m * v + image, PR x V
    std::vector<std::int64_t> b;  // image * PC + n, V x PC
  };
  std::vector<Images> images;
  /// The entry of `images` for L, or null.
  const Images* images_for(int layers) const {
    for (const auto& x : images)
      if (x.layers == layers) return &x;
    return nullptr;
  }
};

/// The predicted mean bytes per rank of one rma25d multiply with L layers: A and B received,
/// C partials sent (eq. 7 in its exact per-rank form, SpgemmPlan::predict, with the A and B
/// images' real sizes where the model has them for L (SpVolumeModel::images), else every A
/// image a / (PR V) and every B image b / (PC V), and every partial panel c / (PR PC); averaged
/// over ranks).
struct SpLayerPrediction {
  int layers = 1;
  double a = 0, b = 0, c = 0;
  /// retain_sparsity: C's pattern sent to the L - 1 other layers, (L - 1)(16 + c_pattern / (PR PC)).
  double pattern = 0;
  double total() const { return a + b + c + pattern; }
};

/// Pure. The prediction for every valid L <= max_layers (valid_layers), increasing L.
std::vector<SpLayerPrediction> predict_layers(int pr, int pc, const SpVolumeModel& m,
                                              int max_layers = kAutoMaxLayers);

/// Pure. The L of predict_layers with the smallest predicted total (ties: the smaller L), and
/// in `note` (if given) the table and the reason.
int choose_layers(int pr, int pc, const SpVolumeModel& m, int max_layers = kAutoMaxLayers,
                  std::string* note = nullptr);

/// Pure. The plan for `alg` on a pr x pc grid. layers: 0 = auto (Cannon: 1; rma25d: with a
/// model, choose_layers; without one, L = 1 with a note), else the L wanted. Throws GridError
/// naming the grid, L and the valid values when L does not fit (eqs. 4 and 5), when Cannon gets
/// L > 1, or when pr, pc < 1 or layers < 0.
SpgemmPlan make_spgemm_plan(SpAlgorithm alg, int pr, int pc, int layers = 0,
                            const SpVolumeModel* model = nullptr);

/// Pure. The image of every k block. `a_col` / `b_row`: the process column of every k block in
/// op(A) and the process row in op(B) on the plan's grid, or null when that operand must be
/// redistributed anyway. Rules: both given and every k block's A column c and B row r have
/// images in common ([c*a, c*a+a) meets [r*b, r*b+b)): the first common image; otherwise with
/// A given: c*a + kb mod a; with only B given: r*b + kb mod b; neither: kb mod V.
std::vector<int> k_images(const SpgemmPlan& plan, int nkblocks, const std::vector<int>* a_col,
                          const std::vector<int>* b_row);

}  // namespace tessel::sparse
