//! Pure logic of the web app: validation, error-field matching, stage timing and display
//! formatting. Nothing here touches the browser or the network, so it is unit-tested
//! natively by `cargo test -p levelrail-web`.
pub mod choices;
pub mod fields;
pub mod format;
pub mod grpc_web;
pub mod name;
pub mod providers;
pub mod sizes;
pub mod stages;
pub mod timeline;
