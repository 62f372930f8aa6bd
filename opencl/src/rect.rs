//! Rectangular reads, writes and copies: a 3-D region (bytes × rows × slices) at an origin,
//! with row and slice pitches, in a buffer and in host memory. The devices have no 2-D copy
//! engine, so a command moves the bytes from the region's first to its last row in one
//! transfer and places the rows on the host: a write reads that span first when its rows do
//! not cover it, so the bytes between them stay as they were.

use std::ffi::c_void;
use std::sync::Arc;

use crate::cl::*;
use crate::command::{Enqueue, HostAddress};
use crate::error::{ClResult, list, status};
use crate::event::Progress;
use crate::memory::{Buffer, buffer_on};
use crate::queue::Queue;

/// A region at an origin, laid out with a row and a slice pitch.
#[derive(Clone, Copy)]
struct Rect {
    /// The byte offset of its first row.
    base: usize,
    /// Bytes per row, rows per slice, slices.
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
}

impl Rect {
    /// The region at `origin` with `row_pitch` and `slice_pitch` (0: packed), checked as
    /// OpenCL checks them.
    fn new(
        origin: [usize; 3],
        region: [usize; 3],
        row_pitch: usize,
        slice_pitch: usize,
    ) -> ClResult<Rect> {
        let row_pitch = if row_pitch == 0 { region[0] } else { row_pitch };
        let packed_slice = region[1].checked_mul(row_pitch).ok_or(CL_INVALID_VALUE)?;
        let slice_pitch = if slice_pitch == 0 {
            packed_slice
        } else {
            slice_pitch
        };
        if row_pitch < region[0]
            || slice_pitch < packed_slice
            || !slice_pitch.is_multiple_of(row_pitch)
        {
            return Err(CL_INVALID_VALUE);
        }
        let base = origin[2]
            .checked_mul(slice_pitch)
            .and_then(|z| origin[1].checked_mul(row_pitch)?.checked_add(z))
            .and_then(|zy| zy.checked_add(origin[0]))
            .ok_or(CL_INVALID_VALUE)?;
        let rect = Rect {
            base,
            region,
            row_pitch,
            slice_pitch,
        };
        rect.end().ok_or(CL_INVALID_VALUE)?;
        Ok(rect)
    }

    /// One past its last byte.
    fn end(&self) -> Option<usize> {
        (self.region[2] - 1)
            .checked_mul(self.slice_pitch)?
            .checked_add((self.region[1] - 1).checked_mul(self.row_pitch)?)?
            .checked_add(self.region[0])?
            .checked_add(self.base)
    }

    /// The bytes from its first row to its last.
    fn span(&self) -> std::ops::Range<usize> {
        self.base..self.end().expect("checked when made")
    }

    /// Whether its rows cover its span (nothing lies between them).
    fn is_packed(&self) -> bool {
        (self.row_pitch == self.region[0] || self.region[1] == 1)
            && (self.slice_pitch == self.region[1] * self.row_pitch || self.region[2] == 1)
    }

    /// The byte offset of each row, in order.
    fn rows(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.region[2]).flat_map(move |z| {
            (0..self.region[1]).map(move |y| self.base + z * self.slice_pitch + y * self.row_pitch)
        })
    }

    /// Whether a row of `self` and a row of `other` share a byte (both ascend).
    fn overlaps(&self, other: &Rect) -> bool {
        let (a, b) = (self.span(), other.span());
        if a.start >= b.end || b.start >= a.end {
            return false;
        }
        let (mut mine, mut theirs) = (self.rows().peekable(), other.rows().peekable());
        let (width, other_width) = (self.region[0], other.region[0]);
        while let (Some(&x), Some(&y)) = (mine.peek(), theirs.peek()) {
            if x < y + other_width && y < x + width {
                return true;
            }
            if x + width <= y + other_width {
                mine.next();
            } else {
                theirs.next();
            }
        }
        false
    }
}

/// The three sizes at `values`, or `code`.
///
/// # Safety
/// `values` is NULL or points to three sizes.
unsafe fn triple(values: *const usize, code: cl_int) -> ClResult<[usize; 3]> {
    // SAFETY: per the contract above.
    let values = unsafe { list(3, values, code) }?;
    Ok([values[0], values[1], values[2]])
}

/// The region argument: three sizes, none 0.
///
/// # Safety
/// As [`triple`].
unsafe fn region_of(region: *const usize) -> ClResult<[usize; 3]> {
    // SAFETY: per the contract above.
    let region = unsafe { triple(region, CL_INVALID_VALUE) }?;
    if region.contains(&0) {
        return Err(CL_INVALID_VALUE);
    }
    Ok(region)
}

/// Checks that `rect` lies within `buffer`.
fn within(rect: &Rect, buffer: &Buffer) -> ClResult<()> {
    if rect.span().end <= buffer.size() {
        Ok(())
    } else {
        Err(CL_INVALID_VALUE)
    }
}

/// Writes `rows` (one slice of `source` per row of `rect`, `source_rows` giving where each
/// starts in `source`) into `rect` of `buffer`, keeping the bytes between the rows.
fn write_rows(
    queue: &Queue,
    call: &str,
    buffer: &Buffer,
    rect: &Rect,
    source: impl Fn(usize) -> *const u8,
    source_rows: impl Iterator<Item = usize>,
) -> ClResult<Progress> {
    let span = rect.span();
    let mut staging = vec![0u8; span.len()];
    if !rect.is_packed() {
        buffer.read(queue, call, span.start, &mut staging)?;
    }
    for (row, from) in rect.rows().zip(source_rows) {
        let at = row - span.start;
        // SAFETY: `source(from)` holds a row's bytes (the caller's contract), and the row
        // lies within the staging span.
        unsafe {
            std::ptr::copy_nonoverlapping(
                source(from),
                staging.as_mut_ptr().add(at),
                rect.region[0],
            )
        };
    }
    buffer.write(queue, call, span.start, &staging)
}

/// A rectangular read or write, checked: its queue and wait list, its buffer, its region in
/// the buffer and on the host, and the host memory.
struct HostTransfer {
    enqueue: Enqueue,
    buffer: Arc<Buffer>,
    in_buffer: Rect,
    on_host: Rect,
    host: HostAddress,
}

/// Checks the arguments of a rectangular read or write.
///
/// # Safety
/// The entry point's contract: origins and region hold three sizes each (or are NULL), and
/// the wait list `count` handles.
#[allow(clippy::too_many_arguments)]
unsafe fn host_transfer(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_pitches: (usize, usize),
    host_pitches: (usize, usize),
    ptr: *const c_void,
    count: cl_uint,
    wait: *const *mut c_void,
) -> ClResult<HostTransfer> {
    // SAFETY: per the contract above.
    let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
    let buffer = buffer_on(buffer_handle, enqueue.queue())?;
    // SAFETY: per the contract above.
    let (region, at, host_at) = unsafe {
        (
            region_of(region)?,
            triple(buffer_origin, CL_INVALID_VALUE)?,
            triple(host_origin, CL_INVALID_VALUE)?,
        )
    };
    let in_buffer = Rect::new(at, region, buffer_pitches.0, buffer_pitches.1)?;
    let on_host = Rect::new(host_at, region, host_pitches.0, host_pitches.1)?;
    within(&in_buffer, &buffer)?;
    if ptr.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    Ok(HostTransfer {
        enqueue,
        buffer,
        in_buffer,
        on_host,
        host: HostAddress::of(ptr),
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_read_buffer_rect(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    blocking: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueReadBufferRect";
    status(CALL, || {
        // SAFETY: the arguments follow the entry point's contract.
        let transfer = unsafe {
            host_transfer(
                queue_handle,
                buffer_handle,
                buffer_origin,
                host_origin,
                region,
                (buffer_row_pitch, buffer_slice_pitch),
                (host_row_pitch, host_slice_pitch),
                ptr,
                count,
                wait,
            )
        }?;
        let HostTransfer {
            enqueue,
            buffer,
            in_buffer,
            on_host,
            host,
        } = transfer;
        let run = move |queue: &Queue| {
            let span = in_buffer.span();
            let mut staging = vec![0u8; span.len()];
            buffer.read(queue, CALL, span.start, &mut staging)?;
            for (row, to) in in_buffer.rows().zip(on_host.rows()) {
                // SAFETY: the application passes memory holding its host region at ptr.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        staging.as_ptr().add(row - span.start),
                        host.ptr().add(to),
                        in_buffer.region[0],
                    )
                };
            }
            Ok(Progress::Done(Ok(())))
        };
        let command = CL_COMMAND_READ_BUFFER_RECT;
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, command, blocking != CL_FALSE, event, run) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_write_buffer_rect(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    blocking: cl_bool,
    buffer_origin: *const usize,
    host_origin: *const usize,
    region: *const usize,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    ptr: *const c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueWriteBufferRect";
    status(CALL, || {
        // SAFETY: the arguments follow the entry point's contract.
        let transfer = unsafe {
            host_transfer(
                queue_handle,
                buffer_handle,
                buffer_origin,
                host_origin,
                region,
                (buffer_row_pitch, buffer_slice_pitch),
                (host_row_pitch, host_slice_pitch),
                ptr,
                count,
                wait,
            )
        }?;
        let HostTransfer {
            enqueue,
            buffer,
            in_buffer,
            on_host,
            host,
        } = transfer;
        let run = move |queue: &Queue| {
            // SAFETY: the application passes its host region at ptr.
            let source = |offset: usize| unsafe { host.ptr().add(offset).cast_const() };
            write_rows(queue, CALL, &buffer, &in_buffer, source, on_host.rows())
        };
        let command = CL_COMMAND_WRITE_BUFFER_RECT;
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, command, blocking != CL_FALSE, event, run) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_copy_buffer_rect(
    queue_handle: *mut c_void,
    src_handle: *mut c_void,
    dst_handle: *mut c_void,
    src_origin: *const usize,
    dst_origin: *const usize,
    region: *const usize,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueCopyBufferRect";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let src = buffer_on(src_handle, enqueue.queue())?;
        let dst = buffer_on(dst_handle, enqueue.queue())?;
        // SAFETY: origins and region point to three sizes each, or are NULL.
        let (region, from, to) = unsafe {
            (
                region_of(region)?,
                triple(src_origin, CL_INVALID_VALUE)?,
                triple(dst_origin, CL_INVALID_VALUE)?,
            )
        };
        let source = Rect::new(from, region, src_row_pitch, src_slice_pitch)?;
        let target = Rect::new(to, region, dst_row_pitch, dst_slice_pitch)?;
        within(&source, &src)?;
        within(&target, &dst)?;
        if src.same_memory(&dst) {
            let shift = |rect: Rect, buffer: &Buffer| Rect {
                base: rect.base + buffer.origin(),
                ..rect
            };
            if shift(source, &src).overlaps(&shift(target, &dst)) {
                return Err(CL_MEM_COPY_OVERLAP);
            }
        }
        let run = move |queue: &Queue| {
            let span = source.span();
            let mut staging = vec![0u8; span.len()];
            src.read(queue, CALL, span.start, &mut staging)?;
            let rows = source.rows().map(|row| row - span.start);
            // SAFETY: each offset is a row within the staging copy.
            let from = |offset: usize| unsafe { staging.as_ptr().add(offset) };
            write_rows(queue, CALL, &dst, &target, from, rows)
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_COPY_BUFFER_RECT, false, event, run) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_the_pitches_and_bad_pitches_are_refused() {
        let rect = Rect::new([2, 1, 1], [3, 2, 2], 10, 40).unwrap();
        assert_eq!(rect.rows().collect::<Vec<_>>(), [52, 62, 92, 102]);
        assert_eq!(rect.span(), 52..105);
        assert!(!rect.is_packed());
        let packed = Rect::new([0, 0, 0], [8, 4, 1], 0, 0).unwrap();
        assert!(packed.is_packed());
        assert_eq!(packed.span(), 0..32);
        assert_eq!(
            Rect::new([0; 3], [8, 1, 1], 4, 0).err(),
            Some(CL_INVALID_VALUE)
        );
        assert_eq!(
            Rect::new([0; 3], [8, 2, 1], 8, 12).err(),
            Some(CL_INVALID_VALUE)
        );
        assert_eq!(
            Rect::new([usize::MAX, 0, 0], [8, 1, 1], 0, 0).err(),
            Some(CL_INVALID_VALUE)
        );
    }

    #[test]
    fn interleaved_rows_do_not_overlap_and_shared_bytes_do() {
        // Even and odd 4-byte columns of one 8-byte-pitch image.
        let even = Rect::new([0, 0, 0], [4, 8, 1], 8, 0).unwrap();
        let odd = Rect::new([4, 0, 0], [4, 8, 1], 8, 0).unwrap();
        assert!(!even.overlaps(&odd) && !odd.overlaps(&even));
        let shifted = Rect::new([3, 0, 0], [4, 8, 1], 8, 0).unwrap();
        assert!(even.overlaps(&shifted) && shifted.overlaps(&even));
        let later = Rect::new([0, 8, 0], [4, 8, 1], 8, 0).unwrap();
        assert!(!even.overlaps(&later));
    }
}
