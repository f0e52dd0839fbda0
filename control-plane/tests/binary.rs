//! The `levelrail` binary starts and describes itself. Having an integration test here also
//! makes `cargo test --workspace` build the binary, which the end-to-end tests in `tests/`
//! run (`target/<profile>/levelrail`); without it they would run a stale or missing build.
use std::process::Command;

#[test]
fn the_binary_prints_its_help_with_the_serve_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_levelrail"))
        .arg("--help")
        .output()
        .expect("levelrail runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("serve"), "{help}");
}
