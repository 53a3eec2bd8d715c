//! The values of `dnn-classifier`'s flags that clap cannot parse alone: devices, Mirrored
//! replicas, learning-rate schedules, activations. Each error says what was wrong with the value; clap
//! prefixes the flag.

use std::path::PathBuf;
use std::str::FromStr;

use estimator::optimizer::{Decay, Schedule};
use estimator::{DeviceSpec, Distribution};
use estimators::Activation;

/// Parses a `--learning-rate` value: not negative, and finite as the f32 that training uses
/// (0 is a step that changes nothing).
pub fn parse_learning_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(rate >= 0.0 && rate <= f64::from(f32::MAX)) {
        return Err(format!(
            "{text} is not a learning rate: it must be at least 0 and at most {:e} (the largest \
             f32)",
            f32::MAX
        ));
    }
    Ok(rate)
}

/// Parses a number of hours: more than 0, and finite.
pub fn parse_hours(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(hours) if hours > 0.0 && hours.is_finite() => Ok(hours),
        Ok(_) => Err(format!("{text} is not a number of hours above 0")),
        Err(_) => Err(format!("'{text}' is not a number of hours")),
    }
}

/// Parses a `--learning-rate-schedule` value: `KIND:key=value,…` (lists with `/`).
pub fn parse_decay(text: &str) -> Result<Decay, String> {
    let (kind, params) = text.split_once(':').unwrap_or((text, ""));
    let mut object = serde_json::Map::new();
    object.insert("kind".into(), serde_json::Value::from(kind));
    for pair in params.split(',').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("'{pair}' is not key=value"))?;
        let scalar = |v: &str| -> Result<serde_json::Value, String> {
            match v {
                "true" | "false" => Ok(serde_json::Value::from(v == "true")),
                _ => serde_json::from_str::<serde_json::Number>(v)
                    .map(serde_json::Value::Number)
                    .map_err(|_| format!("{key}: '{v}' is not a number")),
            }
        };
        let value = if value.contains('/') || matches!(key, "boundaries" | "values") {
            serde_json::Value::Array(value.split('/').map(scalar).collect::<Result<_, _>>()?)
        } else {
            scalar(value)?
        };
        object.insert(key.to_string(), value);
    }
    let decay: Decay = serde_json::from_value(serde_json::Value::Object(object))
        .map_err(|e| format!("{kind}: {e}"))?;
    Schedule::decay(decay.clone())
        .validate()
        .map_err(|e| e.to_string())?;
    Ok(decay)
}

/// Parses an `--allreduce-bucket-bytes` value: a size of at least 4 bytes (one value), or
/// `auto` (0: chosen by trial during the first steps).
pub fn parse_bucket_bytes(text: &str) -> Result<usize, String> {
    if text == "auto" {
        return Ok(0);
    }
    match text.parse::<usize>() {
        Ok(bytes) if bytes >= 4 => Ok(bytes),
        Ok(_) => Err(format!(
            "{text} bytes hold no f32 value: give 4 or more, or auto"
        )),
        Err(_) => Err(format!("'{text}' is neither a number of bytes nor auto")),
    }
}

/// Parses one width of `--hidden-units`: a layer has at least one unit.
pub fn parse_layer_width(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a layer needs at least 1 unit".into()),
        Ok(width) => Ok(width),
        Err(_) => Err(format!("'{text}' is not a layer width (1, 2, …)")),
    }
}

/// Parses an `--n-classes` value: a classifier tells at least 2 classes apart.
pub fn parse_n_classes(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        Ok(n) => Err(format!("{n}: a classifier needs at least 2 classes")),
        Err(_) => Err(format!("'{text}' is not a number of classes (2, 3, …)")),
    }
}

/// Parses a `--vocabulary-file` value: `COLUMN=FILE`, both named.
pub fn parse_vocabulary_file(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((column, file)) if !column.is_empty() && !file.is_empty() => {
            Ok((column.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!(
            "'{text}' is not COLUMN=FILE (a categorical column and its vocabulary file)"
        )),
    }
}

/// Parses an `--embedding-dimension` value: `COLUMN=N`, N at least 1.
pub fn parse_embedding_dimension(text: &str) -> Result<(String, usize), String> {
    let wrong =
        || format!("'{text}' is not COLUMN=N (a categorical column and a width of 1 or more)");
    let (column, width) = text.split_once('=').ok_or_else(wrong)?;
    match width.parse::<usize>() {
        Ok(width) if width > 0 && !column.is_empty() => Ok((column.to_string(), width)),
        _ => Err(wrong()),
    }
}

/// Parses an `--activation-fn` value: one of TF's names for the hidden layers' activation.
pub fn parse_activation(text: &str) -> Result<Activation, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| format!("'{text}' is not one of relu, tanh, sigmoid, elu, leaky_relu"))
}

/// Parses a `--mirrored` value: a number of replicas (at least 1) or `all`.
pub fn parse_mirrored(text: &str) -> Result<Distribution, String> {
    match text {
        "all" => Ok(Distribution::MirroredAllDevices),
        n => match n.parse::<usize>() {
            Ok(replicas) if replicas >= 1 => Ok(Distribution::Mirrored { replicas }),
            _ => Err(format!(
                "'{n}' is not a number of replicas (1, 2, …) or 'all'"
            )),
        },
    }
}

/// A `--timeline-steps` value, `SKIP,COUNT`: training steps to pass over, then how
/// many to record (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineSteps {
    pub skip: u64,
    pub count: u64,
}

impl FromStr for TimelineSteps {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parsed = text.split_once(',').and_then(|(skip, count)| {
            Some((skip.trim().parse().ok()?, count.trim().parse().ok()?))
        });
        match parsed {
            Some((skip, count)) if count >= 1 => Ok(Self { skip, count }),
            _ => Err(format!(
                "'{text}' is not SKIP,COUNT: steps to pass over, then how many to record (at \
                 least 1)"
            )),
        }
    }
}

/// The values `--device` accepts, for its help and its errors.
const DEVICES: &str = "cpu, cuda, cuda:N or auto";

/// Parses a `--device` value: `cpu`, `cuda` (device 0), `cuda:N` or `auto`.
///
/// The error names what was wrong with the value; the caller prefixes the flag.
pub fn parse_device(text: &str) -> Result<DeviceSpec, String> {
    match text {
        "cpu" => Ok(DeviceSpec::Cpu),
        "cuda" => Ok(DeviceSpec::Cuda(0)),
        "auto" => Ok(DeviceSpec::Auto),
        _ => match text.strip_prefix("cuda:") {
            Some(index) => index
                .parse()
                .map(DeviceSpec::Cuda)
                .map_err(|_| format!("'{index}' is not a CUDA device index (cuda:0, cuda:1, …)")),
            None => Err(format!("expected {DEVICES}")),
        },
    }
}

/// The `--device` value as a [`DeviceSpec`]; whether this build and machine can use it is
/// checked when the model first runs.
pub fn device_flag(text: &str) -> anyhow::Result<DeviceSpec> {
    parse_device(text).map_err(|reason| anyhow::anyhow!("--device {text}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_values() {
        assert_eq!(parse_device("cpu"), Ok(DeviceSpec::Cpu));
        assert_eq!(parse_device("cuda"), Ok(DeviceSpec::Cuda(0)));
        assert_eq!(parse_device("cuda:3"), Ok(DeviceSpec::Cuda(3)));
        assert_eq!(parse_device("auto"), Ok(DeviceSpec::Auto));
        for (bad, reason) in [
            ("cuda:x", "'x' is not a CUDA device index"),
            ("cuda:", "'' is not a CUDA device index"),
            ("cuda:-1", "'-1' is not a CUDA device index"),
            ("gpu", "expected cpu, cuda, cuda:N or auto"),
            ("CUDA", "expected cpu, cuda, cuda:N or auto"),
        ] {
            let error = parse_device(bad).unwrap_err();
            assert!(error.starts_with(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn schedule_values() {
        assert_eq!(
            parse_decay("exponential_decay:decay_steps=1000,decay_rate=0.96,staircase=true"),
            Ok(Decay::ExponentialDecay {
                decay_steps: 1000,
                decay_rate: 0.96,
                staircase: true
            })
        );
        assert_eq!(
            parse_decay("piecewise_constant:boundaries=100/200,values=0.1/0.01/0.001"),
            Ok(Decay::PiecewiseConstant {
                boundaries: vec![100, 200],
                values: vec![0.1, 0.01, 0.001]
            })
        );
        assert_eq!(
            parse_decay("cosine_decay:decay_steps=10"),
            Ok(Decay::CosineDecay {
                decay_steps: 10,
                alpha: 0.0
            })
        );
        for (bad, reason) in [
            (
                "exponential_decay:decay_rate=0.5",
                "missing field `decay_steps`",
            ),
            (
                "cosine_decay:decay_steps=10,alhpa=1",
                "unknown field `alhpa`",
            ),
            ("sawtooth", "unknown variant `sawtooth`"),
            (
                "cosine_decay:decay_steps=ten",
                "decay_steps: 'ten' is not a number",
            ),
            (
                "piecewise_constant:boundaries=5,values=1",
                "one more value than boundaries",
            ),
        ] {
            let error = parse_decay(bad).unwrap_err();
            assert!(error.contains(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn timeline_steps_values() {
        let steps = |skip, count| Ok(TimelineSteps { skip, count });
        assert_eq!("10,20".parse(), steps(10, 20));
        assert_eq!("0, 1".parse(), steps(0, 1));
        for bad in ["10", "10,0", "a,2", "1,2,3", ""] {
            let err = bad.parse::<TimelineSteps>().unwrap_err();
            assert!(err.contains("is not SKIP,COUNT"), "{bad}: {err}");
        }
    }

    #[test]
    fn hours() {
        assert_eq!(parse_hours("2"), Ok(2.0));
        assert_eq!(parse_hours("0.5"), Ok(0.5));
        for (bad, reason) in [
            ("0", "0 is not a number of hours above 0"),
            ("-1", "-1 is not a number of hours above 0"),
            ("inf", "inf is not a number of hours above 0"),
            ("two", "'two' is not a number of hours"),
        ] {
            assert_eq!(parse_hours(bad), Err(reason.to_string()), "{bad}");
        }
    }

    #[test]
    fn bucket_sizes() {
        assert_eq!(parse_bucket_bytes("auto"), Ok(0));
        assert_eq!(parse_bucket_bytes("4"), Ok(4));
        assert_eq!(parse_bucket_bytes("16777216"), Ok(16 << 20));
        let error = parse_bucket_bytes("3").unwrap_err();
        assert!(error.contains("3 bytes hold no f32 value"), "{error}");
        let error = parse_bucket_bytes("big").unwrap_err();
        assert!(
            error.contains("neither a number of bytes nor auto"),
            "{error}"
        );
    }

    #[test]
    fn mirrored_values() {
        assert_eq!(parse_mirrored("all"), Ok(Distribution::MirroredAllDevices));
        assert_eq!(
            parse_mirrored("2"),
            Ok(Distribution::Mirrored { replicas: 2 })
        );
        for bad in ["0", "-1", "two", ""] {
            let error = parse_mirrored(bad).unwrap_err();
            assert!(
                error.contains("is not a number of replicas"),
                "{bad}: {error}"
            );
        }
    }
}
