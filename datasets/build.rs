//! Generates the tf.Example messages (`../proto/tensorflow/core/example/*.proto`, TensorFlow's
//! own definitions) with prost, using the protoc binary vendored by `protoc-bin-vendored`: no
//! system protoc is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "../proto/tensorflow/core/example/example.proto",
        "../proto/tensorflow/core/example/feature.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    config.compile_protos(&protos, &["../proto"])?;
    Ok(())
}
