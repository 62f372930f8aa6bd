//! Compiles the wire contract (`proto/`) into the tonic service and prost messages, with
//! protox (a protobuf compiler in Rust), so building needs no `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/accelhost/node/v1/node.proto",
        "proto/accelhost/node/v1/baseline.proto",
        "proto/deviceplugin/v1beta1/api.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // Bulk data as `Bytes`: chunks are sliced and decoded without extra copies.
        .bytes(".")
        .compile_fds(descriptors)?;
    Ok(())
}
