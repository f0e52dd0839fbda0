//! Provider clients against their fake clouds, and the OpenAPI contract tooling. One module
//! per provider (append `mod` lines; keep shared helpers in their own module).
mod conformance;
mod digitalocean_catalog;
mod digitalocean_contract;
mod digitalocean_faults;
mod digitalocean_lifecycle;
mod digitalocean_ratelimit;
mod digitalocean_support;
mod digitalocean_wire;
mod hetzner_behaviour;
mod hetzner_contract;
mod hetzner_faults;
mod hetzner_ratelimit;
mod hetzner_support;
mod openapi;
