/* accelhost's OPAE-compatible C API: enumerations and flags (values as in OPAE). */
#ifndef __FPGA_TYPES_ENUM_H__
#define __FPGA_TYPES_ENUM_H__

/* The result of every call. */
typedef enum {
	FPGA_OK = 0,        /* success */
	FPGA_INVALID_PARAM, /* NULL, unknown, destroyed or wrong-type object; bad value */
	FPGA_BUSY,          /* resource in use */
	FPGA_EXCEPTION,     /* plugin fault, device error, internal error */
	FPGA_NOT_FOUND,     /* no such object, or property not set */
	FPGA_NO_MEMORY,     /* out of memory or DMA grant */
	FPGA_NOT_SUPPORTED, /* not implemented by the plugin, device or library */
	FPGA_NO_DRIVER,     /* the plugin serving the device is not running */
	FPGA_NO_DAEMON,     /* never returned by accelhost */
	FPGA_NO_ACCESS,     /* not allowed by the plugin's grants */
	FPGA_RECONF_ERROR   /* loading an image failed */
} fpga_result;

/* Kinds of resources. */
typedef enum {
	FPGA_DEVICE = 0, /* a whole card */
	FPGA_ACCELERATOR /* an accelerator applications open */
} fpga_objtype;

/* Whether an accelerator was held open at enumeration. */
typedef enum {
	FPGA_ACCELERATOR_ASSIGNED = 0,
	FPGA_ACCELERATOR_UNASSIGNED
} fpga_accelerator_state;

/* Events fpgaRegisterEvent can wait for. */
typedef enum {
	FPGA_EVENT_INTERRUPT = 0,
	FPGA_EVENT_ERROR,
	FPGA_EVENT_POWER_THERMAL
} fpga_event_type;

/* fpgaOpen flags. */
enum fpga_open_flags {
	FPGA_OPEN_SHARED = (1u << 0),
	/* A child AFU whose parent is open in this process (not supported: no child AFUs). */
	FPGA_OPEN_HAS_PARENT_AFU = (1u << 1)
};

/* fpgaPrepareBuffer flags. */
enum fpga_buffer_flags {
	FPGA_BUF_PREALLOCATED = (1u << 0), /* not supported by accelhost */
	FPGA_BUF_QUIET = (1u << 1),
	FPGA_BUF_READ_ONLY = (1u << 2)
};

/* fpgaReconfigureSlot flags. */
enum fpga_reconf_flags {
	FPGA_RECONF_FORCE = (1u << 0),
	FPGA_RECONF_SKIP_USRCLK = (1u << 1)
};

/* The "device type" property of OPAE's plugin design. */
typedef enum {
	FPGA_DEVICE_TYPE_OTHER = 0, /* see accelhostPropertiesGetDeviceTypeName */
	FPGA_DEVICE_TYPE_FPGA = 1
} fpga_device_type;

/* The OPAE plugin interface behind a device (fpgaPropertiesGetInterface). */
typedef enum {
	FPGA_IFC_DFL = 0,
	FPGA_IFC_VFIO,
	FPGA_IFC_SIM_DFL,
	FPGA_IFC_SIM_VFIO,
	FPGA_IFC_UIO
} fpga_interface;

/* Flags of the sysobject calls (sysobject.h). */
enum fpga_sysobject_flags {
	FPGA_OBJECT_SYNC = (1u << 0),
	FPGA_OBJECT_GLOB = (1u << 1),
	FPGA_OBJECT_RAW = (1u << 2),
	FPGA_OBJECT_RECURSE_ONE = (1u << 3),
	FPGA_OBJECT_RECURSE_ALL = (1u << 4)
};

/* What a sysobject is: a group of objects, or an attribute with a value. */
enum fpga_sysobject_type {
	FPGA_OBJECT_CONTAINER = (1u << 0),
	FPGA_OBJECT_ATTRIBUTE = (1u << 1)
};

/* Kinds of metrics (metrics.h). */
enum fpga_metric_type {
	FPGA_METRIC_TYPE_POWER,
	FPGA_METRIC_TYPE_THERMAL,
	FPGA_METRIC_TYPE_PERFORMANCE_CTR,
	FPGA_METRIC_TYPE_AFU,
	FPGA_METRIC_TYPE_UNKNOWN
};

/* How a metric's value is stored. */
enum fpga_metric_datatype {
	FPGA_METRIC_DATATYPE_INT,
	FPGA_METRIC_DATATYPE_FLOAT,
	FPGA_METRIC_DATATYPE_DOUBLE,
	FPGA_METRIC_DATATYPE_BOOL,
	FPGA_METRIC_DATATYPE_UNKNOWN
};

#endif /* __FPGA_TYPES_ENUM_H__ */
