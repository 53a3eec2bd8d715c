//! The shelf of large blocks, through the allocator's own calls (not installed globally).

use std::alloc::{GlobalAlloc, Layout};

use super::{class_of, shelf, KeepLargeBlocks, CLASS_BYTES, LARGE_BYTES, SLOTS};

fn kept() -> usize {
    shelf().slots.iter().flatten().count()
}

/// Gives every kept block of these layouts' classes back to the C library.
fn empty_shelf<const N: usize>(layouts: [Layout; N]) {
    for layout in layouts.map(class_of) {
        while let Some(block) = shelf().take(layout) {
            // SAFETY: a kept block, allocated by `System` with its class's layout.
            unsafe { std::alloc::System.dealloc(block, layout) };
        }
    }
}

#[test]
fn a_large_block_freed_comes_back_for_its_size_and_the_oldest_makes_room() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    let large = Layout::from_size_align(LARGE_BYTES + 4096, 64).unwrap();
    let other = Layout::from_size_align(LARGE_BYTES + CLASS_BYTES + 4096, 64).unwrap();
    let small = Layout::from_size_align(1 << 20, 64).unwrap();
    unsafe {
        let first = heap.alloc(large);
        first.write_bytes(7, large.size());
        heap.dealloc(first, large);
        assert_eq!(kept(), 1);
        // The same size comes back from the shelf, zeroed when asked.
        let again = heap.alloc_zeroed(large);
        assert_eq!(again, first);
        assert!(std::slice::from_raw_parts(again, large.size())
            .iter()
            .all(|b| *b == 0));
        assert_eq!(kept(), 0);
        // Another size does not take it, and small blocks are never kept.
        heap.dealloc(again, large);
        let fresh = heap.alloc(other);
        assert_ne!(fresh, first);
        heap.dealloc(fresh, other);
        let little = heap.alloc(small);
        heap.dealloc(little, small);
        assert_eq!(kept(), 2);
        // Growing a kept-then-taken block to a size nobody asked for is the C library's
        // realloc, and the grown block is not kept.
        let taken = heap.alloc(large);
        let grown = heap.realloc(taken, large, large.size() * 2);
        assert!(!grown.is_null());
        heap.dealloc(
            grown,
            Layout::from_size_align(large.size() * 2, 64).unwrap(),
        );
        assert_eq!(kept(), 1);
        heap.dealloc(heap.alloc(large), large);
        assert_eq!(kept(), 2);
        // One more block than there are slots: the oldest goes back to the C library.
        let blocks: Vec<*mut u8> = (0..SLOTS + 1).map(|_| heap.alloc(large)).collect();
        for block in blocks {
            heap.dealloc(block, large);
        }
        assert_eq!(kept(), SLOTS);
        let doubled = Layout::from_size_align(large.size() * 2, 64).unwrap();
        empty_shelf([large, other, doubled]);
        assert_eq!(kept(), 0);
    }
}

#[test]
fn a_block_of_exactly_32_mib_is_kept_and_one_a_page_smaller_is_not() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    let exact = Layout::from_size_align(LARGE_BYTES, 64).unwrap();
    let smaller = Layout::from_size_align(LARGE_BYTES - 4096, 64).unwrap();
    unsafe {
        let block = heap.alloc(smaller);
        heap.dealloc(block, smaller);
        assert_eq!(kept(), 0);
        let block = heap.alloc(exact);
        heap.dealloc(block, exact);
        assert_eq!(kept(), 1);
        assert_eq!(heap.alloc(exact), block, "handed back");
        std::alloc::System.dealloc(block, exact);
    }
    assert_eq!(kept(), 0);
}

#[test]
fn a_small_buffer_grown_to_a_kept_size_takes_the_kept_block_with_its_bytes() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    let large = Layout::from_size_align(LARGE_BYTES + 12_288, 8).unwrap();
    let small = Layout::from_size_align(4096, 8).unwrap();
    unsafe {
        let block = heap.alloc(large);
        heap.dealloc(block, large);
        assert_eq!(kept(), 1);
        let buffer = heap.alloc(small);
        buffer.write_bytes(9, small.size());
        let grown = heap.realloc(buffer, small, large.size());
        assert_eq!(grown, block, "the kept block");
        assert_eq!(kept(), 0);
        let bytes = std::slice::from_raw_parts(grown, small.size());
        assert!(
            bytes.iter().all(|b| *b == 9),
            "the buffer's bytes came along"
        );
        heap.dealloc(grown, large);
        assert_eq!(kept(), 1);
        // A size never asked for (a buffer doubled past its message) is not kept.
        let never = class_of(Layout::from_size_align(LARGE_BYTES + 3 * CLASS_BYTES, 8).unwrap());
        let doubled = std::alloc::System.alloc(never);
        heap.dealloc(doubled, never);
        assert_eq!(kept(), 1);
        empty_shelf([large]);
    }
    assert_eq!(kept(), 0);
}

#[test]
fn sizes_a_few_bytes_apart_share_a_kept_block_and_grow_within_it() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    // A message's buffers, one step and the next: the lengths differ by a varint's bytes.
    let first = Layout::from_size_align(LARGE_BYTES + 1_081_459, 1).unwrap();
    let next = Layout::from_size_align(LARGE_BYTES + 1_081_466, 1).unwrap();
    let small = Layout::from_size_align(2 << 20, 1).unwrap();
    unsafe {
        let block = heap.alloc(first);
        block.add(first.size() - 1).write(1);
        heap.dealloc(block, first);
        assert_eq!(kept(), 1);
        let again = heap.alloc(next);
        assert_eq!(again, block, "the kept block, for a size in its class");
        again.add(next.size() - 1).write(2);
        // Grown within its class, the block stays where it is, bytes and all.
        let grown = heap.realloc(again, next, next.size() + 1000);
        assert_eq!(grown, block);
        assert_eq!(grown.add(next.size() - 1).read(), 2);
        heap.dealloc(
            grown,
            Layout::from_size_align(next.size() + 1000, 1).unwrap(),
        );
        // A receive buffer reserving another of those lengths takes it too.
        let buffer = heap.alloc(small);
        let received = heap.realloc(buffer, small, first.size());
        assert_eq!(received, block);
        heap.dealloc(received, first);
        // The next class up is another block.
        let larger = Layout::from_size_align(first.size() + CLASS_BYTES, 1).unwrap();
        let other = heap.alloc(larger);
        assert_ne!(other, block);
        heap.dealloc(other, larger);
        assert_eq!(kept(), 2);
        empty_shelf([first, larger]);
    }
    assert_eq!(kept(), 0);
}

#[test]
fn a_large_block_grown_to_a_kept_class_takes_that_block_and_is_kept_itself() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    // Two blocks of a variable joined: the first grows to the whole variable's size.
    let half = Layout::from_size_align(LARGE_BYTES, 4).unwrap();
    let whole = Layout::from_size_align(2 * LARGE_BYTES, 4).unwrap();
    unsafe {
        let kept_whole = heap.alloc(whole);
        heap.dealloc(kept_whole, whole);
        let first = heap.alloc(half);
        first.write_bytes(5, half.size());
        let joined = heap.realloc(first, half, whole.size());
        assert_eq!(joined, kept_whole, "the kept block of the grown size");
        let bytes = std::slice::from_raw_parts(joined, half.size());
        assert!(
            bytes.iter().all(|b| *b == 5),
            "the first block's bytes came along"
        );
        assert_eq!(kept(), 1, "the first block, kept for the next cut");
        assert_eq!(heap.alloc(half), first);
        heap.dealloc(first, half);
        heap.dealloc(joined, whole);
        empty_shelf([half, whole]);
    }
    assert_eq!(kept(), 0);
}
