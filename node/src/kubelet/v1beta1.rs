//! The kubelet's device-plugin API: messages, the `Registration` client, the `DevicePlugin`
//! server (generated from `proto/deviceplugin/v1beta1/api.proto`).
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("v1beta1");
