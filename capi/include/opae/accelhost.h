/* accelhost extensions to the OPAE C API: configs, plugins, the last error, and the
 * offload-style API (memory, programs, kernels, in-order queues, events) with
 * retain/release as liboffload and Unified Runtime expose it. */
#ifndef __ACCELHOST_OPAE_EXT_H__
#define __ACCELHOST_OPAE_EXT_H__

#include <opae/fpga.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host and plugins ---- */

/* Replaces the running host with one on a config file / JSON text. Every object the
 * application holds is released first. */
fpga_result accelhostLoadConfig(const char *path);
fpga_result accelhostLoadConfigJson(const char *json);

typedef enum {
	ACCELHOST_PLUGIN_RUNNING = 0,
	ACCELHOST_PLUGIN_DISABLED,
	ACCELHOST_PLUGIN_LOAD_FAILED,
	ACCELHOST_PLUGIN_RESTARTING,
	ACCELHOST_PLUGIN_FAULTED,
	ACCELHOST_PLUGIN_STOPPED
} accelhost_plugin_state;

typedef struct {
	char name[64];
	char module[256];
	accelhost_plugin_state state;
	uint32_t restarts;
	uint64_t log_lines_dropped;
	char reason[256]; /* why it is not running; empty while it runs */
} accelhost_plugin_info;

/* *num_plugins is the number of plugins; up to max_plugins are stored in plugins. */
fpga_result accelhostGetPlugins(accelhost_plugin_info *plugins, uint32_t max_plugins,
				uint32_t *num_plugins);

/* The message of this thread's last failed call (cut to len, NUL-terminated); returns its
 * accelhost error code (accelhost::ErrorCode, 0 if none). buf may be NULL. */
int accelhostGetLastError(char *buf, size_t len);

/* fpgaPropertiesGetInterface of the devices OPAE has no interface for: CAPI AFUs and their
 * adapters (the cxl kernel interface), XRT cards (xocl), each real or emulated, and a plugin
 * that names another interface. */
#define ACCELHOST_IFC_CXL ((fpga_interface)0x100)
#define ACCELHOST_IFC_SIM_CXL ((fpga_interface)0x101)
#define ACCELHOST_IFC_XOCL ((fpga_interface)0x102)
#define ACCELHOST_IFC_SIM_XOCL ((fpga_interface)0x103)
#define ACCELHOST_IFC_OTHER ((fpga_interface)0x1ff)

/* "<plugin>/<name>", as the accelhost CLI names the device. */
fpga_result accelhostTokenGetId(fpga_token token, char *id, size_t len);

/* The device type as the plugin names it ("fpga", ...). */
fpga_result accelhostPropertiesGetDeviceTypeName(const fpga_properties prop, char *name,
						 size_t len);
fpga_result accelhostPropertiesSetDeviceTypeName(fpga_properties prop, const char *name);

/* ---- offload-style API (open the device with fpgaOpen first) ---- */

typedef void *accelhost_memory;
typedef void *accelhost_program;
typedef void *accelhost_kernel;
typedef void *accelhost_queue;
typedef void *accelhost_event;

typedef enum {
	ACCELHOST_MEMORY_HOST = 0,
	ACCELHOST_MEMORY_DEVICE,
	ACCELHOST_MEMORY_SHARED
} accelhost_memory_kind;

typedef enum {
	ACCELHOST_ARG_MEMORY = 0, /* memory, at byte offset value */
	ACCELHOST_ARG_U32,
	ACCELHOST_ARG_I32,
	ACCELHOST_ARG_U64
} accelhost_arg_kind;

typedef struct {
	accelhost_arg_kind kind;
	uint32_t reserved;
	uint64_t value;
	accelhost_memory memory;
} accelhost_kernel_arg;

typedef enum {
	ACCELHOST_EVENT_PENDING = 0,
	ACCELHOST_EVENT_COMPLETE,
	ACCELHOST_EVENT_FAILED
} accelhost_event_status;

/* Creating calls hand out one reference; Release drops it, Retain adds one. */
fpga_result accelhostMemAlloc(fpga_handle handle, accelhost_memory_kind kind, uint64_t size,
			      accelhost_memory *memory);
fpga_result accelhostMemGetSize(accelhost_memory memory, uint64_t *size);
fpga_result accelhostMemWrite(accelhost_memory memory, uint64_t offset, const void *data,
			      uint64_t len);
fpga_result accelhostMemRead(accelhost_memory memory, uint64_t offset, void *out,
			     uint64_t len);
fpga_result accelhostMemRetain(accelhost_memory memory);
fpga_result accelhostMemRelease(accelhost_memory memory);

/* image NULL and len 0: the built-in program of a fixed-function device (CAPI AFUs). */
fpga_result accelhostProgramCreate(fpga_handle handle, const uint8_t *image, size_t len,
				   accelhost_program *program);
fpga_result accelhostProgramRetain(accelhost_program program);
fpga_result accelhostProgramRelease(accelhost_program program);

fpga_result accelhostKernelCreate(accelhost_program program, const char *name,
				  accelhost_kernel *kernel);
fpga_result accelhostKernelRetain(accelhost_kernel kernel);
fpga_result accelhostKernelRelease(accelhost_kernel kernel);

fpga_result accelhostQueueCreate(fpga_handle handle, accelhost_queue *queue);
/* event may be NULL. */
fpga_result accelhostEnqueueMemcpy(accelhost_queue queue, accelhost_memory dst,
				   uint64_t dst_offset, accelhost_memory src,
				   uint64_t src_offset, uint64_t size, accelhost_event *event);
fpga_result accelhostEnqueueLaunch(accelhost_queue queue, accelhost_kernel kernel,
				   const accelhost_kernel_arg *args, uint32_t num_args,
				   accelhost_event *event);
fpga_result accelhostQueueFinish(accelhost_queue queue);
fpga_result accelhostQueueRetain(accelhost_queue queue);
fpga_result accelhostQueueRelease(accelhost_queue queue);

/* timeout_ms < 0 waits without limit. */
fpga_result accelhostEventWait(accelhost_event event, int64_t timeout_ms);
fpga_result accelhostEventGetStatus(accelhost_event event, accelhost_event_status *status);
fpga_result accelhostEventRetain(accelhost_event event);
fpga_result accelhostEventRelease(accelhost_event event);

#ifdef __cplusplus
}
#endif

#endif /* __ACCELHOST_OPAE_EXT_H__ */
