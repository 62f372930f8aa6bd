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

#endif /* __FPGA_TYPES_H__ */
