//! `nodes providers set-credential` for hetzner, digitalocean, azure and gcp: the value by
//! flag, by pipe and by prompt, and the exact request each produced.
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::{ApiToken, JsonDocument, Provider};

use crate::helpers::{CANARY, FakeSecrets, TestServer};

const WARNING: &str = "warning: --provider-token lands in shell history and the process list; \
                       pipe the value or omit the flag for a prompt\n";

fn gcp_key() -> String {
    format!(
        "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"p\",\n  \"private_key_id\": \"k1\",\n  \
         \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{CANARY}\\n-----END PRIVATE KEY-----\\n\",\n  \
         \"client_email\": \"sa@p.iam.gserviceaccount.com\"\n}}"
    )
}

fn azure_principal() -> String {
    format!(
        r#"{{"tenant_id":"t","client_id":"c","client_secret":"{CANARY}","subscription_id":"s","resource_group":"rg"}}"#
    )
}

#[tokio::test]
async fn hetzner_and_digitalocean_tokens_are_accepted_by_pipe_prompt_and_flag() {
    for provider in ["hetzner", "digitalocean"] {
        for (secrets, flag, prompts) in [
            (FakeSecrets::piped(&format!("{CANARY}\n")), false, vec![]),
            (
                FakeSecrets::terminal(&[CANARY]),
                false,
                vec!["Provider token: ".to_owned()],
            ),
            (FakeSecrets::none(), true, vec![]),
        ] {
            // Arrange
            let server = TestServer::start().await;
            let mut args = vec![
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                provider,
            ];
            if flag {
                args.extend(["--provider-token", CANARY]);
            }

            // Act
            let out = server.run(&args, secrets).await;

            // Assert
            assert_eq!(out.code, 0, "{out:?}");
            assert_eq!(
                out.stdout,
                format!("provider \"{provider}\" credential stored\n")
            );
            assert_eq!(out.stderr, if flag { WARNING } else { "" });
            assert_eq!(out.prompts, prompts);
            let request = server.only_set_request();
            assert_eq!(request.provider, crate::helpers::provider_value(provider));
            assert_eq!(
                request.credential,
                Some(Credential::ApiToken(ApiToken {
                    token: CANARY.into()
                }))
            );
            out.assert_no_canary();
        }
    }
}

#[tokio::test]
async fn a_digitalocean_token_on_the_command_line_works_but_warns() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "digitalocean",
                "--provider-token",
                CANARY,
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provider \"digitalocean\" credential stored\n");
    assert_eq!(out.stderr, WARNING);
    assert_eq!(
        server.only_set_request().credential,
        Some(Credential::ApiToken(ApiToken {
            token: CANARY.into()
        }))
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn a_multi_line_gcp_key_piped_on_stdin_is_passed_through_unmodified() {
    // Arrange
    let server = TestServer::start().await;
    let key = gcp_key();

    // Act
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "gcp"],
            FakeSecrets::piped(&format!("{key}\n")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provider \"gcp\" credential stored\n");
    let request = server.only_set_request();
    assert_eq!(request.provider, Provider::Gcp as i32);
    assert_eq!(
        request.credential,
        Some(Credential::Gcp(JsonDocument {
            json: key,
            ..Default::default()
        }))
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn a_gcp_key_given_as_a_flag_is_passed_through_byte_for_byte() {
    // Arrange
    let server = TestServer::start().await;
    let key = gcp_key();

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "gcp",
                "--provider-token",
                &key,
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stderr, WARNING);
    assert_eq!(
        server.only_set_request().credential,
        Some(Credential::Gcp(JsonDocument {
            json: key,
            ..Default::default()
        }))
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn a_gcp_key_is_prompted_for_as_service_account_key_json() {
    // Arrange
    let server = TestServer::start().await;
    let key = gcp_key().replace('\n', "");

    // Act
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "gcp"],
            FakeSecrets::terminal(&[&key]),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.prompts, ["Service account key JSON: "]);
    assert_eq!(
        server.only_set_request().credential,
        Some(Credential::Gcp(JsonDocument {
            json: key,
            ..Default::default()
        }))
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn an_azure_service_principal_is_accepted_by_pipe_prompt_and_flag() {
    let principal = azure_principal();
    for (secrets, flag, prompts) in [
        (FakeSecrets::piped(&principal), false, vec![]),
        (
            FakeSecrets::terminal(&[&principal]),
            false,
            vec!["Service principal JSON: ".to_owned()],
        ),
        (FakeSecrets::none(), true, vec![]),
    ] {
        // Arrange
        let server = TestServer::start().await;
        let mut args = vec![
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "azure",
        ];
        if flag {
            args.extend(["--provider-token", &principal]);
        }

        // Act
        let out = server.run(&args, secrets).await;

        // Assert
        assert_eq!(out.code, 0, "{out:?}");
        assert_eq!(out.stdout, "provider \"azure\" credential stored\n");
        assert_eq!(out.prompts, prompts);
        assert_eq!(out.stderr, if flag { WARNING } else { "" });
        assert_eq!(
            server.only_set_request().credential,
            Some(Credential::Azure(JsonDocument {
                json: principal.clone(),
                ..Default::default()
            }))
        );
        out.assert_no_canary();
    }
}

#[tokio::test]
async fn set_credential_json_prints_the_stored_card_without_the_secret() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &[
                "--json",
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "azure",
            ],
            FakeSecrets::piped(&azure_principal()),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["provider"]["provider"], "azure");
    assert_eq!(doc["provider"]["connected"], true);
    assert_eq!(doc["provider"]["identity"]["kind"], "azure");
    assert_eq!(doc["provider"]["identity"]["resource_group"], "rg");
    out.assert_no_canary();
}

#[tokio::test]
async fn no_token_anywhere_is_a_usage_error_and_nothing_is_sent() {
    for provider in ["hetzner", "digitalocean", "azure", "gcp"] {
        // Arrange
        let server = TestServer::start().await;

        // Act
        let out = server
            .run(
                &[
                    "nodes",
                    "providers",
                    "set-credential",
                    "--provider",
                    provider,
                ],
                FakeSecrets::none(),
            )
            .await;

        // Assert
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(
            out.stderr,
            "error: a provider token is required: pass --provider-token, pipe it on stdin, or run interactively\n"
        );
        assert!(server.state().set_requests.is_empty());
    }
}

#[tokio::test]
async fn malformed_json_is_rejected_locally_without_echoing_it() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "gcp"],
            FakeSecrets::piped(&format!("{{\"private_key\": \"{CANARY}\"")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .starts_with("error: the service account key JSON is not valid JSON: "),
        "{}",
        out.stderr
    );
    assert!(server.state().set_requests.is_empty());
    out.assert_no_canary();
}

#[tokio::test]
async fn an_aws_only_flag_with_another_provider_names_the_flag() {
    for (flag, value) in [
        ("--secret-access-key", Some(CANARY)),
        ("--session-token", Some(CANARY)),
        ("--region", Some("eu-west-1")),
        ("--role-arn", Some("arn:aws:iam::123456789012:role/x")),
        ("--use-ambient-credentials", None),
    ] {
        // Arrange
        let server = TestServer::start().await;
        let mut args = vec![
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "hetzner",
            flag,
        ];
        args.extend(value);

        // Act
        let out = server.run(&args, FakeSecrets::piped("tok\n")).await;

        // Assert
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(
            out.stderr,
            format!("error: {flag} only applies to --provider aws\n")
        );
        assert!(server.state().set_requests.is_empty());
        out.assert_no_canary();
    }
}

#[tokio::test]
async fn a_gcp_external_account_is_sent_with_its_project_and_the_flag_is_gcp_only() {
    let server = TestServer::start().await;
    let doc = r#"{"type":"external_account","audience":"//iam.googleapis.com/x"}"#;
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "gcp",
                "--project-id",
                "levelrail-prod-42",
            ],
            FakeSecrets::piped(&format!("{doc}\n")),
        )
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        server.only_set_request().credential,
        Some(Credential::Gcp(JsonDocument {
            json: doc.into(),
            project_id: "levelrail-prod-42".into()
        }))
    );
    let other = TestServer::start().await;
    let out = other
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "hetzner",
                "--project-id",
                "p",
            ],
            FakeSecrets::piped("t\n"),
        )
        .await;
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (2, "error: --project-id only applies to --provider gcp\n")
    );
    assert!(other.state().set_requests.is_empty());
}
