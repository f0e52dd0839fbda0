//! The provisioner's application layer: the `Nodes`, `Provisioner` and `Orphans` state
//! structs, over the model's ports. The gRPC
//! handlers call these structs' methods. Nothing here imports the proto crate.
mod error;
mod nodes;
mod orphans;
mod provisions;
mod teardown;
pub mod workflow;

pub use error::{AuthFailure, NodesError};
pub use nodes::{
    DEFAULT_JOIN_TOKEN_TTL, JoinTokenInfo, MAX_JOIN_TOKEN_TTL, NodeIdentity, Nodes,
    PROVISION_JOIN_TOKEN_TTL, ProgressAuthority,
};
pub use orphans::{ADOPTION_TOKEN_TTL, Adoption, Orphans};
pub use provisions::{
    AgentAddrPolicy, DEFAULT_MAX_IN_FLIGHT, DEFAULT_PROVISION_TIMEOUT, ListPage, Provisioner,
    ProvisionerConfig, ProvisionerDeps, RetryTuning, WorkflowTuning,
};
pub use teardown::ServerTeardown;
