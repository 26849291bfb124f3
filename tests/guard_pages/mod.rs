//! A test binary's allocator that puts the tape's buffers between pages nobody may touch, so
//! that code reading or writing past one (an emitter's wrong displacement, a wrong bound)
//! faults in the test instead of corrupting whatever lies beside it.
//!
//! Every allocation aligned to 64 bytes or more (the workspaces' values, adjoints and weights
//! and the gradients' buffers are cache-line aligned: `dsgd::aligned`; almost nothing else
//! is) gets a mapping of its own with an inaccessible (`PROT_NONE`) page before and after the
//! pages that hold it. Alternate allocations end at the end of their last page or start at
//! the start of their first, so that a read or write just past either end of a buffer faults
//! (the other end has up to a page of slack). Every other allocation is the system's. Test
//! builds only: the library knows nothing of it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The allocator (install with `#[global_allocator]`).
pub struct GuardPages;

/// Allocations placed so far (even: at the end of their pages, odd: at the start).
static PLACED: AtomicUsize = AtomicUsize::new(0);

const PAGE: usize = 4096;

/// Whether `layout` is one of the tape's buffers' (and can be placed on whole pages).
fn guarded(layout: Layout) -> bool {
    (64..=PAGE).contains(&layout.align()) && layout.size() > 0
}

/// The pages holding `size` bytes.
fn data_pages(size: usize) -> usize {
    size.div_ceil(PAGE)
}

// SAFETY: allocations go to the system's allocator or to mappings of their own, each used by
// one allocation until it is freed; `alloc` returns memory of the layout's size and alignment.
unsafe impl GlobalAlloc for GuardPages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !guarded(layout) {
            // SAFETY: the caller's layout, passed on.
            return unsafe { System.alloc(layout) };
        }
        let data = data_pages(layout.size()) * PAGE;
        let len = data + 2 * PAGE;
        // SAFETY: a fresh anonymous private mapping, no address asked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let first = base.cast::<u8>().wrapping_add(PAGE);
        // SAFETY: the data pages lie inside the mapping just made.
        if unsafe { libc::mprotect(first.cast(), data, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            // SAFETY: the mapping just made, unmapped whole.
            unsafe { libc::munmap(base, len) };
            return std::ptr::null_mut();
        }
        // The layout's size rounded up to its alignment: the start stays aligned either way.
        let span = layout.size().next_multiple_of(layout.align());
        if PLACED.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            first.wrapping_add(data - span)
        } else {
            first
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !guarded(layout) {
            // SAFETY: the system allocated it (the same layout decided so).
            return unsafe { System.dealloc(ptr, layout) };
        }
        // The data pages start at `ptr`'s page (it lies in the first of them either way).
        let first = ptr.wrapping_sub(ptr as usize % PAGE);
        let len = data_pages(layout.size()) * PAGE + 2 * PAGE;
        // SAFETY: the mapping `alloc` made for this allocation, unmapped whole.
        unsafe { libc::munmap(first.wrapping_sub(PAGE).cast(), len) };
    }
}
