//! Programs from device images (an xclbin, checked by the library before any plugin sees
//! it) or from SPIR-V (built for the XRT card as OpenCL's `clCreateProgramWithIL` builds it)
//! and their kernels by name, with the argument layout launches read: the image's metadata
//! lists each argument's kind and size, and the packed argument data lays them out in order,
//! each at an offset aligned to its size (as a C struct of them would be). A SPIR-V kernel
//! runs over the launch's work-items; its NDRange arguments come from the launch's sizes.

use std::ffi::c_void;
use std::sync::Arc;

use accelhost::xclbin::kernels::{NDRANGE_ARGS, build_spirv, field_pointer, is_ndrange, is_spirv};
use accelhost::xclbin::{ArgKind, KernelArg, XclbinBuilder};
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

    /// Loads `image` on `device`: a device image, or SPIR-V built into one.
    pub fn create(device: &'static Device, image: &[u8]) -> OlRes<Program> {
        if is_spirv(image) {
            // Built programs are kept in the compile cache the door's host uses.
            let kept = accelhost::ComponentCache::from_env();
            let built = build_spirv(image, "", &[], Some(&kept))
                .map_err(|err| fail(OL_ERRC_INVALID_VALUE, err.to_string()))?;
            let image =
                XclbinBuilder::kernels(built.uuid(), &built.kernels, built.module, 1).build();
            return Self::load(device, &image);
        }
        Self::load(device, image)
    }

    /// Loads the device image `image` on `device`.
    fn load(device: &'static Device, image: &[u8]) -> OlRes<Program> {
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

    /// Whether it runs over a launch's work-items (built from SPIR-V): its last arguments
    /// are the NDRange's, which the launch's sizes give.
    pub fn over_work_items(&self) -> bool {
        self.args.as_ref().is_some_and(|args| {
            is_ndrange(&accelhost::xclbin::KernelMeta {
                name: String::new(),
                args: args.clone(),
            })
        })
    }

    /// The arguments in `data`, laid out as the metadata says (a kernel over work-items
    /// takes its own from `data` and the NDRange's from `sizes`); a buffer argument is an
    /// address inside an allocation of the kernel's device.
    pub fn arguments(&self, data: &[u8], sizes: &LaunchSizeArgs) -> OlRes<Vec<Value>> {
        let args = self.args.as_ref().ok_or_else(|| {
            fail(
                OL_ERRC_UNSUPPORTED_FEATURE,
                format!(
                    "the program does not describe kernel {}'s arguments",
                    self.kernel.name()
                ),
            )
        })?;
        let ndrange = self.over_work_items();
        let own = if ndrange {
            &args[..args.len() - NDRANGE_ARGS.len()]
        } else {
            &args[..]
        };
        // The pointers of structs passed by value follow the kernel's own arguments; each is
        // taken from its struct's bytes.
        let pointers = own
            .iter()
            .position(|arg| field_pointer(&arg.name).is_some())
            .unwrap_or(own.len());
        let (own, struct_pointers) = own.split_at(pointers);
        let mut at = 0usize;
        let mut values = Vec::with_capacity(args.len());
        for arg in own {
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
        for arg in struct_pointers {
            let address = struct_pointer(&values, &arg.name).ok_or_else(|| {
                fail(
                    OL_ERRC_INVALID_ARGUMENT,
                    format!(
                        "argument {} ({}) of kernel {} names no struct's pointer",
                        arg.index,
                        arg.name,
                        self.kernel.name()
                    ),
                )
            })?;
            values.push(if address == 0 {
                Value::Bytes(vec![0; 8])
            } else {
                let (allocation, offset) =
                    find(self.program.device, address, 1).ok_or_else(|| {
                        fail(
                            OL_ERRC_INVALID_ARGUMENT,
                            format!(
                                "a struct's pointer ({}) is {address:#x}, not in an allocation \
                                 of the device",
                                arg.name
                            ),
                        )
                    })?;
                Value::Memory(allocation, offset)
            });
        }
        if ndrange {
            values.extend(ndrange_values(sizes)?);
        }
        Ok(values)
    }
}

/// The address a struct's pointer argument `name` holds, in the struct argument it names
/// among the `values` read so far; `None` when it names no such argument or bytes past it.
fn struct_pointer(values: &[Value], name: &str) -> Option<usize> {
    let (of, offset) = field_pointer(name)?;
    match values.get(of) {
        Some(Value::Bytes(bytes)) => accelhost_door::usm::pointer_in_struct(bytes, offset),
        _ => None,
    }
}

/// The NDRange arguments of a launch of `sizes`: its dimensions, then the global sizes, the
/// group sizes and the offsets (0) of x, y and z, each a 32-bit word.
fn ndrange_values(sizes: &LaunchSizeArgs) -> OlRes<Vec<Value>> {
    let word = |value: usize, what: &str| {
        u32::try_from(value)
            .map(|v| Value::Bytes(v.to_ne_bytes().to_vec()))
            .map_err(|_| {
                fail(
                    OL_ERRC_INVALID_SIZE,
                    format!("{what} is {value}: the card's NDRange sizes are 32-bit"),
                )
            })
    };
    let dimensions = sizes.dimensions;
    let mut values = vec![word(dimensions, "Dimensions")?];
    for d in 0..3 {
        let global = if d < dimensions {
            sizes.num_groups[d].saturating_mul(sizes.group_size[d])
        } else {
            1
        };
        values.push(word(global, "a global size (NumGroups x GroupSize)")?);
    }
    for d in 0..3 {
        values.push(word(
            if d < dimensions {
                sizes.group_size[d]
            } else {
                1
            },
            "a group size",
        )?);
    }
    values.extend((0..3).map(|_| Value::Bytes(0u32.to_ne_bytes().to_vec())));
    Ok(values)
}
