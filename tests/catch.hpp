// tests/catch.hpp — one include for Catch2 2.x (Debian 12) and 3.x (GPU machine).
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define KF_CATCH3 1
#else
#include <catch2/catch.hpp>
#endif
