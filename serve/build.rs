//! Writes the descriptor of TF Serving's model server config
//! (`../proto/tensorflow_serving/config/model_server_config.proto`), from which a
//! `--model-config-file` in protobuf text format is read, with the protoc binary vendored by
//! `protoc-bin-vendored`: no system protoc is needed.

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "../proto/tensorflow_serving/config/model_server_config.proto";
    println!("cargo:rerun-if-changed={proto}");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("model_server_config.bin");
    let status = Command::new(protoc_bin_vendored::protoc_bin_path()?)
        .arg("--proto_path=../proto")
        .arg(format!("--descriptor_set_out={}", out.display()))
        .arg(proto)
        .status()?;
    if !status.success() {
        return Err(format!("protoc failed on {proto}: {status}").into());
    }
    Ok(())
}
