//! TF Serving's spelling of the flags, read as this program's, so that a
//! `tensorflow_model_server` command line runs unchanged: `--model_name=iris` is
//! `--model-name=iris`, and gflags' `--enable_batching=true` is `--enable-batching`.

use std::ffi::OsString;

/// `args` (the program's name first) with each `--flag_name[=value]` as `--flag-name[=value]`,
/// and a boolean flag's `=true` / `=false` as the flag given or left out.
pub(crate) fn respelled(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    args.into_iter()
        .filter_map(|arg| match arg.to_str() {
            Some(text) => respell(text).map(OsString::from),
            None => Some(arg),
        })
        .collect()
}

/// Flags that take no value here and a boolean in TF Serving.
const SWITCHES: [&str; 6] = [
    "enable-batching",
    "enable-grpc-healthcheck-service",
    "enable-per-model-batching-parameters",
    "enable-serialization-as-tensor-content",
    "enable-signature-method-name-check",
    "rest-api-enable-cors-support",
];

fn respell(arg: &str) -> Option<String> {
    let Some(flag) = arg.strip_prefix("--").filter(|flag| !flag.is_empty()) else {
        return Some(arg.to_string());
    };
    let (name, value) = match flag.split_once('=') {
        Some((name, value)) => (name.replace('_', "-"), Some(value)),
        None => (flag.replace('_', "-"), None),
    };
    match value {
        Some("true" | "1") if SWITCHES.contains(&name.as_str()) => Some(format!("--{name}")),
        Some("false" | "0") if SWITCHES.contains(&name.as_str()) => None,
        Some(value) => Some(format!("--{name}={value}")),
        None => Some(format!("--{name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf_serving_s_spellings_become_this_program_s_and_values_are_kept_as_given() {
        let args = [
            "estimator-serve",
            "--model_name=my_model",
            "--model_base_path=/models/my_model",
            "--rest_api_port",
            "8501",
            "--enable_batching=true",
            "--file-system-poll-wait-seconds=2",
            "--",
        ];
        let got = respelled(args.map(OsString::from));
        let want = [
            "estimator-serve",
            "--model-name=my_model",
            "--model-base-path=/models/my_model",
            "--rest-api-port",
            "8501",
            "--enable-batching",
            "--file-system-poll-wait-seconds=2",
            "--",
        ];
        assert_eq!(got, want.map(OsString::from));
        let off = respelled(["x", "--enable_batching=false"].map(OsString::from));
        assert_eq!(off, [OsString::from("x")]);
    }
}
