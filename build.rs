//! Generates the gRPC code from `proto/` with protox, a pure-Rust protobuf compiler, so a fresh
//! machine needs no system `protoc`. Also writes the encoded descriptor set that server reflection
//! serves, since `compile_fds` does not write one itself.

use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // compile_fds does not emit rerun-if-changed for the protos (grpc/grpc-rust#2511).
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(
        ["patience/v1/patience.proto", "patience/v1/jobs.proto"],
        ["proto"],
    )?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("patience_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    // Our codec words a request that does not decode as the client's error (src/proto/codec.rs).
    tonic_prost_build::configure()
        .codec_path("crate::proto::codec::CheckedCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
