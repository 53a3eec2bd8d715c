//! [`Batching`] from TF Serving's `--batching_parameters_file`: its `BatchingParameters` in
//! protobuf text format.

use std::time::Duration;

use anyhow::{bail, Context};
use prost_reflect::{DynamicMessage, Value};

use crate::batching::Batching;
use crate::text_proto;

/// Batching threads a version may start: each one a thread of the process, for every
/// version loaded, started as the version loads.
const MOST_BATCH_THREADS: usize = 1024;

impl Batching {
    /// The batching a TF Serving batching parameters file sets, as its files are written
    /// (`max_batch_size { value: 128 } batch_timeout_micros { value: 0 }
    /// num_batch_threads { value: 4 } max_enqueued_batches { value: 100 }`); a parameter
    /// not given keeps [`Batching::default`]'s value. `allowed_batch_sizes` is checked as TF
    /// Serving checks it (increasing, the last equal to `max_batch_size`) and batches are
    /// not padded to it, nor are inputs for `pad_variable_length_inputs`: the models here
    /// take any batch size and inputs of the signature's shapes, so padding would change
    /// nothing but the time taken.
    pub fn from_text_proto(text: &str) -> anyhow::Result<Self> {
        let message = text_proto::parse("tensorflow.serving.BatchingParameters", text, &[])?;
        let mut batching = Batching::default();
        if let Some(size) = positive(&message, "max_batch_size")? {
            batching.max_batch_size = size;
        }
        if let Some(micros) = wrapped(&message, "batch_timeout_micros")? {
            let micros = u64::try_from(micros)
                .with_context(|| format!("batch_timeout_micros: {micros} is negative"))?;
            batching.batch_timeout = Duration::from_micros(micros);
        }
        if let Some(batches) = positive(&message, "max_enqueued_batches")? {
            batching.max_enqueued_batches = Some(batches);
        }
        if let Some(threads) = positive(&message, "num_batch_threads")? {
            if threads > MOST_BATCH_THREADS {
                let most = MOST_BATCH_THREADS;
                bail!("num_batch_threads: {threads} is above {most}, the most a version may start");
            }
            batching.num_batch_threads = threads;
        }
        if let Some(Value::Message(name)) = present(&message, "thread_pool_name").as_deref() {
            if let Some(Value::String(name)) = name.get_field_by_name("value").as_deref() {
                batching.thread_pool_name = Some(name.clone());
            }
        }
        if let Some(Value::List(sizes)) = present(&message, "allowed_batch_sizes").as_deref() {
            let sizes: Vec<i64> = sizes.iter().filter_map(Value::as_i64).collect();
            let increasing = sizes.windows(2).all(|pair| pair[0] < pair[1]);
            if !increasing || sizes.first().is_some_and(|&size| size < 1) {
                bail!("allowed_batch_sizes {sizes:?}: must be positive and increasing");
            }
            if sizes.last() != Some(&(batching.max_batch_size as i64)) {
                bail!(
                    "allowed_batch_sizes {sizes:?}: the last must equal max_batch_size ({})",
                    batching.max_batch_size
                );
            }
        }
        Ok(batching)
    }
}

/// The field `name` when the file sets it.
fn present<'a>(message: &'a DynamicMessage, name: &str) -> Option<std::borrow::Cow<'a, Value>> {
    message
        .has_field_by_name(name)
        .then(|| message.get_field_by_name(name))
        .flatten()
}

/// The `value` of the `Int64Value` field `name`, when the file sets it.
fn wrapped(message: &DynamicMessage, name: &str) -> anyhow::Result<Option<i64>> {
    match present(message, name).as_deref() {
        None => Ok(None),
        Some(Value::Message(wrapper)) => {
            let value = wrapper.get_field_by_name("value");
            Ok(Some(value.and_then(|v| v.as_i64()).unwrap_or(0)))
        }
        Some(other) => bail!("{name}: expected {{ value: N }}, found {other:?}"),
    }
}

/// [`wrapped`], which must be at least 1.
fn positive(message: &DynamicMessage, name: &str) -> anyhow::Result<Option<usize>> {
    match wrapped(message, name)? {
        None => Ok(None),
        Some(value) if value >= 1 => Ok(Some(value as usize)),
        Some(value) => bail!("{name}: {value} must be at least 1"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tf_serving_s_batching_parameters_and_refuses_what_it_would() {
        let text = "# as TF Serving's batching guide writes it\n\
                    max_batch_size { value: 128 }\n\
                    batch_timeout_micros { value: 2000 }\n\
                    max_enqueued_batches { value: 100 }\n\
                    num_batch_threads { value: 4 }\n\
                    thread_pool_name { value: 'iris_batch' }\n\
                    allowed_batch_sizes: 32 allowed_batch_sizes: 128\n\
                    pad_variable_length_inputs: true\n";
        let batching = Batching::from_text_proto(text).unwrap();
        let expected = Batching {
            max_batch_size: 128,
            batch_timeout: Duration::from_micros(2000),
            num_batch_threads: 4,
            max_enqueued_batches: Some(100),
            thread_pool_name: Some("iris_batch".into()),
        };
        assert_eq!(batching, expected);
        let only_size = Batching::from_text_proto("max_batch_size { value: 8 }").unwrap();
        assert_eq!(only_size.max_batch_size, 8);
        assert_eq!(only_size.batch_timeout, Batching::default().batch_timeout);

        let error = |text: &str| Batching::from_text_proto(text).unwrap_err().to_string();
        assert_eq!(
            error("num_batch_threads { value: 0 }"),
            "num_batch_threads: 0 must be at least 1"
        );
        let sizes = error("max_batch_size { value: 64 } allowed_batch_sizes: 16");
        assert!(
            sizes.contains("the last must equal max_batch_size (64)"),
            "{sizes}"
        );
        let typo = error("max_batch_size { value: 8 }\nmax_batch_sise { value: 8 }");
        assert!(
            typo.starts_with("line 2, column 1: field 'max_batch_sise'"),
            "{typo}"
        );
        let threads = error("num_batch_threads { value: 1000000000 }");
        assert!(
            threads.starts_with("num_batch_threads: 1000000000 is above 1024"),
            "{threads}"
        );
        let bare = error("max_batch_size: 8");
        assert!(bare.starts_with("line 1, column"), "{bare}");
    }
}
