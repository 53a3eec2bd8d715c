//! TF Serving's protobuf definitions (`../proto/tensorflow_serving/`, with TensorFlow's
//! messages they use), with the protoc binary vendored by `protoc-bin-vendored`: no system
//! protoc is needed.
//!
//! - The gRPC services (`PredictionService`, `ModelService`: servers, and clients for Rust
//!   programs and the tests) and their messages, and `PredictionLog`, the record of a
//!   model's warmup requests, as Rust code. Classify's tf.Examples are their serialized
//!   bytes (`Bytes`), read in place.
//! - The descriptors of the configuration messages (the model server config, the batching
//!   parameters, the monitoring and SSL configs), from which TF Serving's files in protobuf
//!   text format are read.

use std::path::PathBuf;
use std::process::Command;

const SERVICES: [&str; 3] = [
    "../proto/tensorflow_serving/apis/prediction_service.proto",
    "../proto/tensorflow_serving/apis/model_service.proto",
    "../proto/tensorflow_serving/apis/prediction_log.proto",
];

const CONFIGURATION: [&str; 4] = [
    "../proto/tensorflow_serving/config/model_server_config.proto",
    "../proto/tensorflow_serving/config/monitoring_config.proto",
    "../proto/tensorflow_serving/config/ssl_config.proto",
    "../proto/tensorflow_serving/servables/tensorflow/session_bundle_config.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../proto");
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;

    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(&protoc);
    tonic_prost_build::configure()
        // Classify's serialized examples, as slices of the received message.
        .bytes(".tensorflow.serving.ExampleList")
        .bytes(".tensorflow.serving.ExampleListWithContext")
        .compile_with_config(
            config,
            &SERVICES.map(PathBuf::from),
            &[PathBuf::from("../proto"), well_known.clone()],
        )?;

    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("tf_serving_config.bin");
    let status = Command::new(&protoc)
        .arg("--proto_path=../proto")
        .arg(format!("--proto_path={}", well_known.display()))
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.display()))
        .args(CONFIGURATION)
        .status()?;
    if !status.success() {
        return Err(format!("protoc failed on {CONFIGURATION:?}: {status}").into());
    }
    Ok(())
}
