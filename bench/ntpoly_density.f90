!> ntpoly_density — the NTPoly peer of issue 9: the density matrix of (H, S, electron count)
!> with NTPoly 3.1's own solvers, built by bench/peers/build_ntpoly.sh.
!>
!>   mpirun -np P ntpoly_density --hamiltonian H.mtx --overlap S.mtx --electrons N
!>          [--method trs4|sign] [--mu X] [--eps 1e-6] [--converge-overlap 1e-10]
!>          [--converge-density 1e-10] [--slices 1] [--balance 1] [--json FILE]
!>
!> H and S in Matrix Market (bench/density_peer_bench.py converts CP2K's CSR). Both methods
!> start with NTPoly's InverseSquareRoot of S (its default order 5, threshold eps, stopped at
!> --converge-overlap). Then
!>   trs4: NTPoly's TRS4(H, S^-1/2, N/2) (Niklasson's trace-resetting purification on
!>         S^-1/2 H S^-1/2, Gershgorin-scaled; mu recovered afterwards from the polynomial);
!>   sign: X = S^-1/2 H S^-1/2 - mu I, NTPoly's SignFunction (scaled Newton-Schulz,
!>         Gershgorin-scaled), D = (I - sign(X))/2, K = S^-1/2 D S^-1/2. NTPoly has no mu
!>         search of its own for the sign function: mu is given (the bench passes tessel's).
!> K is the density of one spin (tr(KS) = N/2), as tessel reports P. Every product uses threshold eps (NTPoly drops ELEMENTS below eps;
!> tessel and DBCSR drop BLOCKS by Frobenius norm). A random permutation balances the load
!> (as NTPoly's examples do; --balance 0 turns it off). OMP_NUM_THREADS=1 for one thread per rank.
!>
!> Reported (rank 0, one line and --json): seconds (S^-1/2 + solver, after reading; slowest
!> rank), seconds_inverse, seconds_solver, multiplications and iterations of each stage (counted
!> by bench/ntpoly_count.c, which interposes NTPoly's MatrixMultiply and its convergence
!> monitor), mu, band energy 2 tr(K H), tr(K S) (as `trace_ps`), and P's stored elements.
PROGRAM NTPolyDensity
  USE DataTypesModule, ONLY : NTREAL
  USE DensityMatrixSolversModule, ONLY : TRS4
  USE PermutationModule, ONLY : Permutation_t, ConstructRandomPermutation, DestructPermutation
  USE ProcessGridModule, ONLY : ConstructProcessGrid, DestructProcessGrid, IsRoot
  USE PSMatrixModule, ONLY : Matrix_ps, ConstructMatrixFromMatrixMarket, DestructMatrix, &
       & ConstructMatrixFromBinary, &
       & ConstructEmptyMatrix, FillMatrixIdentity, CopyMatrix, TransposeMatrix, GetMatrixSize
  USE PSMatrixAlgebraModule, ONLY : DotMatrix, IncrementMatrix, ScaleMatrix, SimilarityTransform
  USE SignSolversModule, ONLY : SignFunction
  USE SolverParametersModule, ONLY : SolverParameters_t, ConstructSolverParameters, &
       & DestructSolverParameters
  USE SquareRootSolversModule, ONLY : InverseSquareRoot
  USE ISO_C_BINDING, ONLY : C_LONG
  USE MPI
  IMPLICIT NONE
  INTERFACE
     SUBROUTINE ntpoly_counts(mult, iter) BIND(C, name="ntpoly_counts")
       IMPORT :: C_LONG
       INTEGER(C_LONG), INTENT(OUT) :: mult, iter
     END SUBROUTINE ntpoly_counts
     SUBROUTINE ntpoly_counts_reset() BIND(C, name="ntpoly_counts_reset")
     END SUBROUTINE ntpoly_counts_reset
  END INTERFACE
  CHARACTER(len=1024) :: hfile = "", sfile = "", json_file = "", method = "trs4"
  CHARACTER(len=1024) :: arg, val
  REAL(NTREAL) :: electrons = -1.0_NTREAL, eps = 1e-6_NTREAL, mu = 0.0_NTREAL
  REAL(NTREAL) :: conv_isq = 1e-10_NTREAL, conv_density = 1e-10_NTREAL
  LOGICAL :: have_mu = .FALSE.
  INTEGER :: slices = 1, balance = 1
  TYPE(Matrix_ps) :: H, S, ISQ, ISQT, K, WH, Ident, Sgn, D
  TYPE(SolverParameters_t) :: params
  TYPE(Permutation_t) :: perm
  INTEGER(C_LONG) :: mult_isq, iter_isq, mult_solver, iter_solver
  REAL(NTREAL) :: t0, t1, t2, tmax(3), energy_ortho, khd, ksd, band_energy, trace_ps, nnz_p
  INTEGER :: II, ierr, provided, rank, nranks, ju
  LOGICAL :: bad

  CALL MPI_Init_thread(MPI_THREAD_SERIALIZED, provided, ierr)
  CALL MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  CALL MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)

  bad = .FALSE.
  II = 1
  DO WHILE (II .LE. COMMAND_ARGUMENT_COUNT())
     CALL GET_COMMAND_ARGUMENT(II, arg)
     CALL GET_COMMAND_ARGUMENT(II + 1, val)
     SELECT CASE (TRIM(arg))
     CASE ('--hamiltonian'); hfile = val
     CASE ('--overlap'); sfile = val
     CASE ('--json'); json_file = val
     CASE ('--method'); method = val
     CASE ('--electrons'); READ(val, *, IOSTAT=ierr) electrons; bad = bad .OR. ierr /= 0
     CASE ('--eps'); READ(val, *, IOSTAT=ierr) eps; bad = bad .OR. ierr /= 0
     CASE ('--mu'); READ(val, *, IOSTAT=ierr) mu; bad = bad .OR. ierr /= 0; have_mu = .TRUE.
     CASE ('--converge-overlap'); READ(val, *, IOSTAT=ierr) conv_isq; bad = bad .OR. ierr /= 0
     CASE ('--converge-density'); READ(val, *, IOSTAT=ierr) conv_density; bad = bad .OR. ierr /= 0
     CASE ('--slices'); READ(val, *, IOSTAT=ierr) slices; bad = bad .OR. ierr /= 0
     CASE ('--balance'); READ(val, *, IOSTAT=ierr) balance; bad = bad .OR. ierr /= 0
     CASE DEFAULT
        IF (rank == 0) WRITE(*, '(3A)') "ntpoly_density: unknown argument '", TRIM(arg), "'"
        bad = .TRUE.
     END SELECT
     II = II + 2
  END DO
  IF (LEN_TRIM(hfile) == 0 .OR. LEN_TRIM(sfile) == 0 .OR. electrons <= 0) bad = .TRUE.
  IF (TRIM(method) /= "trs4" .AND. TRIM(method) /= "sign") bad = .TRUE.
  IF (TRIM(method) == "sign" .AND. .NOT. have_mu) bad = .TRUE.
  IF (eps < 0 .OR. slices < 1 .OR. MOD(nranks, slices) /= 0) bad = .TRUE.
  IF (bad) THEN
     IF (rank == 0) WRITE(*, '(A)') "usage: ntpoly_density --hamiltonian H.mtx|H.bin --overlap S.mtx|S.bin " // &
          & "--electrons N (> 0) [--method trs4|sign (needs --mu X)] [--eps E >= 0] " // &
          & "[--converge-overlap C] [--converge-density C] [--slices L dividing ranks] " // &
          & "[--balance 0|1] [--json FILE]"
     CALL MPI_Finalize(ierr)
     STOP 2
  END IF

  CALL ConstructProcessGrid(MPI_COMM_WORLD, slices)
  CALL read_input(H, hfile)
  CALL read_input(S, sfile)

  CALL MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  IF (balance /= 0) THEN
     CALL ConstructRandomPermutation(perm, H%logical_matrix_dimension)
     CALL ConstructSolverParameters(params, converge_diff_in = conv_isq, threshold_in = eps, &
          & BalancePermutation_in = perm)
  ELSE
     CALL ConstructSolverParameters(params, converge_diff_in = conv_isq, threshold_in = eps)
  END IF
  CALL ntpoly_counts_reset()
  CALL InverseSquareRoot(S, ISQ, params)
  CALL ntpoly_counts(mult_isq, iter_isq)
  t1 = MPI_Wtime()

  params%converge_diff = conv_density
  CALL ntpoly_counts_reset()
  IF (TRIM(method) == "trs4") THEN
     CALL TRS4(H, ISQ, 0.5_NTREAL * electrons, K, energy_value_out = energy_ortho, &
          & chemical_potential_out = mu, solver_parameters_in = params)
  ELSE
     CALL TransposeMatrix(ISQ, ISQT)
     CALL SimilarityTransform(H, ISQ, ISQT, WH, threshold_in = eps)
     CALL ConstructEmptyMatrix(Ident, H)
     CALL FillMatrixIdentity(Ident)
     CALL IncrementMatrix(Ident, WH, alpha_in = -mu)
     CALL SignFunction(WH, Sgn, params)
     CALL CopyMatrix(Ident, D)
     CALL IncrementMatrix(Sgn, D, alpha_in = -1.0_NTREAL)
     CALL ScaleMatrix(D, 0.5_NTREAL)
     CALL SimilarityTransform(D, ISQT, ISQ, K, threshold_in = eps)
  END IF
  CALL ntpoly_counts(mult_solver, iter_solver)
  t2 = MPI_Wtime()
  tmax = (/ t2 - t0, t1 - t0, t2 - t1 /)
  CALL MPI_Allreduce(MPI_IN_PLACE, tmax, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)

  CALL DotMatrix(K, H, khd)
  CALL DotMatrix(K, S, ksd)
  band_energy = 2.0_NTREAL * khd
  trace_ps = ksd
  nnz_p = REAL(GetMatrixSize(K), NTREAL)

  IF (IsRoot()) THEN
     WRITE(*, '(A,A,A,I0,A,ES10.3,A,F10.4,A,F9.4,A,F9.4,A,I0,A,I0,A,I0,A,I0,A,F16.10,A,F20.12,A,F18.10)') &
          & "ntpoly ", TRIM(method), " ranks=", nranks, " eps=", eps, ": ", tmax(1), " s (S^-1/2 ", &
          & tmax(2), " s, solver ", tmax(3), " s), multiplications ", mult_isq, " + ", mult_solver, &
          & ", iterations ", iter_isq, " + ", iter_solver, ", mu ", mu, ", band energy ", band_energy, &
          & ", tr(PS) ", trace_ps
     IF (LEN_TRIM(json_file) > 0) THEN
        OPEN(NEWUNIT = ju, FILE = TRIM(json_file), STATUS = "REPLACE", ACTION = "WRITE")
        WRITE(ju, '(A)') "{"
        WRITE(ju, '(A)') ' "tool": "ntpoly", "library": "NTPoly 3.1.1",'
        WRITE(ju, '(3A)') ' "method": "', TRIM(method), '",'
        WRITE(ju, '(A,I0,A,I0,A)') ' "ranks": ', nranks, ', "slices": ', slices, ','
        WRITE(ju, '(A,ES24.16,A)') ' "eps": ', eps, ','
        WRITE(ju, '(A,ES24.16,A)') ' "electrons": ', electrons, ','
        WRITE(ju, '(A,ES24.16,A)') ' "seconds": ', tmax(1), ','
        WRITE(ju, '(A,ES24.16,A)') ' "seconds_inverse": ', tmax(2), ','
        WRITE(ju, '(A,ES24.16,A)') ' "seconds_solver": ', tmax(3), ','
        WRITE(ju, '(A,I0,A)') ' "multiplications": ', mult_isq + mult_solver, ','
        WRITE(ju, '(A,I0,A)') ' "multiplications_inverse": ', mult_isq, ','
        WRITE(ju, '(A,I0,A)') ' "multiplications_solver": ', mult_solver, ','
        WRITE(ju, '(A,I0,A)') ' "iterations_inverse": ', iter_isq, ','
        WRITE(ju, '(A,I0,A)') ' "iterations": ', iter_solver, ','
        WRITE(ju, '(A,ES24.16,A)') ' "mu": ', mu, ','
        WRITE(ju, '(A,ES24.16,A)') ' "band_energy": ', band_energy, ','
        WRITE(ju, '(A,ES24.16,A)') ' "trace_ps": ', trace_ps, ','
        WRITE(ju, '(A,ES24.16)') ' "p_elements": ', nnz_p
        WRITE(ju, '(A)') "}"
        CLOSE(ju)
     END IF
  END IF

  CALL DestructSolverParameters(params)
  IF (balance /= 0) CALL DestructPermutation(perm)
  CALL DestructMatrix(H)
  CALL DestructMatrix(S)
  CALL DestructMatrix(ISQ)
  CALL DestructMatrix(ISQT)
  CALL DestructMatrix(K)
  CALL DestructMatrix(WH)
  CALL DestructMatrix(Ident)
  CALL DestructMatrix(Sgn)
  CALL DestructMatrix(D)
  CALL DestructProcessGrid
  CALL MPI_Finalize(ierr)
CONTAINS

  !> A matrix file: NTPoly's binary format when the name ends in .bin, else Matrix Market.
  SUBROUTINE read_input(M, file_name)
    TYPE(Matrix_ps), INTENT(INOUT) :: M
    CHARACTER(len=*), INTENT(IN) :: file_name
    INTEGER :: n
    n = LEN_TRIM(file_name)
    IF (n > 4) THEN
       IF (file_name(n - 3:n) == '.bin') THEN
          CALL ConstructMatrixFromBinary(M, TRIM(file_name))
          RETURN
       END IF
    END IF
    CALL ConstructMatrixFromMatrixMarket(M, TRIM(file_name))
  END SUBROUTINE read_input
END PROGRAM NTPolyDensity
