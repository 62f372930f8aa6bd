/*
 * The OPAE 2.x calls for cards that look real, from C through the installed headers, on the
 * embedded default (one emulated DFL card with NLB0): the device object (FME) as the parent
 * of its accelerator, its properties, the sysobject tree, error registers (raised by
 * misprogramming NLB0), metrics and the user clock, each with valid and invalid arguments
 * (NULL, wrong kind, destroyed object, buffer too small). Prints `fpgainfo`-style lines that
 * the tests compare with `accelhost info`. Built with only pkg-config's flags, under ASan.
 */
#include <opae/fpga.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "expect.h"

/* NLB0's registers and its status line (the SDK's devices.md has the full map). */
#define DSM_BASEL 0x110
#define SRC_ADDR 0x120
#define DST_ADDR 0x128
#define NUM_LINES 0x130
#define CTL 0x138
#define CFG 0x140
#define DSM_STATUS 0x40

/* NLB0's AFU id, d8424dc4-a4a3-c413-f89e-433683f9040b. */
static fpga_guid NLB0_AFU_ID = {0xd8, 0x42, 0x4d, 0xc4, 0xa4, 0xa3, 0xc4, 0x13,
				0xf8, 0x9e, 0x43, 0x36, 0x83, 0xf9, 0x04, 0x0b};

/* The one DFL device of `type` (for accelerators: the NLB0 port); the other families' cards
 * have device objects too, with other vendor ids. */
static fpga_token enumerate_one(fpga_objtype type)
{
	fpga_properties filter = NULL;
	fpga_token token = NULL;
	uint32_t matches = 0;
	EXPECT(fpgaGetProperties(NULL, &filter), FPGA_OK);
	EXPECT(fpgaPropertiesSetObjectType(filter, type), FPGA_OK);
	EXPECT(fpgaPropertiesSetVendorID(filter, 0x8086), FPGA_OK);
	if (type == FPGA_ACCELERATOR)
		EXPECT(fpgaPropertiesSetGUID(filter, NLB0_AFU_ID), FPGA_OK);
	EXPECT(fpgaEnumerate(&filter, 1, &token, 1, &matches), FPGA_OK);
	CHECK(matches == 1);
	EXPECT(fpgaDestroyProperties(&filter), FPGA_OK);
	return token;
}

static void print_errors(const char *what, fpga_token token)
{
	fpga_properties prop = NULL;
	uint32_t count = 0, i;
	EXPECT(fpgaGetProperties(token, &prop), FPGA_OK);
	EXPECT(fpgaPropertiesGetNumErrors(prop, &count), FPGA_OK);
	for (i = 0; i < count; i++) {
		struct fpga_error_info info;
		uint64_t value = 0;
		EXPECT(fpgaGetErrorInfo(token, i, &info), FPGA_OK);
		EXPECT(fpgaReadError(token, i, &value), FPGA_OK);
		printf("%s error %s = 0x%llx\n", what, info.name, (unsigned long long)value);
	}
	EXPECT(fpgaDestroyProperties(&prop), FPGA_OK);
}

int main(void)
{
	void *forged = (void *)(uintptr_t)0xdeadbee0u;
	fpga_properties prop = NULL, filter = NULL;
	fpga_token fme = NULL, port = NULL, parent = NULL, children[4];
	fpga_handle handle = NULL;
	fpga_objtype type;
	fpga_version version;
	fpga_interface interface;
	fpga_guid guid;
	uint64_t u64 = 0, wsid = 0, iova = 0;
	uint32_t u32 = 0, matches = 0;
	uint16_t u16 = 0;
	uint8_t bus = 0, device = 0, function = 0;
	uint16_t segment = 0;
	char text[128];

	EXPECT(fpgaInitialize(NULL), FPGA_OK);

	/* Every emulated card (DFL, CAPI, XRT) has a device object, and every accelerator
	 * (five) has one of them as its parent (run with ACCELHOST_OPAE_FAMILIES=all: OPAE
	 * programs see the DFL card's only by default). */
	{
		fpga_properties filter = NULL, accel_prop = NULL;
		fpga_token accelerators[8] = {NULL}, parent = NULL;
		uint32_t i;
		EXPECT(fpgaGetProperties(NULL, &filter), FPGA_OK);
		EXPECT(fpgaPropertiesSetObjectType(filter, FPGA_DEVICE), FPGA_OK);
		EXPECT(fpgaEnumerate(&filter, 1, NULL, 0, &matches), FPGA_OK);
		CHECK(matches == 3);
		EXPECT(fpgaPropertiesSetObjectType(filter, FPGA_ACCELERATOR), FPGA_OK);
		EXPECT(fpgaEnumerate(&filter, 1, accelerators, 8, &matches), FPGA_OK);
		CHECK(matches == 5);
		for (i = 0; i < matches && i < 8; i++) {
			EXPECT(fpgaGetProperties(accelerators[i], &accel_prop), FPGA_OK);
			EXPECT(fpgaPropertiesGetParent(accel_prop, &parent), FPGA_OK);
			EXPECT(fpgaDestroyToken(&parent), FPGA_OK);
			EXPECT(fpgaDestroyProperties(&accel_prop), FPGA_OK);
			EXPECT(fpgaDestroyToken(&accelerators[i]), FPGA_OK);
		}
		EXPECT(fpgaDestroyProperties(&filter), FPGA_OK);
	}

	/* The DFL device object and its accelerator. */
	fme = enumerate_one(FPGA_DEVICE);
	port = enumerate_one(FPGA_ACCELERATOR);
	EXPECT(fpgaGetProperties(fme, &prop), FPGA_OK);
	EXPECT(fpgaPropertiesGetObjectType(prop, &type), FPGA_OK);
	CHECK(type == FPGA_DEVICE);
	EXPECT(fpgaPropertiesGetSegment(prop, &segment), FPGA_OK);
	EXPECT(fpgaPropertiesGetBus(prop, &bus), FPGA_OK);
	EXPECT(fpgaPropertiesGetDevice(prop, &device), FPGA_OK);
	EXPECT(fpgaPropertiesGetFunction(prop, &function), FPGA_OK);
	printf("device pcie %04x:%02x:%02x.%x\n", segment, bus, device, function);
	EXPECT(fpgaPropertiesGetNumSlots(prop, &u32), FPGA_OK);
	printf("device slots %u\n", u32);
	EXPECT(fpgaPropertiesGetBBSID(prop, &u64), FPGA_OK);
	printf("device bbs id 0x%llx\n", (unsigned long long)u64);
	EXPECT(fpgaPropertiesGetBBSVersion(prop, &version), FPGA_OK);
	printf("device bbs version %u.%u.%u\n", version.major, version.minor, version.patch);
	EXPECT(fpgaPropertiesGetInterface(prop, &interface), FPGA_OK);
	CHECK(interface == FPGA_IFC_SIM_DFL);
	EXPECT(fpgaPropertiesGetSubsystemVendorID(prop, &u16), FPGA_OK);
	printf("device subsystem vendor 0x%04x\n", u16);
	EXPECT(fpgaPropertiesGetSubsystemDeviceID(prop, &u16), FPGA_OK);
	printf("device subsystem device 0x%04x\n", u16);
	EXPECT(fpgaPropertiesGetObjectID(prop, &u64), FPGA_OK);
	CHECK(u64 != 0);
	EXPECT(fpgaPropertiesGetNumErrors(prop, &u32), FPGA_OK);
	printf("device errors %u\n", u32);
	EXPECT(fpgaPropertiesGetParent(prop, &parent), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesGetNumMMIO(prop, &u32), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetModel(prop, text), FPGA_NOT_SUPPORTED);
	EXPECT(fpgaPropertiesGetLocalMemorySize(prop, &u64), FPGA_NOT_SUPPORTED);
	EXPECT(fpgaPropertiesGetCapabilities(prop, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaDestroyProperties(&prop), FPGA_OK);

	EXPECT(fpgaGetProperties(port, &prop), FPGA_OK);
	EXPECT(fpgaPropertiesGetNumSlots(prop, &u32), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetBBSID(prop, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetParent(prop, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetParent(prop, &parent), FPGA_OK);
	EXPECT(fpgaPropertiesGetBus(prop, &bus), FPGA_OK);
	EXPECT(fpgaPropertiesGetSubsystemDeviceID(prop, &u16), FPGA_OK);
	EXPECT(fpgaPropertiesGetGUID(prop, &guid), FPGA_OK);
	EXPECT(fpgaDestroyProperties(&prop), FPGA_OK);
	EXPECT(fpgaGetProperties(parent, &prop), FPGA_OK);
	EXPECT(fpgaPropertiesGetObjectType(prop, &type), FPGA_OK);
	CHECK(type == FPGA_DEVICE);
	EXPECT(fpgaDestroyProperties(&prop), FPGA_OK);
	printf("accelerator parent is the device\n");

	/* Enumeration by parent, and by bus. */
	EXPECT(fpgaGetProperties(NULL, &filter), FPGA_OK);
	EXPECT(fpgaPropertiesSetParent(filter, parent), FPGA_OK);
	EXPECT(fpgaEnumerate(&filter, 1, children, 4, &matches), FPGA_OK);
	CHECK(matches == 1);
	if (matches >= 1)
		EXPECT(fpgaDestroyToken(&children[0]), FPGA_OK);
	EXPECT(fpgaClearProperties(filter), FPGA_OK);
	EXPECT(fpgaPropertiesSetBus(filter, bus), FPGA_OK);
	EXPECT(fpgaEnumerate(&filter, 1, NULL, 0, &matches), FPGA_OK);
	CHECK(matches == 2);
	/* The emulated cards count buses up from the DFL card's: none is below it. */
	EXPECT(fpgaPropertiesSetBus(filter, (uint8_t)(bus - 1)), FPGA_OK);
	EXPECT(fpgaEnumerate(&filter, 1, NULL, 0, &matches), FPGA_OK);
	CHECK(matches == 0);
	EXPECT(fpgaDestroyProperties(&filter), FPGA_OK);
	EXPECT(fpgaDestroyToken(&parent), FPGA_OK);

	/* Sysobjects. */
	{
		fpga_object errors = NULL, object = NULL, stale = NULL;
		enum fpga_sysobject_type otype;
		uint8_t bytes[64];
		uint32_t size = 0;
		char name[16];
		size_t i;

		EXPECT(fpgaTokenGetObject(port, "errors", &errors, 0), FPGA_OK);
		EXPECT(fpgaObjectGetType(errors, &otype), FPGA_OK);
		CHECK(otype == FPGA_OBJECT_CONTAINER);
		EXPECT(fpgaObjectGetSize(errors, &size, 0), FPGA_OK);
		CHECK(size == 3);
		for (i = 0; i < size; i++) {
			EXPECT(fpgaObjectGetObjectAt(errors, i, &object), FPGA_OK);
			EXPECT(fpgaObjectGetName(object, name, sizeof(name)), FPGA_OK);
			EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		}
		EXPECT(fpgaObjectGetObjectAt(errors, size, &object), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectGetObject(errors, "errors", &object, 0), FPGA_OK);
		EXPECT(fpgaObjectGetType(object, &otype), FPGA_OK);
		CHECK(otype == FPGA_OBJECT_ATTRIBUTE);
		EXPECT(fpgaObjectGetName(object, name, sizeof(name)), FPGA_OK);
		CHECK(strcmp(name, "errors") == 0);
		EXPECT(fpgaObjectGetName(object, NULL, sizeof(name)), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectGetObject(object, "x", &stale, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead64(errors, &u64, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead(errors, bytes, 0, 1, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		EXPECT(fpgaDestroyObject(&errors), FPGA_OK);

		EXPECT(fpgaTokenGetObject(port, "afu_id", &object, 0), FPGA_OK);
		EXPECT(fpgaObjectGetSize(object, &size, FPGA_OBJECT_SYNC), FPGA_OK);
		CHECK(size == 32);
		EXPECT(fpgaObjectRead(object, bytes, 0, size, 0), FPGA_OK);
		CHECK(memcmp(bytes, "d8424dc4a4a3c413f89e433683f9040b", 32) == 0);
		EXPECT(fpgaObjectRead(object, bytes, 30, 2, 0), FPGA_OK);
		EXPECT(fpgaObjectRead(object, bytes, 30, 3, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead(object, bytes, (size_t)-1, 2, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead(object, NULL, 0, 1, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead64(object, &u64, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectWrite64(object, 1, 0), FPGA_NO_ACCESS);
		EXPECT(fpgaObjectGetName(object, name, 1), FPGA_OK);
		CHECK(name[0] == 0);
		stale = object;
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		CHECK(object == NULL);
		EXPECT(fpgaObjectGetSize(stale, &size, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaDestroyObject(&stale), FPGA_INVALID_PARAM);

		EXPECT(fpgaTokenGetObject(port, "nope", &object, 0), FPGA_NOT_FOUND);
		EXPECT(fpgaTokenGetObject(port, "../fme", &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaTokenGetObject(port, "", &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaTokenGetObject(port, "fme/ports_num", &object, 0), FPGA_NOT_FOUND);
		EXPECT(fpgaTokenGetObject(forged, "afu_id", &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaTokenGetObject(fme, "ports_num", &object, 0), FPGA_OK);
		EXPECT(fpgaObjectRead64(object, &u64, 0), FPGA_OK);
		CHECK(u64 == 1);
		EXPECT(fpgaTokenGetObject((fpga_token)object, "afu_id", &stale, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead64((fpga_object)fme, &u64, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
	}

	/* Errors: misprogram NLB0 (source and destination not mapped), which raises a port
	 * error; read, describe and clear it. */
	print_errors("accelerator", port);
	EXPECT(fpgaOpen(port, &handle, 0), FPGA_OK);
	{
		volatile uint64_t *dsm = NULL;
		struct timespec pause = {0, 1000000};
		int waited;
		fpga_object object = NULL;

		EXPECT(fpgaHandleGetObject(handle, "errors/errors", &object, 0), FPGA_OK);
		EXPECT(fpgaObjectRead64(object, &u64, 0), FPGA_OK);
		CHECK(u64 == 0);
		EXPECT(fpgaPrepareBuffer(handle, 4096, (void **)&dsm, &wsid, 0), FPGA_OK);
		EXPECT(fpgaGetIOAddress(handle, wsid, &iova), FPGA_OK);
		EXPECT(fpgaWriteMMIO64(handle, 0, CTL, 0), FPGA_OK);
		EXPECT(fpgaWriteMMIO64(handle, 0, CTL, 1), FPGA_OK);
		EXPECT(fpgaWriteMMIO64(handle, 0, DSM_BASEL, iova), FPGA_OK);
		EXPECT(fpgaWriteMMIO64(handle, 0, SRC_ADDR, 0x7000000000ull >> 6), FPGA_OK);
		EXPECT(fpgaWriteMMIO64(handle, 0, DST_ADDR, 0x7000100000ull >> 6), FPGA_OK);
		EXPECT(fpgaWriteMMIO32(handle, 0, NUM_LINES, 1), FPGA_OK);
		EXPECT(fpgaWriteMMIO32(handle, 0, CFG, 0), FPGA_OK);
		EXPECT(fpgaWriteMMIO32(handle, 0, CTL, 3), FPGA_OK);
		for (waited = 0; waited < 5000 && !(dsm[DSM_STATUS / 8] & 1); waited++)
			nanosleep(&pause, NULL);
		CHECK(dsm[DSM_STATUS / 8] & 1);
		EXPECT(fpgaObjectRead64(object, &u64, FPGA_OBJECT_SYNC), FPGA_OK);
		CHECK(u64 != 0);
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		EXPECT(fpgaReleaseBuffer(handle, wsid), FPGA_OK);
	}
	print_errors("accelerator", port);
	{
		struct fpga_error_info info;
		EXPECT(fpgaGetErrorInfo(port, 0, &info), FPGA_OK);
		CHECK(strcmp(info.name, "errors") == 0 && info.can_clear);
		EXPECT(fpgaGetErrorInfo(port, 1, &info), FPGA_OK);
		CHECK(!info.can_clear);
		EXPECT(fpgaClearError(port, 1), FPGA_NOT_SUPPORTED);
		EXPECT(fpgaGetErrorInfo(port, 99, &info), FPGA_NOT_FOUND);
		EXPECT(fpgaReadError(port, 99, &u64), FPGA_NOT_FOUND);
		EXPECT(fpgaReadError(port, 0, NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaReadError((fpga_token)handle, 0, &u64), FPGA_INVALID_PARAM);
		EXPECT(fpgaClearError(port, 0), FPGA_OK);
		EXPECT(fpgaReadError(port, 0, &u64), FPGA_OK);
		CHECK(u64 == 0);
		EXPECT(fpgaClearAllErrors(port), FPGA_OK);
		EXPECT(fpgaClearAllErrors(NULL), FPGA_INVALID_PARAM);
	}
	print_errors("device", fme);

	/* Metrics of the card, through the accelerator's handle. */
	{
		fpga_metric_info info[4];
		fpga_metric metric[2];
		metric_threshold thresholds[4];
		uint64_t count = 0, index[2] = {0, 1}, bad = 99, i;
		uint32_t nthresholds = 0;
		char name0[FPGA_METRIC_STR_SIZE];
		char *names[1] = {name0};

		EXPECT(fpgaGetNumMetrics(handle, &count), FPGA_OK);
		CHECK(count == 2);
		EXPECT(fpgaGetNumMetrics(handle, NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetNumMetrics(forged, &count), FPGA_INVALID_PARAM);
		count = 4;
		EXPECT(fpgaGetMetricsInfo(handle, info, &count), FPGA_OK);
		CHECK(count == 2);
		EXPECT(fpgaGetMetricsByIndex(handle, index, 2, metric), FPGA_OK);
		for (i = 0; i < count; i++)
			printf("metric %s:%s = %.2f %s\n", info[i].group_name, info[i].metric_name,
			       metric[i].value.dvalue, info[i].metric_units);
		CHECK(metric[0].isvalid && metric[0].value.dvalue > 10.0);
		EXPECT(fpgaGetMetricsByIndex(handle, &bad, 1, metric), FPGA_NOT_FOUND);
		EXPECT(fpgaGetMetricsByIndex(handle, NULL, 1, metric), FPGA_INVALID_PARAM);
		snprintf(name0, sizeof(name0), "%s", info[1].metric_name);
		EXPECT(fpgaGetMetricsByName(handle, names, 1, metric), FPGA_OK);
		CHECK(metric[0].metric_num == 1);
		snprintf(name0, sizeof(name0), "no such sensor");
		EXPECT(fpgaGetMetricsByName(handle, names, 1, metric), FPGA_NOT_FOUND);
		EXPECT(fpgaGetMetricsByName(handle, names, 1, NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetMetricsThresholdInfo(handle, NULL, &nthresholds), FPGA_OK);
		CHECK(nthresholds == 2);
		EXPECT(fpgaGetMetricsThresholdInfo(handle, thresholds, &nthresholds), FPGA_OK);
		CHECK(thresholds[0].upper_c_threshold.is_valid == 1);
		CHECK(thresholds[0].upper_c_threshold.value == 100.0);
		EXPECT(fpgaGetMetricsThresholdInfo(handle, thresholds, NULL), FPGA_INVALID_PARAM);
	}

	/* The user clock. */
	{
		uint64_t high = 0, low = 0;
		EXPECT(fpgaGetUserClock(handle, &high, &low, 0), FPGA_OK);
		printf("user clock %llu/%llu MHz\n", (unsigned long long)high, (unsigned long long)low);
		EXPECT(fpgaSetUserClock(handle, 312, 156, 0), FPGA_OK);
		EXPECT(fpgaGetUserClock(handle, &high, &low, 0), FPGA_OK);
		CHECK(high == 312 && low == 156);
		EXPECT(fpgaSetUserClock(handle, 312, 100, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaSetUserClock(handle, 5000, 0, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaSetUserClock(handle, 0, 0, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetUserClock(handle, NULL, &low, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetUserClock(port, &high, &low, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaSetUserClock(handle, 400, 200, 0), FPGA_OK);
	}
	EXPECT(fpgaClose(handle), FPGA_OK);

	EXPECT(fpgaDestroyToken(&port), FPGA_OK);
	EXPECT(fpgaDestroyToken(&fme), FPGA_OK);
	EXPECT(fpgaFinalize(), FPGA_OK);
	printf("devices_check: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
