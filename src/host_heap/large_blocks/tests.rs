//! The shelf of large blocks, through the allocator's own calls (not installed globally).

use std::alloc::{GlobalAlloc, Layout};

use super::{shelf, KeepLargeBlocks, LARGE_BYTES, SLOTS};

fn kept() -> usize {
    shelf().slots.iter().flatten().count()
}

#[test]
fn a_large_block_freed_comes_back_for_its_size_and_the_oldest_makes_room() {
    let _alone = super::super::HEAP_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let heap = KeepLargeBlocks;
    let large = Layout::from_size_align(LARGE_BYTES + 4096, 64).unwrap();
    let other = Layout::from_size_align(LARGE_BYTES + 8192, 64).unwrap();
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
        // Growing a kept-then-taken block is the C library's realloc, and the grown block,
        // of a size nobody asked for, is not kept.
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
        for layout in [large, other, doubled] {
            while let Some(block) = shelf().take(layout) {
                std::alloc::System.dealloc(block, layout);
            }
        }
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
        let never = Layout::from_size_align(LARGE_BYTES + 20_480, 8).unwrap();
        let doubled = std::alloc::System.alloc(never);
        heap.dealloc(doubled, never);
        assert_eq!(kept(), 1);
        while let Some(block) = shelf().take(large) {
            std::alloc::System.dealloc(block, large);
        }
    }
    assert_eq!(kept(), 0);
}
