//! Writes the descriptors of TF Serving's configuration messages (`../proto/tensorflow_serving/`:
//! the model server config and the batching parameters), from which its files in protobuf
//! text format are read, with the protoc binary vendored by `protoc-bin-vendored`: no
//! system protoc is needed.

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "../proto/tensorflow_serving/config/model_server_config.proto",
        "../proto/tensorflow_serving/servables/tensorflow/session_bundle_config.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("tf_serving_config.bin");
    let status = Command::new(protoc_bin_vendored::protoc_bin_path()?)
        .arg("--proto_path=../proto")
        .arg(format!(
            "--proto_path={}",
            protoc_bin_vendored::include_path()?.display()
        ))
        .arg("--include_imports")
        .arg(format!("--descriptor_set_out={}", out.display()))
        .args(protos)
        .status()?;
    if !status.success() {
        return Err(format!("protoc failed on {protos:?}: {status}").into());
    }
    Ok(())
}
