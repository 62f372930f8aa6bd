/*
 * hello_fpga on accelhost, with OPAE calls only: find the NLB0 native-loopback
 * accelerator by its AFU id, open it, prepare a DSM, a source and a destination
 * buffer, program the NLB0 registers, poll the DSM for completion, check the copy,
 * and release everything.
 *
 * Build (after capi/install.sh PREFIX):
 *   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
 *   cc hello_fpga.c $(pkg-config --cflags --libs opae) -o hello_fpga
 *   LD_LIBRARY_PATH=PREFIX/lib ./hello_fpga [bytes]
 *
 * With no config file around, accelhost starts on its embedded default, which has an
 * emulated DFL port carrying NLB0.
 */
#include <opae/fpga.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* NLB0's AFU id. */
#define NLB0_AFU_ID "D8424DC4-A4A3-C413-F89E-433683F9040B"

/* NLB0 registers (byte offsets in MMIO region 0). */
#define CSR_AFU_ID_L   0x008
#define CSR_AFU_ID_H   0x010
#define CSR_DSM_BASEL  0x110
#define CSR_SRC_ADDR   0x120
#define CSR_DST_ADDR   0x128
#define CSR_NUM_LINES  0x130
#define CSR_CTL        0x138
#define CSR_CFG        0x140

#define CTL_RESET_N 0x1
#define CTL_START   0x2
#define CTL_STOP    0x4
#define CFG_HELLO_FPGA 0x42000

#define DSM_SIZE 4096
#define DSM_STATUS 0x40
#define CACHE_LINE 64

#define CHECK(call, what)                                                      \
	do {                                                                   \
		fpga_result res_ = (call);                                     \
		if (res_ != FPGA_OK) {                                         \
			fprintf(stderr, "hello_fpga: %s failed: %s\n", what,   \
				fpgaErrStr(res_));                             \
			goto out;                                              \
		}                                                              \
	} while (0)

/* Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into 16 bytes. */
static int parse_guid(const char *text, fpga_guid guid)
{
	int n = 0;
	for (const char *p = text; *p && n < 32; p++) {
		int v;
		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
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

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	uint64_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : (1u << 20);
	fpga_properties filter = NULL;
	fpga_token token = NULL;
	fpga_handle handle = NULL;
	uint32_t matches = 0;
	fpga_guid guid;
	volatile uint8_t *dsm = NULL;
	uint8_t *src = NULL, *dst = NULL;
	uint64_t dsm_wsid = 0, src_wsid = 0, dst_wsid = 0;
	uint64_t dsm_iova = 0, src_iova = 0, dst_iova = 0;
	int status = 1;

	if (bytes == 0 || bytes % CACHE_LINE != 0 || bytes / CACHE_LINE > 0xFFFFF) {
		fprintf(stderr, "hello_fpga: bytes must be a multiple of 64, at most 64 MiB - 64\n");
		return 2;
	}
	if (parse_guid(NLB0_AFU_ID, guid) != 0)
		return 2;

	/* Find the NLB0 accelerator. */
	CHECK(fpgaGetProperties(NULL, &filter), "fpgaGetProperties");
	CHECK(fpgaPropertiesSetObjectType(filter, FPGA_ACCELERATOR), "setting the object type");
	CHECK(fpgaPropertiesSetGUID(filter, guid), "setting the GUID");
	CHECK(fpgaEnumerate(&filter, 1, &token, 1, &matches), "fpgaEnumerate");
	if (matches < 1) {
		fprintf(stderr, "hello_fpga: no NLB0 accelerator found\n");
		goto out;
	}

	CHECK(fpgaOpen(token, &handle, 0), "fpgaOpen");
	CHECK(fpgaMapMMIO(handle, 0, NULL), "fpgaMapMMIO");

	uint64_t id_l = 0, id_h = 0;
	CHECK(fpgaReadMMIO64(handle, 0, CSR_AFU_ID_L, &id_l), "reading AFU_ID_L");
	CHECK(fpgaReadMMIO64(handle, 0, CSR_AFU_ID_H, &id_h), "reading AFU_ID_H");
	printf("hello_fpga: opened NLB0, AFU id %016llx%016llx\n", (unsigned long long)id_h,
	       (unsigned long long)id_l);

	/* The DSM, the source and the destination (each pointer stays NULL until prepared). */
	CHECK(fpgaPrepareBuffer(handle, DSM_SIZE, (void **)&dsm, &dsm_wsid, 0), "preparing the DSM");
	CHECK(fpgaPrepareBuffer(handle, bytes, (void **)&src, &src_wsid, 0), "preparing the source");
	CHECK(fpgaPrepareBuffer(handle, bytes, (void **)&dst, &dst_wsid, 0), "preparing the destination");
	CHECK(fpgaGetIOAddress(handle, dsm_wsid, &dsm_iova), "DSM IO address");
	CHECK(fpgaGetIOAddress(handle, src_wsid, &src_iova), "source IO address");
	CHECK(fpgaGetIOAddress(handle, dst_wsid, &dst_iova), "destination IO address");

	/* hello_fpga's pattern: 0xAF, with the last word of each line its number + 1. */
	memset(src, 0xAF, bytes);
	for (uint64_t line = 0; line < bytes / CACHE_LINE; line++) {
		uint32_t tag = (uint32_t)(line + 1);
		memcpy(src + line * CACHE_LINE + 60, &tag, sizeof(tag));
	}
	memset(dst, 0xBE, bytes);
	memset((void *)dsm, 0, DSM_SIZE);

	CHECK(fpgaReset(handle), "fpgaReset");

	/* Program NLB0: DSM, reset cycle, addresses in cache lines, size, mode, start. */
	CHECK(fpgaWriteMMIO64(handle, 0, CSR_DSM_BASEL, dsm_iova), "writing DSM_BASEL");
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_CTL, 0), "writing CTL 0");
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_CTL, CTL_RESET_N), "writing CTL 1");
	CHECK(fpgaWriteMMIO64(handle, 0, CSR_SRC_ADDR, src_iova / CACHE_LINE), "writing SRC_ADDR");
	CHECK(fpgaWriteMMIO64(handle, 0, CSR_DST_ADDR, dst_iova / CACHE_LINE), "writing DST_ADDR");
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_NUM_LINES, (uint32_t)(bytes / CACHE_LINE)),
	      "writing NUM_LINES");
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_CFG, CFG_HELLO_FPGA), "writing CFG");
	double started = now_seconds();
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_CTL, CTL_RESET_N | CTL_START), "writing CTL 3");

	/* Poll the DSM's status word for the completion bit, for up to 30 s. */
	const volatile uint32_t *done = (const volatile uint32_t *)(dsm + DSM_STATUS);
	while ((__atomic_load_n(done, __ATOMIC_ACQUIRE) & 1) == 0) {
		if (now_seconds() - started > 30.0) {
			fprintf(stderr, "hello_fpga: NLB0 did not complete within 30 s\n");
			goto out;
		}
		struct timespec pause = { 0, 10000 };
		nanosleep(&pause, NULL);
	}
	double elapsed = now_seconds() - started;
	CHECK(fpgaWriteMMIO32(handle, 0, CSR_CTL, CTL_RESET_N | CTL_START | CTL_STOP),
	      "writing CTL 7");

	if (memcmp(src, dst, bytes) != 0) {
		uint64_t i = 0;
		while (i < bytes && src[i] == dst[i])
			i++;
		fprintf(stderr, "hello_fpga: the copy differs at byte %llu\n", (unsigned long long)i);
		goto out;
	}
	printf("hello_fpga: verified %llu bytes in %.3f ms\n", (unsigned long long)bytes,
	       elapsed * 1e3);
	status = 0;

out:
	if (dst && fpgaReleaseBuffer(handle, dst_wsid) != FPGA_OK)
		status = 1;
	if (src && fpgaReleaseBuffer(handle, src_wsid) != FPGA_OK)
		status = 1;
	if (dsm && fpgaReleaseBuffer(handle, dsm_wsid) != FPGA_OK)
		status = 1;
	if (handle) {
		fpgaUnmapMMIO(handle, 0);
		if (fpgaClose(handle) != FPGA_OK)
			status = 1;
	}
	if (token && fpgaDestroyToken(&token) != FPGA_OK)
		status = 1;
	if (filter && fpgaDestroyProperties(&filter) != FPGA_OK)
		status = 1;
	if (fpgaFinalize() != FPGA_OK)
		status = 1;
	printf("hello_fpga: %s\n", status == 0 ? "PASS" : "FAIL");
	return status;
}
