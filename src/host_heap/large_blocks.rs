//! A global allocator that keeps the blocks too large for glibc's heap (32 MiB or more) when
//! they are freed, and hands one back when a block of the same size class is asked for again.
//!
//! A training step frees and allocates the same large buffers every step: on the CPU a
//! layer's 67 MB weight gradient, its copies on the way to a parameter server and back,
//! gRPC's buffers. glibc serves each from a fresh `mmap`, faulted in page by page and
//! zeroed by the kernel, and unmaps it when it is freed: half of a parameter-server step's
//! CPU time on the 64-4096-4096 network (BENCHMARKS.md, "Where a parameter-server step
//! goes"). Kept here, the next step's block comes back already mapped.
//!
//! At most [`SLOTS`] blocks and [`KEPT_BYTES`] in all are kept; beyond that the block kept
//! longest is returned to the C library. Only blocks of a size asked for lately are kept
//! (not a buffer doubled past its message), and a buffer grown to a kept size (a receive
//! buffer reserving a message's length, blocks of a variable joined) takes the kept block.
//! Sizes are rounded up to
//! whole [`CLASS_BYTES`]: a message's length, and so its buffers', differs by a few bytes
//! from step to step (a counter's varint, a header), and an exact size would never be asked
//! for twice. A program opts in with
//! `#[global_allocator] static HEAP: KeepLargeBlocks = KeepLargeBlocks;`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Blocks of this size or larger are kept: glibc maps them one by one (its largest mmap
/// threshold is 32 MiB on 64-bit, and a block of exactly 32 MiB — half of a 4096 × 4096
/// layer — needs a header more), and serves smaller ones from its heaps, which
/// [`keep_freed_memory`](super::keep_freed_memory) already makes keep them.
pub const LARGE_BYTES: usize = 32 << 20;

/// Large blocks are allocated, kept and handed out in whole multiples of this: a block
/// wastes at most 1/32 of itself.
pub const CLASS_BYTES: usize = 1 << 20;

/// The layout a large block is allocated with: its size rounded up to a whole class.
fn class_of(layout: Layout) -> Layout {
    layout
        .size()
        .checked_next_multiple_of(CLASS_BYTES)
        .and_then(|size| Layout::from_size_align(size, layout.align()).ok())
        .unwrap_or(layout)
}

/// How many blocks are kept at most. A training task under two parameter servers holding a
/// 64 MiB weight in two blocks frees a dozen large buffers a step (the gradient, its blocks,
/// their encodings, the pulled messages, their values, the joined weight); with 8 slots the
/// oldest were given back before the next step asked for them again.
pub const SLOTS: usize = 16;

/// How many bytes are kept at most, all blocks together.
pub const KEPT_BYTES: usize = 1 << 30;

/// A kept block: its address and layout, and when it was kept.
#[derive(Clone, Copy)]
struct Kept {
    address: usize,
    layout: Layout,
    since: u64,
}

/// How many of the latest layouts asked for are remembered.
const ASKED: usize = 16;

/// The kept blocks, a counter that orders them, and the large layouts asked for lately.
struct Shelf {
    slots: [Option<Kept>; SLOTS],
    clock: u64,
    /// Only a block of one of these is kept. A buffer grown by doubling past what was asked
    /// (tonic's receive buffer: 64 MiB asked, 128 MiB freed) is never asked for again, and
    /// kept it would push out the blocks that are.
    asked: [Option<Layout>; ASKED],
    next_asked: usize,
}

/// [`System`], keeping large freed blocks for the next allocation of their size; see the
/// docs of `src/host_heap/large_blocks.rs`.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeepLargeBlocks;

static SHELF: Mutex<Shelf> = Mutex::new(Shelf {
    slots: [None; SLOTS],
    clock: 0,
    asked: [None; ASKED],
    next_asked: 0,
});

fn shelf() -> std::sync::MutexGuard<'static, Shelf> {
    // Nothing panics while the lock is held; a poisoned lock still holds a valid shelf.
    SHELF.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shelf {
    /// A kept block of exactly `layout`, taken off the shelf; `layout` is remembered as
    /// asked for either way.
    fn take(&mut self, layout: Layout) -> Option<*mut u8> {
        if !self.asked.contains(&Some(layout)) {
            self.asked[self.next_asked] = Some(layout);
            self.next_asked = (self.next_asked + 1) % ASKED;
        }
        self.take_kept(layout)
    }

    /// A kept block of exactly `layout`, taken off the shelf, without remembering `layout`:
    /// a large buffer grown by doubling asks for a size that may never come again.
    fn take_kept(&mut self, layout: Layout) -> Option<*mut u8> {
        let slot = self
            .slots
            .iter_mut()
            .find(|slot| slot.is_some_and(|k| k.layout == layout))?;
        slot.take().map(|kept| kept.address as *mut u8)
    }

    /// Keeps the block at `address` of `layout`; returns the blocks to give back to the C
    /// library: the oldest kept ones, to make room, or the block itself when it cannot be
    /// kept.
    fn keep(&mut self, address: *mut u8, layout: Layout) -> [Option<(usize, Layout)>; SLOTS + 1] {
        let mut give_back = [None; SLOTS + 1];
        if layout.size() > KEPT_BYTES || !self.asked.contains(&Some(layout)) {
            give_back[0] = Some((address as usize, layout));
            return give_back;
        }
        let mut released = 0;
        let kept_bytes = |slots: &[Option<Kept>]| {
            slots
                .iter()
                .flatten()
                .map(|k| k.layout.size())
                .sum::<usize>()
        };
        while self.slots.iter().all(Option::is_some)
            || kept_bytes(&self.slots) + layout.size() > KEPT_BYTES
        {
            let oldest = (self.slots.iter_mut())
                .filter(|slot| slot.is_some())
                .min_by_key(|slot| slot.map_or(u64::MAX, |k| k.since))
                .and_then(Option::take);
            let Some(oldest) = oldest else { break };
            give_back[released] = Some((oldest.address, oldest.layout));
            released += 1;
        }
        self.clock += 1;
        let free = self.slots.iter_mut().find(|slot| slot.is_none());
        match free {
            Some(slot) => {
                *slot = Some(Kept {
                    address: address as usize,
                    layout,
                    since: self.clock,
                })
            }
            None => give_back[released] = Some((address as usize, layout)),
        }
        give_back
    }
}

// SAFETY: every block comes from `System`, a large one with its class's layout
// (`class_of`, computed alike from the caller's layout on every call), and is given back with
// the layout it was allocated with: a kept block is handed out only for exactly its class and
// alignment, and holds at least the caller's size.
unsafe impl GlobalAlloc for KeepLargeBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() < LARGE_BYTES {
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
            return unsafe { System.alloc(layout) };
        }
        let class = class_of(layout);
        if let Some(block) = shelf().take(class) {
            return block;
        }
        // SAFETY: a layout of non-zero size.
        unsafe { System.alloc(class) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() < LARGE_BYTES {
            // SAFETY: the caller's layout.
            return unsafe { System.alloc_zeroed(layout) };
        }
        let class = class_of(layout);
        if let Some(block) = shelf().take(class) {
            // SAFETY: the block holds at least `layout.size()` bytes and is this caller's now.
            unsafe { std::ptr::write_bytes(block, 0, layout.size()) };
            return block;
        }
        // SAFETY: a layout of non-zero size.
        unsafe { System.alloc_zeroed(class) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if layout.size() < LARGE_BYTES {
            // SAFETY: allocated by `System` with this layout (see the impl's comment).
            return unsafe { System.dealloc(block, layout) };
        }
        let give_back = shelf().keep(block, class_of(layout));
        for (address, layout) in give_back.into_iter().flatten() {
            // SAFETY: a block allocated by `System` with this layout, no longer kept.
            unsafe { System.dealloc(address as *mut u8, layout) };
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let held = if layout.size() < LARGE_BYTES {
            layout
        } else {
            class_of(layout)
        };
        if new_size < LARGE_BYTES {
            // SAFETY: allocated by `System` with `held` (see the impl's comment).
            return unsafe { System.realloc(block, held, new_size) };
        }
        let Ok(grown) = Layout::from_size_align(new_size, layout.align()).map(class_of) else {
            return std::ptr::null_mut();
        };
        if grown == held {
            // The block already holds `new_size` bytes.
            return block;
        }
        // A buffer grown to a kept size takes the kept block: a small one (a receive buffer
        // reserving a message's length) would get fresh pages and a copy from the C library
        // anyway, and a large one (blocks joined into one) the fresh pages of a remapping. A
        // copy of what it holds costs less than faulting them in.
        if grown.size() > held.size() {
            let kept = if layout.size() < LARGE_BYTES {
                shelf().take(grown)
            } else {
                shelf().take_kept(grown)
            };
            if let Some(kept) = kept {
                // SAFETY: `kept` holds more than `layout.size()` bytes and is the caller's
                // now; `block` holds `layout.size()` and is given back as the caller would.
                unsafe {
                    std::ptr::copy_nonoverlapping(block, kept, layout.size());
                    self.dealloc(block, layout);
                }
                return kept;
            }
        }
        // SAFETY: allocated by `System` with `held`; the new size is non-zero.
        unsafe { System.realloc(block, held, grown.size()) }
    }
}

#[cfg(test)]
mod tests;
