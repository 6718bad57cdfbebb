//! The generated gRPC types and the descriptor set that reflection serves.

#![allow(clippy::all, missing_docs)]

tonic::include_proto!("patience.v1");

/// The encoded `FileDescriptorSet` of `proto/`, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("patience_descriptor");
