//! The malformed-credential table: each case names the exact field path expected, and every
//! error's `Display` is checked for any part of the canary embedded in the input. Token and
//! AWS cases live here, the JSON (Azure, GCP) cases in `malformed_json_cases.rs`.
use super::malformed_json_cases::{azure_cases, gcp_cases};
use crate::ProviderId::{Aws as AwsKind, DigitalOcean, Hetzner};
use crate::validate::fixtures::*;
use crate::validate::parse;

fn token_cases() -> Vec<Case> {
    let hex = |s: &str| Case {
        canary: HEX_CANARY,
        ..case("", "", token(DigitalOcean, s))
    };
    let do_upper = digitalocean_token()
        .replace("dop_v1_", "")
        .to_ascii_uppercase();
    vec![
        case("hetzner empty", "hetzner.token", token(Hetzner, " \n")),
        case(
            "hetzner inner space",
            "hetzner.token",
            token(Hetzner, format!("{CANARY} {CANARY}xyzxyzxyz")),
        ),
        case(
            "hetzner too short",
            "hetzner.token",
            token(Hetzner, &CANARY[..20]),
        ),
        case(
            "hetzner too long",
            "hetzner.token",
            token(Hetzner, CANARY.repeat(6)),
        ),
        case(
            "hetzner 1 MiB",
            "hetzner.token",
            token(Hetzner, CANARY.repeat(MIB / CANARY.len())),
        ),
        case(
            "hetzner NUL",
            "hetzner.token",
            token(Hetzner, format!("{CANARY}\u{0}{CANARY}")),
        ),
        case(
            "hetzner emoji",
            "hetzner.token",
            token(Hetzner, format!("{CANARY}\u{1F511}{CANARY}")),
        ),
        case(
            "hetzner underscore",
            "hetzner.token",
            token(Hetzner, format!("{CANARY}_{CANARY}")),
        ),
        Case {
            name: "do uppercase hex",
            field: "digitalocean.token".into(),
            ..hex(&do_upper)
        },
        Case {
            name: "do wrong prefix",
            field: "digitalocean.token".into(),
            ..hex(&digitalocean_token().replace("dop_", "dox_"))
        },
        Case {
            name: "do 63 hex digits",
            field: "digitalocean.token".into(),
            ..hex(&digitalocean_token()[..70])
        },
        case(
            "bare token for aws",
            "provider",
            token(AwsKind, hetzner_token()),
        ),
    ]
}

fn aws_cases() -> Vec<Case> {
    let v = Aws::valid;
    let t = Aws::temporary;
    let arn = |role: &str| {
        Aws {
            role: role.to_owned(),
            ..v()
        }
        .input()
    };
    vec![
        case(
            "ambient with key",
            "aws.use_ambient_credentials",
            Aws {
                ambient: true,
                ..v()
            }
            .input(),
        ),
        case(
            "ambient with session token",
            "aws.use_ambient_credentials",
            Aws {
                session: format!("{CANARY}=="),
                ..Aws::ambient()
            }
            .input(),
        ),
        case(
            "key id lowercase",
            "aws.access_key_id",
            Aws {
                key: AWS_KEY_ID.to_lowercase(),
                ..v()
            }
            .input(),
        ),
        case(
            "key id bidi",
            "aws.access_key_id",
            Aws {
                key: format!("AKIA\u{202e}{CANARY}"),
                ..v()
            }
            .input(),
        ),
        case(
            "key id AIDA",
            "aws.access_key_id",
            Aws {
                key: "AIDAJQABLZS4A3QDU576Q".into(),
                ..v()
            }
            .input(),
        ),
        case(
            "key id missing",
            "aws.access_key_id",
            Aws {
                key: " ".into(),
                ..v()
            }
            .input(),
        ),
        case(
            "secret inner space",
            "aws.secret_access_key",
            Aws {
                secret: format!("{CANARY} x/y+z"),
                ..v()
            }
            .input(),
        ),
        case(
            "secret empty",
            "aws.secret_access_key",
            Aws {
                secret: "\n".into(),
                ..v()
            }
            .input(),
        ),
        case(
            "secret bad char",
            "aws.secret_access_key",
            Aws {
                secret: format!("{CANARY}-{CANARY}"),
                ..v()
            }
            .input(),
        ),
        case(
            "session token 5 KiB",
            "aws.session_token",
            Aws {
                session: CANARY.repeat(240),
                ..t()
            }
            .input(),
        ),
        case(
            "session token NUL",
            "aws.session_token",
            Aws {
                session: format!("{CANARY}\u{0}"),
                ..t()
            }
            .input(),
        ),
        case(
            "ASIA without session",
            "aws.session_token",
            Aws {
                session: String::new(),
                ..t()
            }
            .input(),
        ),
        case(
            "AKIA with session",
            "aws.session_token",
            Aws {
                session: CANARY.into(),
                ..v()
            }
            .input(),
        ),
        case(
            "region uppercase",
            "aws.region",
            Aws {
                region: "US-EAST-1".into(),
                ..v()
            }
            .input(),
        ),
        case(
            "region without hyphens",
            "aws.region",
            Aws {
                region: "useast1".into(),
                ..v()
            }
            .input(),
        ),
        case(
            "region 1 MiB",
            "aws.region",
            Aws {
                region: "a".repeat(MIB),
                ..v()
            }
            .input(),
        ),
        case(
            "arn wrong partition",
            "aws.role_arn",
            arn("arn:aws-xx:iam::123456789012:role/x"),
        ),
        case(
            "arn 11-digit account",
            "aws.role_arn",
            arn("arn:aws:iam::12345678901:role/x"),
        ),
        case(
            "arn user instead of role",
            "aws.role_arn",
            arn("arn:aws:iam::123456789012:user/x"),
        ),
        case(
            "arn role name too long",
            "aws.role_arn",
            arn(&format!(
                "arn:aws:iam::123456789012:role/{}",
                "r".repeat(65)
            )),
        ),
        case(
            "arn sts service",
            "aws.role_arn",
            arn("arn:aws:sts::123456789012:role/x"),
        ),
    ]
}

#[test]
fn validate_rejects_every_malformed_credential_with_the_exact_field_and_no_canary() {
    let cases: Vec<Case> = [token_cases(), aws_cases(), azure_cases(), gcp_cases()]
        .into_iter()
        .flatten()
        .collect();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    for Case {
        name,
        input,
        field,
        canary,
    } in cases
    {
        // Act
        let err = parse(input).expect_err(name);
        // Assert
        assert_eq!(err.field, field, "{name}: {err}");
        assert_no_leak(&err.to_string(), canary, name);
        assert_no_leak(&format!("{err:?}"), canary, name);
    }
}

#[test]
fn json_errors_report_only_positions() {
    let err = parse(azure(format!(r#"{{"client_secret":"{CANARY}","x":tru}}"#))).unwrap_err();
    assert_eq!(err.field, "azure.json");
    assert!(
        err.message
            .starts_with("is not valid JSON at line 1 column"),
        "{err}"
    );
    let err = parse(azure("[".repeat(10_000))).unwrap_err();
    assert_eq!(err.message, "must not nest JSON deeper than 32 levels");
}
