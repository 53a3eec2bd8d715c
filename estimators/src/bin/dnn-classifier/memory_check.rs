//! Refusing sizes that cannot fit before anything is allocated: an allocation failure
//! aborts the process with no message naming the flag at fault.

use std::path::Path;

use anyhow::{bail, Result};
use estimators::DnnClassifier;

/// Bytes per value (f32).
const VALUE: f64 = 4.0;

/// A lower bound of the memory one training step of a DNN needs: weights with their
/// gradients and two optimizer slots, and for the batch its input and every layer's
/// activations and their gradients.
pub fn step_bytes(inputs: usize, hidden_units: &[usize], outputs: usize, batch: usize) -> f64 {
    let widths = widths(inputs, hidden_units, outputs);
    let activations: f64 = widths.iter().sum::<f64>() * batch as f64;
    (parameters(&widths) * 4.0 + activations * 2.0) * VALUE
}

fn widths(inputs: usize, hidden_units: &[usize], outputs: usize) -> Vec<f64> {
    std::iter::once(inputs)
        .chain(hidden_units.iter().copied())
        .chain(std::iter::once(outputs))
        .map(|w| w as f64)
        .collect()
}

/// Weights and biases of dense layers of `widths`.
fn parameters(widths: &[f64]) -> f64 {
    widths.windows(2).map(|w| w[0] * w[1] + w[1]).sum()
}

/// An error naming `file` when the weights of the model it describes cannot fit in
/// `available` bytes: its sizes come from a file that may be damaged or hand-edited, and
/// building the model would abort the process.
pub fn check_model_fits(
    file: &Path,
    classifier: &DnnClassifier,
    available: Option<f64>,
) -> Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    let dnn = classifier.network();
    let logits = classifier.head().logits_dimension();
    let dense = parameters(&widths(
        dnn.columns.input_width(),
        &dnn.hidden_units,
        logits,
    ));
    let tables: f64 = dnn
        .columns
        .embedding_tables()
        .iter()
        .map(|e| e.num_buckets() as f64 * e.dimension as f64)
        .sum();
    let needed = (dense + tables) * VALUE;
    if needed > available {
        bail!(
            "{}: the model it describes needs at least {} for its weights, more than the {} \
             of memory available",
            file.display(),
            human(needed),
            human(available)
        );
    }
    Ok(())
}

/// `MemAvailable` of `/proc/meminfo`; `None` where it cannot be read (not Linux).
pub fn available_bytes() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// An error naming the flags when a step needs more than `available` bytes.
pub fn check_fits(
    inputs: usize,
    hidden_units: &[usize],
    outputs: usize,
    batch: usize,
    available: Option<f64>,
) -> Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    let needed = step_bytes(inputs, hidden_units, outputs, batch);
    if needed > available {
        let units: Vec<String> = hidden_units.iter().map(usize::to_string).collect();
        bail!(
            "--batch-size {batch} with --hidden-units {} needs at least {} per training \
             step, more than the {} of memory available",
            units.join(","),
            human(needed),
            human(available)
        );
    }
    Ok(())
}

/// An error naming `flag` when its `threads` (per CPU operation, or sharing an
/// all-reduce) are more than this machine can use.
pub fn check_threads(flag: &str, threads: usize) -> Result<()> {
    let most = estimator::device::max_intra_op_threads();
    if threads > most {
        bail!("{flag} {threads}: more than the {most} threads this machine can use (8 per core)");
    }
    Ok(())
}

/// An error naming the flags when the batches built ahead of the step cannot fit in half
/// of `available` (the other half is the step's), or are more than can be queued.
pub fn check_prefetch(
    ahead: usize,
    inputs: usize,
    batch: usize,
    available: Option<f64>,
) -> Result<()> {
    let most = estimator::MAX_PREFETCH_TO_DEVICE;
    if ahead > most {
        bail!("--prefetch-to-device {ahead}: at most {most} batches can be built ahead");
    }
    let Some(available) = available else {
        return Ok(());
    };
    let needed = ahead as f64 * batch as f64 * (inputs as f64 + 1.0) * VALUE;
    if needed > available / 2.0 {
        bail!(
            "--prefetch-to-device {ahead} with --batch-size {batch} holds {} of batches ahead \
             of the step, more than half the {} of memory available",
            human(needed),
            human(available)
        );
    }
    Ok(())
}

fn human(bytes: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", units[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_weights_and_activations() {
        // 4 → 2 → 1: 13 parameters ×4, (4 + 2 + 1) values × 10 rows ×2, 4 bytes each.
        assert_eq!(step_bytes(4, &[2], 1, 10), (13.0 * 4.0 + 70.0 * 2.0) * 4.0);
    }

    #[test]
    fn sizes_beyond_memory_are_refused_naming_the_flags() {
        let err = check_fits(4, &[100_000_000], 3, 128, Some(16e9)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--batch-size 128 with --hidden-units 100000000 needs at least 115.2 GB per \
             training step, more than the 16.0 GB of memory available"
        );
        assert!(check_fits(4, &[128, 64], 3, 1_000_000_000_000, Some(16e9)).is_err());
        assert!(check_fits(784, &[1024, 1024], 10, 1024, Some(16e9)).is_ok());
        assert!(check_fits(4, &[100_000_000], 3, 128, None).is_ok());
    }

    #[test]
    fn a_saved_model_too_large_for_memory_is_refused_naming_its_file() {
        use estimator::datasets::Schema;
        use estimator::RunConfig;
        use estimators::feature_column::numeric_column;
        let schema = Schema::new().float("x").int("y").label("y");
        let model = |units: usize| {
            let columns = vec![numeric_column("x").into()];
            DnnClassifier::new(RunConfig::new("m"), &schema, columns, [units], 3).unwrap()
        };
        let file = Path::new("m/dnn_classifier.json");
        let err = check_model_fits(file, &model(1 << 40), Some(16e9)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "m/dnn_classifier.json: the model it describes needs at least 22.0 TB for its \
             weights, more than the 16.0 GB of memory available"
        );
        assert!(check_model_fits(file, &model(128), Some(16e9)).is_ok());
    }
}
