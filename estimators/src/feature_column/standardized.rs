//! [`standardized_numeric_columns`]: numeric columns standardised by statistics computed
//! beforehand, one per numeric feature of a schema.

use datasets::{FeatureStats, Schema};
use estimator::{Error, Result};

use super::column::FeatureColumn;
use super::numeric::numeric_column;

/// One standardised [`numeric_column`] per numeric feature of `schema`, with the means and
/// standard deviations of `stats` (computed over `Example::dense`, i.e. in schema order).
pub fn standardized_numeric_columns(
    schema: &Schema,
    stats: &FeatureStats,
) -> Result<Vec<FeatureColumn>> {
    let names = schema.dense_names();
    if names.len() != stats.len() {
        return Err(Error::Config(format!(
            "feature statistics cover {} features but the input has {} numeric columns ({})",
            stats.len(),
            names.len(),
            names.join(", ")
        )));
    }
    Ok(names
        .iter()
        .zip(stats.mean.iter().zip(&stats.std))
        .map(|(name, (&mean, &std))| numeric_column(*name).with_normalizer(mean, std).into())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardized_columns_follow_the_schema_order() {
        let schema = Schema::new()
            .float("a")
            .category("c")
            .int("b")
            .int("y")
            .label("y");
        let stats = FeatureStats {
            names: vec![],
            count: 3,
            mean: vec![1.0, 2.0],
            std: vec![0.5, 1.0],
        };
        let columns = standardized_numeric_columns(&schema, &stats).unwrap();
        assert_eq!(
            columns,
            vec![
                FeatureColumn::from(numeric_column("a").with_normalizer(1.0, 0.5)),
                FeatureColumn::from(numeric_column("b").with_normalizer(2.0, 1.0)),
            ]
        );
        let short = FeatureStats {
            mean: vec![1.0],
            std: vec![1.0],
            ..stats
        };
        let err = standardized_numeric_columns(&schema, &short)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cover 1 features but the input has 2 numeric columns (a, b)"));
    }
}
