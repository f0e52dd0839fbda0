//! The messages' descriptors: the one use of the protocol crate (its encoded descriptor
//! set; none of its gRPC code).
use prost_reflect::DescriptorPool;

/// The descriptors of every Levelrail message.
pub fn descriptors() -> DescriptorPool {
    DescriptorPool::decode(levelrail_proto::FILE_DESCRIPTOR_SET)
        .expect("the protocol crate's own descriptor set decodes")
}
