/*
 * An OPAE program over a plugin that lies (the chaos plugin's accelerator, found by its AFU
 * id), one class of lie per run, chosen by argv[1]:
 *   short    fpgaPrepareBuffer of 2 MiB: the plugin answers 4 KiB; the call must fail, never
 *            hand out an address for 2 MiB.
 *   repeat   two buffers: the plugin gives one workspace id twice; the second must fail, and
 *            the first stay prepared, whole and writable at its address.
 *   pending  an interrupt event and a launch whose completions never come: the event's file
 *            descriptor becomes readable and accelhostEventWait returns an error, both by the
 *            plugin's event deadline.
 *   stale    NLB0 opened and closed, then opened until a handle could land on the old one:
 *            the old handle stays FPGA_INVALID_PARAM and the newest one untouched.
 * Then NLB0's scratchpad register is written and read back. Prints "ok: ..." or
 * "FAILED: ..." per check and the wait times; exits with the failures.
 */
#include <opae/fpga.h>
#include <opae/accelhost.h>

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NLB0_AFU_ID "D8424DC4-A4A3-C413-F89E-433683F9040B"
#define CHAOS_AFU_ID "FA017FA0-17FA-017F-0000-000000000001"
#define CSR_SCRATCHPAD 0x108

static int failures;

static void expect(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int parse_guid(const char *text, fpga_guid guid)
{
	int n = 0;
	for (const char *p = text; *p && n < 32; p++) {
		int v;
		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			return -1;
		if (n % 2 == 0)
			guid[n / 2] = (uint8_t)(v << 4);
		else
			guid[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -1;
}

/* Opens the accelerator with AFU id `id` (shared). */
static fpga_handle open_afu(const char *id)
{
	fpga_guid guid;
	fpga_properties filter = NULL;
	fpga_token token = NULL;
	fpga_handle handle = NULL;
	uint32_t found = 0;
	if (parse_guid(id, guid) || fpgaGetProperties(NULL, &filter) ||
	    fpgaPropertiesSetObjectType(filter, FPGA_ACCELERATOR) ||
	    fpgaPropertiesSetGUID(filter, guid) || fpgaEnumerate(&filter, 1, &token, 1, &found) ||
	    found < 1 || fpgaOpen(token, &handle, FPGA_OPEN_SHARED))
		handle = NULL;
	fpgaDestroyProperties(&filter);
	if (token)
		fpgaDestroyToken(&token);
	return handle;
}

static int scratchpad_round_trips(fpga_handle nlb0)
{
	uint64_t back = 0;
	return fpgaWriteMMIO64(nlb0, 0, CSR_SCRATCHPAD, 0x5eed5eed5eedull) == FPGA_OK &&
	       fpgaReadMMIO64(nlb0, 0, CSR_SCRATCHPAD, &back) == FPGA_OK && back == 0x5eed5eed5eedull;
}

static void pending(fpga_handle liar)
{
	fpga_event_handle event = NULL;
	int fd = -1;
	expect(fpgaCreateEventHandle(&event) == FPGA_OK &&
		       fpgaRegisterEvent(liar, FPGA_EVENT_INTERRUPT, event, 0) == FPGA_OK &&
		       fpgaGetOSObjectFromEventHandle(event, &fd) == FPGA_OK,
	       "an interrupt event of the liar");
	accelhost_queue queue = NULL;
	accelhost_program program = NULL;
	accelhost_kernel kernel = NULL;
	accelhost_event done = NULL;
	static const uint8_t image[16] = "not an xclbin";
	expect(accelhostQueueCreate(liar, &queue) == FPGA_OK &&
		       accelhostProgramCreate(liar, image, sizeof image, &program) == FPGA_OK &&
		       accelhostKernelCreate(program, "any", &kernel) == FPGA_OK &&
		       accelhostEnqueueLaunch(queue, kernel, NULL, 0, &done) == FPGA_OK,
	       "a launch on the liar");
	struct pollfd watched = {.fd = fd, .events = POLLIN};
	double began = now_ms();
	int ready = poll(&watched, 1, 60000);
	printf("the event's fd became readable after %.0f ms (poll %d)\n", now_ms() - began, ready);
	expect(ready == 1, "the event's fd is readable by the deadline");
	fpga_result waited = accelhostEventWait(done, -1);
	printf("accelhostEventWait returned %d (%s) after %.0f ms\n", waited, fpgaErrStr(waited),
	       now_ms() - began);
	expect(waited != FPGA_OK, "the wait is an error");
	char why[512] = "";
	accelhostGetLastError(why, sizeof why);
	printf("why: %s\n", why);
	accelhostEventRelease(done);
	accelhostKernelRelease(kernel);
	accelhostProgramRelease(program);
	accelhostQueueRelease(queue);
	fpgaUnregisterEvent(liar, FPGA_EVENT_INTERRUPT, event);
	fpgaDestroyEventHandle(&event);
}

static void stale(void)
{
	fpga_handle old = open_afu(NLB0_AFU_ID);
	expect(old && fpgaClose(old) == FPGA_OK, "NLB0 opened and closed");
	static fpga_handle made[2000];
	int landed = 0, count = 0;
	for (; count < 2000 && !landed; count++) {
		made[count] = open_afu(NLB0_AFU_ID);
		landed = made[count] == old;
	}
	printf("%d handles opened after it; one has its value: %s\n", count, landed ? "yes" : "no");
	expect(!landed, "no later handle has the closed handle's value");
	expect(fpgaClose(old) == FPGA_INVALID_PARAM, "closing the closed handle again is FPGA_INVALID_PARAM");
	uint64_t value = 0;
	expect(fpgaReadMMIO64(old, 0, CSR_SCRATCHPAD, &value) == FPGA_INVALID_PARAM,
	       "reading through it is FPGA_INVALID_PARAM");
	expect(scratchpad_round_trips(made[count - 1]), "the newest handle is untouched");
	for (int i = 0; i < count; i++)
		fpgaClose(made[i]);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s short|repeat|pending|stale\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	fpga_handle nlb0 = open_afu(NLB0_AFU_ID);
	fpga_handle liar = open_afu(CHAOS_AFU_ID);
	if (!nlb0 || !liar) {
		fprintf(stderr, "NLB0 or the lying accelerator is missing\n");
		return 2;
	}
	if (strcmp(mode, "short") == 0) {
		void *address = NULL;
		uint64_t wsid = 0;
		fpga_result prepared = fpgaPrepareBuffer(liar, 2 << 20, &address, &wsid, 0);
		printf("2 MiB from the liar: %s (%s)\n", fpgaErrStr(prepared), address ? "an address" : "no address");
		expect(prepared != FPGA_OK && !address, "the short buffer is an error, never an address");
	} else if (strcmp(mode, "repeat") == 0) {
		unsigned char *first = NULL, *second = NULL;
		uint64_t first_id = 0, second_id = 0;
		expect(fpgaPrepareBuffer(liar, 8192, (void **)&first, &first_id, 0) == FPGA_OK,
		       "the first buffer");
		if (first)
			memset(first, 0x6b, 8192);
		fpga_result again = fpgaPrepareBuffer(liar, 8192, (void **)&second, &second_id, 0);
		printf("the second buffer: %s\n", fpgaErrStr(again));
		expect(again != FPGA_OK, "a workspace id given twice is an error");
		int whole = first != NULL;
		for (int i = 0; first && i < 8192; i++)
			whole &= first[i] == 0x6b;
		if (first)
			first[8191] = 1;
		expect(whole, "the first buffer stays whole and writable");
	} else if (strcmp(mode, "pending") == 0) {
		pending(liar);
	} else if (strcmp(mode, "stale") == 0) {
		stale();
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	if (liar)
		fpgaClose(liar);
	expect(scratchpad_round_trips(nlb0), "then NLB0's scratchpad round-trips");
	fpgaClose(nlb0);
	printf("%d failed\n", failures);
	return failures;
}
