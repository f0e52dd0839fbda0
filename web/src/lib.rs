//! Levelrail web app (Leptos CSR, wasm32, gRPC-web): sign in with an API token, the cloud
//! provider cards, the Nodes page and the Add node wizard with live progress.
//!
//! Layout: `api/` is the only module calling the control plane (gRPC-web); `pages/` has one
//! file per route; `components/` holds the reusable views; `logic/` is pure and
//! unit-tested natively. Everything but `logic` builds for wasm32 only.
pub mod logic;

#[cfg(target_arch = "wasm32")]
pub mod api;
#[cfg(target_arch = "wasm32")]
pub mod app;
#[cfg(target_arch = "wasm32")]
pub mod browser;
#[cfg(target_arch = "wasm32")]
pub mod components;
#[cfg(target_arch = "wasm32")]
pub mod pages;
#[cfg(target_arch = "wasm32")]
pub mod session;

/// Entry point called by the wasm-bindgen glue when the module loads. (The bundle aborts
/// on a panic at once, `scripts/build-web`: no panic hook would ever run.)
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    leptos::mount::mount_to_body(app::App);
}
