/* accelhost's OPAE-compatible C API: the device's attribute tree (the sysfs attributes its
 * plugin answers, such as "afu_id" or "errors/errors"); values are read afresh on every call.
 * With FPGA_OBJECT_GLOB a name is a shell pattern per level ("hwmon/hwmon* /temp1_input"
 * without the space) naming the first match in byte order, as glob(3) sorts. */
#ifndef __FPGA_SYSOBJECT_H__
#define __FPGA_SYSOBJECT_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaTokenGetObject(fpga_token token, const char *name, fpga_object *object,
			       int flags);
fpga_result fpgaHandleGetObject(fpga_handle handle, const char *name, fpga_object *object,
				int flags);
fpga_result fpgaObjectGetObject(fpga_object parent, const char *name, fpga_object *object,
				int flags);
fpga_result fpgaObjectGetObjectAt(fpga_object parent, size_t idx, fpga_object *object);
fpga_result fpgaObjectGetType(fpga_object obj, enum fpga_sysobject_type *type);
fpga_result fpgaObjectGetName(fpga_object obj, char *name, size_t max_len);
fpga_result fpgaDestroyObject(fpga_object *obj);
fpga_result fpgaObjectGetSize(fpga_object obj, uint32_t *value, int flags);
fpga_result fpgaObjectRead(fpga_object obj, uint8_t *buffer, size_t offset, size_t len,
			   int flags);
fpga_result fpgaObjectRead64(fpga_object obj, uint64_t *value, int flags);
fpga_result fpgaObjectWrite64(fpga_object obj, uint64_t value, int flags);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_SYSOBJECT_H__ */
