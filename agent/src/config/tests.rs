//! Unit tests of configuration loading: precedence, required variables, the token file
//! and pin agreement.

use std::collections::HashMap;

use super::*;

const FP: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const OTHER_FP: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

fn token() -> String {
    format!("LR1.{FP}.njt_test.c2VjcmV0LXNlY3JldA")
}

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn load(
        &self,
        env_file: Option<&str>,
        env: &[(&'static str, &str)],
    ) -> Result<Config, AgentError> {
        let env: HashMap<&'static str, String> =
            env.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let path = env_file.map(|text| self.file("agent.env", text));
        Config::from_sources(path.as_deref(), |name| {
            Ok(env.get(name).cloned().filter(|v| !v.is_empty()))
        })
    }
}

fn config_var(err: AgentError) -> &'static str {
    match err {
        AgentError::Config { var, .. } => var,
        other => panic!("expected a configuration error, got {other}"),
    }
}

#[test]
fn the_cloud_init_env_file_alone_is_enough_to_enroll() {
    let fx = Fixture::new();
    let token_path = fx.file("token", &format!("{}\n", token()));
    let text = format!(
        "# written by cloud-init\nAPP_CONTROL_PLANE_ADDR=\"cp.example.com:7443\"\n\
         APP_JOIN_TOKEN_FILE='{}'\nAPP_NODE_NAME=web-1\nAPP_CA_FINGERPRINT=\n\
         APP_AGENT_IDENTITY_FILE=/tmp/x/identity.json\nAPP_MESH_ENABLED=1\n",
        token_path.display()
    );
    let config = fx.load(Some(&text), &[]).unwrap();
    assert_eq!(config.identity_file, PathBuf::from("/tmp/x/identity.json"));
    assert_eq!(
        config.enroll_retry,
        Duration::from_secs(DEFAULT_ENROLL_RETRY_SECONDS)
    );
    let enrollment = config.enrollment().unwrap();
    assert_eq!(enrollment.addr.to_string(), "cp.example.com:7443");
    assert_eq!(enrollment.node_name, "web-1");
    assert_eq!(enrollment.token.token_id(), "njt_test");
    assert_eq!(enrollment.pin.to_string(), FP);
}

#[test]
fn process_environment_overrides_the_env_file() {
    let fx = Fixture::new();
    let text = format!(
        "APP_CONTROL_PLANE_ADDR=file:1\nAPP_NODE_NAME=from-file\nAPP_JOIN_TOKEN={}\n",
        token()
    );
    let config = fx
        .load(
            Some(&text),
            &[
                (ADDR, "env:2"),
                (NODE_NAME, ""),
                (ENROLL_RETRY_SECONDS, "7"),
            ],
        )
        .unwrap();
    assert_eq!(config.control_plane_addr().unwrap().to_string(), "env:2");
    // An empty process variable counts as unset: the file's value stays.
    assert_eq!(config.node_name(), Some("from-file"));
    assert_eq!(config.enroll_retry, Duration::from_secs(7));
    assert_eq!(config.identity_file, PathBuf::from(DEFAULT_IDENTITY_FILE));
}

#[test]
fn a_token_file_in_the_process_environment_replaces_the_file_token() {
    let fx = Fixture::new();
    let other = format!("LR1.{OTHER_FP}.njt_env.c2VjcmV0");
    let token_path = fx.file("token", &other);
    let text = format!(
        "APP_CONTROL_PLANE_ADDR=a:1\nAPP_NODE_NAME=n\nAPP_JOIN_TOKEN={}\n",
        token()
    );
    let path = token_path.to_str().unwrap().to_owned();
    let config = fx.load(Some(&text), &[(JOIN_TOKEN_FILE, &path)]).unwrap();
    assert_eq!(config.enrollment().unwrap().token.token_id(), "njt_env");
}

#[test]
fn both_token_spellings_in_one_source_are_a_configuration_error() {
    let fx = Fixture::new();
    let text = format!("APP_JOIN_TOKEN={}\nAPP_JOIN_TOKEN_FILE=/t\n", token());
    let err = fx.load(Some(&text), &[]).unwrap_err();
    assert_eq!(err.exit_code().code(), 2);
    assert_eq!(config_var(err), "APP_JOIN_TOKEN or APP_JOIN_TOKEN_FILE");
}

#[test]
fn each_missing_variable_is_named_with_exit_code_2() {
    let fx = Fixture::new();
    let token = token();
    let full = [
        (ADDR, "a:1"),
        (NODE_NAME, "n"),
        (JOIN_TOKEN, token.as_str()),
    ];
    for skip in 0..full.len() {
        let env: Vec<_> = full
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, kv)| *kv)
            .collect();
        let err = fx.load(None, &env).unwrap().enrollment().unwrap_err();
        assert_eq!(err.exit_code().code(), 2);
        let var = config_var(err);
        assert!(var.starts_with(full[skip].0), "{var} for {}", full[skip].0);
    }
}

#[test]
fn invalid_values_are_configuration_errors_naming_the_variable() {
    let fx = Fixture::new();
    let table: &[(&'static str, &str)] = &[
        (ADDR, "no-port"),
        (ADDR, "::1:7443"),
        (ADDR, "[::1]"),
        (ADDR, "[not-ip]:1"),
        (ADDR, "host:0"),
        (ADDR, "host:99999"),
        (ADDR, "https://host:1/"),
        (NODE_NAME, "Web-1"),
        (NODE_NAME, "web-"),
        (NODE_NAME, "1web"),
        (CA_FINGERPRINT, "abc"),
        (ENROLL_RETRY_SECONDS, "soon"),
    ];
    for (var, value) in table {
        let err = fx.load(None, &[(var, value)]).unwrap_err();
        assert_eq!(err.exit_code().code(), 2, "{var}={value}");
        assert_eq!(config_var(err), *var, "{value}");
    }
}

#[test]
fn ipv6_and_ip_addresses_are_accepted() {
    let v6 = ControlPlaneAddr::parse("[2001:db8::1]:7443").unwrap();
    assert_eq!((v6.host(), v6.port()), ("2001:db8::1", 7443));
    assert_eq!(v6.to_string(), "[2001:db8::1]:7443");
    assert!(matches!(v6.server_name(), ServerName::IpAddress(_)));
    let v4 = ControlPlaneAddr::parse("10.0.0.1:7443").unwrap();
    assert!(matches!(v4.server_name(), ServerName::IpAddress(_)));
    assert!(matches!(
        ControlPlaneAddr::parse("cp:1").unwrap().server_name(),
        ServerName::DnsName(_)
    ));
}

#[test]
fn an_explicit_fingerprint_that_agrees_with_the_token_is_accepted_in_any_spelling() {
    let fx = Fixture::new();
    let token = token();
    let upper = FP.to_uppercase();
    let env = [
        (ADDR, "a:1"),
        (NODE_NAME, "n"),
        (JOIN_TOKEN, token.as_str()),
        (CA_FINGERPRINT, upper.as_str()),
    ];
    assert_eq!(
        fx.load(None, &env)
            .unwrap()
            .enrollment()
            .unwrap()
            .pin
            .to_string(),
        FP
    );
}

#[test]
fn an_explicit_fingerprint_that_disagrees_with_the_token_exits_with_the_pin_code() {
    let fx = Fixture::new();
    let token = token();
    let env = [
        (ADDR, "a:1"),
        (NODE_NAME, "n"),
        (JOIN_TOKEN, token.as_str()),
        (CA_FINGERPRINT, OTHER_FP),
    ];
    let err = fx.load(None, &env).unwrap().enrollment().unwrap_err();
    assert!(matches!(err, AgentError::PinConflict), "{err}");
    assert_eq!(err.exit_code().code(), 3);
}

#[test]
fn an_unreadable_or_empty_token_file_is_named() {
    let fx = Fixture::new();
    let empty = fx.file("empty", "\n");
    for path in [empty.to_str().unwrap(), "/nonexistent/token"] {
        let env = [(ADDR, "a:1"), (NODE_NAME, "n"), (JOIN_TOKEN_FILE, path)];
        let err = fx.load(None, &env).unwrap().enrollment().unwrap_err();
        assert_eq!(config_var(err), JOIN_TOKEN_FILE);
    }
}

#[test]
fn a_malformed_token_exits_with_code_7_and_the_debug_output_hides_it() {
    let fx = Fixture::new();
    let env = [
        (ADDR, "a:1"),
        (NODE_NAME, "n"),
        (JOIN_TOKEN, "LR1.s3cr3tvalue"),
    ];
    let config = fx.load(None, &env).unwrap();
    assert!(!format!("{config:?}").contains("s3cr3tvalue"));
    let err = config.enrollment().unwrap_err();
    assert_eq!(err.exit_code().code(), 7);
    assert!(!err.to_string().contains("s3cr3tvalue"));
}

#[test]
fn a_malformed_env_file_line_is_a_configuration_error() {
    let fx = Fixture::new();
    let err = fx
        .load(Some("APP_NODE_NAME=n\nthis line is broken\n"), &[])
        .unwrap_err();
    assert!(matches!(err, AgentError::EnvFile { line: 2, .. }), "{err}");
    assert_eq!(err.exit_code().code(), 2);
}
