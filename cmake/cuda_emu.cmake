# PRIMA_CUDA_EMU=AUTO|ON|OFF: whether the CPU execution layer (kernels/cuda/emu) is built, and
# with it the emulated flavour of the kernels and of the device checks, which CI runs. It needs
# the CUDA toolkit's headers (cuda_runtime_api.h, cuda_fp16.h: no nvcc, no device) and
# Boost.Context (Debian: libboost-context-dev). AUTO builds it where both are found; ON makes
# their absence a configure error. Sets PRIMA_HAVE_CUDA_EMU and defines
# prima_cuda_emu_sources(<out-var> <file.cu>...): one generated .cpp per .cu that includes it,
# so the host compiler builds the same source nvcc does.
set(PRIMA_CUDA_EMU AUTO CACHE STRING "Build the CUDA execution layer for the CPU: AUTO, ON, OFF")
set_property(CACHE PRIMA_CUDA_EMU PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${PRIMA_CUDA_EMU}" _prima_emu)
if(NOT _prima_emu MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PRIMA_CUDA_EMU must be AUTO, ON or OFF, got '${PRIMA_CUDA_EMU}'")
endif()

set(PRIMA_HAVE_CUDA_EMU OFF)
if(NOT _prima_emu STREQUAL "OFF")
  if(NOT CUDAToolkit_FOUND)
    find_package(CUDAToolkit QUIET)
  endif()
  find_package(Boost 1.74 QUIET COMPONENTS context)
  if(NOT CUDAToolkit_FOUND)
    set(_prima_emu_missing "the CUDA toolkit's headers (cuda_runtime_api.h)")
  elseif(NOT TARGET Boost::context)
    set(_prima_emu_missing "Boost.Context (libboost-context-dev)")
  else()
    set(PRIMA_HAVE_CUDA_EMU ON)
  endif()
endif()
if(PRIMA_HAVE_CUDA_EMU)
  message(STATUS "prima: CUDA execution layer for the CPU ON (toolkit headers "
                 "${CUDAToolkit_INCLUDE_DIRS})")
elseif(_prima_emu STREQUAL "ON")
  message(FATAL_ERROR "PRIMA_CUDA_EMU=ON: no ${_prima_emu_missing}.")
elseif(_prima_emu STREQUAL "AUTO")
  message(STATUS "prima: CUDA execution layer for the CPU OFF (no ${_prima_emu_missing})")
endif()

function(prima_cuda_emu_sources out)
  set(files "")
  foreach(cu ${ARGN})
    get_filename_component(abs ${cu} ABSOLUTE)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${abs})
    string(REGEX REPLACE "\\.cu$" ".cpp" gen ${rel})
    set(gen ${CMAKE_BINARY_DIR}/cuda_emu_sources/${gen})
    file(GENERATE OUTPUT ${gen} CONTENT "// Generated: ${rel} for the host compiler.\n#include \"${abs}\"\n")
    set_source_files_properties(${gen} PROPERTIES OBJECT_DEPENDS ${abs})
    list(APPEND files ${gen})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()
