//! The OpenCL platform end to end: its dispatch table and constants against the system's
//! Khronos headers (compiled with the C compiler), its answers to bad input called directly,
//! and `clinfo` through Debian's ICD loader listing the devices the library lists. A test
//! that needs a tool that is missing (a C compiler, the headers, `clinfo`) is reported
//! ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

#[path = "../../tests/support/harness.rs"]
mod harness;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use accelhost_opencl::cl::*;
use accelhost_opencl::{
    CONSTANTS, Device, Platform, SLOT_NAMES, clGetExtensionFunctionAddress, clGetPlatformInfo,
    clIcdGetPlatformIDsKHR,
};
use harness::{Outcome, Trial};

fn main() -> std::process::ExitCode {
    harness::run(&[
        Trial {
            name: "the_dispatch_table_and_constants_match_the_system_headers",
            run: the_dispatch_table_and_constants_match_the_system_headers,
        },
        Trial {
            name: "bad_input_gets_opencl_errors_and_nothing_is_written",
            run: bad_input_gets_opencl_errors_and_nothing_is_written,
        },
        Trial {
            name: "clinfo_lists_the_platform_and_the_librarys_offload_devices",
            run: clinfo_lists_the_platform_and_the_librarys_offload_devices,
        },
    ])
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
    assert_eq!(count, 1);

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
    for query in [
        CL_DEVICE_TYPE_ACCELERATOR,
        CL_DEVICE_TYPE_CUSTOM,
        CL_DEVICE_TYPE_DEFAULT,
    ] {
        let mut again = 0;
        let status = get_device_ids(platform, query, count, devices.as_mut_ptr(), &mut again);
        assert_eq!((status, again), (CL_SUCCESS, count), "type {query:#x}");
    }
    let mut kind: cl_device_type = 0;
    let status = get_device_info(
        devices[0],
        CL_DEVICE_TYPE,
        8,
        (&raw mut kind).cast(),
        std::ptr::null_mut(),
    );
    assert_eq!((status, kind), (CL_SUCCESS, CL_DEVICE_TYPE_CUSTOM));
    let not_a_device = [0usize; 4];
    let status = get_device_info(
        not_a_device.as_ptr().cast_mut().cast(),
        CL_DEVICE_TYPE,
        8,
        (&raw mut kind).cast(),
        std::ptr::null_mut(),
    );
    assert_eq!(status, CL_INVALID_DEVICE);

    // Not implemented yet: NULL and CL_INVALID_OPERATION, not a crash.
    let mut code = CL_SUCCESS;
    let context = create_context(
        std::ptr::null(),
        1,
        devices.as_ptr(),
        std::ptr::null(),
        std::ptr::null_mut(),
        &mut code,
    );
    assert!(context.is_null());
    assert_eq!(code, CL_INVALID_OPERATION);
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
/// itself lists on the same (embedded default) config: the accelerators of offload plugins.
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
        .map(|t| t.id())
        .collect();
    assert!(!expected.is_empty());
    let devices: Vec<&str> = listed_text
        .lines()
        .filter_map(|line| line.split_once("Device #").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once(": ").map(|(_, name)| name.trim()))
        .collect();
    assert!(
        listed_text.starts_with("Platform #0: accelhost"),
        "{listed_text}"
    );
    assert_eq!(devices, expected, "{listed_text}");

    let full = clinfo(&[]).unwrap();
    let text = String::from_utf8_lossy(&full.stdout);
    for line in [
        "Platform Version                                OpenCL 3.0 accelhost",
        "Platform Extensions                             cl_khr_icd",
        "Platform Extensions function suffix             ACCELHOST",
        "Device Type                                     Custom",
        "Compiler Available                              No",
    ] {
        assert!(text.contains(line), "no '{line}' in:\n{text}");
    }
    let errors = String::from_utf8_lossy(&full.stderr);
    assert!(
        errors.contains("clCreateContext is not implemented by this platform"),
        "{errors}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}
