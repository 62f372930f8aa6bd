//! Kernels (`xrtKernelHandle`) of the loaded xclbin, by name, with the arguments its
//! metadata describes: a run needs each argument's kind and size to take C varargs, and
//! `group_id` answers from the image's connectivity which bank an argument uses.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use accelhost::xclbin::{ArgKind, IpEntry, IpKind, KernelArg};

use crate::device::{Device, Loaded, read_uuid};
use crate::error::text;
use accelhost_door::compute_units;
use accelhost_door::handles::Object;

use crate::error::{XrtResult, answer, failed, handle, refuse, status};
use crate::handles::{close, of, publish};

/// A kernel opened on a device.
pub struct Kernel {
    pub device: Arc<Device>,
    loaded: Arc<Loaded>,
    pub kernel: accelhost::Kernel,
    /// Its arguments, by index.
    pub args: Vec<KernelArg>,
    /// The instance names of the compute units the program named (`vadd:{vadd_2}`), in its
    /// order; empty for all of the kernel's.
    units: Vec<String>,
}

impl Object for Kernel {
    const KIND: &'static str = "kernel";
}

impl Kernel {
    /// The kernel of a live handle.
    pub fn of(call: &str, kernel: *mut c_void) -> XrtResult<Arc<Kernel>> {
        of::<Kernel>(call, kernel)
    }

    /// The uuid of the xclbin the kernel was opened in.
    pub fn xclbin_uuid(&self) -> accelhost::Guid {
        self.loaded.image.uuid
    }

    /// Argument `index` as the metadata describes it.
    pub fn arg(&self, call: &str, index: c_int) -> XrtResult<&KernelArg> {
        self.args
            .iter()
            .find(|arg| i64::from(arg.index) == i64::from(index))
            .ok_or_else(|| {
                refuse(
                    call,
                    libc::EINVAL,
                    format!(
                        "kernel {} has no argument {index} (it has {})",
                        self.kernel.name(),
                        self.args.len()
                    ),
                )
            })
    }

    /// The bank argument `index` of the kernel's first compute unit is connected to: of the
    /// first the program named, if it named any (each may have banks of its own, as in
    /// Vitis' multiple_cus_asymmetrical_xrt; the plugin runs a run on the units connected to
    /// its buffers' banks).
    fn group_id(&self, call: &str, index: c_int) -> XrtResult<u32> {
        let arg = self.arg(call, index)?;
        if arg.kind != ArgKind::Global {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!(
                    "argument {index} ({}) is not a buffer: it has no memory group",
                    arg.name
                ),
            ));
        }
        let image = &self.loaded.image;
        let name = self.kernel.name();
        let named = |ip: &IpEntry| self.units.iter().position(|u| u == ip.instance_name());
        let mut cus: Vec<&IpEntry> = image
            .ips
            .iter()
            .filter(|ip| ip.kind == IpKind::Kernel && ip.kernel_name() == name)
            .filter(|ip| self.units.is_empty() || named(ip).is_some())
            .collect();
        // Stable: the image's order when the program named none.
        cus.sort_by_key(|ip| named(ip));
        cus.into_iter()
            .find_map(|cu| {
                image
                    .connectivity
                    .iter()
                    .find(|c| c.ip_index == cu.index && c.arg_index == arg.index)
            })
            .map(|connection| connection.bank_index)
            .ok_or_else(|| {
                refuse(
                    call,
                    libc::ENOENT,
                    format!("the xclbin connects argument {index} of {name} to no memory bank"),
                )
            })
    }
}

fn open(
    call: &str,
    device: *mut c_void,
    uuid: *const u8,
    name: *const c_char,
) -> XrtResult<*mut c_void> {
    let device = Device::of(call, device)?;
    let uuid = read_uuid(call, uuid)?;
    // SAFETY: the name argument is NULL or a NUL-terminated string.
    let name = unsafe { text(call, "the kernel name", name) }?;
    let loaded = device.loaded(call)?;
    if loaded.image.uuid != uuid {
        return Err(refuse(
            call,
            libc::EINVAL,
            format!("the device runs xclbin {}, not {uuid}", loaded.image.uuid),
        ));
    }
    // `name:{cu,...}` picks compute units: each must be one of the kernel's in the image;
    // runs then go to the kernel's units as the plugin schedules them.
    let (name, units) = match compute_units::choice(name) {
        Ok(None) => (name, Vec::new()),
        Ok(Some((kernel, units))) => {
            let of_kernel: Vec<&str> = loaded
                .image
                .compute_units()
                .into_iter()
                .filter(|ip| ip.kernel_name() == kernel)
                .map(|ip| ip.instance_name())
                .collect();
            compute_units::check("the xclbin", kernel, &units, &of_kernel)
                .map_err(|why| refuse(call, libc::ENOENT, why))?;
            (kernel, units.into_iter().map(str::to_string).collect())
        }
        Err(why) => return Err(refuse(call, libc::EINVAL, why)),
    };
    let mut args = loaded
        .image
        .kernels
        .iter()
        .find(|k| k.name == name)
        .map(|k| k.args.clone())
        .ok_or_else(|| {
            refuse(
                call,
                libc::ENOENT,
                format!("the xclbin describes no kernel '{name}'"),
            )
        })?;
    args.sort_by_key(|arg| arg.index);
    let kernel = loaded
        .program
        .kernel(name)
        .map_err(|err| failed(call, &err))?;
    publish(
        call,
        Arc::new(Kernel {
            device,
            loaded,
            kernel,
            args,
            units,
        }),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtPLKernelOpen(
    device: *mut c_void,
    uuid: *const u8,
    name: *const c_char,
) -> *mut c_void {
    const CALL: &str = "xrtPLKernelOpen";
    handle(CALL, || open(CALL, device, uuid, name))
}

/// As [`xrtPLKernelOpen`]: compute units are shared between the runs of this process.
#[unsafe(no_mangle)]
pub extern "C" fn xrtPLKernelOpenExclusive(
    device: *mut c_void,
    uuid: *const u8,
    name: *const c_char,
) -> *mut c_void {
    const CALL: &str = "xrtPLKernelOpenExclusive";
    handle(CALL, || open(CALL, device, uuid, name))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtKernelClose(kernel: *mut c_void) -> c_int {
    const CALL: &str = "xrtKernelClose";
    status(CALL, || close::<Kernel>(CALL, kernel))
}

/// The memory group (bank) of argument `index`; -1 with `errno` set when it has none.
#[unsafe(no_mangle)]
pub extern "C" fn xrtKernelArgGroupId(kernel: *mut c_void, index: c_int) -> c_int {
    const CALL: &str = "xrtKernelArgGroupId";
    answer(CALL, -1, || {
        let bank = Kernel::of(CALL, kernel)?.group_id(CALL, index)?;
        Ok(bank as c_int)
    })
}

/// The register offset of argument `index`; `u32::MAX` with `errno` set for a bad one.
#[unsafe(no_mangle)]
pub extern "C" fn xrtKernelArgOffset(kernel: *mut c_void, index: c_int) -> u32 {
    const CALL: &str = "xrtKernelArgOffset";
    answer(CALL, u32::MAX, || {
        Ok(Kernel::of(CALL, kernel)?.arg(CALL, index)?.offset)
    })
}

fn no_registers(call: &str) -> XrtResult<()> {
    Err(refuse(
        call,
        libc::EOPNOTSUPP,
        "a compute unit's registers are the plugin's: the library gives programs no access",
    ))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtKernelReadRegister(
    _kernel: *mut c_void,
    _offset: u32,
    _out: *mut u32,
) -> c_int {
    status("xrtKernelReadRegister", || {
        no_registers("xrtKernelReadRegister")
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtKernelWriteRegister(_kernel: *mut c_void, _offset: u32, _value: u32) -> c_int {
    status("xrtKernelWriteRegister", || {
        no_registers("xrtKernelWriteRegister")
    })
}
