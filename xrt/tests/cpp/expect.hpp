// How the door's C++ test programs report: each check prints "<what>: ok" or "<what>: FAILED"
// (the test that runs the program reads those lines) and counts its failures, which the
// program's exit status says. Included by one source each, so its names stay file-local.
#pragma once

#include <iostream>
#include <string>
#include <system_error>

namespace {

int failed = 0;

void expect(bool ok, const std::string& what) {
  std::cout << what << ": " << (ok ? "ok" : "FAILED") << "\n";
  if (!ok) ++failed;
}

// Whether `body` throws a std::system_error with `code`.
template <typename Body>
bool throws(int code, Body body) {
  try {
    body();
  } catch (const std::system_error& error) {
    return error.code().value() == code;
  }
  return false;
}

}  // namespace
