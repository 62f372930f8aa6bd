//! The wire contract's messages and the generated service and client (tonic / prost), from
//! `proto/accelhost/node/v1/node.proto`: generated code, kept apart from the hand-written.
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("accelhost.node.v1");
