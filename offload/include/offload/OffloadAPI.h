/* accelhost's LLVM Offload API: the declarations of liboffload's OffloadAPI.h at version
 * 0.0.1 (its initial full API), implemented by libLLVMOffload.so over accelhost's devices.
 * Every call returns OL_SUCCESS (NULL) or a pointer to an error whose code and details stay
 * valid for the process's life. README, "LLVM's Offload API", says what is implemented. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
extern "C" {
#endif

#ifndef OL_VERSION_MAJOR
#define OL_VERSION_MAJOR 0
#endif
#ifndef OL_VERSION_MINOR
#define OL_VERSION_MINOR 0
#endif
#ifndef OL_VERSION_PATCH
#define OL_VERSION_PATCH 1
#endif

#ifndef OL_APICALL
#define OL_APICALL
#endif
#ifndef OL_APIEXPORT
#define OL_APIEXPORT
#endif
#ifndef OL_DLLEXPORT
#if __GNUC__ >= 4
#define OL_DLLEXPORT __attribute__((visibility("default")))
#else
#define OL_DLLEXPORT
#endif
#endif

typedef struct ol_platform_impl_t* ol_platform_handle_t;
typedef struct ol_device_impl_t* ol_device_handle_t;
typedef struct ol_context_impl_t* ol_context_handle_t;
typedef struct ol_queue_impl_t* ol_queue_handle_t;
typedef struct ol_event_impl_t* ol_event_handle_t;
typedef struct ol_program_impl_t* ol_program_handle_t;
typedef struct ol_kernel_impl_t* ol_kernel_handle_t;

typedef enum ol_errc_t {
  OL_ERRC_SUCCESS = 0,
  OL_ERRC_INVALID_VALUE = 1,
  OL_ERRC_INVALID_PLATFORM = 2,
  OL_ERRC_INVALID_DEVICE = 3,
  OL_ERRC_INVALID_QUEUE = 4,
  OL_ERRC_INVALID_EVENT = 5,
  OL_ERRC_INVALID_KERNEL_NAME = 6,
  OL_ERRC_OUT_OF_RESOURCES = 7,
  OL_ERRC_UNSUPPORTED_FEATURE = 8,
  OL_ERRC_INVALID_ARGUMENT = 9,
  OL_ERRC_INVALID_NULL_HANDLE = 10,
  OL_ERRC_INVALID_NULL_POINTER = 11,
  OL_ERRC_INVALID_SIZE = 12,
  OL_ERRC_INVALID_ENUMERATION = 13,
  OL_ERRC_UNSUPPORTED_ENUMERATION = 14,
  OL_ERRC_UNKNOWN = 15,
  OL_ERRC_FORCE_UINT32 = 0x7fffffff
} ol_errc_t;

typedef struct ol_error_struct_t {
  ol_errc_t Code;
  const char* Details;
} ol_error_struct_t;

typedef const ol_error_struct_t* ol_result_t;

#ifndef OL_SUCCESS
#define OL_SUCCESS NULL
#endif

typedef struct ol_code_location_t {
  const char* FunctionName;
  const char* SourceFile;
  uint32_t LineNumber;
  uint32_t ColumnNumber;
} ol_code_location_t;

typedef enum ol_platform_info_t {
  OL_PLATFORM_INFO_NAME = 0,
  OL_PLATFORM_INFO_VENDOR_NAME = 1,
  OL_PLATFORM_INFO_VERSION = 2,
  OL_PLATFORM_INFO_BACKEND = 3,
  OL_PLATFORM_INFO_FORCE_UINT32 = 0x7fffffff
} ol_platform_info_t;

typedef enum ol_platform_backend_t {
  OL_PLATFORM_BACKEND_UNKNOWN = 0,
  OL_PLATFORM_BACKEND_CUDA = 1,
  OL_PLATFORM_BACKEND_AMDGPU = 2,
  OL_PLATFORM_BACKEND_FORCE_UINT32 = 0x7fffffff
} ol_platform_backend_t;

typedef enum ol_device_type_t {
  OL_DEVICE_TYPE_DEFAULT = 0,
  OL_DEVICE_TYPE_ALL = 1,
  OL_DEVICE_TYPE_GPU = 2,
  OL_DEVICE_TYPE_CPU = 3,
  OL_DEVICE_TYPE_FORCE_UINT32 = 0x7fffffff
} ol_device_type_t;

typedef enum ol_device_info_t {
  OL_DEVICE_INFO_TYPE = 0,
  OL_DEVICE_INFO_PLATFORM = 1,
  OL_DEVICE_INFO_NAME = 2,
  OL_DEVICE_INFO_VENDOR = 3,
  OL_DEVICE_INFO_DRIVER_VERSION = 4,
  OL_DEVICE_INFO_FORCE_UINT32 = 0x7fffffff
} ol_device_info_t;

typedef enum ol_alloc_type_t {
  OL_ALLOC_TYPE_HOST = 0,
  OL_ALLOC_TYPE_DEVICE = 1,
  OL_ALLOC_TYPE_SHARED = 2,
  OL_ALLOC_TYPE_FORCE_UINT32 = 0x7fffffff
} ol_alloc_type_t;

typedef struct ol_kernel_launch_size_args_t {
  size_t Dimensions;
  size_t NumGroupsX;
  size_t NumGroupsY;
  size_t NumGroupsZ;
  size_t GroupSizeX;
  size_t GroupSizeY;
  size_t GroupSizeZ;
} ol_kernel_launch_size_args_t;

/* Starts the library (counted; olShutDown counts down). Other calls start it too. */
OL_APIEXPORT ol_result_t OL_APICALL olInit(void);
OL_APIEXPORT ol_result_t OL_APICALL olShutDown(void);

/* One platform: accelhost's. */
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatform(uint32_t NumEntries, ol_platform_handle_t* Platforms);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformCount(uint32_t* NumPlatforms);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfo(ol_platform_handle_t Platform, ol_platform_info_t PropName,
                                                     size_t PropSize, void* PropValue);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoSize(ol_platform_handle_t Platform, ol_platform_info_t PropName,
                                                         size_t* PropSizeRet);

/* Its devices: the accelerators of plugins that export the offload interface. */
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceCount(ol_platform_handle_t Platform, uint32_t* NumDevices);
OL_APIEXPORT ol_result_t OL_APICALL olGetDevice(ol_platform_handle_t Platform, uint32_t NumEntries,
                                               ol_device_handle_t* Devices);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfo(ol_device_handle_t Device, ol_device_info_t PropName,
                                                   size_t PropSize, void* PropValue);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoSize(ol_device_handle_t Device, ol_device_info_t PropName,
                                                       size_t* PropSizeRet);
/* The device that stands for the program's memory in copies; it has no queues. */
OL_APIEXPORT ol_result_t OL_APICALL olGetHostDevice(ol_device_handle_t* Device);

OL_APIEXPORT ol_result_t OL_APICALL olMemAlloc(ol_device_handle_t Device, ol_alloc_type_t Type, size_t Size,
                                              void** AllocationOut);
OL_APIEXPORT ol_result_t OL_APICALL olMemFree(ol_device_handle_t Device, ol_alloc_type_t Type, void* Address);

OL_APIEXPORT ol_result_t OL_APICALL olCreateQueue(ol_device_handle_t Device, ol_queue_handle_t* Queue);
OL_APIEXPORT ol_result_t OL_APICALL olRetainQueue(ol_queue_handle_t Queue);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseQueue(ol_queue_handle_t Queue);
OL_APIEXPORT ol_result_t OL_APICALL olWaitQueue(ol_queue_handle_t Queue);

OL_APIEXPORT ol_result_t OL_APICALL olRetainEvent(ol_event_handle_t Event);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseEvent(ol_event_handle_t Event);
OL_APIEXPORT ol_result_t OL_APICALL olWaitEvent(ol_event_handle_t Event);

/* Host pointers are paired with the host device; at least one side is a device. */
OL_APIEXPORT ol_result_t OL_APICALL olEnqueueMemcpy(ol_queue_handle_t Queue, void* DstPtr, ol_device_handle_t DstDevice,
                                                   void* SrcPtr, ol_device_handle_t SrcDevice, size_t Size,
                                                   ol_event_handle_t* EventOut);
/* ArgumentsData: the kernel's arguments packed as a C struct of them would be. */
OL_APIEXPORT ol_result_t OL_APICALL olEnqueueKernelLaunch(ol_queue_handle_t Queue, ol_kernel_handle_t Kernel,
                                                         const void* ArgumentsData, size_t ArgumentsSize,
                                                         const ol_kernel_launch_size_args_t* LaunchSizeArgs,
                                                         ol_event_handle_t* EventOut);

/* A program from a device image (an xclbin for XRT cards). */
OL_APIEXPORT ol_result_t OL_APICALL olCreateProgram(ol_device_handle_t Device, void* ProgData, size_t ProgDataSize,
                                                   ol_program_handle_t* Program);
OL_APIEXPORT ol_result_t OL_APICALL olRetainProgram(ol_program_handle_t Program);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseProgram(ol_program_handle_t Program);
OL_APIEXPORT ol_result_t OL_APICALL olCreateKernel(ol_program_handle_t Program, const char* KernelName,
                                                  ol_kernel_handle_t* Kernel);
OL_APIEXPORT ol_result_t OL_APICALL olRetainKernel(ol_kernel_handle_t Kernel);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseKernel(ol_kernel_handle_t Kernel);

/* The same calls with the program's code location, which an error's details then name. */
OL_APIEXPORT ol_result_t OL_APICALL olInitWithCodeLoc(ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olShutDownWithCodeLoc(ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformWithCodeLoc(uint32_t NumEntries, ol_platform_handle_t* Platforms,
                                                            ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformCountWithCodeLoc(uint32_t* NumPlatforms,
                                                                 ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoWithCodeLoc(ol_platform_handle_t Platform,
                                                                ol_platform_info_t PropName, size_t PropSize,
                                                                void* PropValue, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetPlatformInfoSizeWithCodeLoc(ol_platform_handle_t Platform,
                                                                    ol_platform_info_t PropName, size_t* PropSizeRet,
                                                                    ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceCountWithCodeLoc(ol_platform_handle_t Platform, uint32_t* NumDevices,
                                                               ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceWithCodeLoc(ol_platform_handle_t Platform, uint32_t NumEntries,
                                                          ol_device_handle_t* Devices,
                                                          ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoWithCodeLoc(ol_device_handle_t Device, ol_device_info_t PropName,
                                                              size_t PropSize, void* PropValue,
                                                              ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetDeviceInfoSizeWithCodeLoc(ol_device_handle_t Device,
                                                                  ol_device_info_t PropName, size_t* PropSizeRet,
                                                                  ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olGetHostDeviceWithCodeLoc(ol_device_handle_t* Device,
                                                              ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olMemAllocWithCodeLoc(ol_device_handle_t Device, ol_alloc_type_t Type, size_t Size,
                                                         void** AllocationOut, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olMemFreeWithCodeLoc(ol_device_handle_t Device, ol_alloc_type_t Type,
                                                        void* Address, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olCreateQueueWithCodeLoc(ol_device_handle_t Device, ol_queue_handle_t* Queue,
                                                            ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olRetainQueueWithCodeLoc(ol_queue_handle_t Queue, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseQueueWithCodeLoc(ol_queue_handle_t Queue,
                                                             ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olWaitQueueWithCodeLoc(ol_queue_handle_t Queue, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olRetainEventWithCodeLoc(ol_event_handle_t Event, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseEventWithCodeLoc(ol_event_handle_t Event,
                                                             ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olWaitEventWithCodeLoc(ol_event_handle_t Event, ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olEnqueueMemcpyWithCodeLoc(ol_queue_handle_t Queue, void* DstPtr,
                                                              ol_device_handle_t DstDevice, void* SrcPtr,
                                                              ol_device_handle_t SrcDevice, size_t Size,
                                                              ol_event_handle_t* EventOut,
                                                              ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olEnqueueKernelLaunchWithCodeLoc(
    ol_queue_handle_t Queue, ol_kernel_handle_t Kernel, const void* ArgumentsData, size_t ArgumentsSize,
    const ol_kernel_launch_size_args_t* LaunchSizeArgs, ol_event_handle_t* EventOut,
    ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olCreateProgramWithCodeLoc(ol_device_handle_t Device, void* ProgData,
                                                              size_t ProgDataSize, ol_program_handle_t* Program,
                                                              ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olRetainProgramWithCodeLoc(ol_program_handle_t Program,
                                                              ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseProgramWithCodeLoc(ol_program_handle_t Program,
                                                               ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olCreateKernelWithCodeLoc(ol_program_handle_t Program, const char* KernelName,
                                                             ol_kernel_handle_t* Kernel,
                                                             ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olRetainKernelWithCodeLoc(ol_kernel_handle_t Kernel,
                                                             ol_code_location_t* CodeLocation);
OL_APIEXPORT ol_result_t OL_APICALL olReleaseKernelWithCodeLoc(ol_kernel_handle_t Kernel,
                                                              ol_code_location_t* CodeLocation);

#if defined(__cplusplus)
}
#endif
