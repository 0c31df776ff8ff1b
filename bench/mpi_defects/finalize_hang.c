// finalize_hang.c - MPICH 4.0.2 (ch4:ucx) with UCX 1.13.1's TCP transport hangs in
// MPI_Finalize after ordinary point-to-point traffic (docs/mpich.md, "MPI_Finalize over UCX's
// TCP transport"). No tessel code: a ring of Isend/Irecv of N doubles, REPS times, optionally a
// barrier, then MPI_Finalize.
//   mpicc.mpich -O2 bench/mpi_defects/finalize_hang.c -o /tmp/finalize_hang
//   timeout 15 mpirun.mpich -n 8 -genv UCX_TLS tcp /tmp/finalize_hang [N [REPS [BARRIER]]]
// prints "finalized" when MPI_Finalize returns; exit 124 from timeout = the hang.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  long n = argc > 1 ? atol(argv[1]) : 1 << 20;  // doubles per message
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  int barrier = argc > 3 ? atoi(argv[3]) : 0;
  double* s = malloc(n * 8);
  double* q = malloc(n * 8);
  memset(s, 1, n * 8);
  double t = MPI_Wtime();
  for (int k = 0; k < reps; ++k) {
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Irecv(q, n, MPI_DOUBLE, (r + p - 1) % p, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(s, n, MPI_DOUBLE, (r + 1) % p, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, st);
  }
  if (barrier) MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0)
    printf("done %ld MB x %d in %.2f s; finalizing\n", n * 8 >> 20, reps, MPI_Wtime() - t);
  fflush(stdout);
  MPI_Finalize();
  if (r == 0) printf("finalized\n");
  return 0;
}
