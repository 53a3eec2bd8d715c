//! TF Serving's `--grpc_channel_arguments` (`grpc.max_receive_message_length=67108864,
//! grpc.keepalive_time_ms=2000`): the gRPC server arguments this server has a counterpart
//! for are read; the others are named in a warning.

use std::time::Duration;

use anyhow::{bail, Context};

/// The gRPC server arguments read from `--grpc-channel-arguments`; `None`: this server's
/// own setting (the message limit is `--max-body-bytes`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrpcChannelArguments {
    /// `grpc.max_receive_message_length`: the largest message taken (-1: no limit).
    pub max_receive_message_length: Option<usize>,
    /// `grpc.max_send_message_length`: the largest answer sent (-1: no limit).
    pub max_send_message_length: Option<usize>,
    /// `grpc.max_connection_age_ms`: a connection's life, after which it is told to go.
    pub max_connection_age: Option<Duration>,
    /// `grpc.max_connection_age_grace_ms`: how long a connection told to go may finish.
    pub max_connection_age_grace: Option<Duration>,
    /// `grpc.keepalive_time_ms`: the interval of the server's HTTP/2 pings.
    pub keepalive_time: Option<Duration>,
    /// `grpc.keepalive_timeout_ms`: how long a ping waits for its answer.
    pub keepalive_timeout: Option<Duration>,
    /// `grpc.max_concurrent_streams`: calls at once on one connection.
    pub max_concurrent_streams: Option<u32>,
}

impl GrpcChannelArguments {
    /// The arguments of `text`, a comma-separated list of `key=value`, and a warning for
    /// each key this server has no counterpart for. A value that is not what its key takes
    /// is an error naming both.
    pub fn parse(text: &str) -> anyhow::Result<(Self, Vec<String>)> {
        let mut arguments = Self::default();
        let mut ignored = Vec::new();
        for argument in text.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let Some((key, value)) = argument.split_once('=') else {
                bail!("--grpc-channel-arguments: '{argument}' is not key=value");
            };
            let (key, value) = (key.trim(), value.trim());
            let number = || -> anyhow::Result<i64> {
                value
                    .parse()
                    .with_context(|| format!("--grpc-channel-arguments: {key}={value}"))
            };
            // gRPC's -1 (and any negative size) is no limit; a negative time, none.
            let size = || number().map(|n| Some(usize::try_from(n).unwrap_or(usize::MAX)));
            let millis = || number().map(|n| Some(Duration::from_millis(n.max(0) as u64)));
            match key {
                "grpc.max_receive_message_length" => arguments.max_receive_message_length = size()?,
                "grpc.max_send_message_length" => arguments.max_send_message_length = size()?,
                "grpc.max_connection_age_ms" => arguments.max_connection_age = millis()?,
                "grpc.max_connection_age_grace_ms" => {
                    arguments.max_connection_age_grace = millis()?
                }
                "grpc.keepalive_time_ms" => arguments.keepalive_time = millis()?,
                "grpc.keepalive_timeout_ms" => arguments.keepalive_timeout = millis()?,
                "grpc.max_concurrent_streams" => {
                    let streams = u32::try_from(number()?).unwrap_or(u32::MAX);
                    arguments.max_concurrent_streams = Some(streams);
                }
                other => ignored.push(format!(
                    "--grpc-channel-arguments: {other}: ignored, as this server has no \
                     counterpart for it"
                )),
            }
        }
        Ok((arguments, ignored))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_with_a_counterpart_are_read_and_the_others_named() {
        let text = "grpc.max_receive_message_length=67108864, grpc.max_send_message_length=-1,\
                    grpc.keepalive_time_ms=2000,grpc.max_connection_age_ms=60000,\
                    grpc.http2.min_ping_interval_without_data_ms=500,grpc.max_concurrent_streams=8";
        let (arguments, ignored) = GrpcChannelArguments::parse(text).unwrap();
        let want = GrpcChannelArguments {
            max_receive_message_length: Some(64 << 20),
            max_send_message_length: Some(usize::MAX),
            keepalive_time: Some(Duration::from_secs(2)),
            max_connection_age: Some(Duration::from_secs(60)),
            max_concurrent_streams: Some(8),
            ..GrpcChannelArguments::default()
        };
        assert_eq!(arguments, want);
        assert_eq!(ignored.len(), 1);
        assert!(ignored[0].contains("grpc.http2.min_ping_interval_without_data_ms"));
        assert_eq!(
            GrpcChannelArguments::parse("").unwrap().0,
            GrpcChannelArguments::default()
        );
        let bad = GrpcChannelArguments::parse("grpc.keepalive_time_ms=soon").unwrap_err();
        assert!(
            format!("{bad:#}").contains("grpc.keepalive_time_ms=soon"),
            "{bad:#}"
        );
        assert!(GrpcChannelArguments::parse("grpc.keepalive_time_ms").is_err());
    }
}
