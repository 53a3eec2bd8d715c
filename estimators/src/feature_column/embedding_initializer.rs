//! [`EmbeddingInitializer`]: how an embedding table's values start.

use serde::{Deserialize, Serialize};

/// The distribution an embedding table's values are drawn from when it is made (TF's
/// `embedding_column(…, initializer=…)`). Without one a table starts as TF's default,
/// [`TruncatedNormal`](Self::TruncatedNormal) with mean 0 and standard deviation
/// `1 / sqrt(dimension)`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum EmbeddingInitializer {
    /// Normal, each value beyond two standard deviations of the mean drawn again (TF's
    /// `truncated_normal_initializer`).
    TruncatedNormal {
        /// The mean.
        mean: f64,
        /// The standard deviation before truncation (≥ 0).
        stddev: f64,
    },
    /// Normal (TF's `random_normal_initializer`).
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation (≥ 0).
        stddev: f64,
    },
    /// Uniform in `[min, max)` (TF's `random_uniform_initializer`).
    Uniform {
        /// The lowest value.
        min: f64,
        /// The bound above every value (> `min`).
        max: f64,
    },
    /// Every value the same (TF's `constant_initializer`; `0.0` is `zeros_initializer`).
    Constant {
        /// The value.
        value: f64,
    },
}

impl EmbeddingInitializer {
    /// TF's default for a table of `dimension`-wide vectors: truncated normal, mean 0,
    /// standard deviation `1 / sqrt(dimension)`.
    pub fn default_for(dimension: usize) -> Self {
        EmbeddingInitializer::TruncatedNormal {
            mean: 0.0,
            stddev: 1.0 / (dimension.max(1) as f64).sqrt(),
        }
    }

    /// What is wrong with its parameters, if anything: a value that is not finite as the
    /// table's f32, a negative standard deviation, or `max` not above `min`.
    pub fn problem(&self) -> Option<String> {
        let finite = |name: &str, value: f64| {
            let finite = (value as f32).is_finite();
            (!finite).then(|| format!("initializer {name} {value:?} must be finite"))
        };
        match *self {
            EmbeddingInitializer::TruncatedNormal { mean, stddev }
            | EmbeddingInitializer::Normal { mean, stddev } => {
                (finite("mean", mean).or_else(|| finite("stddev", stddev))).or_else(|| {
                    (stddev < 0.0)
                        .then(|| format!("initializer stddev {stddev:?} must not be negative"))
                })
            }
            EmbeddingInitializer::Uniform { min, max } => {
                (finite("min", min).or_else(|| finite("max", max))).or_else(|| {
                    let (low, high) = (min as f32, max as f32);
                    let drawable = low < high && (high - low).is_finite();
                    (!drawable)
                        .then(|| format!("initializer max {max:?} must be above its min {min:?}"))
                })
            }
            EmbeddingInitializer::Constant { value } => finite("value", value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_that_cannot_draw_a_table_are_named() {
        let problem = |init: EmbeddingInitializer| init.problem().unwrap_or_default();
        let normal = |mean, stddev| EmbeddingInitializer::Normal { mean, stddev };
        assert_eq!(
            problem(normal(0.0, -1.0)),
            "initializer stddev -1.0 must not be negative"
        );
        assert_eq!(
            problem(normal(f64::NAN, 1.0)),
            "initializer mean NaN must be finite"
        );
        let truncated = EmbeddingInitializer::TruncatedNormal {
            mean: 0.0,
            stddev: f64::INFINITY,
        };
        assert_eq!(problem(truncated), "initializer stddev inf must be finite");
        let uniform = |min, max| problem(EmbeddingInitializer::Uniform { min, max });
        assert_eq!(
            uniform(1.0, 0.5),
            "initializer max 0.5 must be above its min 1.0"
        );
        assert_eq!(
            uniform(1.0, 1.0),
            "initializer max 1.0 must be above its min 1.0"
        );
        // Apart as f64 but one value as the table's f32; a range wider than f32 holds.
        assert_eq!(
            uniform(1.0, 1.0 + 1e-12),
            "initializer max 1.000000000001 must be above its min 1.0"
        );
        assert_eq!(
            uniform(-3e38, 3e38),
            "initializer max 3e38 must be above its min -3e38"
        );
        assert_eq!(
            problem(normal(1e300, 1.0)),
            "initializer mean 1e300 must be finite"
        );
        let constant = EmbeddingInitializer::Constant { value: f64::NAN };
        assert_eq!(problem(constant), "initializer value NaN must be finite");
        assert_eq!(EmbeddingInitializer::default_for(4).problem(), None);
        assert_eq!(
            EmbeddingInitializer::Constant { value: 0.0 }.problem(),
            None
        );
    }

    #[test]
    fn the_default_is_tfs_truncated_normal_of_the_dimension() {
        assert_eq!(
            EmbeddingInitializer::default_for(16),
            EmbeddingInitializer::TruncatedNormal {
                mean: 0.0,
                stddev: 0.25
            }
        );
    }
}
