//! What clients read and write as bytes (a DMA buffer or host-visible offload memory), and the
//! node's half of a client's mirror of them: the last content both sides agreed on, and the
//! sync that moves only the pages that changed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use accelhost::{DmaBuffer, ErrorCode, Memory};
use tonic::Status;

use crate::account::DmaCharge;
use crate::proto;
use crate::status::{from_host, status};

/// The granule of a mirror.
pub const PAGE_BYTES: u64 = 4096;

/// What one page adds to a message besides its data: its fields' tags and lengths.
const PAGE_OVERHEAD: usize = 32;

/// Passes over the objects before a sync answers what it has: enough for a device that
/// keeps writing not to hold the call.
const MAX_PASSES: usize = 16;

/// A DMA buffer or offload memory, as bytes.
#[derive(Clone)]
pub enum Data {
    /// A prepared DMA buffer.
    Buffer(Arc<DmaBuffer>),
    /// Offload memory.
    Memory(Memory),
}

impl Data {
    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Data::Buffer(buffer) => buffer.size(),
            Data::Memory(memory) => memory.size(),
        }
    }

    /// What it is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Data::Buffer(_) => "buffer",
            Data::Memory(_) => "memory",
        }
    }

    /// Copies `data` in at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> accelhost::Result<()> {
        match self {
            Data::Buffer(buffer) => buffer.write(offset, data),
            Data::Memory(memory) => memory.write(offset, data),
        }
    }

    /// Copies out `out.len()` bytes at `offset`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> accelhost::Result<()> {
        match self {
            Data::Buffer(buffer) => buffer.read(offset, out),
            Data::Memory(memory) => memory.read(offset, out),
        }
    }

    /// The little-endian word at `offset`.
    pub fn read_u64(&self, offset: u64) -> accelhost::Result<u64> {
        match self {
            Data::Buffer(buffer) => buffer.read_u64(offset),
            Data::Memory(memory) => {
                let mut word = [0u8; 8];
                memory.read(offset, &mut word)?;
                Ok(u64::from_le_bytes(word))
            }
        }
    }
}

/// The content a client and the node last agreed on for one mirrored object.
pub struct Shadow {
    bytes: Vec<u8>,
    _charge: DmaCharge,
}

impl Shadow {
    /// A shadow of `size` zero bytes (what a fresh buffer holds on both sides).
    pub fn new(size: u64, charge: DmaCharge) -> Shadow {
        Shadow {
            bytes: vec![0; size as usize],
            _charge: charge,
        }
    }
}

/// One object of a sync: its number, its bytes and its shadow.
pub struct Mirrored {
    /// The session's number for it.
    pub object: u64,
    /// Its bytes.
    pub data: Data,
    /// What the client last saw.
    pub shadow: Shadow,
}

/// Writes the client's `pushes`, then answers the pages that changed since the last sync, up
/// to `budget` bytes of page data (`more` when it stopped there). Passes repeat until one finds
/// nothing new, so that a page the device wrote after another that was read earlier in the
/// pass is answered too.
pub fn sync(
    mirrored: &mut [Mirrored],
    pushes: Vec<proto::Page>,
    budget: usize,
) -> Result<proto::BufferSyncReply, Status> {
    for page in pushes {
        let target = mirrored
            .iter_mut()
            .find(|m| m.object == page.object)
            .ok_or_else(|| {
                status(
                    ErrorCode::InvalidArgument,
                    format!(
                        "BufferSync: a page of object {} that the request does not list in objects",
                        page.object
                    ),
                )
            })?;
        let range = page_range(target.data.size(), page.offset)
            .filter(|r| r.len() == page.data.len())
            .ok_or_else(|| {
                status(
                    ErrorCode::InvalidArgument,
                    format!(
                        "BufferSync: {} bytes at {:#x} are not a page of the {}-byte {}",
                        page.data.len(),
                        page.offset,
                        target.data.size(),
                        target.data.kind()
                    ),
                )
            })?;
        target
            .data
            .write(page.offset, &page.data)
            .map_err(from_host)?;
        target.shadow.bytes[range].copy_from_slice(&page.data);
    }
    let mut pulls: Vec<proto::Page> = Vec::new();
    let mut index: HashMap<(u64, u64), usize> = HashMap::new();
    let mut used = 0usize;
    let mut page = vec![0u8; PAGE_BYTES as usize];
    for _ in 0..MAX_PASSES {
        let mut found = false;
        for target in mirrored.iter_mut() {
            let size = target.data.size();
            let mut offset = 0;
            while let Some(range) = page_range(size, offset) {
                let n = range.len();
                target
                    .data
                    .read(offset, &mut page[..n])
                    .map_err(from_host)?;
                if page[..n] != target.shadow.bytes[range.clone()] {
                    if used + n + PAGE_OVERHEAD > budget {
                        return Ok(proto::BufferSyncReply { pulls, more: true });
                    }
                    target.shadow.bytes[range].copy_from_slice(&page[..n]);
                    let data = bytes::Bytes::copy_from_slice(&page[..n]);
                    match index.entry((target.object, offset)) {
                        Entry::Occupied(earlier) => pulls[*earlier.get()].data = data,
                        Entry::Vacant(slot) => {
                            used += n + PAGE_OVERHEAD;
                            slot.insert(pulls.len());
                            pulls.push(proto::Page {
                                object: target.object,
                                offset,
                                data,
                            });
                        }
                    }
                    found = true;
                }
                offset += n as u64;
            }
        }
        if !found {
            break;
        }
    }
    Ok(proto::BufferSyncReply { pulls, more: false })
}

/// The bytes of the page at `offset` of a `size`-byte object, if `offset` starts one.
fn page_range(size: u64, offset: u64) -> Option<std::ops::Range<usize>> {
    (offset.is_multiple_of(PAGE_BYTES) && offset < size)
        .then(|| offset as usize..(offset + PAGE_BYTES).min(size) as usize)
}
