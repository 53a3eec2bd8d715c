//! The Rust snippets of `docs/serving.md` are excerpts of this crate's sources, so they
//! compile and are tested here; a snippet that stops matching fails this test.

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
fn every_rust_snippet_of_the_serving_guide_is_an_excerpt_of_the_example() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("../../docs/serving.md")).unwrap();
    let sources: Vec<String> = [
        "src/lib.rs",
        "src/serving.rs",
        "src/bin/custom_estimator_serve.rs",
    ]
    .iter()
    .map(|file| std::fs::read_to_string(root.join(file)).unwrap())
    .collect();
    let blocks = rust_blocks(&guide);
    assert!(blocks.len() >= 3, "{} rust blocks", blocks.len());
    for block in blocks {
        assert!(
            sources.iter().any(|source| is_excerpt(&block, source)),
            "not an excerpt of examples/custom_estimator:\n{}",
            block.join("\n")
        );
    }
}
