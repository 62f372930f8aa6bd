//! Programs from device images (an xclbin, checked by the library before any plugin sees
//! it) and their kernels by name, with the argument layout launches read: the image's
//! metadata lists each argument's kind and size, and the packed argument data lays them out
//! in order, each at an offset aligned to its size (as a C struct of them would be).

use std::ffi::c_void;
use std::sync::Arc;

use accelhost::xclbin::{ArgKind, KernelArg};
use accelhost::{Arg, ErrorCode};

use accelhost_door::handles::Object;

use crate::handles::of;
use crate::memory::{Allocation, find};
use crate::result::{OlRes, fail, failed};
use crate::state::Device;
use crate::types::*;

/// A program loaded on a device.
pub struct Program {
    pub device: &'static Device,
    program: accelhost::Program,
    /// The kernels the image describes, with their arguments by index.
    kernels: Vec<(String, Vec<KernelArg>)>,
}

impl Object for Program {
    const KIND: &'static str = "ol_program";
}

/// A kernel of a program.
pub struct Kernel {
    pub program: Arc<Program>,
    pub kernel: accelhost::Kernel,
    args: Option<Vec<KernelArg>>,
}

impl Object for Kernel {
    const KIND: &'static str = "ol_symbol";
}

/// An argument as a launch passes it: what it holds until the launch is enqueued.
pub enum Value {
    Memory(Arc<Allocation>, u64),
    Bytes(Vec<u8>),
}

impl Value {
    /// The library's argument.
    pub fn arg(&self) -> Arg<'_> {
        match self {
            Value::Memory(allocation, offset) => Arg::MemoryAt(&allocation.memory, *offset),
            Value::Bytes(bytes) => match bytes.len() {
                4 => Arg::U32(u32::from_ne_bytes(bytes[..].try_into().unwrap())),
                8 => Arg::U64(u64::from_ne_bytes(bytes[..].try_into().unwrap())),
                _ => Arg::Bytes(bytes),
            },
        }
    }
}

impl Program {
    /// The program of a live handle.
    pub fn of(handle: *mut c_void) -> OlRes<Arc<Program>> {
        if handle.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the program is NULL"));
        }
        of::<Program>(handle, OL_ERRC_INVALID_ARGUMENT)
    }

    /// Loads `image` on `device`.
    pub fn create(device: &'static Device, image: &[u8]) -> OlRes<Program> {
        let program = device
            .handle
            .create_program(image)
            .map_err(|err| failed(&err))?;
        let kernels = accelhost::xclbin::parse(image)
            .map(|image| {
                image
                    .kernels
                    .into_iter()
                    .map(|kernel| {
                        let mut args = kernel.args;
                        args.sort_by_key(|arg| arg.index);
                        (kernel.name, args)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Program {
            device,
            program,
            kernels,
        })
    }

    /// Kernel `name`; `OL_ERRC_INVALID_KERNEL_NAME` when the program has none.
    pub fn kernel(self: &Arc<Program>, name: &str) -> OlRes<Kernel> {
        let kernel = self.program.kernel(name).map_err(|err| match err.code() {
            ErrorCode::NotFound | ErrorCode::InvalidArgument => {
                fail(OL_ERRC_INVALID_KERNEL_NAME, err.to_string())
            }
            _ => failed(&err),
        })?;
        let args = self
            .kernels
            .iter()
            .find(|(kernel, _)| kernel == name)
            .map(|(_, args)| args.clone());
        Ok(Kernel {
            program: self.clone(),
            kernel,
            args,
        })
    }
}

impl Kernel {
    /// The kernel of a live handle.
    pub fn of(handle: *mut c_void) -> OlRes<Arc<Kernel>> {
        if handle.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the kernel is NULL"));
        }
        of::<Kernel>(handle, OL_ERRC_INVALID_ARGUMENT)
    }

    /// The arguments in `data`, laid out as the metadata says; a buffer argument is an
    /// address inside an allocation of the kernel's device.
    pub fn arguments(&self, data: &[u8]) -> OlRes<Vec<Value>> {
        let args = self.args.as_ref().ok_or_else(|| {
            fail(
                OL_ERRC_UNSUPPORTED_FEATURE,
                format!(
                    "the program does not describe kernel {}'s arguments",
                    self.kernel.name()
                ),
            )
        })?;
        let mut at = 0usize;
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            let size = arg.size as usize;
            at = at.next_multiple_of(size.clamp(1, 8));
            let bytes = data.get(at..at + size).ok_or_else(|| {
                fail(
                    OL_ERRC_INVALID_SIZE,
                    format!(
                        "argument {} ({}) lies at {at}..{}, past the {} bytes of argument data",
                        arg.index,
                        arg.name,
                        at + size,
                        data.len()
                    ),
                )
            })?;
            values.push(match arg.kind {
                ArgKind::Global => {
                    let mut word = [0u8; 8];
                    word[..size.min(8)].copy_from_slice(&bytes[..size.min(8)]);
                    let address = u64::from_ne_bytes(word) as usize;
                    let (allocation, offset) = find(self.program.device, address, 1).ok_or_else(|| {
                        fail(
                            OL_ERRC_INVALID_ARGUMENT,
                            format!(
                                "argument {} ({}) is {address:#x}, not in an allocation of the device",
                                arg.index, arg.name
                            ),
                        )
                    })?;
                    Value::Memory(allocation, offset)
                }
                // A local argument's value is its byte count.
                ArgKind::Scalar | ArgKind::Local => Value::Bytes(bytes.to_vec()),
            });
            at += size;
        }
        Ok(values)
    }
}
