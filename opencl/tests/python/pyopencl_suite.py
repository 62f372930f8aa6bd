"""PyOpenCL's own test suite (its test/ from its release's sdist) against accelhost's platforms,
every device of each, and what came of each test: passed, skipped by the suite, failed because
it builds OpenCL C (this run gives the devices no compiler: the XRT card, which builds OpenCL C
with the system's clang, does not provide yet some built-ins PyOpenCL's array functions use;
README, "The OpenCL platform"), failed for a reason
named below, or failed otherwise, which is what this run is for.

Usage: pyopencl_suite.py <PyOpenCL's test directory> <scratch directory>. Prints one line per
outcome and each failure that is neither kind; exits 1 if there is one, or if nothing passed."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor

# Tests that fail on these devices for a reason of theirs other than a compiler, and why.
NEEDS_WHAT_THE_DEVICES_LACK = {
    "test_numpy_type_promotion_with_cl_arrays":
        "expects float64 results, which PyOpenCL gives only on a device listing cl_khr_fp64 "
        "(an OpenCL C extension: the devices run no OpenCL C, and PyOpenCL downcasts to "
        "float32)",
}

# Tests that build OpenCL C but stop before they reach the compiler on a device of a type
# that is neither CPU nor GPU (the Xilinx platform's accelerators): PyOpenCL's scan sizes its
# work-groups in multiples of 64 there, and finds none within a work-group size of 1.
SCAN_ON_AN_ACCELERATOR = "max() arg is an empty sequence"

# The longest a module's pytest process may run: the largest takes about 20 s here, so one
# that runs for this long hangs (a launch or a wait that never ends) rather than works.
MODULE_SECONDS = 600


def main():
    tests, scratch = sys.argv[1:3]
    modules = sorted(
        (os.path.join(tests, name)
         for name in os.listdir(tests)
         if name.startswith("test_") and name.endswith(".py")),
        # The largest first, so that the last module to start is a short one.
        key=lambda path: -os.path.getsize(path),
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
        reports = list(pool.map(lambda module: run_module(module, scratch), modules))
    counts = {"passed": 0, "skipped": 0, "compiler": 0, "named": 0}
    unexpected = []
    cases = (case for report in reports for case in ElementTree.parse(report).iter("testcase"))
    for case in cases:
        failures = case.findall("failure") + case.findall("error")
        if not failures:
            counts["skipped" if case.find("skipped") is not None else "passed"] += 1
            continue
        name = case.get("name", "")
        text = "\n".join(f"{f.get('message', '')}\n{f.text or ''}" for f in failures)
        function = name.split("[", 1)[0]
        if "COMPILER_NOT_AVAILABLE" in text:
            counts["compiler"] += 1
        elif function in NEEDS_WHAT_THE_DEVICES_LACK:
            counts["named"] += 1
        elif SCAN_ON_AN_ACCELERATOR in text and "on 'Xilinx'" in name:
            counts["compiler"] += 1
        else:
            message = failures[0].get("message", "").splitlines()[:1]
            unexpected.append(f"{case.get('classname')}::{name}: {' '.join(message)}")
    print(f"PyOpenCL's suite: {counts['passed']} passed, {counts['skipped']} skipped by the suite, "
          f"{counts['compiler']} need an OpenCL C compiler, {counts['named']} need what the "
          f"devices lack, {len(unexpected)} failed otherwise")
    for function, why in NEEDS_WHAT_THE_DEVICES_LACK.items():
        print(f"  {function}: {why}")
    for failure in unexpected:
        print(f"UNEXPECTED {failure}")
    return 1 if unexpected or counts["passed"] == 0 else 0


def run_module(module, scratch):
    """Runs PyOpenCL's tests of `module` in a pytest process of its own; its JUnit report."""
    name = os.path.splitext(os.path.basename(module))[0]
    report = os.path.join(scratch, f"{name}.xml")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=native",
             f"--junit-xml={report}", f"--basetemp={os.path.join(scratch, 'pytest', name)}",
             module],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
            timeout=MODULE_SECONDS,
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
