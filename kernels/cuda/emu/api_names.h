// Forced into every translation unit of the CPU execution layer's flavour and of what is built
// on it (-include, kernels/cuda/emu/CMakeLists.txt): every runtime function the layer defines
// is named prima_emu_<name>, in the toolkit's declarations and in every call, so the emulated
// flavour never meets the toolkit's cudart in one binary. The same CMakeLists.txt renames the
// namespace prima::cuda to prima::cuda_emu for the same reason.
#pragma once

#define cudaDeviceGetAttribute prima_emu_cudaDeviceGetAttribute
#define cudaDeviceReset prima_emu_cudaDeviceReset
#define cudaDeviceSynchronize prima_emu_cudaDeviceSynchronize
#define cudaEventCreate prima_emu_cudaEventCreate
#define cudaEventDestroy prima_emu_cudaEventDestroy
#define cudaEventElapsedTime prima_emu_cudaEventElapsedTime
#define cudaEventRecord prima_emu_cudaEventRecord
#define cudaEventSynchronize prima_emu_cudaEventSynchronize
#define cudaFree prima_emu_cudaFree
#define cudaFreeHost prima_emu_cudaFreeHost
#define cudaFuncSetAttribute prima_emu_cudaFuncSetAttribute
#define cudaGetDevice prima_emu_cudaGetDevice
#define cudaGetDeviceCount prima_emu_cudaGetDeviceCount
#define cudaGetDeviceProperties prima_emu_cudaGetDeviceProperties
#define cudaGetErrorName prima_emu_cudaGetErrorName
#define cudaGetErrorString prima_emu_cudaGetErrorString
#define cudaGetLastError prima_emu_cudaGetLastError
#define cudaGraphDestroy prima_emu_cudaGraphDestroy
#define cudaGraphExecDestroy prima_emu_cudaGraphExecDestroy
#define cudaGraphGetNodes prima_emu_cudaGraphGetNodes
#define cudaGraphInstantiate prima_emu_cudaGraphInstantiate
#define cudaGraphLaunch prima_emu_cudaGraphLaunch
#define cudaMalloc prima_emu_cudaMalloc
#define cudaMallocHost prima_emu_cudaMallocHost
#define cudaMemGetInfo prima_emu_cudaMemGetInfo
#define cudaMemcpy prima_emu_cudaMemcpy
#define cudaMemcpyAsync prima_emu_cudaMemcpyAsync
#define cudaMemset prima_emu_cudaMemset
#define cudaMemsetAsync prima_emu_cudaMemsetAsync
#define cudaPeekAtLastError prima_emu_cudaPeekAtLastError
#define cudaRuntimeGetVersion prima_emu_cudaRuntimeGetVersion
#define cudaSetDevice prima_emu_cudaSetDevice
#define cudaStreamBeginCapture prima_emu_cudaStreamBeginCapture
#define cudaStreamCreate prima_emu_cudaStreamCreate
#define cudaStreamCreateWithFlags prima_emu_cudaStreamCreateWithFlags
#define cudaStreamDestroy prima_emu_cudaStreamDestroy
#define cudaStreamEndCapture prima_emu_cudaStreamEndCapture
#define cudaStreamIsCapturing prima_emu_cudaStreamIsCapturing
#define cudaStreamSynchronize prima_emu_cudaStreamSynchronize
