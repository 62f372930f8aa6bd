//! Where an effective address lands for the emulated AFUs: inside a buffer the context
//! attached, or, for a context of this process's own program (libcxl's door), in the
//! process's memory at that very address. Process memory is reached with
//! `process_vm_readv`/`process_vm_writev` on this process, so an unmapped address fails the
//! access (a data-storage fault for the context) instead of crashing the host.

use std::io;
use std::sync::Arc;

use crate::devices::{DmaMemory, errno};

/// Bytes a copy through process memory moves at a time.
const CHUNK: usize = 64 * 1024;

/// The memory behind an effective address range, from its first byte.
#[derive(Clone)]
pub(super) enum Span {
    /// `offset` bytes into an attached buffer.
    Buffer(Arc<DmaMemory>, u64),
    /// This process's memory at the virtual address.
    Process(u64),
}

/// Which side of a two-sided access could not be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Source,
    Destination,
}

impl Span {
    /// Fills `out` from `at` bytes into the span.
    pub(super) fn read(&self, at: u64, out: &mut [u8]) -> io::Result<()> {
        match self {
            Span::Buffer(memory, offset) => memory
                .read(offset + at, out)
                .map_err(|_| errno(libc::EFAULT)),
            Span::Process(address) => process_read(address + at, out),
        }
    }

    /// Writes `data` at `at` bytes into the span.
    pub(super) fn write(&self, at: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Span::Buffer(memory, offset) => memory
                .write(offset + at, data)
                .map_err(|_| errno(libc::EFAULT)),
            Span::Process(address) => process_write(address + at, data),
        }
    }

    /// Stores the big-endian `value` at `at` so that whoever sees it sees every earlier write.
    pub(super) fn store_be_u64(&self, at: u64, value: u64) -> io::Result<()> {
        if let Span::Buffer(memory, offset) = self
            && memory.store_u64(offset + at, value.swap_bytes()).is_ok()
        {
            return Ok(());
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        self.write(at, &value.to_be_bytes())
    }
}

/// Copies `len` bytes from `src` to `dst`.
pub(super) fn copy(dst: &Span, src: &Span, len: u64) -> Result<(), Side> {
    if let (Span::Buffer(to, to_at), Span::Buffer(from, from_at)) = (dst, src) {
        return to
            .copy_from(*to_at, from, *from_at, len)
            .map_err(|_| Side::Destination);
    }
    let mut bounce = vec![0u8; CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let step = (len - done).min(CHUNK as u64) as usize;
        let chunk = &mut bounce[..step];
        src.read(done, chunk).map_err(|_| Side::Source)?;
        dst.write(done, chunk).map_err(|_| Side::Destination)?;
        done += step as u64;
    }
    Ok(())
}

/// Which of a three-way access's spans could not be reached: 0 and 1 the inputs, 2 the output.
pub(super) type Which = usize;

/// Writes `f(a[i], b[i])` to `out[i]` for `words` 4-byte words.
pub(super) fn zip_words(
    out: &Span,
    a: &Span,
    b: &Span,
    words: u64,
    f: impl Fn([u8; 4], [u8; 4]) -> [u8; 4],
) -> Result<(), Which> {
    if let (Span::Buffer(c, c_at), Span::Buffer(x, x_at), Span::Buffer(y, y_at)) = (out, a, b) {
        return c
            .zip_words_from(*c_at, (x, *x_at), (y, *y_at), words, f)
            .map_err(|_| 2);
    }
    let chunk_words = (CHUNK / 4) as u64;
    let mut left = vec![0u8; CHUNK];
    let mut right = vec![0u8; CHUNK];
    let mut done = 0u64;
    while done < words {
        let step = (words - done).min(chunk_words);
        let bytes = (step * 4) as usize;
        let at = done * 4;
        a.read(at, &mut left[..bytes]).map_err(|_| 0usize)?;
        b.read(at, &mut right[..bytes]).map_err(|_| 1usize)?;
        let (outputs, _) = left[..bytes].as_chunks_mut::<4>();
        let (inputs, _) = right[..bytes].as_chunks::<4>();
        for (x, y) in outputs.iter_mut().zip(inputs) {
            *x = f(*x, *y);
        }
        out.write(at, &left[..bytes]).map_err(|_| 2usize)?;
        done += step;
    }
    Ok(())
}

/// Reads this process's memory at `address`; an unmapped or unreadable byte fails with
/// `EFAULT`.
fn process_read(address: u64, out: &mut [u8]) -> io::Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: out.as_mut_ptr().cast(),
        iov_len: out.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: out.len(),
    };
    // SAFETY: `local` is `out`, writable for its length; the kernel checks `remote` and fails
    // rather than fault on memory this process cannot read.
    let moved = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    finished(moved, out.len())
}

/// Writes `data` into this process's memory at `address`; an unmapped or read-only byte
/// fails with `EFAULT`.
fn process_write(address: u64, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: `local` is only read; the kernel checks `remote` as for reads.
    let moved = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    finished(moved, data.len())
}

fn finished(moved: isize, wanted: usize) -> io::Result<()> {
    if moved < 0 {
        Err(io::Error::last_os_error())
    } else if moved as usize != wanted {
        Err(errno(libc::EFAULT))
    } else {
        Ok(())
    }
}

/// A page this process may not touch (`PROT_NONE`), reserved until dropped so that no other
/// mapping takes its address meanwhile: what a program's stray pointer gives an AFU.
#[cfg(test)]
pub(super) struct NoAccessPage(u64);

#[cfg(test)]
impl NoAccessPage {
    pub(super) fn new() -> Self {
        // SAFETY: a fresh anonymous mapping nothing else refers to.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(page, libc::MAP_FAILED);
        NoAccessPage(page as u64)
    }

    pub(super) fn address(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
impl Drop for NoAccessPage {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, which only this value names.
        unsafe { libc::munmap(self.0 as *mut libc::c_void, 4096) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_spans_read_and_write_this_process() {
        let mut target = vec![1u8, 2, 3, 4, 5, 6, 7, 8];
        let span = Span::Process(target.as_mut_ptr() as u64);
        let mut out = [0u8; 4];
        span.read(2, &mut out).unwrap();
        assert_eq!(out, [3, 4, 5, 6]);
        span.write(4, &[9, 9]).unwrap();
        assert_eq!(target, [1, 2, 3, 4, 9, 9, 7, 8]);
    }

    #[test]
    fn an_inaccessible_address_is_an_error_not_a_crash() {
        let page = NoAccessPage::new();
        let span = Span::Process(page.address());
        let mut out = [0u8; 8];
        assert_eq!(
            span.read(0, &mut out).unwrap_err().raw_os_error(),
            Some(libc::EFAULT)
        );
        assert_eq!(
            span.write(0, &out).unwrap_err().raw_os_error(),
            Some(libc::EFAULT)
        );
        let mut data = vec![7u8; 100];
        let good = Span::Process(data.as_mut_ptr() as u64);
        assert_eq!(copy(&good, &span, 8), Err(Side::Source));
        assert_eq!(copy(&span, &good, 8), Err(Side::Destination));
    }

    #[test]
    fn copies_and_zips_cross_chunks() {
        let len = CHUNK * 2 + 12;
        let src: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; len];
        copy(
            &Span::Process(dst.as_mut_ptr() as u64),
            &Span::Process(src.as_ptr() as u64),
            len as u64,
        )
        .unwrap();
        assert_eq!(src, dst);
        let words = (len / 4) as u64;
        let mut sum = vec![0u8; len];
        zip_words(
            &Span::Process(sum.as_mut_ptr() as u64),
            &Span::Process(src.as_ptr() as u64),
            &Span::Process(dst.as_ptr() as u64),
            words,
            |x, y| (u32::from_be_bytes(x).wrapping_add(u32::from_be_bytes(y))).to_be_bytes(),
        )
        .unwrap();
        let (sums, _) = sum.as_chunks::<4>();
        let (inputs, _) = src.as_chunks::<4>();
        for (word, input) in sums.iter().zip(inputs) {
            let x = u32::from_be_bytes(*input);
            assert_eq!(u32::from_be_bytes(*word), x.wrapping_add(x));
        }
    }
}
