//! Load on estimator-serve over loopback: Iris predictions from keep-alive REST clients
//! (`:predict`) and gRPC clients (PredictionService's Predict), with server-side batching
//! off, on, and (REST) on with two batching threads, then gRPC Predict of serialized
//! tf.Examples, gRPC Classify of tf.Examples (its request encoded once), REST `:classify`
//! and REST `:predict` of serialized tf.Examples (batching off), interleaved by round.
//!
//! Run: `cargo bench --bench load` (add `-- --rounds 3 --seconds 5 --clients 16`; with
//! `--instances N`, each request holds N instances instead of one: rates are still
//! predictions/s, each latency a request's). Per
//! round and setting: the closed-loop rate (every client sends its next request when the
//! last is answered) with p50 / p99 latency, then an open-loop run at half that rate
//! (requests sent on a fixed schedule, latency counted from the scheduled time, so a stall
//! is not hidden by the clients waiting) with its p50 / p99.
//!
//! `--only TEXT` runs the settings whose name holds TEXT (`--only gRPC`). `--idle N` opens N
//! connections that send nothing before each run and keeps them open through it (the
//! descriptor soft limit is raised to the hard one for them; both are printed);
//! `--max-connections N` caps the server's connections (default: its own cap, from the
//! descriptor limit). Each round then reports how many idle connections the server closed to
//! make room. `--intra-op N` runs every prediction on a pool of N threads
//! (`--tensorflow-intra-op-parallelism N`; 0, the default: where it is called).

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use datasets::tf_proto::{feature, Example, Feature, Features, FloatList};
use estimator::datasets::{bundled, CsvDataset, DatasetExt, FeatureStats};
use estimator::{EstimatorExt, OptimizerSpec, RunConfig, TrainSpec};
use estimator_serve::grpc::proto::tensorflow::serving::prediction_service_client::PredictionServiceClient;
use estimator_serve::grpc::proto::tensorflow::serving::{
    ClassificationResponse, ModelSpec, PredictRequest,
};
use estimator_serve::grpc::proto::tensorflow::tensor_shape_proto::Dim;
use estimator_serve::grpc::proto::tensorflow::{DataType, TensorProto, TensorShapeProto};
use estimator_serve::{
    Background, Batching, Limits, Loaders, ModelConfig, PredictionThreads, Server,
};
use estimators::feature_column::standardized_numeric_columns;
use estimators::DnnClassifier;
use prost::bytes::{BufMut, Bytes};
use prost::Message;
use tonic::codec::{Codec, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::Status;
use tonic_prost::ProstDecoder;

/// The server's allocator, as the `estimator-serve` binary runs with (the clients share it).
#[global_allocator]
static ALLOCATOR: estimator_serve::ServingAllocator = estimator_serve::ServingAllocator;

/// The instance every request sends, `--instances` times.
const INSTANCE: [(&str, f32); 4] = [
    ("sepal_length_cm", 5.9),
    ("sepal_width_cm", 3.0),
    ("petal_length_cm", 4.2),
    ("petal_width_cm", 1.5),
];

/// `instances` copies of [`INSTANCE`] as a REST body's list `member` (`instances` for
/// `:predict`, `examples` for `:classify`).
fn rest_body(member: &str, instances: usize) -> String {
    let row: Vec<String> = INSTANCE
        .iter()
        .map(|(name, value)| format!("\"{name}\": {value}"))
        .collect();
    let row = format!("{{{}}}", row.join(", "));
    format!("{{\"{member}\": [{}]}}", vec![row; instances].join(", "))
}

/// `instances` copies of [`INSTANCE`] as a REST `:predict` body of serialized tf.Examples.
fn serialized_body(instances: usize) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(example().encode_to_vec());
    let row = format!("{{\"b64\": \"{text}\"}}");
    format!("{{\"instances\": [{}]}}", vec![row; instances].join(", "))
}

fn export_iris(dir: &Path) -> std::path::PathBuf {
    let schema = bundled::iris_schema();
    let train = bundled::iris_train_path();
    let stats = FeatureStats::compute(CsvDataset::open(&train, schema.clone()).unwrap()).unwrap();
    let columns = standardized_numeric_columns(&schema, &stats).unwrap();
    let config = RunConfig::new(dir.join("model")).with_progress(false);
    let classifier = DnnClassifier::new(config, &schema, columns, [128, 64], 3)
        .unwrap()
        .with_optimizer(OptimizerSpec::adam(0.001));
    let input = || {
        Ok(CsvDataset::open(&train, schema.clone())?
            .repeat(None)
            .batch_columnar(32, false))
    };
    classifier.train(input, TrainSpec::max_steps(100)).unwrap();
    let base = dir.join("export");
    classifier.export(&base).unwrap();
    base
}

/// How the clients call the server.
#[derive(Clone, Copy)]
enum Transport {
    /// REST over HTTP/1.1, a keep-alive connection per client.
    Rest,
    /// gRPC (TF Serving's PredictionService), an HTTP/2 connection per client.
    Grpc,
    /// gRPC Predict of serialized tf.Examples (a TF estimator's parsing serving input).
    GrpcExamples,
    /// gRPC Classify of tf.Examples.
    GrpcClassify,
    /// REST `:classify`.
    RestClassify,
    /// REST `:predict` of serialized tf.Examples, each a binary value (`{"b64": …}`).
    RestExamples,
}

/// A server on free loopback ports (REST and gRPC), batching as `batching` says; stopped
/// when dropped.
struct Started {
    _rest: Background,
    rest_url: String,
    grpc_url: String,
    grpc: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.grpc.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
    }
}

fn start(base: &Path, batching: Option<Batching>, limits: Limits, intra_op: usize) -> Started {
    let threads = PredictionThreads::new(intra_op, 0).unwrap();
    let mut loaders = Loaders::canned().with_prediction_threads(threads);
    if let Some(batching) = batching {
        loaders = loaders.with_batching(batching);
    }
    let models = vec![ModelConfig::new("iris", base)];
    let server = Server::load(models, loaders).unwrap().with_limits(limits);
    let rest = server.clone().spawn("127.0.0.1:0", Duration::ZERO).unwrap();
    let rest_url = format!("http://{}/v1/models/iris", rest.address());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let grpc_url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let shutdown = async {
            let _ = stopped.await;
        };
        runtime
            .block_on(server.run_grpc(listener, shutdown))
            .unwrap();
    });
    Started {
        _rest: rest,
        rest_url,
        grpc_url,
        grpc: Some((stop, thread)),
    }
}

/// A gRPC client with a runtime of its own, the request it sends, and how many
/// instances that holds.
struct GrpcClient {
    runtime: tokio::runtime::Runtime,
    channel: tonic::transport::Channel,
    client: PredictionServiceClient<tonic::transport::Channel>,
    request: GrpcRequest,
    instances: usize,
}

/// A gRPC call of the load.
enum GrpcRequest {
    Predict(PredictRequest),
    /// A ClassificationRequest, encoded once.
    Classify(Bytes),
}

/// A call whose request was encoded before the load: tonic sends its bytes as they are, so
/// the clients' work does not depend on how the server's build declares the message.
struct PreEncoded;

impl Codec for PreEncoded {
    type Encode = Bytes;
    type Decode = ClassificationResponse;
    type Encoder = PreEncoded;
    type Decoder = ProstDecoder<ClassificationResponse>;

    fn encoder(&mut self) -> Self::Encoder {
        PreEncoded
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder::default()
    }
}

impl Encoder for PreEncoded {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

/// One client's connection.
enum Client {
    Rest(ureq::Agent, String, String),
    Grpc(Box<GrpcClient>),
}

impl Client {
    fn connect(transport: Transport, started: &Started, instances: usize) -> Self {
        match transport {
            Transport::Rest => {
                let agent = ureq::AgentBuilder::new().build();
                let url = format!("{}:predict", started.rest_url);
                Client::Rest(agent, url, rest_body("instances", instances))
            }
            Transport::RestClassify => {
                let agent = ureq::AgentBuilder::new().build();
                let url = format!("{}:classify", started.rest_url);
                Client::Rest(agent, url, rest_body("examples", instances))
            }
            Transport::RestExamples => {
                let agent = ureq::AgentBuilder::new().build();
                let url = format!("{}:predict", started.rest_url);
                Client::Rest(agent, url, serialized_body(instances))
            }
            Transport::Grpc | Transport::GrpcExamples | Transport::GrpcClassify => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let endpoint = tonic::transport::Endpoint::new(started.grpc_url.clone());
                let channel = runtime.block_on(endpoint.unwrap().connect()).unwrap();
                let client = PredictionServiceClient::new(channel.clone());
                Client::Grpc(Box::new(GrpcClient {
                    runtime,
                    channel,
                    client,
                    request: match transport {
                        Transport::GrpcExamples => {
                            GrpcRequest::Predict(examples_request(instances))
                        }
                        Transport::GrpcClassify => {
                            GrpcRequest::Classify(classify_request(instances))
                        }
                        _ => GrpcRequest::Predict(grpc_request(instances)),
                    },
                    instances,
                }))
            }
        }
    }

    fn send(&mut self) {
        match self {
            Client::Rest(agent, url, body) => {
                let response = agent
                    .post(url)
                    .set("Content-Type", "application/json")
                    .send_string(body)
                    .expect("a prediction");
                let text = response.into_string().unwrap();
                let answer = ["{\"predictions\"", "{\"result\""];
                assert!(answer.iter().any(|a| text.starts_with(a)), "{text}");
            }
            Client::Grpc(grpc) => {
                let answered = match &grpc.request {
                    GrpcRequest::Predict(request) => {
                        let call = grpc.client.predict(request.clone());
                        let answer = grpc.runtime.block_on(call).expect("a prediction");
                        answer.into_inner().outputs["classes"].string_val.len()
                    }
                    GrpcRequest::Classify(body) => {
                        let mut call = tonic::client::Grpc::new(grpc.channel.clone());
                        let path = "/tensorflow.serving.PredictionService/Classify";
                        let request = tonic::Request::new(body.clone());
                        let answer = grpc.runtime.block_on(async {
                            call.ready().await.unwrap();
                            let path = PathAndQuery::from_static(path);
                            call.unary(request, path, PreEncoded).await
                        });
                        let answer = answer.expect("a classification").into_inner();
                        answer.result.unwrap().classifications.len()
                    }
                };
                assert_eq!(answered, grpc.instances);
            }
        }
    }
}

/// [`INSTANCE`] as a tf.Example.
fn example() -> Example {
    let feature = |value: f32| Feature {
        kind: Some(feature::Kind::FloatList(FloatList { value: vec![value] })),
    };
    let features = (INSTANCE.iter())
        .map(|(name, value)| (name.to_string(), feature(*value)))
        .collect();
    Example {
        features: Some(Features { feature: features }),
    }
}

/// `instances` copies of [`INSTANCE`] as the examples of a Classify request, encoded field
/// by field (its `ExampleList` holds each tf.Example as a message, which is bytes on the wire).
fn classify_request(instances: usize) -> Bytes {
    use prost::encoding::{bytes, message};
    let example = example().encode_to_vec();
    let mut list = Vec::new();
    for _ in 0..instances {
        bytes::encode(1, &example, &mut list);
    }
    let mut input = Vec::new();
    bytes::encode(1, &list, &mut input); // Input.example_list
    let mut request = Vec::new();
    let spec = grpc_request(0).model_spec.unwrap();
    message::encode(1, &spec, &mut request); // ClassificationRequest.model_spec
    bytes::encode(2, &input, &mut request); // ClassificationRequest.input
    Bytes::from(request)
}

/// `instances` copies of [`INSTANCE`] as serialized tf.Examples, the one string tensor
/// `examples` of a Predict request.
fn examples_request(instances: usize) -> PredictRequest {
    let example = example().encode_to_vec();
    let mut request = grpc_request(0);
    request.inputs = [(
        "examples".to_string(),
        TensorProto {
            dtype: DataType::DtString as i32,
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim {
                    size: instances as i64,
                    name: String::new(),
                }],
                unknown_rank: false,
            }),
            string_val: vec![example; instances],
            ..TensorProto::default()
        },
    )]
    .into();
    request
}

/// `instances` copies of [`INSTANCE`] as a gRPC Predict request: one float tensor of shape
/// `[instances]` per feature.
fn grpc_request(instances: usize) -> PredictRequest {
    let tensor = |value: f32| TensorProto {
        dtype: DataType::DtFloat as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: vec![Dim {
                size: instances as i64,
                name: String::new(),
            }],
            unknown_rank: false,
        }),
        float_val: vec![value; instances],
        ..TensorProto::default()
    };
    PredictRequest {
        model_spec: Some(ModelSpec {
            name: "iris".into(),
            ..ModelSpec::default()
        }),
        inputs: INSTANCE
            .iter()
            .map(|(name, value)| (name.to_string(), tensor(*value)))
            .collect(),
        output_filter: Vec::new(),
    }
}

/// `clients` threads for `seconds`: requests/s and every latency. With `rate`, each client
/// sends on a fixed schedule (rate / clients per second) and latency counts from the
/// scheduled time; without, each sends as soon as its last request is answered.
fn load(
    started: &Started,
    transport: Transport,
    instances: usize,
    clients: usize,
    seconds: f64,
    rate: Option<f64>,
) -> (f64, Vec<Duration>) {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let per_client: Vec<Vec<Duration>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                scope.spawn(move || {
                    let mut client = Client::connect(transport, started, instances);
                    let mut latencies = Vec::new();
                    let interval = rate.map(|r| Duration::from_secs_f64(clients as f64 / r));
                    // Clients of a scheduled run start spread over one interval.
                    let mut next = start
                        + interval.map_or(Duration::ZERO, |i| i.mul_f64(c as f64 / clients as f64));
                    while next < end {
                        if interval.is_some() {
                            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                                std::thread::sleep(wait);
                            }
                        }
                        let sent = if interval.is_some() {
                            next
                        } else {
                            Instant::now()
                        };
                        client.send();
                        let done = Instant::now();
                        latencies.push(done - sent);
                        next = match interval {
                            Some(i) => next + i,
                            None => done,
                        };
                    }
                    latencies
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut all: Vec<Duration> = per_client.into_iter().flatten().collect();
    all.sort();
    (all.len() as f64 / elapsed, all)
}

/// `n` connections to the server at `url` that send nothing, opened one after another.
fn open_idle(url: &str, n: usize) -> Vec<TcpStream> {
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let idle: Vec<TcpStream> = (0..n)
        .map(|_| TcpStream::connect(&address).expect("an idle connection"))
        .collect();
    // Time for the server to accept them all before the clients start.
    std::thread::sleep(Duration::from_millis(500));
    idle
}

/// How many of `idle` the server has closed.
fn closed(idle: &[TcpStream]) -> usize {
    let mut byte = [0u8; 1];
    idle.iter()
        .filter(|stream| {
            let mut stream: &TcpStream = stream;
            stream.set_nonblocking(true).unwrap();
            match stream.read(&mut byte) {
                Ok(0) => true,
                Err(e) => e.kind() != ErrorKind::WouldBlock,
                Ok(_) => false,
            }
        })
        .count()
}

/// Raises the descriptor soft limit to the hard one; the two limits after.
fn raise_descriptor_limit() -> (Option<u64>, Option<u64>) {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    let after = getrlimit(Resource::Nofile);
    (after.current, after.maximum)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (mut rounds, mut seconds, mut clients, mut instances) = (3, 5.0, 16, 1);
    let (mut idle, mut max_connections, mut only) = (0, None, None::<String>);
    let mut intra_op = 0;
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2) {
        match w[0].as_str() {
            "--rounds" => rounds = w[1].parse().expect("--rounds N"),
            "--seconds" => seconds = w[1].parse().expect("--seconds S"),
            "--clients" => clients = w[1].parse().expect("--clients N"),
            "--instances" => instances = w[1].parse().expect("--instances N"),
            "--idle" => idle = w[1].parse().expect("--idle N"),
            "--only" => only = Some(w[1].clone()),
            "--intra-op" => intra_op = w[1].parse().expect("--intra-op N"),
            "--max-connections" => {
                max_connections = Some(w[1].parse().expect("--max-connections N"))
            }
            _ => {}
        }
    }
    if idle > 0 {
        let (soft, hard) = raise_descriptor_limit();
        println!("descriptor limit: soft {soft:?}, hard {hard:?}");
    }
    let mut limits = Limits::default();
    if let Some(cap) = max_connections {
        limits.max_connections = cap;
    }
    println!(
        "{clients} clients, {idle} idle connections, server cap {} connections",
        limits.max_connections
    );
    let dir = tempfile::tempdir().unwrap();
    let base = export_iris(dir.path());
    let batching = Batching {
        max_batch_size: 32,
        batch_timeout: Duration::ZERO,
        ..Batching::default()
    };
    let two_threads = Batching {
        num_batch_threads: 2,
        ..batching.clone()
    };
    let settings = [
        ("REST, batching off", None, Transport::Rest),
        (
            "REST, batching on ",
            Some(batching.clone()),
            Transport::Rest,
        ),
        (
            "REST, batching on, 2 threads",
            Some(two_threads),
            Transport::Rest,
        ),
        ("gRPC, batching off", None, Transport::Grpc),
        ("gRPC, batching on ", Some(batching), Transport::Grpc),
        ("gRPC examples, batching off", None, Transport::GrpcExamples),
        ("gRPC Classify, batching off", None, Transport::GrpcClassify),
        ("REST Classify, batching off", None, Transport::RestClassify),
        ("REST examples, batching off", None, Transport::RestExamples),
    ];
    let settings: Vec<_> = settings
        .into_iter()
        .filter(|(name, _, _)| {
            only.as_ref()
                .is_none_or(|only| name.contains(only.as_str()))
        })
        .collect();
    let mut rates = vec![Vec::new(); settings.len()];
    for round in 0..rounds {
        for (k, (name, batching, transport)) in settings.iter().enumerate() {
            let started = start(&base, batching.clone(), limits, intra_op);
            let idle = open_idle(&started.rest_url, idle);
            let run = |seconds, rate| load(&started, *transport, instances, clients, seconds, rate);
            run(0.5, None); // warm-up
            let (requests, latencies) = run(seconds, None);
            let (_, paced) = run(seconds, Some(requests / 2.0));
            let rate = requests * instances as f64;
            let closed_note = if idle.is_empty() {
                String::new()
            } else {
                format!(" | idle closed by the server: {}", closed(&idle))
            };
            println!(
                "round {round} {name}: {rate:>7.0} predictions/s (p50 {:.2} ms, p99 {:.2} ms) | at {:.0}/s: p50 {:.2} ms, p99 {:.2} ms{closed_note}",
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99),
                rate / 2.0,
                percentile(&paced, 0.5),
                percentile(&paced, 0.99),
            );
            rates[k].push(rate);
        }
    }
    for ((name, _, _), rates) in settings.iter().zip(rates) {
        println!("median {name}: {:.0} predictions/s", median(rates));
    }
}
