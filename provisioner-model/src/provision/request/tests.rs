//! Table tests of provision request validation: each bad field is named in the error.
use super::*;

fn input() -> ProvisionInput {
    ProvisionInput {
        provider: Some(ProviderId::Hetzner),
        region: "fsn1".into(),
        size: "cx22".into(),
        name: "web-1".into(),
        control_plane_addr: "cp.example.com:9443".into(),
        ..Default::default()
    }
}

fn field_of(input: ProvisionInput) -> &'static str {
    input.validate(None).expect_err("must be rejected").field
}

#[test]
fn a_minimal_request_is_valid_and_defaults_apply() {
    let valid = ProvisionInput {
        control_plane_addr: String::new(),
        ..input()
    }
    .validate(Some("10.0.0.1:9443"))
    .expect("valid");
    assert_eq!(valid.control_plane_addr, "10.0.0.1:9443");
    assert_eq!(valid.role, Role::General);
    assert_eq!(
        (valid.ssh_source_cidr, valid.image, valid.request_id),
        (None, None, None)
    );
}

#[test]
fn every_invalid_field_is_named() {
    let cases: Vec<(ProvisionInput, &str)> = vec![
        (
            ProvisionInput {
                provider: None,
                ..input()
            },
            "provider",
        ),
        (
            ProvisionInput {
                region: String::new(),
                ..input()
            },
            "region",
        ),
        (
            ProvisionInput {
                region: "fsn1\n- evil".into(),
                ..input()
            },
            "region",
        ),
        (
            ProvisionInput {
                size: "cx22; rm".into(),
                ..input()
            },
            "size",
        ),
        (
            ProvisionInput {
                name: "Web_1".into(),
                ..input()
            },
            "name",
        ),
        (
            ProvisionInput {
                ssh_public_keys: vec!["not a key".into()],
                ..input()
            },
            "ssh_public_keys",
        ),
        (
            ProvisionInput {
                ssh_source_cidr: "203.0.113.7".into(),
                ..input()
            },
            "ssh_source_cidr",
        ),
        (
            ProvisionInput {
                ssh_source_cidr: "203.0.113.7/24".into(),
                ..input()
            },
            "ssh_source_cidr",
        ),
        (
            ProvisionInput {
                ssh_source_cidr: "10.0.0.0/33".into(),
                ..input()
            },
            "ssh_source_cidr",
        ),
        (
            ProvisionInput {
                image: "ubuntu 24.04".into(),
                ..input()
            },
            "image",
        ),
        (
            ProvisionInput {
                control_plane_addr: "cp.example.com".into(),
                ..input()
            },
            "control_plane_addr",
        ),
        (
            ProvisionInput {
                control_plane_addr: "cp:99999".into(),
                ..input()
            },
            "control_plane_addr",
        ),
        (
            ProvisionInput {
                control_plane_addr: String::new(),
                ..input()
            },
            "control_plane_addr",
        ),
        (
            ProvisionInput {
                request_id: "a b".into(),
                ..input()
            },
            "request_id",
        ),
    ];
    for (case, field) in cases {
        assert_eq!(field_of(case), field);
    }
}

#[test]
fn valid_optional_fields_are_kept() {
    let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop";
    let valid = ProvisionInput {
        ssh_public_keys: vec![format!("  {key}\n")],
        ssh_source_cidr: "203.0.113.7/32".into(),
        image: "ubuntu-24.04".into(),
        control_plane_addr: "[2001:db8::1]:9443".into(),
        request_id: "3f1c2a9e-7b9d-4c1e-9a55-0d5f3e0b2c11".into(),
        role: Role::Build,
        ..input()
    }
    .validate(None)
    .expect("valid");
    assert_eq!(valid.ssh_public_keys, vec![key.to_owned()]);
    assert_eq!(valid.ssh_source_cidr.as_deref(), Some("203.0.113.7/32"));
    assert_eq!(valid.role, Role::Build);
    let v6 = ProvisionInput {
        ssh_source_cidr: "2001:db8::/48".into(),
        ..input()
    }
    .validate(None);
    assert!(v6.is_ok());
}

#[test]
fn errors_never_echo_a_newline_or_quote() {
    let err = ProvisionInput {
        image: "x'\n\"; rm -rf /".into(),
        ..input()
    }
    .validate(None)
    .expect_err("bad image");
    assert!(
        !err.message.contains('\n') && !err.message.contains('\''),
        "{err}"
    );
}
