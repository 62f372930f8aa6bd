//! The OpenCL platform end to end: its dispatch table and constants against the system's
//! Khronos headers (compiled with the C compiler), its answers to bad input called directly,
//! `clinfo` through Debian's ICD loader listing the devices the library lists, a C host of the
//! Vitis hello-world flow and PyOpenCL running vadd from an xclbin, and a faulting plugin
//! under a C program. A test that needs a tool that is missing (a C compiler, the headers and
//! ICD loader, `clinfo`, PyOpenCL) is reported ignored with the reason, or fails under
//! `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

#[path = "../../tests/support/door.rs"]
#[allow(dead_code)]
mod door;
#[path = "../../tests/support/harness.rs"]
mod harness;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use accelhost::workloads::vadd::vadd_image;
use accelhost_opencl::cl::*;
use accelhost_opencl::{
    CONSTANTS, Device, Platform, SLOT_NAMES, clGetExtensionFunctionAddress, clGetPlatformInfo,
    clIcdGetPlatformIDsKHR,
};
use harness::{Outcome, Trial};

fn main() -> std::process::ExitCode {
    // The platform's hosts in this process (the calls made directly) and in the programs it
    // runs compile into the tests' cache under the target, not the user's.
    // SAFETY: main is the process's only thread until the trials start.
    unsafe { std::env::set_var("ACCELHOST_CACHE_DIR", door::cache_dir()) };
    // Side by side: the long trials spend their time in one-core tools (Python, clang), and
    // each keeps its own scratch folder, programs and card (a process of its own, or this
    // process's platform, which programs share across threads too). The longest come first,
    // so that the lanes end together.
    harness::run(
        &[
            Trial {
                name: "pyopencls_own_suite_passes_with_the_card_building_its_kernels",
                run: pyopencls_own_suite_passes_with_the_card_building_its_kernels,
            },
            Trial {
                name: "opencl_c_from_source_runs_over_its_ndrange_and_refuses_what_it_cannot",
                run: opencl_c_from_source_runs_over_its_ndrange_and_refuses_what_it_cannot,
            },
            Trial {
                name: "dpctls_own_tests_of_devices_queues_usm_programs_and_kernels_pass",
                run: dpctls_own_tests_of_devices_queues_usm_programs_and_kernels_pass,
            },
            Trial {
                name: "dpnp_computes_on_the_card_as_numpy_does",
                run: dpnp_computes_on_the_card_as_numpy_does,
            },
            Trial {
                name: "spirv_programs_run_through_dpctl_and_pyopencl_and_stray_kernels_fail_alone",
                run: spirv_programs_run_through_dpctl_and_pyopencl_and_stray_kernels_fail_alone,
            },
            Trial {
                name: "a_lying_plugin_is_an_opencl_error_and_the_program_goes_on",
                run: a_lying_plugin_is_an_opencl_error_and_the_program_goes_on,
            },
            Trial {
                name: "the_dispatch_table_and_constants_match_the_system_headers",
                run: the_dispatch_table_and_constants_match_the_system_headers,
            },
            Trial {
                name: "bad_input_gets_opencl_errors_and_nothing_is_written",
                run: bad_input_gets_opencl_errors_and_nothing_is_written,
            },
            Trial {
                name: "platforms_devices_and_their_answers_are_where_programs_look",
                run: platforms_devices_and_their_answers_are_where_programs_look,
            },
            Trial {
                name: "an_xcl2_host_finds_the_xilinx_platform_and_runs_vadd_by_compute_unit",
                run: an_xcl2_host_finds_the_xilinx_platform_and_runs_vadd_by_compute_unit,
            },
            Trial {
                name: "clinfo_lists_the_platform_and_the_librarys_offload_devices",
                run: clinfo_lists_the_platform_and_the_librarys_offload_devices,
            },
            Trial {
                name: "threads_copy_through_their_own_contexts_at_once",
                run: threads_copy_through_their_own_contexts_at_once,
            },
            Trial {
                name: "a_vitis_style_c_host_runs_vadd_from_an_xclbin",
                run: a_vitis_style_c_host_runs_vadd_from_an_xclbin,
            },
            Trial {
                name: "commands_behind_user_events_wait_and_run_in_order",
                run: commands_behind_user_events_wait_and_run_in_order,
            },
            Trial {
                name: "sub_buffers_are_regions_of_their_parent_at_their_origin",
                run: sub_buffers_are_regions_of_their_parent_at_their_origin,
            },
            Trial {
                name: "the_largest_allocation_is_what_the_card_holds_and_its_kernels_address",
                run: the_largest_allocation_is_what_the_card_holds_and_its_kernels_address,
            },
            Trial {
                name: "a_program_built_from_source_is_kept_for_the_next_process",
                run: a_program_built_from_source_is_kept_for_the_next_process,
            },
            Trial {
                name: "launches_without_events_go_in_batches_in_order_and_report_failures",
                run: launches_without_events_go_in_batches_in_order_and_report_failures,
            },
            Trial {
                name: "rectangular_transfers_place_rows_by_their_pitches",
                run: rectangular_transfers_place_rows_by_their_pitches,
            },
            Trial {
                name: "pyopencl_copies_64_mib_and_runs_vadd_byte_exact",
                run: pyopencl_copies_64_mib_and_runs_vadd_byte_exact,
            },
            Trial {
                name: "dpctl_round_trips_64_mib_of_usm_through_a_sycl_queue",
                run: dpctl_round_trips_64_mib_of_usm_through_a_sycl_queue,
            },
            Trial {
                name: "dpctls_default_device_and_every_other_copy_usm_both_ways_and_between",
                run: dpctls_default_device_and_every_other_copy_usm_both_ways_and_between,
            },
            Trial {
                name: "pyopencls_whole_suite_with_the_card_building_every_kernel",
                run: pyopencls_whole_suite_with_the_card_building_every_kernel,
            },
            Trial {
                name: "pyopencls_demo_runs_unmodified_from_source",
                run: pyopencls_demo_runs_unmodified_from_source,
            },
            Trial {
                name: "pyopencl_runs_a_kernel_of_its_own_from_an_xclbin",
                run: pyopencl_runs_a_kernel_of_its_own_from_an_xclbin,
            },
            Trial {
                name: "a_faulting_plugin_is_an_opencl_error_and_the_program_goes_on",
                run: a_faulting_plugin_is_an_opencl_error_and_the_program_goes_on,
            },
            Trial {
                name: "a_released_handle_stays_an_error_whatever_is_made_after",
                run: a_released_handle_stays_an_error_whatever_is_made_after,
            },
        ],
        harness::Overlap::AsLibtest,
    )
}

/// Skips with `why`, or fails where CI requires the tools.
fn missing(why: String) -> Outcome {
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Outcome::Skipped(why)
}

fn scratch(label: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("opencl-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The slots are `struct _cl_icd_dispatch`'s members in order, and every constant has the
/// headers' value: a C file of static assertions, compiled.
fn the_dispatch_table_and_constants_match_the_system_headers() -> Outcome {
    if !Path::new("/usr/include/CL/cl_icd.h").is_file() {
        return missing("no /usr/include/CL/cl_icd.h (Debian's opencl-c-headers)".into());
    }
    let mut source = String::from(
        "#define CL_TARGET_OPENCL_VERSION 300\n#include <stddef.h>\n#include <CL/cl_icd.h>\n\
         #include <CL/cl_ext.h>\n",
    );
    // The 150th slot (OpenCL 3.1, May 2026) is newer than Debian's headers.
    for (at, name) in SLOT_NAMES.iter().enumerate().take(149) {
        source.push_str(&format!(
            "_Static_assert(offsetof(struct _cl_icd_dispatch, {name}) == {at} * sizeof(void *), \
             \"slot {at} is {name}\");\n"
        ));
    }
    for (name, value) in CONSTANTS {
        source.push_str(&format!(
            "_Static_assert((long long)({name}) == {value}LL, \"{name} is {value}\");\n"
        ));
    }
    let dir = scratch("headers");
    std::fs::write(dir.join("check.c"), source).unwrap();
    let out = match Command::new("cc")
        .args(["-fsyntax-only", "-std=c11", "check.c"])
        .current_dir(&dir)
        .output()
    {
        Ok(out) => out,
        Err(err) => return missing(format!("no C compiler (cc): {err}")),
    };
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "the table or a constant disagrees with the headers:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Outcome::Passed
}

type GetDeviceIds =
    extern "C" fn(*mut Platform, cl_device_type, cl_uint, *mut *mut Device, *mut cl_uint) -> cl_int;
type GetDeviceInfo =
    extern "C" fn(*mut Device, cl_device_info, usize, *mut c_void, *mut usize) -> cl_int;
type Release = extern "C" fn(*mut c_void) -> cl_int;
type CreateImage2d =
    extern "C" fn(usize, u64, usize, usize, usize, usize, *mut c_void, *mut cl_int) -> *mut c_void;
type CreateContext = extern "C" fn(
    *const isize,
    cl_uint,
    *const *mut Device,
    *const c_void,
    *mut c_void,
    *mut cl_int,
) -> *mut c_void;

/// The function in slot `index` of `object`'s table, as the loader finds it.
///
/// # Safety
/// `object` is one of the platform's objects and `F` the slot's signature.
unsafe fn slot<F: Copy>(object: *mut c_void, index: usize) -> F {
    let name = SLOT_NAMES[index];
    // SAFETY: every object starts with a pointer to the table, which has SLOTS entries.
    let entry = unsafe { (*object.cast::<*const *const c_void>()).add(index).read() };
    assert!(!entry.is_null(), "slot {index} ({name}) is NULL");
    // SAFETY: F is the slot's signature, per the caller.
    unsafe { std::mem::transmute_copy(&entry) }
}

/// Every refusal leaves the caller's memory as it was.
fn bad_input_gets_opencl_errors_and_nothing_is_written() -> Outcome {
    let mut platform: *mut Platform = std::ptr::null_mut();
    let mut count: cl_uint = 0;
    assert_eq!(
        clIcdGetPlatformIDsKHR(0, std::ptr::null_mut(), std::ptr::null_mut()),
        CL_INVALID_VALUE
    );
    assert_eq!(
        clIcdGetPlatformIDsKHR(0, &mut platform, &mut count),
        CL_INVALID_VALUE
    );
    assert!(platform.is_null());
    assert_eq!(
        clIcdGetPlatformIDsKHR(1, &mut platform, &mut count),
        CL_SUCCESS
    );
    assert_eq!(count, 2, "accelhost, and Xilinx for the XRT card");

    // Strings: the size alone, a short buffer refused, an unknown name refused.
    let mut size = 0usize;
    let status = clGetPlatformInfo(
        platform,
        CL_PLATFORM_NAME,
        0,
        std::ptr::null_mut(),
        &mut size,
    );
    assert_eq!((status, size), (CL_SUCCESS, "accelhost\0".len()));
    let mut short = [0u8; 4];
    let status = clGetPlatformInfo(
        platform,
        CL_PLATFORM_NAME,
        4,
        short.as_mut_ptr().cast(),
        &mut size,
    );
    assert_eq!((status, short), (CL_INVALID_VALUE, [0; 4]));
    let status = clGetPlatformInfo(platform, 0x0FFF, 0, std::ptr::null_mut(), &mut size);
    assert_eq!(status, CL_INVALID_VALUE);
    let not_a_platform = [0usize; 4];
    let status = clGetPlatformInfo(
        not_a_platform.as_ptr().cast_mut().cast(),
        CL_PLATFORM_NAME,
        0,
        std::ptr::null_mut(),
        &mut size,
    );
    assert_eq!(status, CL_INVALID_PLATFORM);

    // The loaders' way in.
    let found = clGetExtensionFunctionAddress(c"clIcdGetPlatformIDsKHR".as_ptr());
    assert!(!found.is_null());
    assert!(clGetExtensionFunctionAddress(c"clNoSuchFunction".as_ptr()).is_null());
    assert!(clGetExtensionFunctionAddress(std::ptr::null()).is_null());

    // SAFETY: slot 2 is clGetDeviceIDs, slot 3 clGetDeviceInfo, slot 4 clCreateContext.
    let (get_device_ids, get_device_info, create_context) = unsafe {
        (
            slot::<GetDeviceIds>(platform.cast(), 2),
            slot::<GetDeviceInfo>(platform.cast(), 3),
            slot::<CreateContext>(platform.cast(), 4),
        )
    };
    let null_devices = std::ptr::null_mut();
    assert_eq!(
        get_device_ids(platform, 0, 0, null_devices, &mut count),
        CL_INVALID_DEVICE_TYPE
    );
    assert_eq!(
        get_device_ids(platform, 1 << 40, 0, null_devices, &mut count),
        CL_INVALID_DEVICE_TYPE
    );
    assert_eq!(
        get_device_ids(platform, CL_DEVICE_TYPE_GPU, 0, null_devices, &mut count),
        CL_DEVICE_NOT_FOUND
    );
    assert_eq!(count, 0);
    assert_eq!(
        get_device_ids(platform, CL_DEVICE_TYPE_ALL, 0, null_devices, &mut count),
        CL_SUCCESS
    );
    assert!(count > 0, "the embedded default has offload devices");
    let mut devices = vec![std::ptr::null_mut(); count as usize];
    for (query, listed) in [
        (CL_DEVICE_TYPE_CPU, count),
        (CL_DEVICE_TYPE_DEFAULT, 1),
        (CL_DEVICE_TYPE_ALL, count),
    ] {
        let mut again = 0;
        let status = get_device_ids(platform, query, count, devices.as_mut_ptr(), &mut again);
        assert_eq!((status, again), (CL_SUCCESS, listed), "type {query:#x}");
    }
    // No device of the accelhost platform is an accelerator or a custom device: a query for
    // either finds none, as the devices' own types say.
    for query in [CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CUSTOM] {
        let status = get_device_ids(platform, query, 0, null_devices, &mut count);
        assert_eq!(status, CL_DEVICE_NOT_FOUND, "type {query:#x}");
    }
    let mut kind: cl_device_type = 0;
    let status = get_device_info(
        devices[0],
        CL_DEVICE_TYPE,
        8,
        (&raw mut kind).cast(),
        std::ptr::null_mut(),
    );
    assert_eq!((status, kind), (CL_SUCCESS, CL_DEVICE_TYPE_CPU));
    let not_a_device = [0usize; 4];
    let status = get_device_info(
        not_a_device.as_ptr().cast_mut().cast(),
        CL_DEVICE_TYPE,
        8,
        (&raw mut kind).cast(),
        std::ptr::null_mut(),
    );
    assert_eq!(status, CL_INVALID_DEVICE);

    // Contexts: a foreign device or none at all is refused, with NULL.
    let mut code = CL_SUCCESS;
    let bogus = [not_a_device.as_ptr().cast_mut().cast::<Device>()];
    for (count, list) in [
        (1, bogus.as_ptr()),
        (0, devices.as_ptr()),
        (1, std::ptr::null()),
    ] {
        let context = create_context(
            std::ptr::null(),
            count,
            list,
            std::ptr::null(),
            std::ptr::null_mut(),
            &mut code,
        );
        assert!(context.is_null());
        assert!(
            code == CL_INVALID_DEVICE || code == CL_INVALID_VALUE,
            "{count} devices: {code}"
        );
    }
    // SAFETY: slot 7 is clReleaseContext, slot 18 clReleaseMemObject.
    let (release_context, release_mem) = unsafe {
        (
            slot::<Release>(platform.cast(), 7),
            slot::<Release>(platform.cast(), 18),
        )
    };
    let not_an_object = not_a_device.as_ptr().cast_mut().cast::<c_void>();
    assert_eq!(release_context(not_an_object), CL_INVALID_CONTEXT);
    assert_eq!(release_mem(not_an_object), CL_INVALID_MEM_OBJECT);
    assert_eq!(release_context(std::ptr::null_mut()), CL_INVALID_CONTEXT);

    // Not implemented: NULL and CL_INVALID_OPERATION in errcode_ret, not a crash.
    // SAFETY: slot 15 is clCreateImage2D, whose errcode_ret is its eighth parameter.
    let create_image_2d = unsafe { slot::<CreateImage2d>(platform.cast(), 15) };
    let mut code = CL_SUCCESS;
    let image = create_image_2d(0, 0, 0, 1, 1, 0, std::ptr::null_mut(), &mut code);
    assert!(image.is_null());
    assert_eq!(code, CL_INVALID_OPERATION);
    Outcome::Passed
}

type UnloadPlatformCompiler = extern "C" fn(*mut Platform) -> cl_int;
type CreateContextFromType = extern "C" fn(
    *const isize,
    cl_device_type,
    *const c_void,
    *mut c_void,
    *mut cl_int,
) -> *mut c_void;

/// The bytes `clGetDeviceInfo(param)` answers for `device`, or its error.
fn device_answer(
    get: GetDeviceInfo,
    device: *mut Device,
    param: cl_device_info,
) -> Result<Vec<u8>, cl_int> {
    let mut size = 0usize;
    let status = get(device, param, 0, std::ptr::null_mut(), &mut size);
    if status != CL_SUCCESS {
        return Err(status);
    }
    let mut bytes = vec![0u8; size];
    match get(
        device,
        param,
        size,
        bytes.as_mut_ptr().cast(),
        std::ptr::null_mut(),
    ) {
        CL_SUCCESS => Ok(bytes),
        code => Err(code),
    }
}

fn as_u64(bytes: &[u8]) -> u64 {
    match bytes.len() {
        4 => u32::from_ne_bytes(bytes.try_into().unwrap()).into(),
        8 => u64::from_ne_bytes(bytes.try_into().unwrap()),
        other => panic!("{other} bytes are not a number"),
    }
}

fn as_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes.strip_suffix(&[0]).unwrap_or(bytes)).into_owned()
}

/// The platforms (embedded default): `accelhost` first with every device, the XRT card
/// first and the CAPI AFUs (which hold no device memory and take no programs) last, all CPU
/// devices; then `Xilinx` with the XRT card as an accelerator, where xcl2 looks. Each
/// platform answers a type query by its devices' types; a context is one platform's; the
/// compiler-unload hint is taken; caches, local memory, printf buffer and half precision
/// are answered with the device's figures.
fn platforms_devices_and_their_answers_are_where_programs_look() -> Outcome {
    let mut platforms = [std::ptr::null_mut::<Platform>(); 4];
    let mut count = 0;
    assert_eq!(
        clIcdGetPlatformIDsKHR(4, platforms.as_mut_ptr(), &mut count),
        CL_SUCCESS
    );
    assert_eq!(count, 2);
    let name = |platform: *mut Platform| {
        let mut bytes = [0u8; 64];
        let mut size = 0;
        let status = clGetPlatformInfo(
            platform,
            CL_PLATFORM_NAME,
            64,
            bytes.as_mut_ptr().cast(),
            &mut size,
        );
        assert_eq!(status, CL_SUCCESS);
        as_text(&bytes[..size])
    };
    let (accelhost, xilinx) = (platforms[0], platforms[1]);
    assert_eq!(
        (name(accelhost).as_str(), name(xilinx).as_str()),
        ("accelhost", "Xilinx")
    );
    let object = accelhost.cast::<c_void>();
    // SAFETY: the slots' signatures, in cl_icd.h's order.
    let (
        get_device_ids,
        get_device_info,
        create_context,
        create_from_type,
        release_context,
        unload,
    ) = unsafe {
        (
            slot::<GetDeviceIds>(object, 2),
            slot::<GetDeviceInfo>(object, 3),
            slot::<CreateContext>(object, 4),
            slot::<CreateContextFromType>(object, 5),
            slot::<Release>(object, 7),
            slot::<UnloadPlatformCompiler>(object, 100),
        )
    };
    let devices_of =
        |platform: *mut Platform, query: cl_device_type| -> Result<Vec<*mut Device>, cl_int> {
            let mut devices = [std::ptr::null_mut(); 16];
            let mut found = 0;
            match get_device_ids(platform, query, 16, devices.as_mut_ptr(), &mut found) {
                CL_SUCCESS => Ok(devices[..found as usize].to_vec()),
                code => Err(code),
            }
        };
    let info = |device, param| device_answer(get_device_info, device, param);
    let device_name = |device| as_text(&info(device, CL_DEVICE_NAME).unwrap());

    let everything = devices_of(accelhost, CL_DEVICE_TYPE_ALL).unwrap();
    let names: Vec<String> = everything.iter().map(|d| device_name(*d)).collect();
    assert_eq!(
        names,
        [
            "xocl/emu:xocl0",
            "cxl/emu:capi0.0m",
            "cxl/emu:capi0.0s",
            "cxl/emu:capi0.1d"
        ],
        "the card that takes programs and device memory first"
    );
    assert_eq!(
        devices_of(accelhost, CL_DEVICE_TYPE_DEFAULT).unwrap(),
        everything[..1]
    );
    assert_eq!(
        devices_of(accelhost, CL_DEVICE_TYPE_CPU).unwrap(),
        everything
    );
    let card = devices_of(xilinx, CL_DEVICE_TYPE_ACCELERATOR).unwrap();
    assert_eq!(card.len(), 1);
    assert_eq!(device_name(card[0]), "xocl/emu:xocl0");
    assert_ne!(card[0], everything[0], "one device object per platform");
    assert_eq!(devices_of(xilinx, CL_DEVICE_TYPE_ALL).unwrap(), card);
    assert_eq!(devices_of(xilinx, CL_DEVICE_TYPE_DEFAULT).unwrap(), card);
    assert_eq!(
        devices_of(xilinx, CL_DEVICE_TYPE_CPU),
        Err(CL_DEVICE_NOT_FOUND)
    );
    for (device, platform, kind, address_bits) in [
        // The emulated XRT card (on both platforms), whose kernels are 32-bit WebAssembly,
        // and a CAPI device.
        (everything[0], accelhost, CL_DEVICE_TYPE_CPU, 32),
        (everything[3], accelhost, CL_DEVICE_TYPE_CPU, 64),
        (card[0], xilinx, CL_DEVICE_TYPE_ACCELERATOR, 32),
    ] {
        let what = device_name(device);
        assert_eq!(what.starts_with("xocl/"), address_bits == 32, "{what}");
        assert_eq!(
            as_u64(&info(device, CL_DEVICE_ADDRESS_BITS).unwrap()),
            address_bits,
            "{what}"
        );
        assert_eq!(
            as_u64(&info(device, CL_DEVICE_TYPE).unwrap()),
            kind,
            "{what}"
        );
        assert_eq!(
            as_u64(&info(device, CL_DEVICE_PLATFORM).unwrap()),
            platform as u64,
            "{what}"
        );
        // The emulated devices' memory is the host's, behind the processor's caches.
        assert!(
            as_u64(&info(device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE).unwrap()) > 0,
            "{what}"
        );
        assert!(
            as_u64(&info(device, CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE).unwrap()) > 0,
            "{what}"
        );
        assert_eq!(
            as_u64(&info(device, CL_DEVICE_GLOBAL_MEM_CACHE_TYPE).unwrap()),
            u64::from(CL_READ_WRITE_CACHE),
            "{what}"
        );
        assert!(
            as_u64(&info(device, CL_DEVICE_LOCAL_MEM_SIZE).unwrap()) >= 32 << 10,
            "{what}"
        );
        assert_eq!(
            info(device, CL_DEVICE_PRINTF_BUFFER_SIZE).map(|b| b.len()),
            Ok(size_of::<usize>()),
            "{what}"
        );
        assert_eq!(
            info(device, CL_DEVICE_HALF_FP_CONFIG).map(|b| as_u64(&b)),
            Ok(0),
            "{what}"
        );
    }

    // A context is one platform's.
    let mut code = CL_SUCCESS;
    let mixed = [everything[0], card[0]];
    let context = create_context(
        std::ptr::null(),
        2,
        mixed.as_ptr(),
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut code,
    );
    assert!(context.is_null());
    assert_eq!(code, CL_INVALID_DEVICE);
    let on_xilinx = [CL_CONTEXT_PLATFORM, xilinx as isize, 0];
    let context = create_context(
        on_xilinx.as_ptr(),
        1,
        everything.as_ptr(),
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut code,
    );
    assert!(context.is_null());
    assert_eq!(code, CL_INVALID_DEVICE);
    let context = create_from_type(
        on_xilinx.as_ptr(),
        CL_DEVICE_TYPE_ACCELERATOR,
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut code,
    );
    assert_eq!(code, CL_SUCCESS);
    assert_eq!(release_context(context), CL_SUCCESS);
    let context = create_from_type(
        on_xilinx.as_ptr(),
        CL_DEVICE_TYPE_CPU,
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut code,
    );
    assert!(context.is_null());
    assert_eq!(code, CL_DEVICE_NOT_FOUND);

    // Contexts at once on the AFU in dedicated mode, which takes one open at a time: the
    // process's contexts share the device's open, and a context made after they all went
    // opens it again.
    let dedicated = everything[3];
    assert_eq!(device_name(dedicated), "cxl/emu:capi0.1d");
    for _ in 0..2 {
        let contexts: Vec<*mut c_void> = (0..3)
            .map(|_| {
                let context = create_context(
                    std::ptr::null(),
                    1,
                    &dedicated,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    &mut code,
                );
                assert_eq!(code, CL_SUCCESS);
                context
            })
            .collect();
        for context in contexts {
            assert_eq!(release_context(context), CL_SUCCESS);
        }
    }

    // The compiler-unload hint, for each platform; a pointer that is none is refused.
    assert_eq!(unload(accelhost), CL_SUCCESS);
    assert_eq!(unload(xilinx), CL_SUCCESS);
    let not_a_platform = [0usize; 4];
    assert_eq!(
        unload(not_a_platform.as_ptr().cast_mut().cast()),
        CL_INVALID_PLATFORM
    );
    Outcome::Passed
}

/// `tests/c/xcl2_host.c`: a Vitis OpenCL host's way to its card (the platform named exactly
/// `Xilinx`, its accelerator devices) and to compute units by name (`vadd:{vadd_1}`), over
/// the ICD loader: vadd through each unit exact, and a unit the image lacks refused with
/// `CL_INVALID_KERNEL_NAME` and a message naming the units it has.
fn an_xcl2_host_finds_the_xilinx_platform_and_runs_vadd_by_compute_unit() -> Outcome {
    let report = match c_checks("xcl2_host", &["vadd.xclbin", "1048576"]) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains(
            "vadd of 1048576 elements on xocl/emu:xocl0 through vadd:{vadd_1} and vadd:{vadd_2}: 0 mismatches"
        ),
        "{report}"
    );
    assert!(
        report.contains(
            "clCreateKernel: the program's image has no compute unit 'vadd_9' of kernel 'vadd' (its units: vadd_1, vadd_2)"
        ),
        "{report}"
    );
    Outcome::Passed
}

/// The freshest libaccelhost_opencl.so of this profile: `cargo test` builds it in
/// target/<profile>/deps, `cargo build` in target/<profile>.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let name = "libaccelhost_opencl.so";
    [deps.join(name), deps.parent().unwrap().join(name)]
        .into_iter()
        .filter_map(|path| {
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            Some((modified, path))
        })
        .max_by_key(|(modified, _): &(SystemTime, _)| *modified)
        .map(|(_, path)| path)
        .expect("cargo test builds the library beside this test")
}

/// `clinfo` through the ICD loader lists the platform and, under it, the devices the library
/// itself lists on the same (embedded default) config: the accelerators of offload plugins
/// that make queues (not the dfl port, whose plugin answers `unsupported`).
fn clinfo_lists_the_platform_and_the_librarys_offload_devices() -> Outcome {
    let dir = scratch("clinfo");
    let clinfo = |args: &[&str]| {
        Command::new("clinfo")
            .args(args)
            .current_dir(&dir)
            .env("OCL_ICD_VENDORS", library())
            .env_remove("ACCELHOST_CONFIG")
            .env_remove("ACCELHOST_ENDPOINT")
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("HOME", &dir)
            .output()
    };
    let listed = match clinfo(&["-l"]) {
        Ok(out) => out,
        Err(err) => return missing(format!("clinfo is not installed (Debian's clinfo): {err}")),
    };
    let listed_text = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success(), "{listed_text}");

    let host = accelhost::Host::builder()
        .config(accelhost::config::Config::embedded_default())
        .build()
        .unwrap();
    let offload: Vec<String> = host
        .plugins()
        .into_iter()
        .filter(|p| p.capabilities.contains(&"offload"))
        .map(|p| p.name)
        .collect();
    let expected: Vec<String> = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .filter(|t| t.properties().object_type == accelhost::ObjectType::Accelerator)
        .filter(|t| offload.iter().any(|p| p == t.plugin()))
        .filter(|t| {
            let handle = host.open(t, accelhost::OpenMode::Shared).unwrap();
            handle.create_queue().is_ok()
        })
        .map(|t| t.id())
        .collect();
    assert!(!expected.is_empty());
    // The accelhost platform's devices, the XRT card (which holds memory of its own) ahead of
    // the CAPI AFUs (which work on host memory only), each rank in the library's order; then
    // the XRT card on the Xilinx platform.
    let (mut first, mut last): (Vec<String>, Vec<String>) = expected
        .iter()
        .cloned()
        .partition(|id| !id.starts_with("cxl/"));
    first.append(&mut last);
    let cards: Vec<String> = first
        .iter()
        .filter(|id| id.starts_with("xocl/"))
        .cloned()
        .collect();
    let on = |platform: &str| -> Vec<&str> {
        listed_text
            .split("Platform #")
            .filter(|block| {
                block
                    .split_once(": ")
                    .is_some_and(|(_, rest)| rest.lines().next() == Some(platform))
            })
            .flat_map(|block| block.lines())
            .filter_map(|line| line.split_once("Device #").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_once(": ").map(|(_, name)| name.trim()))
            .collect()
    };
    assert!(
        listed_text.starts_with("Platform #0: accelhost"),
        "{listed_text}"
    );
    assert!(listed_text.contains("Platform #1: Xilinx"), "{listed_text}");
    assert_eq!(on("accelhost"), first, "{listed_text}");
    assert_eq!(on("Xilinx"), cards, "{listed_text}");

    let full = clinfo(&[]).unwrap();
    let text = String::from_utf8_lossy(&full.stdout);
    for line in [
        "Platform Version                                OpenCL 3.0 accelhost",
        "Platform Extensions                             cl_khr_icd",
        "Platform Extensions function suffix             ACCELHOST",
        "Device Type                                     CPU",
        "Device Type                                     Accelerator",
        "Platform Name                                   Xilinx",
        "Compiler Available                              Yes",
    ] {
        assert!(text.contains(line), "no '{line}' in:\n{text}");
    }
    // A program of a context is built for its card, so every device answers alike.
    for line in [
        "Compiler Available                              No",
        "Linker Available                                No",
    ] {
        assert!(!text.contains(line), "'{line}' in:\n{text}");
    }
    // clinfo's "NULL platform behavior" creates contexts through the loader.
    for line in [
        "clCreateContext(NULL, ...) [default]            Success [ACCELHOST]",
        "clCreateContextFromType(NULL, CL_DEVICE_TYPE_DEFAULT)  Success (1)",
        "clCreateContextFromType(NULL, CL_DEVICE_TYPE_GPU)  No devices found in platform",
    ] {
        assert!(text.contains(line), "no '{line}' in:\n{text}");
    }

    // ACCELHOST_OPENCL_DEVICE_TYPE makes the accelhost platform's devices custom ones (or
    // accelerators); a value that is none of the three is said, and they stay CPU devices.
    let types = |value: &str| {
        let out = Command::new("clinfo")
            .args(["--raw"])
            .current_dir(&dir)
            .env("OCL_ICD_VENDORS", library())
            .env_remove("ACCELHOST_CONFIG")
            .env_remove("ACCELHOST_ENDPOINT")
            .env("ACCELHOST_OPENCL_DEVICE_TYPE", value)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("HOME", &dir)
            .output()
            .unwrap();
        let kinds: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|line| line.contains("CL_DEVICE_TYPE "))
            .map(|line| line.split_whitespace().last().unwrap_or("").to_string())
            .collect();
        (kinds, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (kinds, _) = types("custom");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.as_str() == "CL_DEVICE_TYPE_CUSTOM")
            .count(),
        first.len(),
        "{kinds:?}"
    );
    let (kinds, errors) = types("fpga");
    assert_eq!(
        kinds
            .iter()
            .filter(|k| k.as_str() == "CL_DEVICE_TYPE_CPU")
            .count(),
        first.len(),
        "{kinds:?}"
    );
    assert!(
        errors.contains("ACCELHOST_OPENCL_DEVICE_TYPE is 'fpga', not cpu, accelerator or custom"),
        "{errors}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// Runs `program` in `dir` against the platform: the ICD loader told to load this build's
/// library, and no config of the user's (the embedded default unless `config` is given).
fn against_platform(program: &Path, args: &[&str], dir: &Path, config: Option<&Path>) -> Output {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .env("OCL_ICD_VENDORS", library())
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_ENDPOINT")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir);
    if let Some(config) = config {
        command.env("ACCELHOST_CONFIG", config);
    }
    command
        .output()
        .unwrap_or_else(|err| panic!("running {}: {err}", program.display()))
}

/// Compiles `tests/c/<name>.c` against the system's OpenCL headers and ICD loader.
fn compile(name: &str, dir: &Path) -> Result<PathBuf, Outcome> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let exe = dir.join(name);
    let out = match Command::new("cc")
        .args(["-std=c11", "-pthread", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&source)
        .arg("-lOpenCL")
        .output()
    {
        Ok(out) => out,
        Err(err) => return Err(missing(format!("no C compiler (cc): {err}"))),
    };
    if !out.status.success() {
        let errors = String::from_utf8_lossy(&out.stderr);
        if errors.contains("CL/cl.h: No such file") || errors.contains("cannot find -lOpenCL") {
            return Err(missing(format!(
                "no OpenCL headers or ICD loader to link (Debian's ocl-icd-opencl-dev): {errors}"
            )));
        }
        panic!("{name}.c does not compile:\n{errors}");
    }
    Ok(exe)
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Vitis hello-world host flow in C: buffers on the host's memory, migrations, a task,
/// profiling, on 16 Mi elements of the vadd image `accelhost xclbin build` writes.
fn a_vitis_style_c_host_runs_vadd_from_an_xclbin() -> Outcome {
    let dir = scratch("vadd-host");
    let exe = match compile("vadd_host", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let out = against_platform(&exe, &["vadd.xclbin", "16777216"], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains(
            "vadd of 16777216 elements on xocl/emu:xocl0: 0 mismatches, status 0, profiled"
        ),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// Runs the C checks of `tests/c/<name>.c` (one `ok:`/`FAILED:` line each, then `N failed`)
/// with `vadd.xclbin` beside them; the report, once every check held.
fn c_checks(name: &str, args: &[&str]) -> Result<String, Outcome> {
    let dir = scratch(&name.replace('_', "-"));
    let exe = compile(name, &dir)?;
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let out = against_platform(&exe, args, &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    assert!(report.contains("\n0 failed"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(report)
}

/// User events in C (`tests/c/user_events.c`): commands held back behind them, in order,
/// across queues, failed by an error status, waited for by blocking calls and clFinish.
fn commands_behind_user_events_wait_and_run_in_order() -> Outcome {
    match c_checks("user_events", &[]) {
        Ok(_) => Outcome::Passed,
        Err(outcome) => outcome,
    }
}

/// Sub-buffers in C (`tests/c/sub_buffers.c`): reads, writes, copies, maps and vadd's
/// arguments at their origin, their information, and the rules that refuse them.
fn sub_buffers_are_regions_of_their_parent_at_their_origin() -> Outcome {
    match c_checks("sub_buffers", &["vadd.xclbin"]) {
        Ok(report) => {
            assert!(
                report.contains("vadd on sub-buffers: 0 mismatches of 2048"),
                "{report}"
            );
            Outcome::Passed
        }
        Err(outcome) => outcome,
    }
}

/// The XRT card's largest allocation in C (`tests/c/buffer_limits.c`), under the default
/// config and with 8 GiB of DMA memory granted: all the card's memory while it is below
/// 4 GiB, then what a 32-bit kernel's memory holds beside the kernel's own; one byte more is
/// CL_INVALID_BUFFER_SIZE for a buffer and a USM allocation.
fn the_largest_allocation_is_what_the_card_holds_and_its_kernels_address() -> Outcome {
    let dir = scratch("buffer-limits");
    let exe = match compile("buffer_limits", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let figures = |config: Option<&Path>| {
        let out = against_platform(&exe, &[], &dir, config);
        let report = text(&out);
        assert!(out.status.success(), "{report}");
        assert!(report.contains("\n0 failed"), "{report}");
        let figure = |label: &str| -> u64 {
            report
                .lines()
                .find_map(|line| line.strip_prefix(label))
                .and_then(|rest| rest.trim().parse().ok())
                .unwrap_or_else(|| panic!("no '{label}' in:\n{report}"))
        };
        let figures = (
            figure("address bits "),
            figure("global memory "),
            figure("largest allocation "),
        );
        (figures, report)
    };
    // Each refusal says on stderr what the limit is and where it comes from.
    let refusal = |report: &str, largest: u64, why: &str| {
        let said = format!(
            "clCreateBuffer: {} bytes are more than the device's largest allocation \
             (CL_DEVICE_MAX_MEM_ALLOC_SIZE), {largest} bytes: {why}",
            largest + 1
        );
        assert!(report.contains(&said), "no '{said}' in:\n{report}");
    };
    let ((bits, global, largest), report) = figures(None);
    assert_eq!(bits, 32);
    assert_eq!(largest, global, "below 4 GiB, all of the card's memory");
    refusal(&report, largest, "its plugin's grants.dma_memory_mib");

    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    let card = config["plugins"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|plugin| plugin["name"] == "xocl")
        .expect("the embedded default has the XRT card's plugin");
    card["grants"]["dma_memory_mib"] = serde_json::json!(8192);
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let ((bits, global, largest), report) = figures(Some(&path));
    assert_eq!((bits, global), (32, 8 << 30));
    assert_eq!(largest, (4 << 30) - (128 << 20));
    refusal(
        &report,
        largest,
        "a 32-bit kernel's memory, less what the kernel keeps for itself",
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// Launches without events in C (`tests/c/queued_launches.c`): held back and sent in
/// batches, in order, by every later command, clFlush, clFinish and the queue's release; a
/// failure on the device is clFinish's error.
fn launches_without_events_go_in_batches_in_order_and_report_failures() -> Outcome {
    match c_checks("queued_launches", &["vadd.xclbin"]) {
        Ok(report) => {
            assert!(report.contains("clFinish after it: -"), "{report}");
            Outcome::Passed
        }
        Err(outcome) => outcome,
    }
}

/// Rectangular reads, writes and copies in C (`tests/c/rect_transfers.c`).
fn rectangular_transfers_place_rows_by_their_pitches() -> Outcome {
    match c_checks("rect_transfers", &[]) {
        Ok(_) => Outcome::Passed,
        Err(outcome) => outcome,
    }
}

/// The first Python of `environment`'s (tests/support/install-python.sh `environment`: its
/// `ACCELHOST_<ENVIRONMENT>_HOME`, else `~/.cache/accelhost-<environment>`) and `others` that
/// imports `modules`.
fn python_importing(environment: &str, others: &[&str], modules: &str) -> Option<PathBuf> {
    let variable = format!(
        "ACCELHOST_{}_HOME",
        environment.to_uppercase().replace('-', "_")
    );
    let home = std::env::var_os(variable).map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(format!(".cache/accelhost-{environment}")))
    });
    home.map(|home| home.join("bin/python"))
        .into_iter()
        .chain(others.iter().map(PathBuf::from))
        .find(|python| {
            Command::new(python)
                .args(["-c", &format!("import {modules}")])
                .output()
                .is_ok_and(|out| out.status.success())
        })
}

/// The Python with PyOpenCL and dpctl: tests/support/install-python.sh opencl-python's
/// environment, or `python3` if that has them.
fn opencl_python() -> Option<PathBuf> {
    python_importing("opencl-python", &["python3"], "pyopencl, dpctl, numpy")
}

/// The Python of the dpnp environment (tests/support/install-python.sh dpnp-python), if dpnp
/// imports there.
fn dpnp_python() -> Option<PathBuf> {
    python_importing("dpnp-python", &[], "dpnp, dpctl, numpy")
}

/// tests/python/dpnp_basic.py: a NumPy-style program over SYCL, unmodified, on the card: its
/// arrays made and computed there by dpnp's own kernels (SPIR-V the SYCL runtime builds in a
/// context of every device of the platform), against NumPy's answers.
fn dpnp_computes_on_the_card_as_numpy_does() -> Outcome {
    let Some(python) = dpnp_python() else {
        return missing(
            "dpnp is not installed (tests/support/install-python.sh dpnp-python)".into(),
        );
    };
    if let Some(why) = no_clang() {
        return missing(why);
    }
    if !accelhost::xclbin::kernels::translates_spirv() {
        return missing(format!(
            "no SPIR-V translator ({} does not run; {})",
            accelhost::xclbin::kernels::spirv_translator_program().to_string_lossy(),
            accelhost::xclbin::kernels::SPIRV_HINT
        ));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/dpnp_basic.py");
    // dpnp brings Intel's OpenCL runtime, whose Khronos ICD loader reads OCL_ICD_FILENAMES.
    let report = python_on_the_card_with(
        &python,
        "dpnp",
        &script,
        &[],
        &[("OCL_ICD_FILENAMES", library())],
    );
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    Outcome::Passed
}

const NO_PYTHON: &str =
    "PyOpenCL and dpctl are not installed (tests/support/install-python.sh opencl-python)";

/// PyOpenCL, as its users write it.
fn pyopencl_copies_64_mib_and_runs_vadd_byte_exact() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    let dir = scratch("pyopencl");
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/vadd.py");
    let script = script.to_str().unwrap();
    let out = against_platform(&python, &[script, "vadd.xclbin"], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains(
            "copied 64 MiB through xocl/emu:xocl0; vadd of 16777216 elements: 0 mismatches"
        ),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// Why OpenCL C cannot be built here: no clang that builds for wasm32.
fn no_clang() -> Option<String> {
    let found = Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    (!found).then(|| "no clang to build OpenCL C with (apt-get install clang lld wasi-libc)".into())
}

/// Runs a PyOpenCL `script` with `args` against the platform, on a card whose kernel
/// launches end after 300 ms, with PyOpenCL's cache of built programs and the sources it
/// saves of failed builds in the scratch folder.
fn python_on_the_card(python: &Path, label: &str, script: &Path, args: &[&str]) -> String {
    python_on_the_card_with(python, label, script, args, &[])
}

/// [`python_on_the_card`] with `env` set too.
fn python_on_the_card_with(
    python: &Path,
    label: &str,
    script: &Path,
    args: &[&str],
    env: &[(&str, PathBuf)],
) -> String {
    let dir = scratch(label);
    let config = door::config_with_kernel_deadline(&dir, 300);
    let mut command = Command::new(python);
    command
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .env("OCL_ICD_VENDORS", library())
        .env("ACCELHOST_CONFIG", &config)
        .env_remove("ACCELHOST_ENDPOINT")
        .env_remove("PYOPENCL_CTX")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("HOME", &dir)
        .env("TMPDIR", &dir)
        .envs(env.iter().map(|(key, value)| (key, value)));
    let out = command.output().unwrap();
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
    report
}

/// tests/python/source.py: OpenCL C built for the XRT card with the system's clang, over
/// 1-D and 2-D NDRanges with offsets and local sizes, scalars of each kind, the refusals
/// (syntax, includes by path or through a macro, barrier, __local arguments) with what they
/// say, an endless kernel ended at the card's deadline, three programs alive at once
/// whose kernels run in turns, and programs compiled apart and linked (a function defined
/// twice or nowhere fails the link, and says so).
fn opencl_c_from_source_runs_over_its_ndrange_and_refuses_what_it_cannot() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    if let Some(why) = no_clang() {
        return missing(why);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/source.py");
    let report = python_on_the_card(&python, "source", &script, &[]);
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    for said in [
        "duplicate symbol: scaled",
        "not defined by the program (or the programs linked) and not provided by the devices \
         yet: scaled",
    ] {
        assert!(report.contains(said), "the link says {said:?}: {report}");
    }
    Outcome::Passed
}

/// tests/python/spirv.py: SPIR-V through `clCreateProgramWithIL`, from dpctl's own test files
/// (OpenCL C's, and the SYCL compiler's local-accessor kernels of ten element types) over the
/// SYCL runtime, and from OpenCL C that clang and LLVM's translator compile here, through
/// PyOpenCL; kernels that try to leave their arguments fail their launches alone.
fn spirv_programs_run_through_dpctl_and_pyopencl_and_stray_kernels_fail_alone() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    if let Some(why) = no_clang() {
        return missing(why);
    }
    let translator = accelhost::xclbin::kernels::spirv_translator_program();
    if !accelhost::xclbin::kernels::translates_spirv() {
        return missing(format!(
            "no SPIR-V translator ({} does not run; {})",
            translator.to_string_lossy(),
            accelhost::xclbin::kernels::SPIRV_HINT
        ));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/spirv.py");
    let translator = translator.to_string_lossy();
    let report = python_on_the_card(&python, "spirv", &script, &["clang", &translator]);
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    for said in [
        "clCreateProgramWithIL: the SPIR-V program cannot run on the card: SPIR-V 1.6: these \
         devices take SPIR-V 1.0, 1.1, 1.2, 1.3, 1.4",
        "launch of from_an_integer on xocl/emu:xocl0",
        "launch of through_generic on xocl/emu:xocl0",
    ] {
        assert!(report.contains(said), "the door says {said:?}: {report}");
    }
    Outcome::Passed
}

/// tests/c/kept_build.c, three processes on the compile cache the harness shares: the
/// first builds its program from source (clang, through a wrapper that logs each run,
/// compiles it); the second, with the same source and options, takes the build the first
/// kept (clang only preprocesses it and names its own headers' folder); the third, with
/// another `-D` value, is built anew, but links the runtime and reads the precompiled
/// OpenCL header that an earlier process made and kept. Each checks its kernel's results.
fn a_program_built_from_source_is_kept_for_the_next_process() -> Outcome {
    if let Some(why) = no_clang() {
        return missing(why);
    }
    let dir = scratch("kept-build");
    let exe = match compile("kept_build", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let log = dir.join("clang.log");
    let wrapper = dir.join("clang-logged");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec clang \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // A step no earlier run of the suite built: the first build cannot be a kept one.
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let step = (std::process::id() ^ nanos) % 1_000_000;
    let run = |step: u32| -> Vec<String> {
        let before = std::fs::read_to_string(&log).unwrap_or_default();
        let out = Command::new(&exe)
            .arg(step.to_string())
            .current_dir(&dir)
            .env("OCL_ICD_VENDORS", library())
            .env("ACCELHOST_CLANG", &wrapper)
            .env_remove("ACCELHOST_CONFIG")
            .env_remove("ACCELHOST_ENDPOINT")
            .output()
            .unwrap();
        let report = text(&out);
        assert!(out.status.success(), "{report}");
        assert!(report.contains("\n0 failed"), "{report}");
        let after = std::fs::read_to_string(&log).unwrap_or_default();
        after[before.len()..].lines().map(str::to_owned).collect()
    };
    let compiled = |runs: &[String]| runs.iter().any(|r| r.contains("-emit-llvm"));
    let first = run(step);
    assert!(
        compiled(&first),
        "the first build ran no compile: {first:#?}"
    );
    let second = run(step);
    assert!(
        !compiled(&second),
        "the second process compiled its program again: {second:#?}"
    );
    assert!(
        second
            .iter()
            .all(|r| r.contains(" -E ") || r == "-print-resource-dir"),
        "the second process ran clang for more than preprocessing: {second:#?}"
    );
    let third = run(step + 1);
    assert!(
        compiled(&third),
        "another -D value took the kept build: {third:#?}"
    );
    assert!(
        !third.iter().any(|r| r.contains("runtime.c")),
        "a new build in a new process compiled the runtime, which an earlier process kept: \
         {third:#?}"
    );
    assert!(
        !third.iter().any(|r| r.contains("-x cl-header")),
        "a new build in a new process precompiled the OpenCL header, which an earlier \
         process kept: {third:#?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// PyOpenCL's own examples/demo.py, unmodified (from its sdist, beside its tests): a vadd
/// built from source on the first device PyOpenCL picks, the XRT card, checked by NumPy.
fn pyopencls_demo_runs_unmodified_from_source() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    if let Some(why) = no_clang() {
        return missing(why);
    }
    let demo = python
        .parent()
        .and_then(Path::parent)
        .map(|home| home.join("pyopencl-examples/demo.py"))
        .unwrap_or_default();
    if !demo.is_file() {
        return missing(format!(
            "no PyOpenCL examples in {} (tests/support/install-python.sh opencl-python)",
            demo.display()
        ));
    }
    let report = python_on_the_card(&python, "demo", &demo, &[]);
    assert!(report.contains("Norm: 0.0000000000000000e+00"), "{report}");
    Outcome::Passed
}

/// PyOpenCL with an xclbin built from tests/kernels/mmult.cpp: a Vitis-style matrix
/// multiply equal to NumPy's at three sizes, and an endless kernel whose event fails at the
/// card's deadline in between.
fn pyopencl_runs_a_kernel_of_its_own_from_an_xclbin() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    let image = match door::kernel_image("mmult.cpp", &["mmult", "forever"]) {
        Ok(image) => image,
        Err(outcome) => return outcome,
    };
    let dir = scratch("mmult");
    std::fs::write(dir.join("mmult.xclbin"), image).unwrap();
    let config = door::config_with_kernel_deadline(&dir, 300);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mmult.py");
    let out = against_platform(
        &python,
        &[script.to_str().unwrap(), "mmult.xclbin"],
        &dir,
        Some(&config),
    );
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "mmult 64x64: 0 mismatches",
        "mmult 17x17: 0 mismatches",
        "forever ended with status -",
        "compute unit 1 (forever:forever_1): the kernel ran past its deadline",
        "mmult 33x33 after it: 0 mismatches",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// The chaos plugin traps in mem-alloc: clCreateBuffer returns an error code (the plugin is
/// stopped, not the program), and a copy through the XRT card then comes back exact. The
/// plugin's texts carry terminal attacks, which the platform's stderr lines make inert.
fn a_faulting_plugin_is_an_opencl_error_and_the_program_goes_on() -> Outcome {
    let dir = scratch("fault");
    let exe = match compile("fault_host", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    config["plugins"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "chaos",
            "module": "builtin:chaos",
            "config": {"trap_in": "mem-alloc", "evil_text": true},
            "load_policy": {"on_fault": "disable"}
        }));
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = against_platform(&exe, &[], &dir, Some(&path));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("clCreateBuffer on the faulting plugin: -5 (NULL)"),
        "{report}"
    );
    assert!(
        report.contains("then a copy through the XRT card: exact"),
        "{report}"
    );
    assert!(
        report.contains("plugin 'chaos' faulted in mem-alloc"),
        "{report}"
    );
    // The plugin hides control sequences in every text it chooses (its panic message on
    // stderr among them): none reaches the application's terminal.
    let errors = String::from_utf8_lossy(&out.stderr);
    let active: Vec<char> = errors
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
        .collect();
    assert!(active.is_empty(), "{active:?} on stderr: {report}");
    assert!(
        errors.contains("pwned"),
        "the plugin's text reached stderr: {report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

type CreateQueue = extern "C" fn(*mut c_void, *mut Device, u64, *mut cl_int) -> *mut c_void;
type CreateBuffer = extern "C" fn(*mut c_void, u64, usize, *mut c_void, *mut cl_int) -> *mut c_void;
type Transfer = extern "C" fn(
    *mut c_void,
    *mut c_void,
    cl_bool,
    usize,
    usize,
    *mut c_void,
    cl_uint,
    *const *mut c_void,
    *mut *mut c_void,
) -> cl_int;

/// Four threads, each with its own context, queue and buffer on the XRT card, write and read
/// back 1 MiB eight times at once; every copy is exact, and every handle is gone after its
/// release (the shared table of handles is what they contend on).
fn threads_copy_through_their_own_contexts_at_once() -> Outcome {
    let mut platform: *mut Platform = std::ptr::null_mut();
    assert_eq!(
        clIcdGetPlatformIDsKHR(1, &mut platform, std::ptr::null_mut()),
        CL_SUCCESS
    );
    let object = platform.cast::<c_void>();
    // SAFETY: the slots' signatures, in cl_icd.h's order.
    let (get_device_ids, get_device_info) = unsafe {
        (
            slot::<GetDeviceIds>(object, 2),
            slot::<GetDeviceInfo>(object, 3),
        )
    };
    let mut devices = [std::ptr::null_mut(); 16];
    let mut count = 0;
    let status = get_device_ids(
        platform,
        CL_DEVICE_TYPE_ALL,
        16,
        devices.as_mut_ptr(),
        &mut count,
    );
    assert_eq!(status, CL_SUCCESS);
    let card = devices[..count as usize]
        .iter()
        .copied()
        .find(|device| {
            let mut vendor: cl_uint = 0;
            let status = get_device_info(
                *device,
                CL_DEVICE_VENDOR_ID,
                4,
                (&raw mut vendor).cast(),
                std::ptr::null_mut(),
            );
            status == CL_SUCCESS && vendor == 0x10ee
        })
        .expect("the embedded default has the XRT card") as usize;
    let threads: Vec<_> = (0..4u8)
        .map(|thread| {
            std::thread::spawn(move || {
                let card = card as *mut Device;
                let object = card.cast::<c_void>();
                // SAFETY: the slots' signatures, in cl_icd.h's order.
                let (create_context, create_queue, create_buffer, read, write) = unsafe {
                    (
                        slot::<CreateContext>(object, 4),
                        slot::<CreateQueue>(object, 9),
                        slot::<CreateBuffer>(object, 14),
                        slot::<Transfer>(object, 48),
                        slot::<Transfer>(object, 49),
                    )
                };
                // SAFETY: as above.
                let (release_context, release_queue, release_mem, retain_context) = unsafe {
                    (
                        slot::<Release>(object, 7),
                        slot::<Release>(object, 11),
                        slot::<Release>(object, 18),
                        slot::<Release>(object, 6),
                    )
                };
                for round in 0..8u8 {
                    let mut code = CL_SUCCESS;
                    let context = create_context(
                        std::ptr::null(),
                        1,
                        &card,
                        std::ptr::null(),
                        std::ptr::null_mut(),
                        &mut code,
                    );
                    assert_eq!(code, CL_SUCCESS);
                    let queue = create_queue(context, card, 0, &mut code);
                    assert_eq!(code, CL_SUCCESS);
                    let buffer = create_buffer(
                        context,
                        CL_MEM_READ_WRITE,
                        1 << 20,
                        std::ptr::null_mut(),
                        &mut code,
                    );
                    assert_eq!(code, CL_SUCCESS);
                    let data: Vec<u8> = (0..1usize << 20)
                        .map(|i| (i as u8).wrapping_mul(thread + 3).wrapping_add(round))
                        .collect();
                    let mut back = vec![0u8; 1 << 20];
                    let none = std::ptr::null();
                    let no_event = std::ptr::null_mut();
                    let wrote = write(
                        queue,
                        buffer,
                        CL_TRUE,
                        0,
                        1 << 20,
                        data.as_ptr().cast_mut().cast(),
                        0,
                        none,
                        no_event,
                    );
                    let read = read(
                        queue,
                        buffer,
                        CL_TRUE,
                        0,
                        1 << 20,
                        back.as_mut_ptr().cast(),
                        0,
                        none,
                        no_event,
                    );
                    assert_eq!((wrote, read), (CL_SUCCESS, CL_SUCCESS));
                    assert!(
                        back == data,
                        "thread {thread}, round {round}: the copy changed"
                    );
                    assert_eq!(release_mem(buffer), CL_SUCCESS);
                    assert_eq!(release_queue(queue), CL_SUCCESS);
                    assert_eq!(release_context(context), CL_SUCCESS);
                    assert_eq!(
                        retain_context(context),
                        CL_INVALID_CONTEXT,
                        "a released context is gone"
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    Outcome::Passed
}

/// dpctl over the SYCL runtime's Unified Runtime loader, which reaches the platform through
/// its OpenCL adapter: the devices are SYCL devices, and device, host and shared unified
/// shared memory each carry 64 MiB through a SYCL queue and back.
fn dpctl_round_trips_64_mib_of_usm_through_a_sycl_queue() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    let dir = scratch("dpctl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/usm.py");
    let out = against_platform(&python, &[script.to_str().unwrap()], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "SYCL devices on the OpenCL backend: xocl/emu:xocl0, cxl/emu:capi0.0m, cxl/emu:capi0.0s, cxl/emu:capi0.1d",
        "device USM, 64 MiB through the queue: exact",
        "host USM, 64 MiB through the queue: exact",
        "shared USM, 64 MiB through the queue: exact",
        "device USM, 1 MiB set through the queue: exact",
    ] {
        assert!(report.contains(line), "no '{line}' in {report}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// dpctl's default SYCL device is the XRT card (the first of the accelhost platform, which
/// holds memory of its own), and on it and on every other device of the OpenCL backend (the
/// CAPI AFUs, whose memory is the host's) 8 MiB of USM go host to device, device to device
/// and device to host byte-exact (`tests/python/default_device.py`).
fn dpctls_default_device_and_every_other_copy_usm_both_ways_and_between() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    let dir = scratch("dpctl-default");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/default_device.py");
    let out = against_platform(&python, &[script.to_str().unwrap()], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "default SYCL device: xocl/emu:xocl0 (opencl, cpu)",
        "the default queue's device: xocl/emu:xocl0",
        "default device, 8 MiB host to device, device to device, device to host: exact",
        "cxl/emu:capi0.0m (opencl:cpu:1), the same: exact",
        "cxl/emu:capi0.1d (opencl:cpu:3), the same: exact",
    ] {
        assert!(report.contains(line), "no '{line}' in {report}");
    }
    assert!(!report.contains("changed"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// dpctl's own test modules (its wheel carries them) for platforms, devices, contexts,
/// queues, events, USM and memcpy, and for programs from OpenCL C and SPIR-V and the kernels
/// submitted from them, run with pytest against the platform.
const DPCTL_TEST_MODULES: [&str; 12] = [
    "test_sycl_platform.py",
    "test_sycl_device.py",
    "test_sycl_context.py",
    "test_sycl_queue.py",
    "test_sycl_event.py",
    "test_sycl_usm.py",
    "test_sycl_queue_memcpy.py",
    "test_sycl_program.py",
    "test_sycl_kernel_submit.py",
    "test_work_group_memory.py",
    "test_work_group_memory_opencl.py",
    "test_raw_kernel_arg.py",
];

/// The tests of [`DPCTL_TEST_MODULES`] that cannot pass on the platform, and why: nothing
/// else may fail.
const DPCTL_TESTS_THAT_NEED_WHAT_THE_PLATFORM_LACKS: [(&str, &str); 2] = [
    (
        "test_sycl_queue.py::test_cython_api",
        "builds a Cython extension (Cython and dpctl's headers and a C++ compiler)",
    ),
    (
        "test_sycl_usm.py::test_memory_copy_between_contexts",
        "partitions the 'cpu' device into sub-devices by counts, as Intel's CPU runtime \
         can: the devices have one compute unit and no partitions",
    ),
];

/// dpctl's own tests of [`DPCTL_TEST_MODULES`] pass against the platform, but those that
/// need a Cython build or sub-devices
/// ([`DPCTL_TESTS_THAT_NEED_WHAT_THE_PLATFORM_LACKS`]); over a thousand run.
fn dpctls_own_tests_of_devices_queues_usm_programs_and_kernels_pass() -> Outcome {
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    let found = Command::new(&python)
        .args([
            "-c",
            "import os, dpctl.tests, pytest; print(os.path.dirname(dpctl.tests.__file__))",
        ])
        .output()
        .unwrap();
    if !found.status.success() {
        return missing(format!(
            "pytest or dpctl's tests are not installed beside dpctl \
             (tests/support/install-python.sh opencl-python): {}",
            String::from_utf8_lossy(&found.stderr)
        ));
    }
    let tests = PathBuf::from(String::from_utf8_lossy(&found.stdout).trim());
    let dir = scratch("dpctl-suite");
    let mut args = vec![
        "-m".to_string(),
        "pytest".to_string(),
        "-q".to_string(),
        "-p".to_string(),
        "no:cacheprovider".to_string(),
        "-rfE".to_string(),
        format!("--basetemp={}", dir.join("pytest").display()),
    ];
    args.extend(
        DPCTL_TEST_MODULES
            .iter()
            .map(|module| tests.join(module).display().to_string()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = against_platform(&python, &args, &dir, None);
    let report = text(&out);
    let unexpected: Vec<&str> = report
        .lines()
        .filter(|line| line.starts_with("FAILED ") || line.starts_with("ERROR "))
        .filter(|line| {
            !DPCTL_TESTS_THAT_NEED_WHAT_THE_PLATFORM_LACKS
                .iter()
                .any(|(test, _)| line.contains(&format!("/dpctl/tests/{test}")))
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "unexpected failures {unexpected:#?} in {report}"
    );
    let passed = report
        .lines()
        .rev()
        .find_map(|line| {
            let (before, _) = line.split_once(" passed")?;
            before.rsplit(' ').next()?.parse::<u32>().ok()
        })
        .unwrap_or_else(|| panic!("no pytest summary in {report}"));
    assert!(passed >= 1000, "only {passed} passed: {report}");
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// PyOpenCL's own test suite (`test/` of its release's sdist, which
/// `tests/support/install-python.sh opencl-python` unpacks into `pyopencl-tests` beside the
/// environment) on every device of both platforms, through `tests/python/pyopencl_suite.py`:
/// every test passes (those that build OpenCL C on the XRT card, with the system's clang),
/// or is skipped by the suite, or builds OpenCL C on a device that runs no kernels of a
/// program's own, or fails for a reason the script names; none fails otherwise. The two
/// modules that build hundreds of programs run with the compiler hidden
/// ([`pyopencls_whole_suite_with_the_card_building_every_kernel`] runs them with it).
fn pyopencls_own_suite_passes_with_the_card_building_its_kernels() -> Outcome {
    pyopencl_suite(false)
}

/// [`pyopencls_own_suite_passes_with_the_card_building_its_kernels`] with every module
/// building its kernels: about seven minutes on two cores, so it runs only when
/// `ACCELHOST_PYOPENCL_WHOLE=1` asks.
fn pyopencls_whole_suite_with_the_card_building_every_kernel() -> Outcome {
    if std::env::var_os("ACCELHOST_PYOPENCL_WHOLE").is_none_or(|v| v != "1") {
        return Outcome::Skipped(
            "the whole suite builds some 600 programs, about seven minutes on two cores: \
             ACCELHOST_PYOPENCL_WHOLE=1 runs it"
                .into(),
        );
    }
    pyopencl_suite(true)
}

/// Runs PyOpenCL's suite through `tests/python/pyopencl_suite.py` (every module building its
/// kernels when `whole`) and checks its summary.
fn pyopencl_suite(whole: bool) -> Outcome {
    // The least that pass: of all the tests, and of those on the XRT card.
    let (passed_at_least, on_the_card_at_least) = if whole { (435, 315) } else { (240, 125) };
    let Some(python) = opencl_python() else {
        return missing(NO_PYTHON.into());
    };
    if let Some(why) = no_clang() {
        return missing(why);
    }
    let home = python
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let tests = home.join("pyopencl-tests");
    if !tests.join("test_wrapper.py").is_file() {
        return missing(format!(
            "no PyOpenCL test suite in {} (tests/support/install-python.sh opencl-python)",
            tests.display()
        ));
    }
    let dir = scratch("pyopencl-suite");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/pyopencl_suite.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(&tests)
        .arg(&dir)
        .args(whole.then_some("--whole"))
        .current_dir(&dir)
        .env("OCL_ICD_VENDORS", library())
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_ENDPOINT")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("HOME", &dir)
        // PyOpenCL saves the source of each program that fails to build in the temporary
        // folder: the scratch one, removed below.
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    let report = text(&out);
    let summary = report
        .lines()
        .find(|line| line.starts_with("PyOpenCL's suite: "))
        .unwrap_or_else(|| panic!("no summary in {report}"));
    assert!(out.status.success(), "{summary}\n{report}");
    assert!(summary.contains(", 0 failed otherwise"), "{summary}");
    let passed: u32 = summary
        .trim_start_matches("PyOpenCL's suite: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let on_the_card: u32 = summary
        .split_once(" passed (")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= passed_at_least, "{summary}");
    assert!(on_the_card >= on_the_card_at_least, "{summary}");
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// Runs `tests/c/liar.c` in `mode` (with `args`) over the chaos plugin telling `lies`; its
/// report once it exited by itself (no signal) with every check held, and the plugin's worst
/// case.
fn liar(exe: &Path, mode: &str, args: &[&str], lies: &[&str]) -> (String, u64) {
    let dir = scratch(&format!("liar-{mode}-{}", lies.join("-")));
    let (config, worst_case) = door::config_with_liar(&dir, lies, serde_json::json!({}));
    let mut all = vec![mode];
    all.extend_from_slice(args);
    let out = against_platform(exe, &all, &dir, Some(&config));
    let report = text(&out);
    assert!(
        out.status.code().is_some(),
        "{mode}: ended by a signal: {report}"
    );
    assert!(out.status.success(), "{mode}: {report}");
    assert!(report.contains("\n0 failed"), "{mode}: {report}");
    std::fs::remove_dir_all(&dir).unwrap();
    (report, worst_case)
}

/// A plugin that lies about memory, ids and time, under an OpenCL program through the ICD
/// loader: a USM allocation shorter than asked, an id given twice and an event that never
/// completes are each an OpenCL error (the last within the event deadline plus 5 s), a
/// program that keeps 200,000 events the plugin failed with messages of their own holds no
/// more than the plugin's worst case plus 32 MiB beyond honest events, and a copy through
/// the XRT card in the same process is exact after each.
fn a_lying_plugin_is_an_opencl_error_and_the_program_goes_on() -> Outcome {
    let dir = scratch("liar");
    let exe = match compile("liar", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let (report, _) = liar(&exe, "short", &[], &["short-buffer"]);
    assert!(
        report.contains("2 MiB of host memory from the liar: NULL"),
        "{report}"
    );
    assert!(report.contains("a lie about memory"), "{report}");
    let (report, _) = liar(&exe, "repeat", &[], &["repeat-id"]);
    assert!(report.contains("a lie about id"), "{report}");
    let (report, _) = liar(&exe, "pending", &[], &["pending-events"]);
    let waited = door::figure(&report, "clWaitForEvents returned")
        .and_then(|_| {
            report
                .lines()
                .find(|l| l.starts_with("clWaitForEvents returned"))
                .and_then(|l| l.split(" after ").nth(1))
                .and_then(|rest| rest.trim_end_matches(" ms").parse::<f64>().ok())
        })
        .unwrap_or_else(|| panic!("no wait time in:\n{report}"));
    assert!(
        waited < (door::LIAR_EVENT_DEADLINE_MS + 5000) as f64,
        "waited {waited} ms:\n{report}"
    );
    assert!(report.contains("load_policy.event_deadline_ms"), "{report}");
    let count = door::KEPT_EVENTS.to_string();
    let (lied, worst_case) = liar(&exe, "kept", &[&count], &["failed-events"]);
    let (honest, _) = liar(&exe, "kept", &[&count], &[]);
    // Every command that did not do its work is an error the program sees: its event's
    // status, and the queue's clFinish.
    assert!(
        lied.contains(&format!(
            "clFinish returned -5; {count} events with an error status"
        )),
        "{lied}"
    );
    assert!(
        honest.contains("clFinish returned 0; 0 events with an error status"),
        "{honest}"
    );
    door::check_kept(&lied, &honest, worst_case);
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// A buffer released, then buffers made until one could land on its handle: none does, the
/// old handle is `CL_INVALID_MEM_OBJECT` for every call, and the newest buffer is untouched.
fn a_released_handle_stays_an_error_whatever_is_made_after() -> Outcome {
    let dir = scratch("stale");
    let exe = match compile("liar", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let (report, _) = liar(&exe, "stale", &[], &[]);
    assert!(report.contains("one has its handle: no"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}
