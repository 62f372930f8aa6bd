/* accelhost's OPAE-compatible C API: opaque object types. */
#ifndef __FPGA_TYPES_H__
#define __FPGA_TYPES_H__

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <opae/types_enum.h>

/* Opaque values: never dereference them. A destroyed or unknown value passed back is
 * refused with FPGA_INVALID_PARAM. */
typedef void *fpga_properties;
typedef void *fpga_token;
typedef void *fpga_handle;
typedef void *fpga_event_handle;

/* A 128-bit GUID, bytes in the order of its text form (as uuid_parse fills it). */
typedef uint8_t fpga_guid[16];

/* A version triple. */
typedef struct {
	uint8_t major;
	uint8_t minor;
	uint16_t patch;
} fpga_version;

/* The header OPAE's own plugins put first in their tokens. accelhost's tokens are opaque
 * registry values, never pointers to one: do not cast an fpga_token to it. Declared, with
 * fpga_is_parent_child, for code that builds such headers itself. */
typedef struct _fpga_token_header {
	uint64_t magic;
	uint16_t vendor_id;
	uint16_t device_id;
	uint16_t segment;
	uint8_t bus;
	uint8_t device;
	uint8_t function;
	fpga_interface interface;
	fpga_objtype objtype;
	uint64_t object_id;
	fpga_guid guid;
	uint16_t subsystem_vendor_id;
	uint16_t subsystem_device_id;
} fpga_token_header;

/* Whether the header at __parent_hdr is the device object of the accelerator at __child_hdr. */
#define fpga_is_parent_child(__parent_hdr, __child_hdr) \
	(((__parent_hdr)->objtype == FPGA_DEVICE) && \
	 ((__child_hdr)->objtype == FPGA_ACCELERATOR) && \
	 ((__parent_hdr)->segment == (__child_hdr)->segment) && \
	 ((__parent_hdr)->bus == (__child_hdr)->bus) && \
	 ((__parent_hdr)->device == (__child_hdr)->device))

/* A sysobject: a node of the device's attribute tree (sysobject.h). Opaque. */
typedef void *fpga_object;

/* An error register's name, and whether it can be cleared (error.h). */
#define FPGA_ERROR_NAME_MAX 64
struct fpga_error_info {
	char name[FPGA_ERROR_NAME_MAX];
	bool can_clear;
};

/* Metrics (metrics.h). */
#define FPGA_METRIC_STR_SIZE 256

typedef union {
	uint64_t ivalue;
	double dvalue;
	float fvalue;
	bool bvalue;
} metric_value;

typedef struct fpga_metric_info {
	uint64_t metric_num;
	fpga_guid metric_guid;
	char qualifier_name[FPGA_METRIC_STR_SIZE];
	char group_name[FPGA_METRIC_STR_SIZE];
	char metric_name[FPGA_METRIC_STR_SIZE];
	char metric_units[FPGA_METRIC_STR_SIZE];
	enum fpga_metric_datatype metric_datatype;
	enum fpga_metric_type metric_type;
} fpga_metric_info;

typedef struct fpga_metric {
	uint64_t metric_num;
	metric_value value;
	bool isvalid;
} fpga_metric;

typedef struct threshold {
	char threshold_name[FPGA_METRIC_STR_SIZE];
	uint32_t is_valid;
	double value;
} threshold;

typedef struct metric_threshold {
	char metric_name[FPGA_METRIC_STR_SIZE];
	threshold upper_nr_threshold;
	threshold upper_c_threshold;
	threshold upper_nc_threshold;
	threshold lower_nr_threshold;
	threshold lower_c_threshold;
	threshold lower_nc_threshold;
	threshold hysteresis;
} metric_threshold;

#endif /* __FPGA_TYPES_H__ */
