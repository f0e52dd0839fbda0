//! agent
fn main() {}
