/* accelhost's OPAE-compatible C API: properties of resources, and enumeration filters. */
#ifndef __FPGA_PROPERTIES_H__
#define __FPGA_PROPERTIES_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A new properties object: the token's properties, or empty (a filter) for a NULL token. */
fpga_result fpgaGetProperties(fpga_token token, fpga_properties *prop);
fpga_result fpgaGetPropertiesFromHandle(fpga_handle handle, fpga_properties *prop);
/* Overwrites prop with the token's current properties. */
fpga_result fpgaUpdateProperties(fpga_token token, fpga_properties prop);
fpga_result fpgaClearProperties(fpga_properties prop);
fpga_result fpgaCloneProperties(fpga_properties src, fpga_properties *dst);
/* Destroys *prop and sets it to NULL. */
fpga_result fpgaDestroyProperties(fpga_properties *prop);

/* Getters return FPGA_NOT_FOUND for a field that is not set. */
fpga_result fpgaPropertiesGetParent(const fpga_properties prop, fpga_token *parent);
fpga_result fpgaPropertiesSetParent(fpga_properties prop, fpga_token parent);
fpga_result fpgaPropertiesGetObjectType(const fpga_properties prop, fpga_objtype *objtype);
fpga_result fpgaPropertiesSetObjectType(fpga_properties prop, fpga_objtype objtype);
fpga_result fpgaPropertiesGetSegment(const fpga_properties prop, uint16_t *segment);
fpga_result fpgaPropertiesSetSegment(fpga_properties prop, uint16_t segment);
fpga_result fpgaPropertiesGetBus(const fpga_properties prop, uint8_t *bus);
fpga_result fpgaPropertiesSetBus(fpga_properties prop, uint8_t bus);
fpga_result fpgaPropertiesGetDevice(const fpga_properties prop, uint8_t *device);
fpga_result fpgaPropertiesSetDevice(fpga_properties prop, uint8_t device);
fpga_result fpgaPropertiesGetFunction(const fpga_properties prop, uint8_t *function);
fpga_result fpgaPropertiesSetFunction(fpga_properties prop, uint8_t function);
fpga_result fpgaPropertiesGetSocketID(const fpga_properties prop, uint8_t *socket_id);
fpga_result fpgaPropertiesSetSocketID(fpga_properties prop, uint8_t socket_id);
fpga_result fpgaPropertiesGetDeviceID(const fpga_properties prop, uint16_t *device_id);
fpga_result fpgaPropertiesSetDeviceID(fpga_properties prop, uint16_t device_id);
fpga_result fpgaPropertiesGetVendorID(const fpga_properties prop, uint16_t *vendor_id);
fpga_result fpgaPropertiesSetVendorID(fpga_properties prop, uint16_t vendor_id);
fpga_result fpgaPropertiesGetGUID(const fpga_properties prop, fpga_guid *guid);
fpga_result fpgaPropertiesSetGUID(fpga_properties prop, fpga_guid guid);
/* Accelerator properties: FPGA_INVALID_PARAM when the object type is FPGA_DEVICE. */
fpga_result fpgaPropertiesGetNumMMIO(const fpga_properties prop, uint32_t *mmio_spaces);
fpga_result fpgaPropertiesSetNumMMIO(fpga_properties prop, uint32_t mmio_spaces);
fpga_result fpgaPropertiesGetNumInterrupts(const fpga_properties prop, uint32_t *num_interrupts);
fpga_result fpgaPropertiesSetNumInterrupts(fpga_properties prop, uint32_t num_interrupts);
fpga_result fpgaPropertiesGetAcceleratorState(const fpga_properties prop,
					      fpga_accelerator_state *state);
fpga_result fpgaPropertiesSetAcceleratorState(fpga_properties prop,
					      fpga_accelerator_state state);

/* The two properties of OPAE's plugin design. The host is a name, or "localhost",
 * "^localhost" (any other host) or "*" in a filter; devices of this machine report
 * "localhost". */
fpga_result fpgaPropertiesGetNumSlots(const fpga_properties prop, uint32_t *num_slots);
fpga_result fpgaPropertiesSetNumSlots(fpga_properties prop, uint32_t num_slots);
fpga_result fpgaPropertiesGetBBSID(const fpga_properties prop, uint64_t *bbs_id);
fpga_result fpgaPropertiesSetBBSID(fpga_properties prop, uint64_t bbs_id);
fpga_result fpgaPropertiesGetBBSVersion(const fpga_properties prop, fpga_version *bbs_version);
fpga_result fpgaPropertiesSetBBSVersion(fpga_properties prop, fpga_version version);
fpga_result fpgaPropertiesGetModel(const fpga_properties prop, char *model);
fpga_result fpgaPropertiesSetModel(fpga_properties prop, char *model);
fpga_result fpgaPropertiesGetLocalMemorySize(const fpga_properties prop, uint64_t *lms);
fpga_result fpgaPropertiesSetLocalMemorySize(fpga_properties prop, uint64_t lms);
fpga_result fpgaPropertiesGetCapabilities(const fpga_properties prop, uint64_t *capabilities);
fpga_result fpgaPropertiesSetCapabilities(fpga_properties prop, uint64_t capabilities);
fpga_result fpgaPropertiesGetObjectID(const fpga_properties prop, uint64_t *object_id);
fpga_result fpgaPropertiesSetObjectID(const fpga_properties prop, uint64_t object_id);
fpga_result fpgaPropertiesGetNumErrors(const fpga_properties prop, uint32_t *num_errors);
fpga_result fpgaPropertiesSetNumErrors(const fpga_properties prop, uint32_t num_errors);
fpga_result fpgaPropertiesGetInterface(const fpga_properties prop, fpga_interface *interface);
fpga_result fpgaPropertiesSetInterface(const fpga_properties prop, fpga_interface interface);
fpga_result fpgaPropertiesGetSubsystemVendorID(const fpga_properties prop,
					       uint16_t *subsystem_vendor_id);
fpga_result fpgaPropertiesSetSubsystemVendorID(fpga_properties prop,
					       uint16_t subsystem_vendor_id);
fpga_result fpgaPropertiesGetSubsystemDeviceID(const fpga_properties prop,
					       uint16_t *subsystem_device_id);
fpga_result fpgaPropertiesSetSubsystemDeviceID(fpga_properties prop,
					       uint16_t subsystem_device_id);
fpga_result fpgaPropertiesGetHostname(const fpga_properties prop, char *hostname, size_t len);
fpga_result fpgaPropertiesSetHostname(fpga_properties prop, const char *hostname);
fpga_result fpgaPropertiesGetDeviceType(const fpga_properties prop,
					fpga_device_type *device_type);
fpga_result fpgaPropertiesSetDeviceType(fpga_properties prop, fpga_device_type device_type);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_PROPERTIES_H__ */
