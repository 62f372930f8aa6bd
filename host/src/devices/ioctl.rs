//! ioctl request codes in the two `_IOC` layouts the supported drivers meet, and thin wrappers
//! over `ioctl(2)` that turn a -1 into the errno. Shared by every driver family.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `_IOC_NONE` in the asm-generic layout (x86_64, arm64).
pub const IOC_NONE: u32 = 0;
/// `_IOC_WRITE` (userspace writes, the kernel reads) in the asm-generic layout.
pub const IOC_WRITE: u32 = 1;
/// `_IOC_READ` (the kernel writes) in the asm-generic layout.
pub const IOC_READ: u32 = 2;

/// `_IOC_NONE` in the powerpc layout.
pub const IOC_PPC_NONE: u32 = 1;
/// `_IOC_READ` in the powerpc layout.
pub const IOC_PPC_READ: u32 = 2;
/// `_IOC_WRITE` in the powerpc layout.
pub const IOC_PPC_WRITE: u32 = 4;

/// `_IOC(dir, type, nr, size)` in the asm-generic layout: 2 direction bits at 30, 14 size
/// bits at 16. Out-of-range fields fail const evaluation.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
    assert!(dir < 4 && ty < 256 && nr < 256 && size < 1 << 14);
    (dir << 30) | (size << 16) | (ty << 8) | nr
}

/// `_IOC(dir, type, nr, size)` in the powerpc layout: 3 direction bits at 29, 13 size bits
/// at 16. Out-of-range fields fail const evaluation.
pub const fn ioc_ppc(dir: u32, ty: u32, nr: u32, size: u32) -> u32 {
    assert!(dir < 8 && ty < 256 && nr < 256 && size < 1 << 13);
    (dir << 29) | (size << 16) | (ty << 8) | nr
}

/// Which `_IOC` layout a request code is built in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// asm-generic: x86_64, arm64 and most others.
    Generic,
    /// powerpc (the only real platform for CAPI).
    Powerpc,
}

impl Encoding {
    /// The layout of the target this crate is built for: the one `ioctl(2)` here expects.
    pub const NATIVE: Encoding = if cfg!(any(target_arch = "powerpc", target_arch = "powerpc64")) {
        Encoding::Powerpc
    } else {
        Encoding::Generic
    };

    /// `_IO(ty, nr)`: no argument struct described in the code.
    pub const fn io(self, ty: u32, nr: u32) -> u32 {
        match self {
            Encoding::Generic => ioc(IOC_NONE, ty, nr, 0),
            Encoding::Powerpc => ioc_ppc(IOC_PPC_NONE, ty, nr, 0),
        }
    }

    /// `_IOR(ty, nr, T)`: the kernel writes a `T`.
    pub const fn ior<T>(self, ty: u32, nr: u32) -> u32 {
        match self {
            Encoding::Generic => ioc(IOC_READ, ty, nr, size_arg::<T>()),
            Encoding::Powerpc => ioc_ppc(IOC_PPC_READ, ty, nr, size_arg::<T>()),
        }
    }

    /// `_IOW(ty, nr, T)`: the kernel reads a `T`.
    pub const fn iow<T>(self, ty: u32, nr: u32) -> u32 {
        match self {
            Encoding::Generic => ioc(IOC_WRITE, ty, nr, size_arg::<T>()),
            Encoding::Powerpc => ioc_ppc(IOC_PPC_WRITE, ty, nr, size_arg::<T>()),
        }
    }

    /// `_IOWR(ty, nr, T)`: the kernel reads and writes a `T`.
    pub const fn iowr<T>(self, ty: u32, nr: u32) -> u32 {
        match self {
            Encoding::Generic => ioc(IOC_READ | IOC_WRITE, ty, nr, size_arg::<T>()),
            Encoding::Powerpc => ioc_ppc(IOC_PPC_READ | IOC_PPC_WRITE, ty, nr, size_arg::<T>()),
        }
    }
}

const fn size_arg<T>() -> u32 {
    let size = size_of::<T>();
    assert!(size < 1 << 14);
    size as u32
}

/// `ioctl(fd, request, arg)` for requests whose argument is a pointer; returns the
/// non-negative result, or the errno as an `io::Error`.
///
/// # Safety
/// `arg` must point to a live value of the type and size `request` expects, writable if the
/// kernel writes through it, for the duration of the call.
pub(crate) unsafe fn ioctl_ptr<T>(
    fd: BorrowedFd<'_>,
    request: u32,
    arg: *mut T,
) -> io::Result<i32> {
    // SAFETY: the caller vouches for `arg`; `fd` is open for as long as it is borrowed.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `ioctl(fd, request, arg)` for requests that take their argument by value (never a
/// pointer); returns the non-negative result, or the errno as an `io::Error`.
pub(crate) fn ioctl_val(fd: BorrowedFd<'_>, request: u32, arg: libc::c_ulong) -> io::Result<i32> {
    // SAFETY: the argument is a plain integer, so the kernel dereferences nothing of ours;
    // `fd` is open for as long as it is borrowed.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    const DFL: u32 = 0xB6;
    const CXL: u32 = 0xCA;

    #[test]
    fn generic_codes_match_the_reference() {
        let g = Encoding::Generic;
        assert_eq!(g.io(DFL, 0x41), 0x0000_B641);
        assert_eq!(g.ior::<u32>(DFL, 0x45), 0x8004_B645);
        assert_eq!(g.iow::<[u32; 2]>(DFL, 0x46), 0x4008_B646);
        assert_eq!(g.iow::<[u8; 64]>(CXL, 0x00), 0x4040_CA00);
        assert_eq!(g.ior::<u32>(CXL, 0x01), 0x8004_CA01);
        assert_eq!(g.ior::<[u8; 64]>(CXL, 0x02), 0x8040_CA02);
        assert_eq!(g.iowr::<u64>(0x64, 0x40), 0xC008_6440);
        assert_eq!(ioc(IOC_READ, DFL, 0x45, 4), 0x8004_B645);
    }

    #[test]
    fn powerpc_codes_match_the_reference() {
        let p = Encoding::Powerpc;
        assert_eq!(p.io(DFL, 0x41), 0x2000_B641);
        assert_eq!(p.ior::<u32>(DFL, 0x45), 0x4004_B645);
        assert_eq!(p.iow::<[u32; 2]>(DFL, 0x46), 0x8008_B646);
        assert_eq!(p.iow::<[u8; 64]>(CXL, 0x00), 0x8040_CA00);
        assert_eq!(p.ior::<u32>(CXL, 0x01), 0x4004_CA01);
        assert_eq!(p.ior::<[u8; 64]>(CXL, 0x02), 0x4040_CA02);
        assert_eq!(p.iowr::<u64>(0x64, 0x40), 0xC008_6440);
        assert_eq!(ioc_ppc(IOC_PPC_WRITE, DFL, 0x46, 8), 0x8008_B646);
    }

    #[test]
    fn native_is_generic_off_powerpc() {
        let ppc = cfg!(any(target_arch = "powerpc", target_arch = "powerpc64"));
        assert_eq!(Encoding::NATIVE == Encoding::Powerpc, ppc);
    }

    #[test]
    fn ioctl_ptr_passes_the_pointer_and_returns_the_result() {
        let (reader, mut writer) = io::pipe().unwrap();
        writer.write_all(b"abc").unwrap();
        let mut pending: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int.
        let rc = unsafe { ioctl_ptr(reader.as_fd(), libc::FIONREAD as u32, &mut pending) };
        assert_eq!(rc.unwrap(), 0);
        assert_eq!(pending, 3);
    }

    #[test]
    fn failures_carry_the_raw_errno() {
        let null = std::fs::File::open("/dev/null").unwrap();
        let err = ioctl_val(null.as_fd(), Encoding::NATIVE.io(DFL, 0x40), 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY));
    }
}
