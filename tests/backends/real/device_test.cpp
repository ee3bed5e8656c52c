// --device's parsing and run-time checks (backends/real/device.h): the accepted forms, the
// refused ones naming the valid forms, and the CUDA check's one-line reasons on this machine.
#include "backends/real/device.h"

#include <gtest/gtest.h>

#include <string>

namespace prima::real {
namespace {

TEST(Device, ParsesCpuCudaAndCudaIndex) {
  auto cpu = parse_device("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->kind, DeviceKind::kCpu);
  auto cuda = parse_device("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->kind, DeviceKind::kCuda);
  EXPECT_EQ(cuda->index, 0);
  auto three = parse_device("cuda:3");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->index, 3);
  EXPECT_EQ(to_string(*three), "cuda:3");
  EXPECT_EQ(to_string(*cpu), "cpu");
  auto emu = parse_device("cuda-emu");
  ASSERT_TRUE(emu.ok());
  EXPECT_EQ(emu->kind, DeviceKind::kCudaEmu);
  EXPECT_EQ(to_string(*emu), "cuda-emu");
}

TEST(Device, RefusesOtherFormsNamingTheValidOnes) {
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda:1x",
                          "cuda:99999999", "cuda0", "cpu:0", "cuda-emu:0", "emu"}) {
    auto d = parse_device(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find("must be cpu, cuda, cuda:N (N a device index from 0) or "
                                        "cuda-emu"),
              std::string::npos)
        << d.status().message();
  }
}

TEST(Device, CpuIsAlwaysAvailable) {
  EXPECT_TRUE(check_device({}).ok());
}

// Whichever this machine is, CUDA is either available or refused in one line that says why.
TEST(Device, CudaIsAvailableOrSaysWhyNot) {
  for (int index : {0, 5}) {
    const Status st = check_device({DeviceKind::kCuda, index});
    if (st.ok()) {
      EXPECT_TRUE(cuda_built());
      continue;
    }
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
    const std::string& m = st.message();
    if (!cuda_built()) {
      EXPECT_EQ(m.rfind("no CUDA build", 0), 0u) << m;
    } else {
      const bool known =
          m.rfind("no CUDA device", 0) == 0 || m.find("out of range") != std::string::npos;
      EXPECT_TRUE(known) << m;
    }
  }
}

TEST(Device, CudaEmuRunsWhereTheLayerIsBuilt) {
  const Status st = check_device({DeviceKind::kCudaEmu, 0});
  EXPECT_EQ(st.ok(), cuda_emu_built()) << st.message();
  if (!st.ok()) {
    EXPECT_NE(st.message().find("no CUDA execution layer"), std::string::npos);
  }
}

}  // namespace
}  // namespace prima::real
