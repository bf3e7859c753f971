//! Compiles `protos/*.proto` into Rust with prost. The .proto files are
//! parsed by protox (pure Rust), so no `protoc` binary is needed to build.
use std::path::PathBuf;

fn main() {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protos");
    let files = [
        "file.proto",
        "file2.proto",
        "encodings_v2_0.proto",
        "encodings_v2_1.proto",
        "table.proto",
        "transaction.proto",
        "rowids.proto",
        "index_vector.proto",
    ];
    let paths: Vec<PathBuf> = files.iter().map(|f| proto_dir.join(f)).collect();
    for p in &paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let fds = protox::compile(&paths, [&proto_dir]).expect("protos/ must parse");
    let mut config = prost_build::Config::new();
    config.compile_fds(fds).expect("prost code generation");
}
