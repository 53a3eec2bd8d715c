//! [`InstanceBudget`]: the instances a request may decode — at most so many per request, and
//! at most so many over every request decoded or predicted at once.
//!
//! The instances are counted before the body is decoded: decoding builds a JSON tree a few
//! hundred times the size of the body's numbers, so it is the decoding itself that must wait
//! or be refused.

use std::sync::Arc;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ServeError;

/// The per-request cap and the budget shared by the requests of one server.
#[derive(Clone)]
pub(crate) struct InstanceBudget {
    per_request: usize,
    in_flight: usize,
    permits: Arc<Semaphore>,
}

impl InstanceBudget {
    pub(crate) fn new(per_request: usize, in_flight: usize) -> Self {
        // A semaphore counts at most u32::MAX permits taken at once.
        let in_flight = in_flight.min(u32::MAX as usize);
        Self {
            per_request,
            in_flight,
            permits: Arc::new(Semaphore::new(in_flight)),
        }
    }

    /// Room for the instances of `body`, held until the permit is dropped; waits while the
    /// requests under way hold the budget. 413 for a request above either limit.
    pub(crate) async fn admit(&self, body: &[u8]) -> Result<OwnedSemaphorePermit, ServeError> {
        self.admit_count(count_instances(body)).await
    }

    /// Room for `instances`, as [`InstanceBudget::admit`].
    pub(crate) async fn admit_count(
        &self,
        instances: usize,
    ) -> Result<OwnedSemaphorePermit, ServeError> {
        if instances > self.per_request {
            return Err(ServeError::TooLarge(format!(
                "the request has {instances} instances, above the limit of {} per request \
                 (--max-instances-per-request)",
                self.per_request
            )));
        }
        if instances > self.in_flight {
            return Err(ServeError::TooLarge(format!(
                "the request has {instances} instances, above the server's budget of {} \
                 instances in flight (--max-instances-in-flight)",
                self.in_flight
            )));
        }
        let wanted = u32::try_from(instances).unwrap_or(u32::MAX);
        Arc::clone(&self.permits)
            .acquire_many_owned(wanted)
            .await
            .map_err(|_| ServeError::Internal("the instance budget is closed".into()))
    }
}

/// How many instances a request body holds — the length of its `instances` or `examples`
/// list, or of the longest `inputs` column — read without building the values. A body that
/// is not a JSON object counts none: decoding it gives the error.
pub(crate) fn count_instances(body: &[u8]) -> usize {
    serde_json::from_slice::<Count>(body).map_or(0, |count| count.0)
}

/// The most instances any `instances`, `inputs` or `examples` member of a body holds.
/// Every member is counted, a name given twice too: the body is decoded as its last one
/// says, which a count that refused the body would not have bounded.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Members).map(Count)
    }
}

struct Members;

impl<'de> Visitor<'de> for Members {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<usize, A::Error> {
        let mut most = 0;
        while let Some(member) = members.next_key::<Member>()? {
            match member {
                Member::Other => members.next_value::<IgnoredAny>().map(|_| ())?,
                _ => most = most.max(members.next_value_seed(Counter { columns: true })?),
            }
        }
        Ok(most)
    }
}

/// A body's member by name, read without allocating it (every request is counted).
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Instances,
    Inputs,
    Examples,
    #[serde(other)]
    Other,
}

/// Counts the elements of a list; with `columns`, also the longest list among an object's
/// members (an object inside a column is one value, not a column).
#[derive(Clone, Copy)]
struct Counter {
    columns: bool,
}

impl<'de> DeserializeSeed<'de> for Counter {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counter {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while items.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<usize, A::Error> {
        let mut longest = 0;
        while members.next_key::<IgnoredAny>()?.is_some() {
            if self.columns {
                longest = longest.max(members.next_value_seed(Counter { columns: false })?);
            } else {
                members.next_value::<IgnoredAny>()?;
            }
        }
        Ok(longest)
    }

    fn visit_bool<E>(self, _: bool) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_i64<E>(self, _: i64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_u64<E>(self, _: u64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_f64<E>(self, _: f64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_str<E>(self, _: &str) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_unit<E>(self) -> Result<usize, E> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_rows_columns_and_examples_without_decoding_them() {
        assert_eq!(
            count_instances(br#"{"instances": [{"a": 1}, [1, 2], 3]}"#),
            3
        );
        assert_eq!(
            count_instances(
                br#"{"inputs": {"a": [1, 2, 3, 4], "b": [1], "c": {"d": [1, 2, 3, 4, 5]}}}"#
            ),
            4
        );
        assert_eq!(count_instances(br#"{"inputs": [[1, 2], [3, 4]]}"#), 2);
        assert_eq!(
            count_instances(br#"{"context": {"x": [1, 2, 3]}, "examples": [{}, {}]}"#),
            2
        );
        assert_eq!(
            count_instances(br#"{"signature_name": "serving_default"}"#),
            0
        );
        assert_eq!(count_instances(br#"{"instances": "#), 0);
        assert_eq!(count_instances(b"[1, 2, 3]"), 0);
    }

    #[test]
    fn a_list_named_twice_is_counted_as_the_decoding_reads_it() {
        let body = br#"{"instances": [], "instances": [1, 2, 3]}"#;
        assert_eq!(count_instances(body), 3);
        let decoded: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(decoded["instances"].as_array().unwrap().len(), 3);
        assert_eq!(
            count_instances(br#"{"inputs": [1], "inputs": {"a": [1, 2]}}"#),
            2
        );
    }

    #[tokio::test]
    async fn a_request_above_either_limit_gets_413_naming_it_and_others_wait_their_turn() {
        let budget = InstanceBudget::new(3, 4);
        let err = budget
            .admit(br#"{"instances": [1, 2, 3, 4]}"#)
            .await
            .unwrap_err();
        assert_eq!(err.status(), axum::http::StatusCode::PAYLOAD_TOO_LARGE);
        assert!(
            err.to_string().contains(
                "4 instances, above the limit of 3 per request (--max-instances-per-request)"
            ),
            "{err}"
        );
        let small = InstanceBudget::new(10, 2);
        let err = small
            .admit(br#"{"examples": [{}, {}, {}]}"#)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("--max-instances-in-flight"),
            "{err}"
        );

        let held = budget.admit(br#"{"instances": [1, 2, 3]}"#).await.unwrap();
        let waiting = budget.admit(br#"{"instances": [1, 2]}"#);
        tokio::pin!(waiting);
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), &mut waiting).await;
        assert!(
            early.is_err(),
            "two instances fit beside three in a budget of four"
        );
        drop(held);
        let admitted = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await;
        assert!(matches!(admitted, Ok(Ok(_))));
    }
}
