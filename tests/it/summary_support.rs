//! Reading scalars back out of event files.

use estimator::summary::{Event, EventKind, Value};

/// Every scalar as `(tag, step, value)`, in file order.
pub fn scalars(events: &[Event]) -> Vec<(String, u64, f64)> {
    let mut out = Vec::new();
    for event in events {
        if let EventKind::Summary(values) = &event.what {
            for v in values {
                if let Value::Simple(x) = v.value {
                    out.push((v.tag.clone(), event.step as u64, x as f64));
                }
            }
        }
    }
    out
}
