//! The all-reduces of one step for a layout of gradients: each fusion bucket's gradient
//! names and the format they travel in, kept while the layout holds.

use super::STEP_ENTRY;
use crate::distribute::{BucketPlan, CollectiveConfig, Compression, Result};

/// The all-reduces of one step for a layout of gradients (path, length), in order: each
/// bucket's gradient names and the format they travel in.
#[derive(Debug)]
pub(super) struct StepWork {
    pub(super) layout: Vec<(String, usize)>,
    /// The step entry's length (0: it does not ride along).
    pub(super) step_len: usize,
    pub(super) buckets: Vec<(Vec<String>, CollectiveConfig)>,
    /// Whether there is more than one bucket of gradients to overlap with the copies.
    pub(super) overlap: bool,
    /// Bytes all-reduced per step, in f32.
    pub(super) bytes: u64,
}

impl StepWork {
    pub(super) fn new(
        layout: Vec<(String, usize)>,
        bucket_bytes: usize,
        collective: CollectiveConfig,
        step_len: usize,
    ) -> Result<Self> {
        let plan = BucketPlan::new(&layout, bucket_bytes)?;
        let mut buckets: Vec<(Vec<String>, CollectiveConfig)> = plan
            .buckets()
            .iter()
            .map(|b| {
                (
                    b.entries().iter().map(|e| e.name.clone()).collect(),
                    collective,
                )
            })
            .collect();
        // The step entry rides in the last bucket when it fits and is uncompressed;
        // otherwise it is a bucket of its own, in f32 (a loss in 16 bits would be reported
        // rounded; a large gradient reduced alone would have to be packed).
        let step_alone = collective.compression != Compression::None
            || plan
                .buckets()
                .last()
                .is_none_or(|b| (b.len() + step_len) * 4 > bucket_bytes);
        match buckets.last_mut() {
            _ if step_len == 0 => {}
            Some((names, _)) if !step_alone => names.push(STEP_ENTRY.to_string()),
            _ => buckets.push((
                vec![STEP_ENTRY.to_string()],
                collective.with_compression(Compression::None),
            )),
        }
        let bytes = (layout.iter().map(|(_, len)| len).sum::<usize>() + step_len) as u64 * 4;
        Ok(Self {
            layout,
            step_len,
            buckets,
            overlap: plan.buckets().len() > 1,
            bytes,
        })
    }
}
