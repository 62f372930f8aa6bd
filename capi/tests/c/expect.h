/*
 * The checks the C test programs share: EXPECT compares a call's fpga_result with the one
 * wanted, CHECK tests a condition; each failure is printed with its line and counted in
 * `failures`, which the program's exit status reports.
 */
#ifndef ACCELHOST_TESTS_EXPECT_H
#define ACCELHOST_TESTS_EXPECT_H

#include <opae/fpga.h>

#include <stdio.h>

static int failures;

#define EXPECT(call, want)                                                              \
	do {                                                                            \
		fpga_result got_ = (call);                                              \
		if (got_ != (want)) {                                                   \
			fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d\n",    \
				__FILE__, __LINE__, #call, got_, fpgaErrStr(got_), want); \
			failures++;                                                     \
		}                                                                       \
	} while (0)

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
			failures++;                                                     \
		}                                                                       \
	} while (0)

#endif
