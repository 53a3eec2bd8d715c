//! Fusion buckets: many gradients packed into a few flat buffers, so that one all-reduce
//! moves many tensors (Horovod's tensor fusion, PyTorch DDP's buckets); a gradient larger
//! than a bucket is all-reduced alone, where it lies.

use crate::distribute::collective_fault::{CollectiveFault, Result};

/// Default largest bucket: 4 MiB. Small tensors are fused up to it (one all-reduce for
/// many); larger ones are reduced alone, in their own buffer, with no packing copy. Small
/// enough that reading the next bucket off the device overlaps the previous one's wire
/// time, large enough that a bucket's ring keeps 8 segments of 64 KiB or more in flight.
pub const DEFAULT_BUCKET_BYTES: usize = 4 << 20;

/// Where one gradient lies in its bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketEntry {
    /// The gradient's name (its parameter path).
    pub name: String,
    /// Its position in the list given to [`BucketPlan::new`], and to `pack` / `unpack`.
    pub index: usize,
    /// Its first element in the bucket's flat buffer.
    pub offset: usize,
    /// Its number of elements.
    pub len: usize,
}

/// Gradients fused into one flat buffer, in name order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bucket {
    entries: Vec<BucketEntry>,
    len: usize,
}

impl Bucket {
    /// The gradients in this bucket, in name order.
    pub fn entries(&self) -> &[BucketEntry] {
        &self.entries
    }

    /// Elements in the flat buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the flat buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bytes(&self) -> usize {
        self.len.saturating_mul(4)
    }

    fn push(&mut self, name: &str, index: usize, len: usize) {
        self.entries.push(BucketEntry {
            name: name.to_owned(),
            index,
            offset: self.len,
            len,
        });
        self.len += len;
    }
}

/// How a fixed list of f32 gradients is fused into buckets of at most `bucket_bytes`.
///
/// Gradients are taken in name order, whatever order they are listed in, so every rank that
/// lists the same gradients gets the same plan. They fill a bucket until the next one would
/// overflow it; a gradient larger than a bucket gets a bucket of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketPlan {
    buckets: Vec<Bucket>,
    tensor_count: usize,
}

impl BucketPlan {
    /// The plan for gradients given as (name, number of elements); names must be unique.
    pub fn new<S: AsRef<str>>(tensors: &[(S, usize)], bucket_bytes: usize) -> Result<Self> {
        let mut order: Vec<usize> = (0..tensors.len()).collect();
        order.sort_by(|&a, &b| tensors[a].0.as_ref().cmp(tensors[b].0.as_ref()));
        if let Some(w) = order
            .windows(2)
            .find(|w| tensors[w[0]].0.as_ref() == tensors[w[1]].0.as_ref())
        {
            return Err(CollectiveFault::invalid(format!(
                "gradient {} is listed twice",
                tensors[w[0]].0.as_ref()
            )));
        }
        let mut buckets = Vec::new();
        let mut current = Bucket::default();
        for index in order {
            let (name, len) = (tensors[index].0.as_ref(), tensors[index].1);
            let bytes = len.saturating_mul(4);
            if bytes > bucket_bytes {
                if !current.entries.is_empty() {
                    buckets.push(std::mem::take(&mut current));
                }
                let mut own = Bucket::default();
                own.push(name, index, len);
                buckets.push(own);
                continue;
            }
            if current.bytes() + bytes > bucket_bytes {
                buckets.push(std::mem::take(&mut current));
            }
            current.push(name, index, len);
        }
        if !current.entries.is_empty() {
            buckets.push(current);
        }
        Ok(Self {
            buckets,
            tensor_count: tensors.len(),
        })
    }

    /// The buckets, in the order every rank reduces them.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The number of gradients the plan was made for.
    pub fn tensor_count(&self) -> usize {
        self.tensor_count
    }

    /// Bucket `bucket`'s flat buffer, from `grads` listed as for [`BucketPlan::new`].
    pub fn pack<G: AsRef<[f32]>>(&self, bucket: usize, grads: &[G]) -> Result<Vec<f32>> {
        let bucket = self.bucket(bucket, grads.len())?;
        let mut flat = Vec::with_capacity(bucket.len);
        for entry in &bucket.entries {
            let grad = grads[entry.index].as_ref();
            check_len(entry, grad.len())?;
            flat.extend_from_slice(grad);
        }
        Ok(flat)
    }

    /// Copies bucket `bucket`'s flat buffer back into `grads` listed as for [`BucketPlan::new`].
    pub fn unpack<G: AsMut<[f32]>>(
        &self,
        bucket: usize,
        flat: &[f32],
        grads: &mut [G],
    ) -> Result<()> {
        let bucket = self.bucket(bucket, grads.len())?;
        if flat.len() != bucket.len {
            return Err(CollectiveFault::invalid(format!(
                "a flat buffer of {} values cannot be unpacked into a bucket of {}",
                flat.len(),
                bucket.len
            )));
        }
        for entry in &bucket.entries {
            let grad = grads[entry.index].as_mut();
            check_len(entry, grad.len())?;
            grad.copy_from_slice(&flat[entry.offset..entry.offset + entry.len]);
        }
        Ok(())
    }

    fn bucket(&self, bucket: usize, grads: usize) -> Result<&Bucket> {
        if grads != self.tensor_count {
            return Err(CollectiveFault::invalid(format!(
                "{grads} gradients given to a bucket plan made for {}",
                self.tensor_count
            )));
        }
        self.buckets.get(bucket).ok_or_else(|| {
            CollectiveFault::invalid(format!(
                "bucket {bucket} does not exist (the plan has {})",
                self.buckets.len()
            ))
        })
    }
}

fn check_len(entry: &BucketEntry, len: usize) -> Result<()> {
    if len != entry.len {
        return Err(CollectiveFault::invalid(format!(
            "gradient {} has {len} values, the bucket plan expects {}",
            entry.name, entry.len
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::distribute::testing::{bits, on_threads, SplitMix};
    use crate::distribute::{all_reduce_mean, InMemoryTransport, Transport};

    fn names(plan: &BucketPlan) -> Vec<Vec<&str>> {
        plan.buckets()
            .iter()
            .map(|b| b.entries().iter().map(|e| e.name.as_str()).collect())
            .collect()
    }

    #[test]
    fn gradients_fill_buckets_in_name_order() {
        // 16-byte buckets: 4 f32s each; e (9 values) gets its own.
        let tensors = [("c", 2), ("a", 1), ("b", 3), ("e", 9), ("d", 1), ("f", 4)];
        let plan = BucketPlan::new(&tensors, 16).unwrap();
        assert_eq!(
            names(&plan),
            vec![vec!["a", "b"], vec!["c", "d"], vec!["e"], vec!["f"]]
        );
        let b = &plan.buckets()[1];
        assert_eq!(b.len(), 3);
        assert_eq!(b.entries()[0].index, 0);
        assert_eq!(b.entries()[1].index, 4);
        assert_eq!(b.entries()[1].offset, 2);
        assert_eq!(plan.tensor_count(), 6);
    }

    #[test]
    fn a_bucket_is_filled_up_to_exactly_its_size() {
        let plan = BucketPlan::new(&[("a", 2), ("b", 2), ("c", 1)], 16).unwrap();
        assert_eq!(names(&plan), vec![vec!["a", "b"], vec!["c"]]);
        let plan = BucketPlan::new(&[("a", 1), ("b", 1)], DEFAULT_BUCKET_BYTES).unwrap();
        assert_eq!(names(&plan), vec![vec!["a", "b"]]);
    }

    #[test]
    fn empty_lists_and_empty_gradients_are_fine() {
        let none: [(&str, usize); 0] = [];
        assert!(BucketPlan::new(&none, 16).unwrap().buckets().is_empty());
        let plan = BucketPlan::new(&[("a", 0), ("b", 0)], 16).unwrap();
        assert_eq!(names(&plan), vec![vec!["a", "b"]]);
        assert!(plan.buckets()[0].is_empty());
    }

    #[test]
    fn duplicate_names_are_refused() {
        let err = BucketPlan::new(&[("w", 1), ("b", 1), ("w", 2)], 16).unwrap_err();
        assert_eq!(err.to_string(), "distribute: gradient w is listed twice");
    }

    #[test]
    fn pack_then_unpack_round_trips() {
        let mut rng = SplitMix(5);
        let lens = [3, 0, 17, 1, 8, 40, 2];
        let tensors: Vec<(String, usize)> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| (format!("layer{}.weight", (i * 5) % 7), len))
            .collect();
        let grads: Vec<Vec<f32>> = lens.iter().map(|&len| rng.f32s(len)).collect();
        for bucket_bytes in [1, 16, 40, 1000, DEFAULT_BUCKET_BYTES] {
            let plan = BucketPlan::new(&tensors, bucket_bytes).unwrap();
            let mut out: Vec<Vec<f32>> = lens.iter().map(|&len| vec![0.0; len]).collect();
            let mut seen = 0;
            for b in 0..plan.buckets().len() {
                let flat = plan.pack(b, &grads).unwrap();
                assert_eq!(flat.len(), plan.buckets()[b].len());
                assert!(flat.len() * 4 <= bucket_bytes || plan.buckets()[b].entries().len() == 1);
                seen += plan.buckets()[b].entries().len();
                plan.unpack(b, &flat, &mut out).unwrap();
            }
            assert_eq!(seen, lens.len());
            for (got, want) in out.iter().zip(&grads) {
                assert_eq!(bits(got), bits(want), "bucket_bytes={bucket_bytes}");
            }
        }
    }

    #[test]
    fn gradients_that_do_not_fit_the_plan_are_named() {
        let plan = BucketPlan::new(&[("w", 2), ("b", 1)], 1000).unwrap();
        let err = plan.pack(0, &[vec![1.0, 2.0], vec![]]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "distribute: gradient b has 0 values, the bucket plan expects 1"
        );
        assert!(plan.pack(0, &[vec![1.0, 2.0]]).is_err());
        assert!(plan.pack(1, &[vec![1.0, 2.0], vec![3.0]]).is_err());
        let mut grads = vec![vec![0.0; 2], vec![0.0]];
        assert!(plan.unpack(0, &[1.0], &mut grads).is_err());
    }

    #[test]
    fn bucketed_gradients_average_across_ranks() {
        let tensors = [("dense.bias", 5), ("dense.weight", 50), ("out.weight", 7)];
        let plan = BucketPlan::new(&tensors, 64).unwrap();
        let grads_of = |rank: usize| -> Vec<Vec<f32>> {
            let mut rng = SplitMix(rank as u64);
            tensors.iter().map(|&(_, len)| rng.f32s(len)).collect()
        };
        let ranks = InMemoryTransport::cluster_with_timeout(3, Duration::from_secs(5));
        let out = on_threads(ranks, |t| {
            let mut grads = grads_of(t.rank());
            for b in 0..plan.buckets().len() {
                let mut flat = plan.pack(b, &grads).unwrap();
                all_reduce_mean(t, &mut flat).unwrap();
                plan.unpack(b, &flat, &mut grads).unwrap();
            }
            grads
        });
        let inputs: Vec<_> = (0..3).map(grads_of).collect();
        for (i, &(_, len)) in tensors.iter().enumerate() {
            for j in 0..len {
                let mean = inputs.iter().map(|g| g[i][j]).sum::<f32>() / 3.0;
                for rank_out in &out {
                    assert!((rank_out[i][j] - mean).abs() <= 1e-6);
                    assert_eq!(rank_out[i][j].to_bits(), out[0][i][j].to_bits());
                }
            }
        }
    }
}
