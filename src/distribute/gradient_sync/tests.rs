//! The averager against one process with the combined batch, with and without compression.
mod unused;

use super::*;
use crate::device::CpuTrainBackend as B;
use crate::distribute::testing::on_threads;
use crate::distribute::InMemoryTransport;
use crate::optimizer::extract_gradients;
use burn::module::Param;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

fn model() -> Linear<B> {
    crate::seed::build_seeded::<B, _>(&Default::default(), 5, || {
        LinearConfig::new(3, 2).init(&Default::default())
    })
}

fn rows(from: usize, n: usize) -> Tensor<B, 2> {
    let values: Vec<f32> = (from * 3..(from + n) * 3)
        .map(|i| ((i * 7) % 11) as f32 - 5.0)
        .collect();
    Tensor::from_data(TensorData::new(values, [n, 3]), &Default::default())
}

/// Mean squared output: the loss whose gradient is compared.
fn grads(model: &Linear<B>, x: Tensor<B, 2>) -> GradientsParams {
    let y = model.forward(x);
    let loss = (y.clone() * y).mean();
    extract_gradients(model, &mut loss.backward())
}

fn weight_grad(model: &Linear<B>, grads: &GradientsParams) -> Vec<f32> {
    let g = grads
        .get::<<B as AutodiffBackend>::InnerBackend, 2>(model.weight.id)
        .unwrap();
    g.into_data().to_vec::<f32>().unwrap()
}

/// Each of 3 ranks averages the gradient of its 4 rows with `averager`; their results.
fn average_on_three_ranks(
    averager: impl Fn() -> GradientAverager + Sync,
) -> Vec<(Vec<f32>, f64, CommStats)> {
    on_threads(InMemoryTransport::cluster(3), |transport| {
        let mut averager = averager();
        let m = model();
        let rank = transport.rank();
        let local = LocalStep {
            grads: grads(&m, rows(rank * 4, 4)),
            loss: StepLoss::Known(rank as f64 + 0.1),
        };
        let averaged = averager
            .average(&m, Some(local), transport)
            .unwrap()
            .expect("every rank took the step");
        (
            weight_grad(&m, &averaged.grads),
            averaged.loss.read(),
            averager.take_stats(),
        )
    })
}

#[test]
fn averaged_gradients_equal_the_gradient_of_the_whole_batch() {
    // 3 ranks with 4 rows each: the mean of their mean-loss gradients is the gradient of
    // the mean loss over all 12 rows, i.e. one process with a 3x larger batch. Buckets
    // of 64 bytes hold everything at once; of 8 bytes, they cut the weight in three.
    let single = model();
    let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
    for bucket_bytes in [64, 8] {
        let results = average_on_three_ranks(|| GradientAverager::new(bucket_bytes));
        for (got, loss, stats) in &results {
            assert_eq!(got, &results[0].0, "ranks differ");
            assert!(
                (loss - 1.1).abs() < 1e-6,
                "mean of the losses 0.1, 1.1, 2.1: {loss}"
            );
            for (a, b) in got.iter().zip(&expected) {
                assert!((a - b).abs() < 1e-5, "{got:?} vs {expected:?}");
            }
            assert_eq!(stats.steps, 1);
            assert_eq!(
                stats.bytes,
                4 * (6 + 2 + 2 + 2),
                "weight, bias, step entry: took the step, loss, used weight and bias"
            );
            assert!(stats.seconds > 0.0 && stats.reduce_seconds > 0.0);
            assert!(stats.copy_seconds > 0.0 && stats.apply_seconds > 0.0);
            assert!(stats.sync_seconds >= stats.seconds, "{stats:?}");
        }
    }
}

#[test]
fn compressed_gradients_stay_identical_and_close_and_the_loss_exact() {
    let single = model();
    let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
    let uncompressed = average_on_three_ranks(|| GradientAverager::new(8))
        .remove(0)
        .0;
    // 8-byte buckets: three all-reduces on a thread of their own; 64-byte buckets: one
    // for the gradients and one for the step entry, on the training thread.
    for (compression, bucket_bytes) in [
        (Compression::Bf16, 8),
        (Compression::Fp16, 8),
        (Compression::Bf16, 64),
    ] {
        let results = average_on_three_ranks(|| {
            GradientAverager::new(bucket_bytes).with_compression(compression)
        });
        let magnitude = expected.iter().map(|g| g.abs()).fold(0.0f32, f32::max);
        for (got, loss, _) in &results {
            assert_eq!(got, &results[0].0, "{compression}: ranks differ");
            assert!(
                (loss - 1.1).abs() < 1e-6,
                "{compression}: the loss travels in f32"
            );
            for (a, b) in got.iter().zip(&expected) {
                let bound = 12.0 * compression.unit_roundoff() * magnitude + 1e-5;
                assert!((a - b).abs() <= bound, "{compression}: {a} vs {b}");
            }
        }
        assert_ne!(
            results[0].0, uncompressed,
            "{compression}: nothing was rounded"
        );
    }
}

#[test]
fn buckets_read_off_the_device_as_one_tensor_average_to_the_same_bits() {
    // 64-byte buckets hold weight, bias and the step entry in one: fused, the weight and
    // bias cross as one tensor each way. Smaller buckets cut the 6-value weight into
    // slices crossing one by one (8 bytes: three of 2 values; 20 bytes: 5 values and 1),
    // joined again on the device. Compressed or not, the bits are those of the unfused path
    // (compressed, the fused path uploads the averages in the 16-bit format they travelled in).
    for (bucket_bytes, compression) in [
        (64, Compression::None),
        (64, Compression::Bf16),
        (8, Compression::None),
        (20, Compression::None),
        (20, Compression::Bf16),
    ] {
        let averager = |fuse| {
            move || {
                GradientAverager::new(bucket_bytes)
                    .with_compression(compression)
                    .with_device_fusion(fuse)
            }
        };
        let fused = average_on_three_ranks(averager(true));
        let unfused = average_on_three_ranks(averager(false));
        for ((got, loss, _), (want, want_loss, _)) in fused.iter().zip(&unfused) {
            assert_eq!(got, want, "{bucket_bytes} bytes, {compression}");
            // The step entry may ride with other neighbours (a slice rather than a whole
            // gradient), and so be cut into other chunks of the ring: the same loss up to
            // the order of its additions.
            assert!(
                (loss - want_loss).abs() < 1e-6,
                "{bucket_bytes} bytes: {loss}"
            );
        }
    }
}

#[test]
fn a_rank_reading_buckets_one_gradient_at_a_time_agrees_with_ranks_that_fuse() {
    // Rank 1 has no batch at the third step, so no gradient to show the device: it reads
    // zeros gradient by gradient while the others fuse; the step is off for all.
    let seen = on_threads(InMemoryTransport::cluster(3), |transport| {
        let m = model();
        let rank = transport.rank();
        let mut averager = GradientAverager::new(64).with_device_fusion(true);
        let mut seen = Vec::new();
        for step in 0..3 {
            let local = (rank != 1 || step < 2).then(|| LocalStep {
                grads: grads(&m, rows(rank * 4 + step, 4)),
                loss: StepLoss::Known(1.0),
            });
            let averaged = averager.average(&m, local, transport).unwrap();
            seen.push(averaged.map(|a| weight_grad(&m, &a.grads)));
        }
        seen
    });
    for rank in &seen {
        assert_eq!(rank, &seen[0], "ranks differ");
        assert!(rank[0].is_some() && rank[1].is_some() && rank[2].is_none());
    }
}

#[test]
fn a_rank_without_a_batch_calls_the_step_off_on_every_rank() {
    let taken = on_threads(InMemoryTransport::cluster(3), |transport| {
        let m = model();
        let rank = transport.rank();
        let mut averager = GradientAverager::new(64);
        let mut taken = 0;
        // Rank 2 runs out of input after two steps; the others have plenty.
        for step in 0..5 {
            let local = (rank != 2 || step < 2).then(|| LocalStep {
                grads: grads(&m, rows(rank * 4, 4)),
                loss: StepLoss::Known(1.0),
            });
            match averager.average(&m, local, transport).unwrap() {
                Some(_) => taken += 1,
                None => break,
            }
        }
        let stats = averager.take_stats();
        assert_eq!(stats.steps, 3);
        assert!(stats.bytes > 0 && stats.seconds > 0.0);
        assert_eq!(averager.take_stats(), CommStats::default());
        taken
    });
    assert_eq!(taken, vec![2, 2, 2]);
}

#[test]
fn bus_bandwidth_follows_the_ring_formula() {
    let stats = CommStats {
        steps: 1,
        bytes: 1_000_000_000,
        seconds: 1.0,
        reduce_seconds: 0.25,
        ..CommStats::default()
    };
    assert_eq!(stats.wire_seconds(), 0.75);
    assert_eq!(stats.busbw_gbps(2), 1.0);
    assert_eq!(stats.busbw_gbps(4), 1.5);
    assert_eq!(stats.busbw_gbps(1), 0.0);
}

#[test]
fn passes_shared_by_all_reduce_threads_average_to_the_bits_of_one_thread() {
    // A 512x2048 weight on 3 ranks: ring segments of about 44k values, split in two
    // between the threads. With 64 KiB buckets the weight is sliced on the fused path
    // and the bias packed with the step entry, so both thread layouts are crossed.
    // Weights from a formula, not from the backend's RNG, which is one per process: a
    // test drawing from it meanwhile would give the two runs different models.
    let wide = || {
        let device = Default::default();
        let values = |n: usize, salt: usize| -> Vec<f32> {
            (0..n)
                .map(|i| (((i + salt) * 7919) % 2003) as f32 / 2003.0 - 0.5)
                .map(|v| v * 0.09)
                .collect()
        };
        let mut m: Linear<B> = LinearConfig::new(512, 2048).init(&device);
        let weight = TensorData::new(values(512 * 2048, 0), [512, 2048]);
        m.weight = Param::from_tensor(Tensor::from_data(weight, &device));
        let bias = TensorData::new(values(2048, 1), [2048]);
        m.bias = Some(Param::from_tensor(Tensor::from_data(bias, &device)));
        m
    };
    let run = |threads: usize, compression: Compression, bucket_bytes: usize| {
        let out = on_threads(InMemoryTransport::cluster(3), |transport| {
            let m = wide();
            let rank = transport.rank();
            let x: Vec<f32> = (0..4 * 512)
                .map(|i| (((i + rank * 977) * 7919) % 201) as f32 / 100.0 - 1.0)
                .collect();
            let x = Tensor::<B, 2>::from_data(TensorData::new(x, [4, 512]), &Default::default());
            let y = m.forward(x);
            let loss = (y.clone() * y).mean();
            let local = LocalStep {
                grads: extract_gradients(&m, &mut loss.backward()),
                loss: StepLoss::Known(1.0),
            };
            let mut averager = GradientAverager::new(bucket_bytes)
                .with_compression(compression)
                .with_device_fusion(bucket_bytes < 1 << 20)
                .with_threads(threads);
            let averaged = averager.average(&m, Some(local), transport).unwrap();
            let g = averaged.expect("every rank took the step").grads;
            let g = g.get::<<B as AutodiffBackend>::InnerBackend, 2>(m.weight.id);
            let bits = g.unwrap().into_data().to_vec::<f32>().unwrap();
            bits.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        });
        assert!(out.iter().all(|bits| bits == &out[0]), "ranks differ");
        out.into_iter().next().unwrap()
    };
    for compression in [Compression::None, Compression::Bf16] {
        for bucket_bytes in [16 << 20, 64 << 10] {
            let alone = run(1, compression, bucket_bytes);
            assert_eq!(
                run(3, compression, bucket_bytes),
                alone,
                "{compression}, {bucket_bytes}-byte buckets"
            );
        }
    }
}

#[test]
fn bucket_sizes_tried_then_chosen_alike_keep_every_step_the_whole_batch_gradient() {
    let single = model();
    let expected = weight_grad(&single, &grads(&single, rows(0, 12)));
    let sizes = on_threads(InMemoryTransport::cluster(3), |transport| {
        let m = model();
        let rank = transport.rank();
        // Buckets of 8 bytes cut the weight in three; of 64, hold everything.
        let mut averager = GradientAverager::new(0);
        averager.tuner = Some(bucket_tuner::BucketTuner::new(&[8, 64], 1, 2));
        let mut sizes = Vec::new();
        for _ in 0..8 {
            let local = LocalStep {
                grads: grads(&m, rows(rank * 4, 4)),
                loss: StepLoss::Known(1.0),
            };
            let averaged = averager.average(&m, Some(local), transport);
            let averaged = averaged.unwrap().expect("every rank took the step");
            for (a, b) in weight_grad(&m, &averaged.grads).iter().zip(&expected) {
                assert!((a - b).abs() < 1e-5, "step {}: {a} vs {b}", sizes.len());
            }
            let work = averager.work[0].as_ref().unwrap();
            let one_bucket = work.buckets.len() == 1;
            assert_eq!(one_bucket, averager.bucket_bytes == 64, "the plan follows");
            sizes.push(averager.bucket_bytes);
        }
        let tuner = averager.tuner.as_ref().unwrap();
        assert!(tuner.begin().vote.is_none(), "decided");
        sizes
    });
    assert!(
        sizes.iter().all(|s| s == &sizes[0]),
        "ranks differ: {sizes:?}"
    );
    // Warm-up, two rounds of turns, the vote, then the choice.
    assert_eq!(sizes[0][..6], [8, 8, 64, 8, 64, 8]);
    assert!(sizes[0][6..]
        .iter()
        .all(|&b| b == sizes[0][6] && (b == 8 || b == 64)));
}
