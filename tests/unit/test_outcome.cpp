#include "catch.hpp"
#include "kforge/common/ascii.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/outcome.hpp"
#include "kforge/common/tolerance.hpp"
#include "kforge/common/util.hpp"

using namespace kforge;

TEST_CASE("outcome names round-trip") {
  CHECK(all_outcomes().front() == Outcome::llm_error);
  CHECK(all_outcomes().back() == Outcome::pass);
  for (auto o : all_outcomes()) {
    CHECK(is_model_outcome(o) == (o != Outcome::llm_error && o != Outcome::infra_error));
    auto back = outcome_from_string(to_string(o));
    REQUIRE(back.has_value());
    CHECK(*back == o);
    CHECK_FALSE(describe(o).empty());
  }
  CHECK_FALSE(outcome_from_string("passed").has_value());
}

TEST_CASE("sha256 matches the FIPS 180-2 test vector") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Hasher a, b;
  a.update("ab").update("c");
  b.update("a").update("bc");
  CHECK(a.hex() != b.hex());
}

TEST_CASE("truncate_middle keeps head and tail") {
  std::string s(1000, 'x');
  s.replace(0, 5, "HEAD_");
  s.replace(995, 5, "_TAIL");
  auto t = truncate_middle(s, 100);
  CHECK(t.size() < 200);
  CHECK(t.rfind("HEAD_", 0) == 0);
  CHECK(t.substr(t.size() - 5) == "_TAIL");
  CHECK(t.find("truncated") != std::string::npos);
}

TEST_CASE("ascii_lower folds A-Z only", "[util]") {
  CHECK(ascii_lower("Content-Type: HOST.Example") == "content-type: host.example");
  CHECK(ascii_lower("") == "");
  CHECK(ascii_lower("@[`{ 09_") == "@[`{ 09_");  // the neighbours of 'A'..'Z' stay
  // UTF-8 bytes pass unchanged ("\xc3\x89" is E-acute; no locale turns it into anything else).
  const std::string utf8 = "\xc3\x89T\xc3\xa9";
  CHECK(ascii_lower(utf8) == "\xc3\x89t\xc3\xa9");
  CHECK(ascii_lower(std::string_view("</SCRIPT>").substr(2, 6)) == "script");
}

TEST_CASE("kernelbench_tolerance: KernelBench's defaults, integers exact", "[util]") {
  CHECK(kernelbench_tolerance("float32").atol == 1e-4);
  CHECK(kernelbench_tolerance("float32").rtol == 1e-4);
  CHECK(kernelbench_tolerance("bfloat16").rtol == 1e-2);
  CHECK(kernelbench_tolerance("float16").atol == 1e-2);
  CHECK(kernelbench_tolerance("float64").atol == 1e-8);
  CHECK(kernelbench_tolerance("int64").atol == 0);
  CHECK(kernelbench_tolerance("bool").rtol == 0);
  static_assert(kernelbench_tolerance("float64").rtol == 1e-8);
}
