//! TF Serving's configuration files in protobuf text format, read against the descriptors
//! of its messages (`build.rs`), so that its files read as written; an error names the line
//! and column at fault.

use anyhow::{anyhow, Context};
use miette::Diagnostic;
use prost_reflect::text_format::ParseError;
use prost_reflect::{DescriptorPool, DynamicMessage};

/// The descriptors of `proto/tensorflow_serving/`'s messages and what they import.
static DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tf_serving_config.bin"));

/// `text` as the message `name` (`tensorflow.serving.ModelServerConfig`, …). A field of
/// `not_supported` (TF Serving's, left out of the message here) is refused as a setting this
/// server does not have, rather than as an unknown field.
pub(crate) fn parse(
    name: &str,
    text: &str,
    not_supported: &[&str],
) -> anyhow::Result<DynamicMessage> {
    let pool = DescriptorPool::decode(DESCRIPTOR).context("the built-in descriptors")?;
    let descriptor = pool
        .get_message_by_name(name)
        .with_context(|| format!("the built-in descriptors have no {name}"))?;
    DynamicMessage::parse_text_format(descriptor, text).map_err(|e| {
        let message = e.to_string();
        let why = match not_supported
            .iter()
            .find(|field| message.starts_with(&format!("field '{field}' not found")))
        {
            Some(field) => {
                format!("{field}: TF Serving's setting, which estimator-serve does not have")
            }
            None => message,
        };
        anyhow!("{}: {why}", position(text, &e))
    })
}

/// `line L, column C` of the parse error's first label.
fn position(text: &str, error: &ParseError) -> String {
    let offset = error
        .labels()
        .and_then(|mut labels| labels.next())
        .map_or(text.len(), |label| label.offset())
        .min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}")
}
