//! Table tests of input validation: injections into every parameter are rejected before
//! rendering, the error names the parameter, and no error ever contains the token.
use secrecy::SecretString;

use super::{AGENT_SHA, CA_PEM, DIGEST, FP, SECRET, params, progress_credential, token};
use crate::{AgentDownload, AgentImage, AgentSource, CloudInitParams, RenderError, render};
use levelrail_types::CpuArch;

/// Text that could end a line, start a comment or a mapping, quote, or hide as Unicode.
const PAYLOADS: [&str; 24] = [
    "\n",
    "\r",
    "\r\n",
    "\nExecStart=/bin/sh -c id",
    "\nruncmd: [reboot]",
    ": ",
    ":x",
    "#",
    " #c",
    "{",
    "}",
    "[",
    "'",
    "\"",
    "`id`",
    "$(id)",
    ";",
    "\t",
    "\u{0}",
    "\u{7f}",
    "\u{85}",
    "\u{2028}",
    "\u{ff1a}",
    "é",
];

type Mutator = fn(&mut CloudInitParams, &str);

/// For each parameter: its name and how a payload gets into it.
fn targets() -> Vec<(&'static str, Mutator)> {
    vec![
        ("control_plane_addr", |p, x| {
            p.control_plane_addr.push_str(x)
        }),
        ("control_plane_addr", |p, x| {
            p.control_plane_addr.insert_str(2, x)
        }),
        ("join_token", |p, x| {
            p.join_token = SecretString::from(format!("{}{x}", token()))
        }),
        ("join_token", |p, x| {
            p.join_token = SecretString::from(token().replacen('.', x, 1))
        }),
        ("node_name", |p, x| p.node_name.push_str(x)),
        ("node_name", |p, x| p.node_name.insert_str(1, x)),
        ("ca_fingerprint", |p, x| p.ca_fingerprint.push_str(x)),
        ("ca_fingerprint", |p, x| {
            p.ca_fingerprint.replace_range(60.., x)
        }),
        ("ca_pem", |p, x| {
            p.ca_pem = CA_PEM.replacen("\nMIIB", &format!("\nMI{x}IB"), 1)
        }),
        ("progress_credential", |p, x| {
            p.progress_credential = SecretString::from(format!("{}{x}", progress_credential()))
        }),
        ("progress_credential", |p, x| {
            p.progress_credential = SecretString::from(progress_credential().replacen('.', x, 1))
        }),
        ("agent_image", |p, x| {
            p.agent = AgentSource::Image(AgentImage {
                repository: format!("ghcr.io/x{x}"),
                digest: DIGEST.into(),
            })
        }),
        ("agent_image", |p, x| {
            p.agent = AgentSource::Image(AgentImage {
                repository: "ghcr.io/x".into(),
                digest: format!("{DIGEST}{x}"),
            })
        }),
        ("agent", |p, x| {
            p.agent = AgentSource::Binary(AgentDownload {
                base_url: format!("https://cp.example:9443/v1/agent{x}"),
                sha256: vec![(CpuArch::X86_64, AGENT_SHA.into())],
            })
        }),
        ("agent", |p, x| {
            p.agent = AgentSource::Binary(AgentDownload {
                base_url: "https://cp.example:9443/v1/agent".into(),
                sha256: vec![(CpuArch::X86_64, format!("{}{x}", &AGENT_SHA[..63]))],
            })
        }),
        ("progress_url", |p, x| p.progress_url.push_str(x)),
        ("progress_url", |p, x| p.progress_url.insert_str(10, x)),
    ]
}

fn assert_rejected(err: RenderError, param: &str, case: &str) {
    assert_eq!(err.param(), param, "{case}: {err}");
    let shown = format!("{err} {err:?}");
    assert!(
        !shown.contains(SECRET),
        "{case}: the error shows the token secret: {shown}"
    );
    assert!(
        !shown.contains(&token()),
        "{case}: the error shows the token"
    );
}

#[test]
fn every_injection_into_every_parameter_is_rejected_naming_the_parameter() {
    for (param, inject) in targets() {
        for payload in PAYLOADS {
            let mut p = params();
            inject(&mut p, payload);
            let case = format!("{param} with {payload:?}");
            let err = render(&p).expect_err(&case);
            assert_rejected(err, param, &case);
        }
    }
}

#[test]
fn injected_image_references_are_rejected_by_the_parser_too() {
    for payload in PAYLOADS {
        for reference in [
            format!("ghcr.io/x/agent@{DIGEST}{payload}"),
            format!("ghcr.io/x{payload}/a@{DIGEST}"),
        ] {
            let err = AgentImage::parse(&reference).expect_err(&reference);
            assert_rejected(err, "agent_image", &reference);
        }
    }
}

#[test]
fn addresses_must_be_host_and_port() {
    let valid = [
        "cp.example:9443",
        "10.0.0.1:9443",
        "[2001:db8::1]:9443",
        "localhost:1",
        "a.b.:8",
    ];
    let invalid = [
        "",
        "cp.example",
        "cp.example:",
        "cp.example:0",
        "cp.example:65536",
        "cp.example:+1",
        "2001:db8::1:9443",
        "[2001:db8::1]",
        "[2001:db8::1]9443",
        "[zz]:1",
        "-bad.example:1",
        "bad-.example:1",
        "cp..example:1",
        "999.1.1.1:1",
        "cp_example:1",
        "https://cp.example:1",
    ];
    for addr in valid {
        let mut p = params();
        p.control_plane_addr = addr.into();
        assert!(render(&p).is_ok(), "{addr}");
    }
    for addr in invalid {
        let mut p = params();
        p.control_plane_addr = addr.into();
        assert_rejected(render(&p).unwrap_err(), "control_plane_addr", addr);
    }
}

#[test]
fn node_names_are_lowercase_dns_labels() {
    for name in ["a", "node-1", "n0", &format!("a{}", "b".repeat(62))] {
        let mut p = params();
        p.node_name = name.into();
        assert!(render(&p).is_ok(), "{name}");
    }
    for name in [
        "",
        "1node",
        "-node",
        "Node",
        "node_1",
        "node.1",
        "node-",
        &"a".repeat(64),
    ] {
        let mut p = params();
        p.node_name = name.into();
        assert_rejected(render(&p).unwrap_err(), "node_name", name);
    }
}

#[test]
fn progress_urls_are_https_with_a_plain_path() {
    for url in [
        "https://cp.example/p",
        "https://[::1]:9443/v1/provision-progress",
        "https://a:1/%41",
    ] {
        let mut p = params();
        p.progress_url = url.into();
        assert!(render(&p).is_ok(), "{url}");
    }
    for url in [
        "http://cp.example:9443/p",
        "https://cp.example:9443",
        "https://cp.example:9443/p?x=1",
        "https://cp.example:9443/p#f",
        "https://user@cp.example/p",
        "https://cp.example:99999/p",
        "https:///p",
        "ftp://cp.example/p",
    ] {
        let mut p = params();
        p.progress_url = url.into();
        assert_rejected(render(&p).unwrap_err(), "progress_url", url);
    }
}

#[test]
fn malformed_tokens_are_rejected_without_being_quoted() {
    let other_pin = "f".repeat(64);
    let bad = [
        String::new(),
        format!("LR2.{FP}.njt_0123456789abcdef.{SECRET}"),
        format!("LR1.{}.njt_0123456789abcdef.{SECRET}", &FP[..63]),
        format!("LR1.{FP}.tok_0123456789abcdef.{SECRET}"),
        format!("LR1.{FP}.njt_.{SECRET}"),
        format!("LR1.{FP}.njt_XYZ.{SECRET}"),
        format!("LR1.{FP}.njt_0123456789abcdef.{SECRET}+/"),
        format!("LR1.{FP}.njt_0123456789abcdef."),
        format!("LR1.{FP}.njt_0123456789abcdef.{SECRET}.extra"),
        format!("LR1.{other_pin}.njt_0123456789abcdef.{SECRET}"),
        SECRET.to_owned(),
    ];
    for value in bad {
        let mut p = params();
        p.join_token = SecretString::from(value.clone());
        let err = render(&p).unwrap_err();
        assert_eq!(err.param(), "join_token");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(SECRET) && (value.is_empty() || !shown.contains(&value)));
    }
    assert!(
        !format!("{:?}", params()).contains(SECRET),
        "Debug redacts the token"
    );
}

#[test]
fn the_ca_pem_must_be_certificates_matching_the_fingerprint() {
    let body_line = CA_PEM.lines().nth(1).unwrap();
    let bad = [
        String::new(),
        CA_PEM.replace('\n', "\r\n"),
        CA_PEM.replacen(body_line, &format!("{body_line}\nkey: value"), 1),
        CA_PEM.replacen(body_line, &format!("{body_line}\n# comment"), 1),
        CA_PEM.replacen(body_line, &format!("{body_line}\n"), 1),
        CA_PEM.replace("-----END CERTIFICATE-----\n", ""),
        format!("{CA_PEM}trailing\n"),
        CA_PEM.replace("CERTIFICATE", "PRIVATE KEY"),
        CA_PEM.replacen("MIIB", "MIIC", 1),
        format!("{CA_PEM}\u{1b}[0m"),
    ];
    for pem in bad {
        let mut p = params();
        p.ca_pem = pem.clone();
        assert_rejected(render(&p).unwrap_err(), "ca_pem", &pem);
    }
    let mut bundle = params();
    bundle.ca_pem = format!("{CA_PEM}{CA_PEM}");
    assert!(
        render(&bundle).is_ok(),
        "a bundle holding the pinned CA is accepted"
    );
}

#[test]
fn the_agent_download_needs_distinct_architectures_and_full_hashes() {
    let with = |sha256: Vec<(CpuArch, String)>, base_url: &str| {
        let mut p = params();
        p.agent = AgentSource::Binary(AgentDownload {
            base_url: base_url.into(),
            sha256,
        });
        render(&p)
    };
    let base = "https://cp.example:9443/v1/agent/0.4.0";
    let x86 = (CpuArch::X86_64, AGENT_SHA.to_owned());
    let cases = [
        with(vec![], base),
        with(vec![x86.clone(), x86.clone()], base),
        with(vec![(CpuArch::X86_64, AGENT_SHA.to_uppercase())], base),
        with(vec![(CpuArch::X86_64, AGENT_SHA[..32].to_owned())], base),
        with(vec![x86.clone()], "http://cp.example:9443/v1/agent/0.4.0"),
        with(vec![x86.clone()], "https://cp.example:9443/v1/agent/0.4.0/"),
    ];
    for (i, result) in cases.into_iter().enumerate() {
        assert_rejected(result.expect_err(&i.to_string()), "agent", &i.to_string());
    }
    assert!(with(vec![x86, (CpuArch::Aarch64, "0".repeat(64))], base).is_ok());
}
