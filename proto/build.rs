//! Compiles the .proto files with protox (pure Rust, no protoc) and generates the Rust code.
//! Client code is generated without transport so the crate also compiles for wasm32; server
//! modules are behind the crate's `server` feature.
use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "levelrail/credentials/v1/credentials.proto",
        "levelrail/auth/v1/api_tokens.proto",
        "levelrail/audit/v1/audit.proto",
        "levelrail/credentials/internal/v1/broker.proto",
        "levelrail/provisioner/v1/provisioner.proto",
        "levelrail/nodes/v1/nodes.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={f}");
    }
    let fds = protox::compile(files, ["."])?;
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    std::fs::write(out.join("levelrail_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_transport(false)
        .server_mod_attribute(".", r#"#[cfg(feature = "server")]"#)
        .compile_fds(fds)?;
    Ok(())
}
