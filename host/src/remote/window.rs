//! A remote device's register window: every access is a call to the node, ended by the
//! plugin's call timeout, and a write first pushes what the application wrote to the mirrored
//! buffers (a register write is what starts device work).

use std::io;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::mirror::Mirrors;
use super::{RemoteFailure, RemoteNode};
use crate::devices::{AccessWidth, MmioWindow};
use crate::error::ErrorCode;

pub(crate) struct RemoteMmio {
    pub(crate) node: Weak<dyn RemoteNode>,
    pub(crate) mirrors: Arc<Mirrors>,
    /// The node's region number.
    pub(crate) region: u64,
    pub(crate) size: u64,
    pub(crate) call_timeout: Duration,
}

impl RemoteMmio {
    fn node(&self) -> io::Result<Arc<dyn RemoteNode>> {
        self.node.upgrade().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotConnected,
                "the session with the node ended; open the device again",
            )
        })
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.call_timeout
    }

    fn read(&self, offset: u64, width: AccessWidth) -> io::Result<u64> {
        let deadline = self.deadline();
        self.node()?
            .mmio_read(self.region, offset, width, deadline)
            .map_err(to_io)
    }

    fn write(&self, offset: u64, width: AccessWidth, value: u64) -> io::Result<()> {
        let node = self.node()?;
        let deadline = self.deadline();
        self.mirrors.doorbell(deadline).map_err(to_io)?;
        node.mmio_write(self.region, offset, width, value, deadline)
            .map_err(to_io)
    }
}

/// A remote failure as an I/O error of the matching kind, keeping the message.
pub(crate) fn to_io(failure: RemoteFailure) -> io::Error {
    let kind = match failure.code {
        ErrorCode::InvalidArgument => io::ErrorKind::InvalidInput,
        ErrorCode::NotFound => io::ErrorKind::NotFound,
        ErrorCode::Busy => io::ErrorKind::ResourceBusy,
        ErrorCode::PermissionDenied => io::ErrorKind::PermissionDenied,
        ErrorCode::Timeout => io::ErrorKind::TimedOut,
        ErrorCode::OutOfMemory => io::ErrorKind::OutOfMemory,
        ErrorCode::Unsupported => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, failure.message)
}

impl MmioWindow for RemoteMmio {
    fn size(&self) -> u64 {
        self.size
    }

    fn read32(&self, offset: u64) -> io::Result<u32> {
        self.read(offset, AccessWidth::Bits32).map(|v| v as u32)
    }

    fn read64(&self, offset: u64) -> io::Result<u64> {
        self.read(offset, AccessWidth::Bits64)
    }

    fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        self.write(offset, AccessWidth::Bits32, value.into())
    }

    fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.write(offset, AccessWidth::Bits64, value)
    }
}
