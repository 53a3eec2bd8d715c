//! [`Metrics`]: request counts and latency histograms per model, in Prometheus' text
//! format at `/monitoring/prometheus/metrics`, under TF Serving's metric names.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in microseconds (TF Serving measures in µs).
const BUCKETS_US: [f64; 14] = [
    50.0,
    100.0,
    250.0,
    500.0,
    1_000.0,
    2_500.0,
    5_000.0,
    10_000.0,
    25_000.0,
    50_000.0,
    100_000.0,
    250_000.0,
    1_000_000.0,
    5_000_000.0,
];

#[derive(Default)]
struct Latency {
    /// Requests at or below each bound (not cumulative; summed when written).
    counts: [u64; BUCKETS_US.len()],
    above: u64,
    sum_us: f64,
}

#[derive(Default)]
struct Counters {
    /// (model, status) → requests.
    requests: BTreeMap<(String, &'static str), u64>,
    /// (model, API, entrypoint) → latency.
    latency: BTreeMap<(String, String, Entrypoint), Latency>,
}

/// Which API a request came through (TF Serving's `entrypoint` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entrypoint {
    /// The REST API.
    Rest,
    /// The gRPC API.
    Grpc,
}

impl Entrypoint {
    fn label(self) -> &'static str {
        match self {
            Entrypoint::Rest => "REST",
            Entrypoint::Grpc => "GRPC",
        }
    }
}

/// Counters of every request to a known model.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
}

impl Metrics {
    /// Counts one request to `model` through `api` (predict, classify, …) of `entrypoint`
    /// that took `elapsed` and succeeded or not.
    pub fn record(
        &self,
        model: &str,
        api: &str,
        entrypoint: Entrypoint,
        ok: bool,
        elapsed: Duration,
    ) {
        self.count(model, ok);
        let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let latency = counters
            .latency
            .entry((model.to_string(), api.to_string(), entrypoint))
            .or_default();
        let us = elapsed.as_secs_f64() * 1e6;
        latency.sum_us += us;
        match BUCKETS_US.iter().position(|&bound| us <= bound) {
            Some(i) => latency.counts[i] += 1,
            None => latency.above += 1,
        }
    }

    /// Counts one request to `model` that succeeded or not, outside any API's latency: a
    /// method the model does not have.
    pub fn count(&self, model: &str, ok: bool) {
        let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let status = if ok { "OK" } else { "ERROR" };
        *counters
            .requests
            .entry((model.to_string(), status))
            .or_default() += 1;
    }

    /// Everything counted, in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        let _ = writeln!(out, "# TYPE :tensorflow:serving:request_count counter");
        for ((model, status), n) in &counters.requests {
            let model = escaped(model);
            let _ = writeln!(
                out,
                ":tensorflow:serving:request_count{{model_name=\"{model}\",status=\"{status}\"}} {n}"
            );
        }
        let _ = writeln!(out, "# TYPE :tensorflow:serving:request_latency histogram");
        for ((model, api, entrypoint), latency) in &counters.latency {
            let entrypoint = entrypoint.label();
            let (model, api) = (escaped(model), escaped(api));
            let labels =
                format!("model_name=\"{model}\",API=\"{api}\",entrypoint=\"{entrypoint}\"");
            let mut cumulative = 0;
            for (bound, n) in BUCKETS_US.iter().zip(latency.counts) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    ":tensorflow:serving:request_latency_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let total = cumulative + latency.above;
            let _ = writeln!(
                out,
                ":tensorflow:serving:request_latency_bucket{{{labels},le=\"+Inf\"}} {total}"
            );
            let _ = writeln!(
                out,
                ":tensorflow:serving:request_latency_sum{{{labels}}} {}",
                latency.sum_us
            );
            let _ = writeln!(
                out,
                ":tensorflow:serving:request_latency_count{{{labels}}} {total}"
            );
        }
        out
    }
}

/// `value` as a label value: a model's name is any text its config gives, and a quote or a
/// line break in it would end the label, or the line, and let it write lines of its own.
fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_cumulative_buckets_per_model_api_and_entrypoint() {
        let metrics = Metrics::default();
        let rest = Entrypoint::Rest;
        metrics.record("iris", "predict", rest, true, Duration::from_micros(80));
        metrics.record("iris", "predict", rest, true, Duration::from_micros(3_000));
        metrics.record("iris", "predict", rest, false, Duration::from_secs(10));
        metrics.record("mnist", "classify", rest, true, Duration::from_micros(40));
        metrics.record(
            "mnist",
            "classify",
            Entrypoint::Grpc,
            true,
            Duration::from_micros(40),
        );
        let text = metrics.render();
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
                .rsplit(' ')
                .next()
                .unwrap()
                .to_string()
        };
        let count = ":tensorflow:serving:request_count";
        assert_eq!(
            line(&format!("{count}{{model_name=\"iris\",status=\"OK\"}}")),
            "2"
        );
        assert_eq!(
            line(&format!("{count}{{model_name=\"iris\",status=\"ERROR\"}}")),
            "1"
        );
        let bucket = ":tensorflow:serving:request_latency_bucket{model_name=\"iris\",API=\"predict\",entrypoint=\"REST\"";
        assert_eq!(line(&format!("{bucket},le=\"50\"}}")), "0");
        assert_eq!(line(&format!("{bucket},le=\"100\"}}")), "1");
        assert_eq!(line(&format!("{bucket},le=\"5000\"}}")), "2");
        assert_eq!(line(&format!("{bucket},le=\"5000000\"}}")), "2");
        assert_eq!(line(&format!("{bucket},le=\"+Inf\"}}")), "3");
        // One histogram per entrypoint: the gRPC request apart from the REST one.
        let mnist =
            ":tensorflow:serving:request_latency_count{model_name=\"mnist\",API=\"classify\"";
        assert_eq!(line(&format!("{mnist},entrypoint=\"REST\"}}")), "1");
        assert_eq!(line(&format!("{mnist},entrypoint=\"GRPC\"}}")), "1");
        assert_eq!(
            line(&format!("{count}{{model_name=\"mnist\",status=\"OK\"}}")),
            "2"
        );
    }

    #[test]
    fn a_model_name_cannot_break_out_of_its_label() {
        let metrics = Metrics::default();
        let name = "m\"} 1\nfake_metric{a=\"\\";
        metrics.record(name, "predict", Entrypoint::Grpc, true, Duration::ZERO);
        let text = metrics.render();
        assert!(
            !text.lines().any(|l| l.starts_with("fake_metric")),
            "{text}"
        );
        assert!(
            text.contains(r#"model_name="m\"} 1\nfake_metric{a=\"\\","#),
            "{text}"
        );
    }
}
