//! Levelrail web app (Leptos CSR, wasm32, gRPC-web).
