# PRIMA_CUDA=AUTO|ON|OFF: whether kernels/cuda/ (library prima_cuda) is built. AUTO builds it
# where a CUDA compiler (nvcc) and the toolkit's cudart and cuBLASLt are found and says once
# when it builds the CPU product only; ON makes their absence a configure error naming what
# is missing; OFF never looks. Sets PRIMA_HAVE_CUDA (ON/OFF). The architectures are 80;90
# (A100, H100/H200) unless CMAKE_CUDA_ARCHITECTURES is given: each one more is another device
# compile of every .cu file.
set(PRIMA_CUDA AUTO CACHE STRING "Build the CUDA kernels: AUTO (where nvcc is found), ON, OFF")
set_property(CACHE PRIMA_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${PRIMA_CUDA}" _prima_cuda)
if(NOT _prima_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PRIMA_CUDA must be AUTO, ON or OFF, got '${PRIMA_CUDA}'")
endif()

set(PRIMA_HAVE_CUDA OFF)
set(_prima_cuda_missing "")
if(NOT _prima_cuda STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    set(_prima_cuda_missing "no CUDA compiler (nvcc) on PATH or in CUDACXX")
  else()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # else static and shared cudart both link
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flags for nvcc
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(NOT CUDAToolkit_FOUND)
      set(_prima_cuda_missing "nvcc found (${CMAKE_CUDA_COMPILER}) but not the CUDA toolkit")
    elseif(NOT TARGET CUDA::cublasLt)
      set(_prima_cuda_missing "the CUDA toolkit has no cuBLASLt (libcublasLt)")
    else()
      set(PRIMA_HAVE_CUDA ON)
    endif()
  endif()
endif()

if(PRIMA_HAVE_CUDA)
  message(STATUS "prima: CUDA kernels ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
elseif(_prima_cuda STREQUAL "ON")
  message(FATAL_ERROR "PRIMA_CUDA=ON: ${_prima_cuda_missing}. Install the CUDA toolkit "
                      "(nvcc, cudart, cuBLASLt), put nvcc on PATH or set CUDACXX, or configure "
                      "with -DPRIMA_CUDA=AUTO or OFF.")
elseif(_prima_cuda STREQUAL "AUTO")
  message(STATUS "prima: CUDA kernels OFF (${_prima_cuda_missing}): building the CPU product "
                 "only; --device cuda will say 'no CUDA build'")
endif()
