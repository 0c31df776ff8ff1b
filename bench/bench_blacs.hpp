#pragma once
// BLACS process grids and block-cyclic matrices of the pdgemm_ drivers (scalapack_gemm,
// cosma_gemm --mode pdgemm): the ScaLAPACK C/Fortran symbols they call, the --grid option, and
// a local block-cyclic matrix filled by global index. No global state.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

extern "C" {
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int icontxt, int what, int* val);
void Cblacs_gridinit(int* icontxt, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int icontxt, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int icontxt);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double* alpha, const double* a, const int* ia, const int* ja, const int* desca,
             const double* b, const int* ib, const int* jb, const int* descb, const double* beta,
             double* c, const int* ic, const int* jc, const int* descc);
}

namespace tessel::bench {

/// Pure. Global index of local index `l` in a block-cyclic dimension (block `nb`, this process
/// `me` of `np`, source process 0).
inline long global_index(long l, int nb, int me, int np) {
  return ((l / nb) * np + me) * static_cast<long>(nb) + l % nb;
}

/// Pure. The --grid option: "" gives the most square PR <= PC with PR * PC = nranks; "PRxPC"
/// (or PRXPC) must have PR, PC >= 1 and PR * PC <= nranks. nullopt when it is not that.
std::optional<std::pair<int, int>> parse_grid(const std::string& grid, int nranks);

/// A PR x PC row-major BLACS grid on MPI_COMM_WORLD (collective: construct on every rank);
/// ranks outside it have in_grid() false. Call exit() (collective) before MPI_Finalize.
class BlacsGrid {
 public:
  BlacsGrid(int pr, int pc);
  BlacsGrid(const BlacsGrid&) = delete;
  BlacsGrid& operator=(const BlacsGrid&) = delete;
  ~BlacsGrid() { exit(); }
  /// Cblacs_gridexit, once (the destructor calls it when it was not called).
  void exit();
  bool in_grid() const { return in_grid_; }
  int ctxt = -1, nprow = 0, npcol = 0, myrow = -1, mycol = -1;

 private:
  bool in_grid_ = false;
};

/// This rank's part of a rows x cols matrix, nb x nb block-cyclic on `grid` (column-major,
/// leading dimension lld >= 1), and its descriptor.
struct BlockCyclic {
  int desc[9] = {0};
  int lr = 0, lc = 0, lld = 1;
  std::vector<double> local;
  bool desc_ok = true;  // descinit_ returned info 0

  /// Local. Builds the descriptor and fills entry (gi, gj) with `entry(gi, gj)` (zeros when
  /// `entry` is empty). Outside the grid: an empty matrix.
  BlockCyclic(const BlacsGrid& grid, int rows, int cols, int nb,
              const std::function<double(long, long)>& entry);
  double& at(int li, int lj) { return local[static_cast<std::size_t>(lj) * lld + li]; }
};

}  // namespace tessel::bench
