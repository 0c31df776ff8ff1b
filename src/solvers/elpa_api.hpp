#pragma once
// The part of ELPA's C API (2022.11) that tessel calls: the diagonalization route
// (diag_elpa.cpp) and the bench peer elpa_density (bench/elpa_density.cpp). Declared here
// because <elpa/elpa.h> selects the typed entry points with C11 _Generic, which C++ lacks.
extern "C" {
struct elpa_struct;
typedef struct elpa_struct* elpa_t;
int elpa_init(int api_version);
elpa_t elpa_allocate(int* error);
void elpa_deallocate(elpa_t handle, int* error);
void elpa_uninit(int* error);
void elpa_set_integer(elpa_t handle, const char* name, int value, int* error);
int elpa_setup(elpa_t handle);
void elpa_eigenvectors_a_h_a_d(elpa_t handle, double* a, double* ev, double* q, int* error);
void elpa_generalized_eigenvectors_d(elpa_t handle, double* a, double* b, double* ev, double* q,
                                     int is_already_decomposed, int* error);
const char* elpa_strerr(int elpa_error);
}

namespace tessel::elpa {
inline constexpr int kApiVersion =
    20221109;  // ELPA_API_VERSION of 2022.11.001, the oldest accepted
inline constexpr int kSolver1Stage = 1, kSolver2Stage = 2;  // ELPA_SOLVER_1STAGE / _2STAGE
}  // namespace tessel::elpa
