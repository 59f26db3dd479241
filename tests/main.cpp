// Test main shared by Catch2 2 and 3. When asked for the [gpu] tests on a machine without a
// GPU, it prints why and exits 77, which CTest reports as skipped (never as passed).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char* argv[]) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).find("[.gpu]") != std::string::npos &&
        std::system("nvidia-smi -L > /dev/null 2>&1") != 0) {
      std::printf("SKIPPED: the [gpu] tests need an NVIDIA GPU and none is visible (nvidia-smi -L failed)\n");
      return 77;
    }
  }
  return Catch::Session().run(argc, argv);
}
