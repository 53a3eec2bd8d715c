//! TensorFlow's default histogram: exponentially spaced buckets, empty runs collapsed.
//!
//! This mirrors `tensorflow/core/lib/histogram/histogram.cc`: bucket edges are `±1e-12 · 1.1^k`
//! up to `1e20`, then `±f64::MAX`, plus `0.0`; a value `v` is counted in the first bucket whose
//! limit is strictly greater than `v` (so bucket `i` holds `limits[i-1] <= v < limits[i]`), and
//! when encoded, every run of empty buckets is collapsed into one zero-count entry whose limit is
//! the run's last limit, so the non-empty buckets keep their exact edges.

use std::sync::OnceLock;

/// A histogram in the shape of TensorBoard's `HistogramProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Smallest value counted (`f64::MAX` when none was).
    pub min: f64,
    /// Largest value counted (`-f64::MAX` when none was).
    pub max: f64,
    /// How many values were counted.
    pub num: f64,
    /// Sum of the values counted.
    pub sum: f64,
    /// Sum of the squares of the values counted.
    pub sum_squares: f64,
    /// Exclusive upper edge of each bucket, increasing; the last one is `f64::MAX`.
    pub bucket_limits: Vec<f64>,
    /// How many values fell in each bucket (same length as `bucket_limits`).
    pub bucket_counts: Vec<f64>,
}

/// TensorFlow's default bucket limits, increasing: `±1e-12·1.1^k` below `1e20`, `±f64::MAX`, `0`.
pub fn default_bucket_limits() -> &'static [f64] {
    static LIMITS: OnceLock<Vec<f64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        // Same repeated multiplication as TensorFlow, so the edges match it bit for bit.
        let mut positive = Vec::new();
        let mut v = 1.0e-12_f64;
        while v < 1.0e20 {
            positive.push(v);
            v *= 1.1;
        }
        positive.push(f64::MAX);
        let mut limits: Vec<f64> = positive.iter().rev().map(|v| -v).collect();
        limits.push(0.0);
        limits.extend_from_slice(&positive);
        limits
    })
}

/// The TensorFlow-style histogram of `values`; NaN and ±∞ are skipped (TensorFlow rejects them).
pub fn histogram_buckets(values: &[f32]) -> Histogram {
    let limits = default_bucket_limits();
    let mut counts = vec![0.0_f64; limits.len()];
    let mut histogram = Histogram {
        min: f64::MAX,
        max: -f64::MAX,
        num: 0.0,
        sum: 0.0,
        sum_squares: 0.0,
        bucket_limits: Vec::new(),
        bucket_counts: Vec::new(),
    };
    for value in values
        .iter()
        .filter(|v| v.is_finite())
        .map(|&v| f64::from(v))
    {
        let bucket = bucket_of(value, limits);
        counts[bucket] += 1.0;
        histogram.min = histogram.min.min(value);
        histogram.max = histogram.max.max(value);
        histogram.num += 1.0;
        histogram.sum += value;
        histogram.sum_squares += value * value;
    }
    let mut i = 0;
    while i < counts.len() {
        let mut end = limits[i];
        let count = counts[i];
        i += 1;
        if count <= 0.0 {
            while i < counts.len() && counts[i] <= 0.0 {
                end = limits[i];
                i += 1;
            }
        }
        histogram.bucket_limits.push(end);
        histogram.bucket_counts.push(count);
    }
    histogram
}

/// The index of the first limit strictly greater than the finite `value` (finite values are
/// below `f64::MAX`): what a binary search over `limits` gives, estimated from the value's
/// logarithm and then corrected against the real edges, which repeated multiplication
/// leaves a few ulps from `1.1^k`. Weight histograms of wide models count millions of values.
fn bucket_of(value: f64, limits: &[f64]) -> usize {
    const SMALLEST: f64 = 1.0e-12;
    let zero = limits.len() / 2;
    let magnitude = value.abs();
    let mut index = if magnitude < SMALLEST {
        if value < 0.0 {
            zero
        } else {
            zero + 1
        }
    } else {
        let steps = (magnitude / SMALLEST).ln() / 1.1_f64.ln();
        let k = (steps.max(0.0) as usize).min(zero - 2);
        if value > 0.0 {
            zero + 2 + k
        } else {
            zero - 1 - k
        }
    };
    while index > 0 && limits[index - 1] > value {
        index -= 1;
    }
    while limits[index] <= value {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_is_the_binary_searchs_for_every_edge_its_neighbours_and_random_values() {
        let limits = default_bucket_limits();
        let searched = |v: f64| limits.partition_point(|&limit| limit <= v);
        let finite = &limits[1..limits.len() - 1];
        let mut values: Vec<f64> = finite
            .iter()
            .flat_map(|&edge| [edge, edge.next_down(), edge.next_up()])
            .chain([
                0.0,
                -0.0,
                f64::from(f32::MAX),
                f64::from(f32::MIN),
                1e30,
                -1e30,
            ])
            .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..200_000 {
            // xorshift: any f32 bit pattern, so every exponent is visited.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = f32::from_bits(state as u32);
            if v.is_finite() {
                values.push(f64::from(v));
            }
        }
        for v in values {
            assert_eq!(bucket_of(v, limits), searched(v), "value {v:e}");
        }
    }

    /// Positive finite edges `1e-12·1.1^k < 1e20`: k = 0..=773, as ln(1e32)/ln(1.1) ≈ 773.1.
    const POSITIVE_EDGES: usize = 774;

    fn rel_close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    #[test]
    fn default_limits_have_tensorflow_shape() {
        let limits = default_bucket_limits();
        // Both signs of the finite edges, ±f64::MAX, and zero.
        assert_eq!(limits.len(), 2 * (POSITIVE_EDGES + 1) + 1);
        assert_eq!(limits[0], -f64::MAX);
        assert_eq!(*limits.last().unwrap(), f64::MAX);
        let zero = POSITIVE_EDGES + 1;
        assert_eq!(limits[zero], 0.0);
        assert_eq!(limits[zero + 1], 1e-12);
        assert_eq!(limits[zero - 1], -1e-12);
        assert!(rel_close(limits[zero + 2], 1.1e-12));
        // Largest finite edge: 1e-12·1.1^773 ≈ 9.2e19 < 1e20.
        let top = limits[limits.len() - 2];
        assert!(top < 1e20 && top * 1.1 >= 1e20, "top finite edge {top}");
        assert!(
            limits.windows(2).all(|w| w[0] < w[1]),
            "limits must increase"
        );
        for i in 0..limits.len() {
            assert_eq!(
                limits[i],
                -limits[limits.len() - 1 - i],
                "symmetric around zero"
            );
        }
    }

    #[test]
    fn empty_values_give_one_empty_bucket() {
        let h = histogram_buckets(&[]);
        assert_eq!(h.min, f64::MAX);
        assert_eq!(h.max, -f64::MAX);
        assert_eq!((h.num, h.sum, h.sum_squares), (0.0, 0.0, 0.0));
        // The whole range is one collapsed empty run ending at f64::MAX.
        assert_eq!(h.bucket_limits, vec![f64::MAX]);
        assert_eq!(h.bucket_counts, vec![0.0]);
    }

    #[test]
    fn single_value_gets_its_exact_bucket() {
        let h = histogram_buckets(&[1.0]);
        assert_eq!(
            (h.min, h.max, h.num, h.sum, h.sum_squares),
            (1.0, 1.0, 1.0, 1.0, 1.0)
        );
        // 1.0 lies in [1e-12·1.1^289, 1e-12·1.1^290) ≈ [0.9205, 1.0125): ln(1e12)/ln(1.1) ≈ 289.9.
        assert_eq!(h.bucket_counts, vec![0.0, 1.0, 0.0]);
        assert!(rel_close(h.bucket_limits[0], 1e-12 * 1.1_f64.powi(289)));
        assert!(rel_close(h.bucket_limits[1], 1e-12 * 1.1_f64.powi(290)));
        assert!(h.bucket_limits[0] <= 1.0 && 1.0 < h.bucket_limits[1]);
        assert_eq!(h.bucket_limits[2], f64::MAX);
    }

    #[test]
    fn negative_zero_and_positive_values() {
        let h = histogram_buckets(&[-2.0, 0.0, 0.0, 3.0, 3.0]);
        assert_eq!((h.min, h.max, h.num), (-2.0, 3.0, 5.0));
        assert_eq!(h.sum, 4.0);
        assert_eq!(h.sum_squares, 4.0 + 9.0 + 9.0);
        // -2 lies in [-1e-12·1.1^298, -1e-12·1.1^297) ≈ [-2.17, -1.97): ln(2e12)/ln(1.1) ≈ 297.2;
        // 0 lies in [0, 1e-12); 3 lies in [1e-12·1.1^301, 1e-12·1.1^302) ≈ [2.89, 3.18).
        let expected: [(f64, f64); 7] = [
            (-1e-12 * 1.1_f64.powi(298), 0.0),
            (-1e-12 * 1.1_f64.powi(297), 1.0),
            (0.0, 0.0),
            (1e-12, 2.0),
            (1e-12 * 1.1_f64.powi(301), 0.0),
            (1e-12 * 1.1_f64.powi(302), 2.0),
            (f64::MAX, 0.0),
        ];
        assert_eq!(h.bucket_limits.len(), expected.len(), "{h:?}");
        for (i, &(limit, count)) in expected.iter().enumerate() {
            assert!(rel_close(h.bucket_limits[i], limit), "limit {i}: {h:?}");
            assert_eq!(h.bucket_counts[i], count, "count {i}: {h:?}");
        }
        assert!(h.bucket_limits[0] <= -2.0 && -2.0 < h.bucket_limits[1]);
        assert!(h.bucket_limits[4] <= 3.0 && 3.0 < h.bucket_limits[5]);
    }

    #[test]
    fn zero_is_counted_above_its_edge() {
        // Zero is the lower edge of [0, 1e-12); -0.0 compares equal, so it lands there too.
        let h = histogram_buckets(&[0.0, -0.0]);
        assert_eq!(h.bucket_limits, vec![0.0, 1e-12, f64::MAX]);
        assert_eq!(h.bucket_counts, vec![0.0, 2.0, 0.0]);
        assert_eq!((h.min, h.max, h.num, h.sum_squares), (0.0, 0.0, 2.0, 0.0));
    }

    #[test]
    fn non_finite_values_are_skipped() {
        let h = histogram_buckets(&[f32::NAN, f32::INFINITY, 5.0, f32::NEG_INFINITY]);
        assert_eq!((h.min, h.max, h.num, h.sum), (5.0, 5.0, 1.0, 5.0));
        assert_eq!(h.bucket_counts.iter().sum::<f64>(), 1.0);
    }

    #[test]
    fn extreme_finite_values_fit() {
        let h = histogram_buckets(&[f32::MAX, f32::MIN, f32::MIN_POSITIVE]);
        assert_eq!(h.num, 3.0);
        assert_eq!(h.bucket_counts.iter().sum::<f64>(), 3.0);
        assert_eq!(h.bucket_limits.len(), h.bucket_counts.len());
    }
}
