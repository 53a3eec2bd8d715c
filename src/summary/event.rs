//! The TensorBoard `Event` message, the part of it this crate writes, and its protobuf encoding.
//!
//! Field numbers follow `tensorflow/core/util/event.proto` and `summary.proto` (the same files
//! `tensorboard-proto` compiles): `Event { wall_time = 1; step = 2; file_version = 3;
//! summary = 5; session_log = 7 }`, `Summary { repeated Value value = 1 }`,
//! `Value { tag = 1; simple_value = 2; histo = 5 }`, `HistogramProto { min = 1 … bucket = 7 }`,
//! `SessionLog { status = 1 }`.

use super::fault::SummaryFault;
use super::histogram::Histogram;
use super::protobuf_primitives::{push_doubles, Decoder, Encoder, Field};

/// One record of an events file.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds since the Unix epoch when the event was written.
    pub wall_time: f64,
    /// The global step the event belongs to.
    pub step: i64,
    /// What the event carries.
    pub what: EventKind,
}

/// The payload of an [`Event`].
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The first event of every file, `brain.Event:2`.
    FileVersion(String),
    /// Tagged values.
    Summary(Vec<SummaryValue>),
    /// A session status change, e.g. `START` on (re)start, which makes TensorBoard drop stale
    /// events of an earlier run with a step at or after this event's step.
    SessionLog(SessionStatus),
    /// Anything else (graphs, run metadata, …), not decoded.
    Other,
}

/// `SessionLog.SessionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    /// `STATUS_UNSPECIFIED` (or an unknown value).
    Unspecified,
    /// `START`: a (re)started training session.
    Start,
    /// `STOP`.
    Stop,
    /// `CHECKPOINT`.
    Checkpoint,
}

/// One tagged value of a summary event.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryValue {
    /// The tag, e.g. `loss`.
    pub tag: String,
    /// The value.
    pub value: Value,
}

/// The value of a [`SummaryValue`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `simple_value`: a scalar.
    Simple(f32),
    /// `histo`: a histogram.
    Histogram(Histogram),
    /// Anything else (images, audio, tensors, …), not decoded.
    Other,
}

/// The version string TensorBoard expects in the first event of a file.
pub const FILE_VERSION: &str = "brain.Event:2";

impl SessionStatus {
    fn code(self) -> i64 {
        match self {
            SessionStatus::Unspecified => 0,
            SessionStatus::Start => 1,
            SessionStatus::Stop => 2,
            SessionStatus::Checkpoint => 3,
        }
    }

    fn from_code(code: u64) -> Self {
        match code {
            1 => SessionStatus::Start,
            2 => SessionStatus::Stop,
            3 => SessionStatus::Checkpoint,
            _ => SessionStatus::Unspecified,
        }
    }
}

impl Event {
    /// The event serialized as a protobuf `Event` message.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.double(1, self.wall_time);
        e.int64(2, self.step);
        match &self.what {
            EventKind::FileVersion(version) => e.bytes(3, version.as_bytes()),
            EventKind::Summary(values) => {
                let mut summary = Encoder::default();
                for value in values {
                    summary.bytes(1, &encode_value(value));
                }
                e.bytes(5, &summary.finish());
            }
            EventKind::SessionLog(status) => {
                let mut log = Encoder::default();
                log.int64(1, status.code());
                e.bytes(7, &log.finish());
            }
            EventKind::Other => {}
        }
        e.finish()
    }

    /// Parses a protobuf `Event` message, or says why it is not one.
    pub fn decode(bytes: &[u8]) -> Result<Self, SummaryFault> {
        let mut event = Event {
            wall_time: 0.0,
            step: 0,
            what: EventKind::Other,
        };
        let mut d = Decoder::new(bytes);
        while let Some((number, field)) = d.next_field()? {
            match (number, field) {
                (1, f) => event.wall_time = f.as_f64().ok_or(not_a_double("Event", "wall_time"))?,
                (2, Field::Varint(v)) => event.step = v as i64,
                (3, Field::Len(s)) => event.what = EventKind::FileVersion(utf8(s)?),
                (5, Field::Len(m)) => event.what = EventKind::Summary(decode_summary(m)?),
                (7, Field::Len(m)) => event.what = EventKind::SessionLog(decode_session_log(m)?),
                (4 | 6 | 8 | 9, _) => event.what = EventKind::Other,
                (2 | 3 | 5 | 7, f) => return Err(malformed("Event", number, f)),
                _ => {}
            }
        }
        Ok(event)
    }
}

fn encode_value(value: &SummaryValue) -> Vec<u8> {
    let mut e = Encoder::default();
    e.bytes(1, value.tag.as_bytes());
    match &value.value {
        Value::Simple(v) => e.float(2, *v),
        Value::Histogram(h) => {
            let mut histo = Encoder::default();
            histo.double(1, h.min);
            histo.double(2, h.max);
            histo.double(3, h.num);
            histo.double(4, h.sum);
            histo.double(5, h.sum_squares);
            histo.packed_doubles(6, &h.bucket_limits);
            histo.packed_doubles(7, &h.bucket_counts);
            e.bytes(5, &histo.finish());
        }
        Value::Other => {}
    }
    e.finish()
}

fn utf8(bytes: &[u8]) -> Result<String, SummaryFault> {
    String::from_utf8(bytes.to_vec()).map_err(SummaryFault::Utf8)
}

fn not_a_double(message: &'static str, field: &'static str) -> SummaryFault {
    SummaryFault::NotADouble { message, field }
}

fn malformed(message: &'static str, field: u32, found: Field<'_>) -> SummaryFault {
    SummaryFault::Malformed {
        message,
        field,
        found: format!("{found:?}"),
    }
}

fn decode_summary(bytes: &[u8]) -> Result<Vec<SummaryValue>, SummaryFault> {
    let mut values = Vec::new();
    let mut d = Decoder::new(bytes);
    while let Some((number, field)) = d.next_field()? {
        if let (1, Field::Len(m)) = (number, field) {
            values.push(decode_value(m)?);
        }
    }
    Ok(values)
}

fn decode_value(bytes: &[u8]) -> Result<SummaryValue, SummaryFault> {
    let mut value = SummaryValue {
        tag: String::new(),
        value: Value::Other,
    };
    let mut d = Decoder::new(bytes);
    while let Some((number, field)) = d.next_field()? {
        match (number, field) {
            (1, Field::Len(s)) => value.tag = utf8(s)?,
            (2, Field::Fixed32(b)) => value.value = Value::Simple(f32::from_le_bytes(b)),
            (5, Field::Len(m)) => value.value = Value::Histogram(decode_histogram(m)?),
            (3 | 4 | 6 | 8, _) => value.value = Value::Other,
            (1 | 2 | 5, f) => return Err(malformed("Summary.Value", number, f)),
            _ => {}
        }
    }
    Ok(value)
}

fn decode_histogram(bytes: &[u8]) -> Result<Histogram, SummaryFault> {
    let mut h = Histogram {
        min: 0.0,
        max: 0.0,
        num: 0.0,
        sum: 0.0,
        sum_squares: 0.0,
        bucket_limits: Vec::new(),
        bucket_counts: Vec::new(),
    };
    let mut d = Decoder::new(bytes);
    while let Some((number, field)) = d.next_field()? {
        let (scalar, name) = match number {
            1 => (&mut h.min, "min"),
            2 => (&mut h.max, "max"),
            3 => (&mut h.num, "num"),
            4 => (&mut h.sum, "sum"),
            5 => (&mut h.sum_squares, "sum_squares"),
            6 => {
                push_doubles(field, &mut h.bucket_limits)?;
                continue;
            }
            7 => {
                push_doubles(field, &mut h.bucket_counts)?;
                continue;
            }
            _ => continue,
        };
        *scalar = field.as_f64().ok_or(not_a_double("HistogramProto", name))?;
    }
    Ok(h)
}

fn decode_session_log(bytes: &[u8]) -> Result<SessionStatus, SummaryFault> {
    let mut status = SessionStatus::Unspecified;
    let mut d = Decoder::new(bytes);
    while let Some((number, field)) = d.next_field()? {
        if let (1, Field::Varint(code)) = (number, field) {
            status = SessionStatus::from_code(code);
        }
    }
    Ok(status)
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::histogram::histogram_buckets;

    #[test]
    fn scalar_event_has_the_reference_encoding() {
        let event = Event {
            wall_time: 1.0,
            step: 3,
            what: EventKind::Summary(vec![SummaryValue {
                tag: "loss".into(),
                value: Value::Simple(0.5),
            }]),
        };
        // Hand-encoded: 09 <1.0 f64>, 10 03, 2a <len> [0a <len> [0a 04 "loss" 15 <0.5 f32>]].
        let mut expected = vec![0x09];
        expected.extend_from_slice(&1.0_f64.to_le_bytes());
        expected.extend_from_slice(&[0x10, 0x03, 0x2a, 0x0d, 0x0a, 0x0b, 0x0a, 0x04]);
        expected.extend_from_slice(b"loss");
        expected.push(0x15);
        expected.extend_from_slice(&0.5_f32.to_le_bytes());
        assert_eq!(event.encode(), expected);
    }

    #[test]
    fn events_round_trip() {
        let events = [
            Event {
                wall_time: 1.5,
                step: 0,
                what: EventKind::FileVersion(FILE_VERSION.into()),
            },
            Event {
                wall_time: 2.0,
                step: 7,
                what: EventKind::Summary(vec![
                    SummaryValue {
                        tag: "a".into(),
                        value: Value::Simple(-1.25),
                    },
                    SummaryValue {
                        tag: "weights".into(),
                        value: Value::Histogram(histogram_buckets(&[-1.0, 0.0, 2.0])),
                    },
                ]),
            },
            Event {
                wall_time: 3.0,
                step: 9,
                what: EventKind::SessionLog(SessionStatus::Start),
            },
        ];
        for event in events {
            assert_eq!(Event::decode(&event.encode()).unwrap(), event);
        }
    }

    #[test]
    fn rejects_garbage() {
        assert!(Event::decode(&[0x09, 0x00]).is_err());
        assert!(Event::decode(&[0x2a, 0x02, 0x0a, 0x05]).is_err());
    }
}
