//! Compiles the repository's `proto/` with protox (pure Rust, no `protoc`) into an encoded
//! descriptor set that the extension module carries (`_patience.DESCRIPTORS`): `patience.remote`
//! makes its gRPC messages from it at import, so the remote client always speaks this checkout's
//! API and nothing generated is checked in or needs grpcio-tools to build.

use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    // `proto` here is a link to the repository's `proto/`, so that `maturin sdist` packs the
    // files themselves and a source distribution builds on its own. Where a checkout has no
    // links (Windows without them), the repository's own folder.
    let linked = manifest.join("proto");
    let proto = if linked.join("patience/v1/patience.proto").is_file() {
        linked
    } else {
        manifest.join("../../proto")
    };
    println!("cargo:rerun-if-changed={}", proto.display());
    let descriptors = protox::compile(
        ["patience/v1/patience.proto", "patience/v1/jobs.proto"],
        [&proto],
    )?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("descriptors.bin"), descriptors.encode_to_vec())?;
    Ok(())
}
