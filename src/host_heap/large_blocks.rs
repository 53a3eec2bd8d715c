//! A global allocator that keeps the blocks too large for glibc's heap (32 MiB or more) when
//! they are freed, and hands one back when a block of the same size is asked for again.
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
//! (not a buffer doubled past its message), and a small buffer grown to a kept size (a
//! receive buffer reserving a message's length) takes the kept block. A program opts in with
//! `#[global_allocator] static HEAP: KeepLargeBlocks = KeepLargeBlocks;`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;

/// Blocks of this size or larger are kept: glibc maps them one by one (its largest mmap
/// threshold is 32 MiB on 64-bit, and a block of exactly 32 MiB — half of a 4096 × 4096
/// layer — needs a header more), and serves smaller ones from its heaps, which
/// [`keep_freed_memory`](super::keep_freed_memory) already makes keep them.
pub const LARGE_BYTES: usize = 32 << 20;

/// How many blocks are kept at most.
pub const SLOTS: usize = 8;

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
/// [module docs](self).
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

// SAFETY: every block comes from `System` with the layout it is later given back with: a
// kept block is handed out only for exactly its size and alignment, and `realloc` of one is
// `System`'s realloc of a block `System` allocated with that layout.
unsafe impl GlobalAlloc for KeepLargeBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE_BYTES {
            if let Some(block) = shelf().take(layout) {
                return block;
            }
        }
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() >= LARGE_BYTES {
            if let Some(block) = shelf().take(layout) {
                // SAFETY: the block holds `layout.size()` bytes and is this caller's now.
                unsafe { std::ptr::write_bytes(block, 0, layout.size()) };
                return block;
            }
        }
        // SAFETY: the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if layout.size() < LARGE_BYTES {
            // SAFETY: allocated by `System` with this layout (see the impl's comment).
            return unsafe { System.dealloc(block, layout) };
        }
        let give_back = shelf().keep(block, layout);
        for (address, layout) in give_back.into_iter().flatten() {
            // SAFETY: a block allocated by `System` with this layout, no longer kept.
            unsafe { System.dealloc(address as *mut u8, layout) };
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A small buffer grown to a large size (a receive buffer reserving a message's
        // length) takes a kept block: the C library would map fresh pages and copy anyway.
        // A large one grown further is remapped by the C library, without a copy.
        if new_size >= LARGE_BYTES && layout.size() < LARGE_BYTES {
            if let Ok(grown) = Layout::from_size_align(new_size, layout.align()) {
                if let Some(kept) = shelf().take(grown) {
                    // SAFETY: `kept` holds `new_size` > `layout.size()` bytes and is the
                    // caller's now; `block` holds `layout.size()` and came from `System`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(block, kept, layout.size());
                        System.dealloc(block, layout);
                    }
                    return kept;
                }
            }
        }
        // SAFETY: allocated by `System` with `layout` (see the impl's comment).
        unsafe { System.realloc(block, layout, new_size) }
    }
}

#[cfg(test)]
mod tests;
