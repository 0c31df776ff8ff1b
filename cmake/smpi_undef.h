/* Force-included after SMPI's smpi_helpers.h in the SMPI build (cmake/TesselSmpi.cmake).
 * smpi_helpers.h turns exit() and getpid into macros, which break C++ members of those names
 * (CLI11's App::exit); tessel never calls exit(): its command returns from main. */
#undef exit
#undef getpid
