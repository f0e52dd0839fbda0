//! The Levelrail gRPC protocol. Generated from `levelrail/**/*.proto`; see those files for the
//! meaning of every field and the stream contracts.
#![allow(
    missing_docs,
    unreachable_pub,
    clippy::all,
    missing_debug_implementations
)]

/// `levelrail.credentials.v1`: the write-only credentials API.
mod provider;
mod scope;

pub mod credentials {
    pub mod v1 {
        tonic::include_proto!("levelrail.credentials.v1");
    }
    /// `levelrail.credentials.internal.v1`: the internal broker (never behind gRPC-web).
    pub mod internal {
        pub mod v1 {
            tonic::include_proto!("levelrail.credentials.internal.v1");
        }
    }
}

/// `levelrail.auth.v1`: operator API tokens.
pub mod auth {
    pub mod v1 {
        tonic::include_proto!("levelrail.auth.v1");
    }
}

/// `levelrail.provisioner.v1`.
pub mod provisioner {
    pub mod v1 {
        tonic::include_proto!("levelrail.provisioner.v1");
    }
}

/// `levelrail.audit.v1`: the audit log of state-changing calls.
pub mod audit {
    pub mod v1 {
        tonic::include_proto!("levelrail.audit.v1");
    }
}

/// `levelrail.nodes.v1`.
pub mod nodes {
    pub mod v1 {
        tonic::include_proto!("levelrail.nodes.v1");
    }
}

/// The encoded `FileDescriptorSet` of every Levelrail service, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/levelrail_descriptor.bin"));
