// mpi4py communicators: the one file of the module that includes mpi4py's C API (its
// function table is static per translation unit, so it is imported and used only here).
#include <mpi4py/mpi4py.h>

#include "bindings.hpp"

namespace tessel::python {

void import_mpi4py_api() {
  if (import_mpi4py() < 0) throw py::error_already_set();
}

MPI_Comm comm_of(py::handle obj, const std::string& what) {
  if (!PyObject_TypeCheck(obj.ptr(), &PyMPIComm_Type)) {
    std::string type = py::str(py::type::handle_of(obj).attr("__qualname__"));
    throw InputError(what + " must be an mpi4py communicator (mpi4py.MPI.Comm), not " + type);
  }
  MPI_Comm* c = PyMPIComm_Get(obj.ptr());
  if (!c) throw py::error_already_set();
  TESSEL_CHECK(*c != MPI_COMM_NULL, InputError, what,
               " is MPI.COMM_NULL (expected a valid intracommunicator)");
  // Asked through mpi4py: the module itself makes no MPI calls outside the library's comm/.
  TESSEL_CHECK(!obj.attr("Is_inter")().cast<bool>(), InputError, what,
               " is an intercommunicator (expected an intracommunicator such as MPI.COMM_WORLD)");
  return *c;
}

}  // namespace tessel::python
