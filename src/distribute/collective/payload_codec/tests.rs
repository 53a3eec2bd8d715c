use bytes::Bytes;

use super::*;
use crate::distribute::transport::PAYLOAD_POOL;

/// The little-endian bytes of `values` in `compression`'s format, in a buffer from the
/// payload pool.
fn encode(values: &[f32], compression: Compression, threads: usize) -> Vec<u8> {
    let mut out = PAYLOAD_POOL.take(values.len() * compression.element_bytes());
    encode_into(&mut out, values, compression, threads);
    out
}

/// [`fold_and_encode_into`] of `received`, in the pieces given, into a buffer from the
/// payload pool.
fn fold_and_encode(
    values: &mut [f32],
    received: &[Vec<u8>],
    step: PassOn,
    compression: Compression,
    threads: usize,
) -> Vec<u8> {
    let pieces: Vec<Bytes> = received.iter().cloned().map(Bytes::from).collect();
    let mut out = PAYLOAD_POOL.take(values.len() * compression.element_bytes());
    let payload = Lent::new(&pieces);
    check_size(payload, values.len(), compression).unwrap();
    fold_and_encode_into(&mut out, values, payload, step, compression, threads);
    out
}

/// `bytes` cut into pieces of the sizes `cuts` gives in turn.
fn cut(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let (mut pieces, mut at, mut sizes) = (Vec::new(), 0, cuts.iter().cycle());
    while at < bytes.len() {
        let end = (at + sizes.next().unwrap()).min(bytes.len());
        pieces.push(bytes[at..end].to_vec());
        at = end;
    }
    pieces
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|x| x.to_bits()).collect()
}

fn fold(
    dst: &mut [f32],
    pieces: &[Vec<u8>],
    combine: Combine,
    c: Compression,
) -> Result<(), PayloadSizeError> {
    let pieces: Vec<Bytes> = pieces.iter().cloned().map(Bytes::from).collect();
    fold_into(dst, Lent::new(&pieces), combine, c, 1)
}

#[test]
fn values_survive_the_wire_bit_for_bit() {
    let values = [
        1.5f32,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::MIN_POSITIVE / 2.0,
    ];
    let mut out = [0.0f32; 5];
    fold(
        &mut out,
        &[encode(&values, Compression::None, 1)],
        Combine::Copy,
        Compression::None,
    )
    .unwrap();
    assert_eq!(bits(&out), bits(&values));
}

#[test]
fn pieces_may_cut_values_anywhere() {
    let values: Vec<f32> = (0..37).map(|i| i as f32 * 0.37 - 3.0).collect();
    for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
        let bytes = encode(&values, c, 1);
        let mut whole = vec![1.0f32; values.len()];
        fold(&mut whole, std::slice::from_ref(&bytes), Combine::Add, c).unwrap();
        for cuts in [vec![1], vec![3, 5], vec![1, 2, 3, 7, 11], vec![0, 0, 13]] {
            let pieces = cut(&bytes, &cuts);
            let mut got = vec![1.0f32; values.len()];
            fold(&mut got, &pieces, Combine::Add, c).unwrap();
            assert_eq!(got, whole, "{c} cut by {cuts:?}");
        }
        for (v, w) in values.iter().zip(&whole) {
            assert_eq!(*w, 1.0 + c.round(*v), "{c}");
        }
    }
}

#[test]
fn add_folds_and_sizes_must_match() {
    let mut acc = [1.0f32, 2.0];
    fold(
        &mut acc,
        &[encode(&[0.5, 0.25], Compression::None, 1)],
        Combine::Add,
        Compression::None,
    )
    .unwrap();
    assert_eq!(acc, [1.5, 2.25]);
    let err = fold(
        &mut acc,
        &[encode(&[1.0], Compression::None, 1)],
        Combine::Add,
        Compression::None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("sent 4 bytes where 8 (2 values of 4 bytes) were expected"),
        "{err}"
    );
    assert_eq!(acc, [1.5, 2.25], "nothing folded");
    let err = fold(
        &mut acc,
        &[encode(&[1.0, 2.0], Compression::None, 1)],
        Combine::Add,
        Compression::Bf16,
    )
    .unwrap_err();
    assert_eq!(err.received_bytes, 8);
    assert_eq!(err.element_bytes, 2);
}

#[test]
fn a_completed_sum_is_kept_as_it_is_sent_with_the_bits_of_fold_then_divide_then_encode() {
    let values: Vec<f32> = (0..29).map(|i| i as f32 * 1.37 - 9.0).collect();
    let others: Vec<f32> = (0..29).map(|i| (i as f32 * 0.9).sin() * 5.0).collect();
    for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
        let received = encode(&others, c, 1);
        // Three passes: fold, divide and round, encode.
        let mut expected = values.clone();
        fold(
            &mut expected,
            std::slice::from_ref(&received),
            Combine::Add,
            c,
        )
        .unwrap();
        expected.iter_mut().for_each(|v| *v = c.round(*v / 3.0));
        let expected_sent = encode(&expected, c, 1);
        for cuts in [vec![received.len()], vec![1], vec![3, 5], vec![0, 7, 2]] {
            let mut kept = values.clone();
            let complete = PassOn::Complete { divisor: 3.0 };
            let sent = fold_and_encode(&mut kept, &cut(&received, &cuts), complete, c, 1);
            assert_eq!(bits(&kept), bits(&expected), "{c} cut by {cuts:?}");
            assert_eq!(sent, expected_sent, "{c} cut by {cuts:?}");
            let mut arrived = vec![0.0f32; values.len()];
            fold(&mut arrived, &[sent], Combine::Copy, c).unwrap();
            assert_eq!(
                bits(&arrived),
                bits(&kept),
                "{c}: the others get what is kept"
            );
        }
    }
}

#[test]
fn a_partial_sum_or_a_forwarded_segment_passes_on_with_the_bits_of_fold_then_encode() {
    let values: Vec<f32> = (0..23).map(|i| i as f32 * 0.77 - 4.0).collect();
    let others: Vec<f32> = (0..23).map(|i| (i as f32 * 1.3).cos() * 7.0).collect();
    for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
        let received = encode(&others, c, 1);
        for (step, combine) in [
            (PassOn::Add, Combine::Add),
            (PassOn::Forward, Combine::Copy),
        ] {
            // Two passes: fold, then encode what is kept.
            let mut expected = values.clone();
            fold(&mut expected, std::slice::from_ref(&received), combine, c).unwrap();
            let expected_sent = encode(&expected, c, 1);
            for cuts in [vec![received.len()], vec![3], vec![1, 6]] {
                let mut kept = values.clone();
                let sent = fold_and_encode(&mut kept, &cut(&received, &cuts), step, c, 1);
                assert_eq!(bits(&kept), bits(&expected), "{c} {step:?} cut by {cuts:?}");
                assert_eq!(sent, expected_sent, "{c} {step:?} cut by {cuts:?}");
            }
        }
    }
}

#[test]
fn passes_split_over_a_pool_give_the_bits_of_one_thread() {
    let len = 5 * (16 << 10) + 7;
    let values: Vec<f32> = (0..len).map(|i| (i as f32 * 0.731).sin() * 1e3).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    let passes = |threads: usize| {
        let mut outputs = Vec::new();
        for c in [Compression::None, Compression::Fp16, Compression::Bf16] {
            let sent = encode(&values, c, threads);
            let mut kept = values.clone();
            let received = std::slice::from_ref(&sent);
            let complete = PassOn::Complete { divisor: 3.0 };
            let finalized = fold_and_encode(&mut kept, received, complete, c, threads);
            let mut summed = values.clone();
            let pieces = [Bytes::from(sent.clone())];
            fold_into(&mut summed, Lent::new(&pieces), Combine::Add, c, threads).unwrap();
            outputs.push((sent, finalized, bits(&kept), bits(&summed)));
        }
        outputs
    };
    let alone = passes(1);
    assert_eq!(pool.install(|| passes(4)), alone);
    assert_eq!(pool.install(|| passes(3)), alone);
}

#[test]
fn sixteen_bit_formats_halve_the_bytes() {
    assert_eq!(encode(&[1.0; 10], Compression::Bf16, 1).len(), 20);
    assert_eq!(encode(&[1.0; 10], Compression::Fp16, 1).len(), 20);
    assert_eq!(encode(&[1.0; 10], Compression::None, 1).len(), 40);
}
