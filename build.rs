//! Generates the gRPC code of the collectives' transport (`proto/collective.proto`) and of
//! the parameter servers (`proto/parameter_server.proto`), with the protoc binary vendored by
//! `protoc-bin-vendored`: no system protoc is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(&protoc);
    tonic_prost_build::configure()
        // Payloads stay `bytes::Bytes`: a `Vec<u8>` handed to `send` becomes one without a copy.
        .bytes(".estimator.collective.Envelope.payload")
        // The server implements `Hello` alone; `Deliver` is served by hand-written framing.
        .generate_default_stubs(true)
        .compile_with_config(config, &["proto/collective.proto"], &["proto"])?;
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(&protoc);
    tonic_prost_build::configure()
        .bytes(".estimator.ps.Variable.values")
        // Values of 64 MiB and more: each message's buffer reserved at its length.
        .codec_path("crate::distribute::ps::sized_codec::SizedProstCodec")
        .compile_with_config(config, &["proto/parameter_server.proto"], &["proto"])?;
    Ok(())
}
