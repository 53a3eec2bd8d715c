//! Derived metrics (RMSE, precision, recall, F1, top-k accuracy) streamed over batches of
//! different sizes, merged on two workers, sent between them as JSON and merged again, equal
//! a direct computation over all the examples at once.

use burn::tensor::{Tensor, TensorData};
use datasets::Label;

use super::{BinaryClassHead, Head, MultiClassHead, RegressionHead};
use crate::device::CpuBackend;
use crate::metrics::Metrics;

/// Uneven on purpose: an average of per-batch ratios would weigh the batch of 1 like the
/// batch of 13.
const BATCHES: [usize; 6] = [1, 3, 8, 5, 13, 10];
const N: usize = 40;

fn uniform(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// `head`'s metrics of each batch of `labels` and `logits` (`logits.len() / N` values per
/// example), weighted by [`weights`]; worker 0 merges the even batches, worker 1 the odd
/// ones; worker 1's set travels as JSON and merges into worker 0's. Also returns the plain
/// average of the per-batch values of `name`, which a correct merge must not give.
fn merged(name: &str, head: &Head, labels: &[Label], logits: &[f32]) -> (Metrics, f64) {
    assert_eq!(BATCHES.iter().sum::<usize>(), N);
    let (w, width) = (weights(), logits.len() / N);
    let mut workers = [Metrics::new(), Metrics::new()];
    let mut per_batch = Vec::new();
    let mut start = 0;
    for (i, &len) in BATCHES.iter().enumerate() {
        let range = start..start + len;
        let weights = Some(w[range.clone()].to_vec());
        let labels = head
            .labels::<CpuBackend>(&labels[range], weights, &Default::default())
            .unwrap();
        let rows = &logits[start * width..(start + len) * width];
        let batch = head.metrics(tensor(rows, [len, width]), &labels).unwrap();
        per_batch.push(batch.values()[name]);
        workers[i % 2].merge(&batch);
        start += len;
    }
    let [mut chief, other] = workers;
    let sent: Metrics = serde_json::from_str(&serde_json::to_string(&other).unwrap()).unwrap();
    chief.merge(&sent);
    let naive = per_batch.iter().sum::<f64>() / per_batch.len() as f64;
    (chief, naive)
}

fn weights() -> Vec<f32> {
    let mut next = uniform(11);
    (0..N).map(|_| 0.5 + 1.5 * next()).collect()
}

fn tensor(values: &[f32], shape: [usize; 2]) -> Tensor<CpuBackend, 2> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), &Default::default())
}

fn close(name: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() < 1e-9,
        "{name}: merged {got}, direct {want}"
    );
}

#[test]
fn rmse_of_merged_batches_is_the_rmse_of_all_examples() {
    let (mut next, w) = (uniform(1), weights());
    let predictions: Vec<f32> = (0..N).map(|_| 4.0 * next() - 2.0).collect();
    // Errors grow with the index, so batches differ and their plain average is off.
    let targets: Vec<f32> = (0..N).map(|i| i as f32 * 0.2 * next()).collect();
    let head = Head::Regression(RegressionHead::new());
    let labels: Vec<Label> = targets.iter().map(|&t| Label::Float(t)).collect();
    let (metrics, naive) = merged("root_mean_squared_error", &head, &labels, &predictions);
    let (mut sum, mut weight) = (0.0, 0.0);
    for i in 0..N {
        let error = f64::from(predictions[i]) - f64::from(targets[i]);
        sum += f64::from(w[i]) * error * error;
        weight += f64::from(w[i]);
    }
    let values = metrics.values();
    close(
        "root_mean_squared_error",
        values["root_mean_squared_error"],
        (sum / weight).sqrt(),
    );
    // The loss itself is computed in f32 on the device.
    let loss = values["average_loss"];
    assert!(
        (loss - sum / weight).abs() < 1e-6 * loss,
        "average_loss {loss}"
    );
    assert!(
        (naive - values["root_mean_squared_error"]).abs() > 1e-3,
        "{naive}"
    );
}

#[test]
fn precision_recall_and_f1_of_merged_batches_come_from_all_the_counts() {
    let (mut next, w) = (uniform(2), weights());
    let logits: Vec<f32> = (0..N).map(|_| 4.0 * next() - 2.0).collect();
    let positive: Vec<bool> = logits
        .iter()
        .map(|&x| x + 1.5 * next() - 0.5 > 0.0)
        .collect();
    let head = Head::Binary(BinaryClassHead::new());
    let labels: Vec<Label> = positive
        .iter()
        .map(|&p| Label::Class(u32::from(p)))
        .collect();
    let (metrics, naive) = merged("precision", &head, &labels, &logits);
    let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
    for i in 0..N {
        let weight = f64::from(w[i]);
        match (logits[i] > 0.0, positive[i]) {
            (true, true) => tp += weight,
            (true, false) => fp += weight,
            (false, true) => fn_ += weight,
            (false, false) => {}
        }
    }
    let (precision, recall) = (tp / (tp + fp), tp / (tp + fn_));
    let values = metrics.values();
    close("precision", values["precision"], precision);
    close("recall", values["recall"], recall);
    close(
        "f1",
        values["f1"],
        2.0 * precision * recall / (precision + recall),
    );
    assert!((naive - precision).abs() > 1e-3, "{naive}");
}

#[test]
fn top_5_accuracy_of_merged_batches_is_the_share_of_all_examples() {
    const CLASSES: usize = 8;
    let (mut next, w) = (uniform(3), weights());
    let logits: Vec<f32> = (0..N * CLASSES).map(|_| 4.0 * next() - 2.0).collect();
    let targets: Vec<usize> = (0..N)
        .map(|_| ((next() * CLASSES as f32) as usize).min(7))
        .collect();
    let head = Head::MultiClass(MultiClassHead::new(CLASSES));
    let labels: Vec<Label> = targets.iter().map(|&t| Label::Class(t as u32)).collect();
    let (metrics, naive) = merged("accuracy_top_5", &head, &labels, &logits);
    // Directly: sort each row's classes by logit, descending, and look for the label among
    // the first five.
    let (mut hits, mut weight) = (0.0, 0.0);
    for (i, row) in logits.chunks(CLASSES).enumerate() {
        let mut order: Vec<usize> = (0..CLASSES).collect();
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
        if order[..5].contains(&targets[i]) {
            hits += f64::from(w[i]);
        }
        weight += f64::from(w[i]);
    }
    let values = metrics.values();
    close("accuracy_top_5", values["accuracy_top_5"], hits / weight);
    assert!(values["accuracy_top_5"] >= values["accuracy"]);
    assert!((naive - hits / weight).abs() > 1e-3, "{naive}");
}
