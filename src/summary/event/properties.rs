//! Properties of events files: any bytes are events or an error, never a panic; events
//! read back exactly through the TFRecord framing TensorBoard reads.

use proptest::prelude::*;

use super::*;
use crate::summary::event_file::{masked_crc32c, read_event_file};

fn finite() -> impl Strategy<Value = f64> {
    any::<f64>().prop_filter("finite", |v| v.is_finite())
}

fn event() -> impl Strategy<Value = Event> {
    let value = prop_oneof![
        any::<f32>()
            .prop_filter("not NaN", |v| !v.is_nan())
            .prop_map(Value::Simple),
        (
            finite(),
            finite(),
            prop::collection::vec((finite(), finite()), 1..6)
        )
            .prop_map(|(sum, sum_squares, buckets)| {
                let (bucket_limits, bucket_counts) = buckets.into_iter().unzip();
                Value::Histogram(Histogram {
                    min: -1.0,
                    max: 1.0,
                    num: 3.0,
                    sum,
                    sum_squares,
                    bucket_limits,
                    bucket_counts,
                })
            }),
    ];
    let what = prop_oneof![
        "[ -~]{0,20}".prop_map(EventKind::FileVersion),
        prop::collection::vec(
            ("[a-z/_]{1,12}", value).prop_map(|(tag, value)| SummaryValue { tag, value }),
            0..4
        )
        .prop_map(EventKind::Summary),
        prop::sample::select(vec![SessionStatus::Start, SessionStatus::Stop])
            .prop_map(EventKind::SessionLog),
    ];
    (finite(), any::<i64>(), what).prop_map(|(wall_time, step, what)| Event {
        wall_time,
        step,
        what,
    })
}

/// `events` in TFRecord framing, as an events file holds them.
fn framed(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for event in events {
        let data = event.encode();
        let len = (data.len() as u64).to_le_bytes();
        out.extend_from_slice(&len);
        out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
        out.extend_from_slice(&data);
        out.extend_from_slice(&masked_crc32c(&data).to_le_bytes());
    }
    out
}

proptest! {
    #[test]
    fn any_bytes_are_an_event_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = Event::decode(&bytes);
    }

    #[test]
    fn any_file_is_events_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        std::fs::write(&path, &bytes).unwrap();
        let _ = read_event_file(&path);
    }

    #[test]
    fn events_read_back_exactly(events in prop::collection::vec(event(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        std::fs::write(&path, framed(&events)).unwrap();
        prop_assert_eq!(read_event_file(&path).unwrap(), events);
    }

    #[test]
    fn a_length_beyond_the_file_is_a_torn_tail_not_an_allocation(len in any::<u64>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        let len_bytes = len.to_le_bytes();
        let mut bytes = len_bytes.to_vec();
        bytes.extend_from_slice(&masked_crc32c(&len_bytes).to_le_bytes());
        bytes.extend_from_slice(&[0; 16]);
        prop_assume!(len > 12);
        std::fs::write(&path, &bytes).unwrap();
        prop_assert_eq!(read_event_file(&path).unwrap(), Vec::new());
    }
}
