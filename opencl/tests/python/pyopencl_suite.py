"""PyOpenCL's own test suite (its test/ from its release's sdist) against accelhost's platforms,
every device of each, and what came of each test: passed, skipped by the suite, failed on a
device that runs no kernels of a program's own and so has no compiler (the CXL devices),
failed for a reason named below, or failed otherwise, which is what this run is for. The XRT
card builds OpenCL C with the system's clang: a test that needs a compiler passes there.

Usage: pyopencl_suite.py <PyOpenCL's test directory> <scratch directory> [--whole]. Without
--whole, the modules of COMPILER_HIDDEN_UNLESS_WHOLE run with the compiler hidden (they build
some 600 programs, about seven minutes on two cores), and their tests that build count apart.
Prints one line per outcome and each failure that is neither kind; exits 1 if there is one,
or if nothing passed."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor

# Tests that fail on these devices for a reason of theirs other than a compiler, and why.
NEEDS_WHAT_THE_DEVICES_LACK = {
    "test_numpy_type_promotion_with_cl_arrays":
        "expects float64 results, which PyOpenCL gives only on a device listing cl_khr_fp64 "
        "(an OpenCL C extension: devices that run no OpenCL C do not list it, and PyOpenCL "
        "downcasts to float32)",
    "test_xdg_cache_home":
        "sets XDG_CACHE_HOME to a relative folder, which this environment's platformdirs "
        "ignores (the test fails the same way on POCL), so PyOpenCL's cache stays where it was",
}

# Tests that build OpenCL C but stop before they reach the compiler on a device of a type
# that is neither CPU nor GPU (the Xilinx platform's accelerators): PyOpenCL's scan sizes its
# work-groups in multiples of 64 there, and finds none within a work-group size of 1.
SCAN_ON_AN_ACCELERATOR = "max() arg is an empty sequence"

# Modules that mostly build kernels: run on the accelhost platform only, since the Xilinx
# platform's XRT card is the same device, and running them there would build the same
# kernels again (PyOpenCL makes each build unique, so no cache serves the second).
BUILDS_ON_THE_ACCELHOST_PLATFORM_ONLY = {"test_array", "test_algorithm", "test_clmath",
                                          "test_clrandom"}

# Modules that build hundreds of programs (PyOpenCL makes each build unique, so no cache
# serves a later run): run with the compiler hidden unless --whole is given.
COMPILER_HIDDEN_UNLESS_WHOLE = {"test_array", "test_algorithm"}

# The modules that took longest here with the compiler hidden from those of
# COMPILER_HIDDEN_UNLESS_WHOLE (two cores, 25, 20, 14, 8 and 5 s), longest first: started in
# this order, the last module to start is a short one.
LONGEST_FIRST = ["test_clmath", "test_wrapper", "test_array", "test_clrandom", "test_algorithm"]

# What a device of a program's own kernels is called, in a test's name.
RUNS_KERNELS = "Device 'xocl/"

# The longest a module's pytest process may run: the largest (test_array, building some 300
# programs) takes about 7 minutes here, so one that runs for this long hangs (a launch or a
# wait that never ends) rather than works.
MODULE_SECONDS = 1500


def main():
    tests, scratch = sys.argv[1:3]
    whole = "--whole" in sys.argv[3:]
    modules = sorted(
        (os.path.join(tests, name)
         for name in os.listdir(tests)
         if name.startswith("test_") and name.endswith(".py")),
        key=lambda path: start_order(path, whole),
    )
    # A failed build raises its own error, not the cache's (which reads this variable);
    # native tracebacks keep chained errors and take seconds, not minutes, for a thousand.
    os.environ["PYOPENCL_CACHE_FAILURE_FATAL"] = "1"
    os.chdir(scratch)
    # One process per module, as many at once as there are cores: PyOpenCL's context factory
    # collects the whole heap before every test, so one process for the whole suite spends
    # most of its time collecting what the earlier modules left (193 s here, against 114 s
    # for the modules one after another, each in its own process).
    with ThreadPoolExecutor(max_workers=max(1, min(len(modules), os.cpu_count() or 1))) as pool:
        reports = list(pool.map(lambda module: run_module(module, scratch, whole), modules))
    counts = {"passed": 0, "skipped": 0, "compiler": 0, "hidden": 0, "named": 0, "card": 0}
    unexpected = []
    cases = (case for report in reports for case in ElementTree.parse(report).iter("testcase"))
    for case in cases:
        failures = case.findall("failure") + case.findall("error")
        name = case.get("name", "")
        if not failures:
            skipped = case.find("skipped") is not None
            counts["skipped" if skipped else "passed"] += 1
            counts["card"] += not skipped and RUNS_KERNELS in name
            continue
        text = "\n".join(f"{f.get('message', '')}\n{f.text or ''}" for f in failures)
        function = name.split("[", 1)[0]
        module = case.get("classname", "").split(".")[-1]
        if "COMPILER_NOT_AVAILABLE" in text and RUNS_KERNELS not in name:
            counts["compiler"] += 1
        elif "COMPILER_NOT_AVAILABLE" in text and not whole \
                and module in COMPILER_HIDDEN_UNLESS_WHOLE:
            counts["hidden"] += 1
        elif function in NEEDS_WHAT_THE_DEVICES_LACK:
            counts["named"] += 1
        elif SCAN_ON_AN_ACCELERATOR in text and "on 'Xilinx'" in name:
            counts["named"] += 1
        else:
            message = failures[0].get("message", "").splitlines()[:1]
            unexpected.append(f"{case.get('classname')}::{name}: {' '.join(message)}")
    print(f"PyOpenCL's suite: {counts['passed']} passed ({counts['card']} on the XRT card, which "
          f"builds OpenCL C), {counts['skipped']} skipped by the suite, {counts['compiler']} "
          f"need an OpenCL C compiler the device lacks, {counts['hidden']} build where this run "
          f"hides the compiler, {counts['named']} fail for a reason named below, "
          f"{len(unexpected)} failed otherwise")
    for function, why in NEEDS_WHAT_THE_DEVICES_LACK.items():
        print(f"  {function}: {why}")
    for failure in unexpected:
        print(f"UNEXPECTED {failure}")
    return 1 if unexpected or counts["passed"] == 0 else 0


def start_order(module, whole):
    """Where `module` starts among the others: with --whole, the modules that build hundreds
    of programs first; then those of LONGEST_FIRST in its order; then the rest, the largest
    first."""
    name = os.path.splitext(os.path.basename(module))[0]
    if whole and name in COMPILER_HIDDEN_UNLESS_WHOLE:
        return (0, 0, -os.path.getsize(module))
    if name in LONGEST_FIRST:
        return (1, LONGEST_FIRST.index(name), 0)
    return (2, 0, -os.path.getsize(module))


def run_module(module, scratch, whole):
    """Runs PyOpenCL's tests of `module` in a pytest process of its own (the compiler hidden
    from the modules of COMPILER_HIDDEN_UNLESS_WHOLE unless `whole`); its JUnit report."""
    name = os.path.splitext(os.path.basename(module))[0]
    env = dict(os.environ)
    if name in COMPILER_HIDDEN_UNLESS_WHOLE and not whole:
        env["ACCELHOST_CLANG"] = os.path.join(scratch, "no-clang")
    report = os.path.join(scratch, f"{name}.xml")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=native",
             f"--junit-xml={report}", f"--basetemp={os.path.join(scratch, 'pytest', name)}",
             *(["-k", "not Xilinx"] if name in BUILDS_ON_THE_ACCELHOST_PLATFORM_ONLY else []),
             module],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
            timeout=MODULE_SECONDS, env=env,
        )
    except subprocess.TimeoutExpired as hung:
        said = hung.output.decode(errors="replace") if isinstance(hung.output, bytes) \
            else hung.output or ""
        sys.exit(f"PyOpenCL's {name} ran past {MODULE_SECONDS} s and was stopped; "
                 f"what it printed:\n{said}")
    last = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"{name}: {last[0]}", flush=True)
    if not os.path.isfile(report):
        sys.exit(f"pytest wrote no report for {module} (status {done.returncode}):\n{done.stdout}")
    return report


if __name__ == "__main__":
    sys.exit(main())
