//! Provider clients against their fake clouds, and the OpenAPI contract tooling. One module
//! per provider (append `mod` lines; keep shared helpers in their own module).
mod openapi;
