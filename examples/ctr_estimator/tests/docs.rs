//! The Rust snippets of `docs/feature-columns.md` are excerpts of this crate's sources, so
//! they compile and are tested here; a snippet that stops matching fails this test.

use std::path::Path;

/// The ```rust blocks of `markdown`, each as its lines.
fn rust_blocks(markdown: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut block: Option<Vec<&str>> = None;
    for line in markdown.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```rust") => block = Some(Vec::new()),
            (Some(_), "```") => blocks.extend(block.take()),
            (Some(lines), _) => lines.push(line),
            (None, _) => {}
        }
    }
    blocks
}

/// Whether `block`'s lines are consecutive lines of `source` (indentation aside).
fn is_excerpt(block: &[&str], source: &str) -> bool {
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    let block: Vec<&str> = block.iter().map(|l| l.trim()).collect();
    lines.windows(block.len()).any(|w| w == block.as_slice())
}

#[test]
fn every_rust_snippet_of_the_guide_is_an_excerpt_of_the_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("../../docs/feature-columns.md")).unwrap();
    let sources: Vec<String> = ["columns.rs", "model.rs", "main.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(root.join("src").join(f)).unwrap())
        .collect();
    let blocks = rust_blocks(&guide);
    assert!(blocks.len() >= 5, "{} snippets", blocks.len());
    for block in blocks {
        assert!(
            sources.iter().any(|s| is_excerpt(&block, s)),
            "not in examples/ctr_estimator/src:\n{}",
            block.join("\n")
        );
    }
}
