/*
 * Calls the C API from C, through the installed headers: each function once with a bad
 * argument (NULL, forged, destroyed, wrong type), and the calls that need no device,
 * checking every result code. Built with -Wall -Wextra -Werror -pedantic by the tests.
 */
#include <opae/fpga.h>
#include <opae/accelhost.h>

#include <stdio.h>
#include <string.h>

#include "expect.h"

int main(void)
{
	void *forged = (void *)(uintptr_t)0xdeadbee0u;
	fpga_properties prop = NULL, copy = NULL;
	fpga_token token = NULL;
	fpga_handle handle = NULL;
	fpga_event_handle eh = NULL;
	uint32_t n = 0;
	uint64_t u64 = 0;
	uint32_t u32 = 0;
	uint16_t u16 = 0;
	uint8_t u8 = 0;
	fpga_guid guid;
	fpga_objtype objtype;
	char text[64];
	int fd = -1;

	memset(guid, 0xAB, sizeof(guid));
	EXPECT(fpgaInitialize(NULL), FPGA_OK);

	/* Properties. */
	EXPECT(fpgaGetProperties(NULL, &prop), FPGA_OK);
	EXPECT(fpgaPropertiesSetObjectType(prop, FPGA_ACCELERATOR), FPGA_OK);
	EXPECT(fpgaPropertiesGetObjectType(prop, &objtype), FPGA_OK);
	EXPECT(fpgaPropertiesSetGUID(prop, guid), FPGA_OK);
	EXPECT(fpgaPropertiesGetGUID(prop, &guid), FPGA_OK);
	EXPECT(fpgaPropertiesSetVendorID(prop, 0x8086), FPGA_OK);
	EXPECT(fpgaPropertiesGetVendorID(prop, &u16), FPGA_OK);
	EXPECT(fpgaPropertiesGetDeviceID(prop, &u16), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetDeviceID(NULL, 1), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetSegment(prop, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesSetSegment(forged, 1), FPGA_INVALID_PARAM);
	EXPECT(fpgaPropertiesGetBus(prop, &u8), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetBus(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesGetDevice(prop, &u8), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetDevice(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesGetFunction(prop, &u8), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetFunction(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesGetSocketID(prop, &u8), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetSocketID(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesSetNumMMIO(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesGetNumMMIO(prop, &u32), FPGA_OK);
	EXPECT(fpgaPropertiesSetNumInterrupts(prop, 1), FPGA_OK);
	EXPECT(fpgaPropertiesGetNumInterrupts(prop, &u32), FPGA_OK);
	EXPECT(fpgaPropertiesSetAcceleratorState(prop, FPGA_ACCELERATOR_ASSIGNED), FPGA_OK);
	{
		fpga_accelerator_state state;
		EXPECT(fpgaPropertiesGetAcceleratorState(prop, &state), FPGA_OK);
	}
	EXPECT(fpgaPropertiesSetHostname(prop, "localhost"), FPGA_OK);
	EXPECT(fpgaPropertiesGetHostname(prop, text, sizeof(text)), FPGA_OK);
	EXPECT(fpgaPropertiesSetDeviceType(prop, FPGA_DEVICE_TYPE_FPGA), FPGA_OK);
	{
		fpga_device_type type;
		EXPECT(fpgaPropertiesGetDeviceType(prop, &type), FPGA_OK);
	}
	EXPECT(accelhostPropertiesSetDeviceTypeName(prop, "fpga"), FPGA_OK);
	EXPECT(accelhostPropertiesGetDeviceTypeName(prop, text, sizeof(text)), FPGA_OK);
	EXPECT(fpgaPropertiesGetParent(prop, &token), FPGA_NOT_FOUND);
	EXPECT(fpgaPropertiesSetParent(prop, prop), FPGA_INVALID_PARAM);
	EXPECT(fpgaCloneProperties(prop, &copy), FPGA_OK);
	EXPECT(fpgaClearProperties(copy), FPGA_OK);
	EXPECT(fpgaDestroyProperties(&copy), FPGA_OK);
	EXPECT(fpgaDestroyProperties(&copy), FPGA_INVALID_PARAM);
	EXPECT(fpgaUpdateProperties(forged, prop), FPGA_INVALID_PARAM);

	/* Enumeration with that (unmatched: no bus address) filter, and tokens. */
	EXPECT(fpgaEnumerate(&prop, 1, NULL, 0, &n), FPGA_OK);
	if (n != 0) {
		fprintf(stderr, "expected no match, found %u\n", n);
		failures++;
	}
	EXPECT(fpgaEnumerate(NULL, 0, &token, 1, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaEnumerate(NULL, 0, &token, 1, &n), FPGA_OK);
	EXPECT(accelhostTokenGetId(token, text, sizeof(text)), FPGA_OK);
	{
		fpga_token clone = NULL;
		EXPECT(fpgaCloneToken(token, &clone), FPGA_OK);
		EXPECT(fpgaDestroyToken(&clone), FPGA_OK);
		EXPECT(fpgaDestroyToken(&clone), FPGA_INVALID_PARAM);
		EXPECT(fpgaCloneToken(prop, &clone), FPGA_INVALID_PARAM);
	}

	/* Handles: wrong types and forged values. */
	EXPECT(fpgaOpen(prop, &handle, 0), FPGA_INVALID_PARAM);
	EXPECT(fpgaOpen(token, NULL, 0), FPGA_INVALID_PARAM);
	EXPECT(fpgaClose(token), FPGA_INVALID_PARAM);
	EXPECT(fpgaReset(forged), FPGA_INVALID_PARAM);
	EXPECT(fpgaGetPropertiesFromHandle(NULL, &copy), FPGA_INVALID_PARAM);
	EXPECT(fpgaMapMMIO(token, 0, NULL), FPGA_INVALID_PARAM);
	EXPECT(fpgaUnmapMMIO(forged, 0), FPGA_INVALID_PARAM);
	EXPECT(fpgaReadMMIO64(forged, 0, 0, &u64), FPGA_INVALID_PARAM);
	EXPECT(fpgaWriteMMIO64(forged, 0, 0, 0), FPGA_INVALID_PARAM);
	EXPECT(fpgaReadMMIO32(forged, 0, 0, &u32), FPGA_INVALID_PARAM);
	EXPECT(fpgaWriteMMIO32(forged, 0, 0, 0), FPGA_INVALID_PARAM);
	{
		void *addr = NULL;
		EXPECT(fpgaPrepareBuffer(token, 4096, &addr, &u64, 0), FPGA_INVALID_PARAM);
	}
	EXPECT(fpgaReleaseBuffer(forged, 1), FPGA_INVALID_PARAM);
	EXPECT(fpgaGetIOAddress(forged, 1, &u64), FPGA_INVALID_PARAM);
	EXPECT(fpgaReconfigureSlot(forged, 0, (const uint8_t *)"x", 1, 0), FPGA_INVALID_PARAM);

	/* Events. */
	EXPECT(fpgaCreateEventHandle(&eh), FPGA_OK);
	EXPECT(fpgaGetOSObjectFromEventHandle(eh, &fd), FPGA_OK);
	EXPECT(fpgaRegisterEvent(forged, FPGA_EVENT_INTERRUPT, eh, 0), FPGA_INVALID_PARAM);
	EXPECT(fpgaUnregisterEvent(forged, FPGA_EVENT_INTERRUPT, eh), FPGA_INVALID_PARAM);
	EXPECT(fpgaDestroyEventHandle(&eh), FPGA_OK);
	EXPECT(fpgaDestroyEventHandle(&eh), FPGA_INVALID_PARAM);

	/* Extensions. */
	{
		accelhost_plugin_info infos[8];
		accelhost_memory mem = NULL;
		accelhost_event ev = NULL;
		accelhost_event_status status;
		accelhost_kernel_arg arg = { ACCELHOST_ARG_U32, 0, 1, NULL };
		EXPECT(accelhostGetPlugins(infos, 8, &n), FPGA_OK);
		EXPECT(accelhostMemAlloc(token, ACCELHOST_MEMORY_HOST, 64, &mem), FPGA_INVALID_PARAM);
		EXPECT(accelhostMemGetSize(forged, &u64), FPGA_INVALID_PARAM);
		EXPECT(accelhostMemWrite(forged, 0, text, 1), FPGA_INVALID_PARAM);
		EXPECT(accelhostMemRead(forged, 0, text, 1), FPGA_INVALID_PARAM);
		EXPECT(accelhostMemRetain(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostMemRelease(token), FPGA_INVALID_PARAM);
		EXPECT(accelhostProgramCreate(forged, NULL, 0, &mem), FPGA_INVALID_PARAM);
		EXPECT(accelhostProgramRetain(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostProgramRelease(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostKernelCreate(forged, "vadd", &mem), FPGA_INVALID_PARAM);
		EXPECT(accelhostKernelRetain(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostKernelRelease(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostQueueCreate(forged, &mem), FPGA_INVALID_PARAM);
		EXPECT(accelhostEnqueueMemcpy(forged, forged, 0, forged, 0, 1, &ev), FPGA_INVALID_PARAM);
		EXPECT(accelhostEnqueueLaunch(forged, forged, &arg, 1, &ev), FPGA_INVALID_PARAM);
		EXPECT(accelhostQueueFinish(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostQueueRetain(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostQueueRelease(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostEventWait(forged, 0), FPGA_INVALID_PARAM);
		EXPECT(accelhostEventGetStatus(forged, &status), FPGA_INVALID_PARAM);
		EXPECT(accelhostEventRetain(forged), FPGA_INVALID_PARAM);
		EXPECT(accelhostEventRelease(forged), FPGA_INVALID_PARAM);
		if (accelhostGetLastError(text, sizeof(text)) != 0 || text[0] == 0) {
			fprintf(stderr, "expected a last error message without an accelhost code\n");
			failures++;
		}
		EXPECT(accelhostLoadConfig(NULL), FPGA_INVALID_PARAM);
		EXPECT(accelhostLoadConfigJson("{ not json"), FPGA_INVALID_PARAM);
	}

	{
		/* Errors, sysobjects, metrics, user clocks and UMsgs: bad arguments are refused
		 * as OPAE refuses them; good ones answer (devices_check.c goes through each in
		 * depth), UMsgs FPGA_NOT_SUPPORTED. The first token is the card's device object. */
		fpga_handle open = NULL;
		fpga_properties accelerators = NULL;
		fpga_token accelerator = NULL;
		fpga_object object = NULL;
		struct fpga_error_info info;
		fpga_metric_info metric_info;
		fpga_metric metric;
		metric_threshold thresholds;
		uint64_t index = 0, high = 0, low = 0, *umsg = NULL;
		uint32_t count32 = 0;
		char metric_name[FPGA_METRIC_STR_SIZE] = "no such metric";
		char *names[1] = {metric_name};
		enum fpga_sysobject_type type;
		uint8_t bytes[8];
		uint64_t wide[8] = {0};

		EXPECT(fpgaReadError(NULL, 0, &u64), FPGA_INVALID_PARAM);
		EXPECT(fpgaReadError(token, 0, NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaReadError(token, 0, &u64), FPGA_OK);
		EXPECT(fpgaClearError(forged, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaClearError(token, 0), FPGA_OK);
		EXPECT(fpgaClearAllErrors(prop), FPGA_INVALID_PARAM);
		EXPECT(fpgaClearAllErrors(token), FPGA_OK);
		EXPECT(fpgaGetErrorInfo(token, 0, NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetErrorInfo(token, 0, &info), FPGA_OK);
		EXPECT(fpgaTokenGetObject(token, NULL, &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaTokenGetObject(token, "errors/errors", NULL, 0), FPGA_INVALID_PARAM);
		/* The FME's error registers: a glob names the first match in byte order. */
		EXPECT(fpgaTokenGetObject(token, "errors/*_errors", &object, FPGA_OBJECT_GLOB),
		       FPGA_OK);
		EXPECT(fpgaObjectGetName(object, text, sizeof(text)), FPGA_OK);
		if (strcmp(text, "catfatal_errors") != 0) {
			fprintf(stderr, "errors/*_errors resolved to %s, not catfatal_errors\n", text);
			failures++;
		}
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		EXPECT(fpgaTokenGetObject(token, "err?rs/[!c-f]*", &object, FPGA_OBJECT_GLOB), FPGA_OK);
		EXPECT(fpgaObjectGetName(object, text, sizeof(text)), FPGA_OK);
		if (strcmp(text, "inject_errors") != 0) {
			fprintf(stderr, "err?rs/[!c-f]* resolved to %s, not inject_errors\n", text);
			failures++;
		}
		EXPECT(fpgaDestroyObject(&object), FPGA_OK);
		EXPECT(fpgaTokenGetObject(token, "errors/*_errors", &object, 0), FPGA_NOT_FOUND);
		EXPECT(fpgaTokenGetObject(token, "nothing*/x", &object, FPGA_OBJECT_GLOB),
		       FPGA_NOT_FOUND);
		EXPECT(fpgaObjectGetObject(forged, "x", &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectGetObjectAt(NULL, 0, &object), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectGetType(forged, &type), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectGetSize(forged, &count32, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead(forged, bytes, 0, sizeof(bytes), 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectRead64(forged, &u64, FPGA_OBJECT_SYNC), FPGA_INVALID_PARAM);
		EXPECT(fpgaObjectWrite64(forged, 1, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaDestroyObject(&object), FPGA_INVALID_PARAM);
		EXPECT(fpgaHandleGetObject(forged, "x", &object, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetNumMetrics(forged, &u64), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetUserClock(token, &high, &low, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetNumUmsg(NULL, &u64), FPGA_INVALID_PARAM);

		/* The device object opens for its attributes; MMIO is its accelerator's. */
		EXPECT(fpgaOpen(token, &open, FPGA_OPEN_SHARED), FPGA_OK);
		EXPECT(fpgaReadMMIO64(open, 0, 0, &u64), FPGA_NOT_SUPPORTED);
		EXPECT(fpgaClose(open), FPGA_OK);
		open = NULL;
		EXPECT(fpgaGetProperties(NULL, &accelerators), FPGA_OK);
		EXPECT(fpgaPropertiesSetObjectType(accelerators, FPGA_ACCELERATOR), FPGA_OK);
		EXPECT(fpgaEnumerate(&accelerators, 1, &accelerator, 1, &n), FPGA_OK);
		EXPECT(fpgaDestroyProperties(&accelerators), FPGA_OK);
		if (n > 0 && fpgaOpen(accelerator, &open, FPGA_OPEN_SHARED) == FPGA_OK) {
			EXPECT(fpgaHandleGetObject(open, "afu_id", &object, 0), FPGA_OK);
			EXPECT(fpgaDestroyObject(&object), FPGA_OK);
			EXPECT(fpgaGetNumMetrics(open, NULL), FPGA_INVALID_PARAM);
			EXPECT(fpgaGetNumMetrics(open, &u64), FPGA_OK);
			u64 = 1;
			EXPECT(fpgaGetMetricsInfo(open, &metric_info, &u64), FPGA_OK);
			EXPECT(fpgaGetMetricsByIndex(open, &index, 1, &metric), FPGA_OK);
			EXPECT(fpgaGetMetricsByName(open, names, 1, NULL), FPGA_INVALID_PARAM);
			memcpy(metric_name, metric_info.metric_name, sizeof(metric_name));
			EXPECT(fpgaGetMetricsByName(open, names, 1, &metric), FPGA_OK);
			count32 = 0;
			EXPECT(fpgaGetMetricsThresholdInfo(open, &thresholds, &count32), FPGA_OK);
			EXPECT(fpgaGetUserClock(open, NULL, &low, 0), FPGA_INVALID_PARAM);
			EXPECT(fpgaGetUserClock(open, &high, &low, 0), FPGA_OK);
			EXPECT(fpgaSetUserClock(open, 400, 200, 0), FPGA_OK);
			EXPECT(fpgaGetNumUmsg(open, &u64), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaSetUmsgAttributes(open, 0), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaTriggerUmsg(open, 0), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaGetUmsgPtr(open, NULL), FPGA_INVALID_PARAM);
			EXPECT(fpgaGetUmsgPtr(open, &umsg), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaGetChildren(forged, 0, NULL, &count32), FPGA_INVALID_PARAM);
			EXPECT(fpgaGetChildren(open, 0, NULL, NULL), FPGA_INVALID_PARAM);
			count32 = 7;
			EXPECT(fpgaGetChildren(open, 0, NULL, &count32), FPGA_OK);
			if (count32 != 0) {
				fprintf(stderr, "fpgaGetChildren: %u children, not 0\n", count32);
				failures++;
			}
			EXPECT(fpgaWriteMMIO512(forged, 0, 0, wide), FPGA_INVALID_PARAM);
			EXPECT(fpgaWriteMMIO512(open, 0, 0, NULL), FPGA_INVALID_PARAM);
			EXPECT(fpgaWriteMMIO512(open, 0, 8, wide), FPGA_INVALID_PARAM);
			EXPECT(fpgaWriteMMIO512(open, 0, 64, wide), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaBindSVA(forged, &count32), FPGA_INVALID_PARAM);
			EXPECT(fpgaBindSVA(open, &count32), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaBindSVA(open, NULL), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaAssignPortToInterface(forged, 1, 0, 0), FPGA_INVALID_PARAM);
			EXPECT(fpgaAssignPortToInterface(open, 1, 0, 0), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaAssignToInterface(open, forged, 1, 0), FPGA_INVALID_PARAM);
			EXPECT(fpgaAssignToInterface(open, token, 1, 0), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaReleaseFromInterface(NULL, token), FPGA_INVALID_PARAM);
			EXPECT(fpgaReleaseFromInterface(open, token), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaClose(open), FPGA_OK);
			EXPECT(fpgaOpen(accelerator, &open, FPGA_OPEN_HAS_PARENT_AFU), FPGA_NOT_SUPPORTED);
			EXPECT(fpgaOpen(accelerator, &open, 1 << 5), FPGA_INVALID_PARAM);
			EXPECT(fpgaDestroyToken(&accelerator), FPGA_OK);
		} else {
			fprintf(stderr, "could not open the first accelerator shared\n");
			failures++;
		}
	}

	{
		/* version.h: the API level, as numbers and text, and the build. */
		fpga_version version;
		char small[5];
		char build[FPGA_BUILD_STR_MAX];
		char version_text[FPGA_VERSION_STR_MAX];
		char expected[16];
		EXPECT(fpgaGetOPAECVersion(NULL), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetOPAECVersion(&version), FPGA_OK);
		EXPECT(fpgaGetOPAECVersionString(NULL, sizeof(version_text)), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetOPAECVersionString(small, sizeof(small)), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetOPAECVersionString(version_text, sizeof(version_text)), FPGA_OK);
		snprintf(expected, sizeof(expected), "%u.%u.%u", version.major, version.minor,
			 version.patch);
		if (version.major != 2 || strcmp(version_text, expected) != 0) {
			fprintf(stderr, "version %s, expected 2.x as %s\n", version_text, expected);
			failures++;
		}
		EXPECT(fpgaGetOPAECBuildString(NULL, sizeof(build)), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetOPAECBuildString(build, 0), FPGA_INVALID_PARAM);
		EXPECT(fpgaGetOPAECBuildString(small, sizeof(small)), FPGA_OK);
		if (strlen(small) != sizeof(small) - 1) {
			fprintf(stderr, "a short build buffer holds a cut, terminated string\n");
			failures++;
		}
		EXPECT(fpgaGetOPAECBuildString(build, sizeof(build)), FPGA_OK);
		if (strncmp(build, "accelhost-", 10) != 0) {
			fprintf(stderr, "build string '%s'\n", build);
			failures++;
		}
	}

	EXPECT(fpgaDestroyToken(&token), FPGA_OK);
	EXPECT(fpgaDestroyProperties(&prop), FPGA_OK);
	EXPECT(fpgaFinalize(), FPGA_OK);
	printf("api_check: %s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
