//! `nodes providers set-credential --provider aws`: access key + secret by flag, pipe and
//! prompt, the optional session token, region and role, and ambient credentials.
use levelrail_proto::credentials::v1::AwsCredential;
use levelrail_proto::credentials::v1::set_credential_request::Credential;

use crate::helpers::{CANARY, FakeSecrets, TestServer};

const KEY_ID: &str = "AKIAEXAMPLEKEYWXYZ";
const AWS_REQUIRED: &str = "error: --provider-token (access key id) and --secret-access-key are \
                            required for aws, or pass --use-ambient-credentials\n";

fn static_key(session_token: &str, region: &str, role_arn: &str) -> Option<Credential> {
    Some(Credential::Aws(AwsCredential {
        access_key_id: KEY_ID.into(),
        secret_access_key: CANARY.into(),
        session_token: session_token.into(),
        region: region.into(),
        role_arn: role_arn.into(),
        use_ambient_credentials: false,
    }))
}

#[tokio::test]
async fn aws_key_id_and_secret_piped_one_per_line_are_stored() {
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
                "aws",
                "--region",
                "eu-central-1",
            ],
            FakeSecrets::piped(&format!("{KEY_ID}\n{CANARY}\n")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "provider \"aws\" credential stored\n");
    assert_eq!(out.stderr, "");
    assert_eq!(
        server.only_set_request().credential,
        static_key("", "eu-central-1", "")
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_key_id_by_flag_takes_the_secret_from_the_first_piped_line() {
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
                "aws",
                "--provider-token",
                KEY_ID,
            ],
            FakeSecrets::piped(&format!("{CANARY}\n")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(server.only_set_request().credential, static_key("", "", ""));
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_key_id_and_secret_are_prompted_for_in_order_on_a_terminal() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "aws"],
            FakeSecrets::terminal(&[KEY_ID, CANARY]),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.prompts, ["Provider token: ", "Secret access key: "]);
    assert_eq!(server.only_set_request().credential, static_key("", "", ""));
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_secrets_given_as_flags_work_but_each_warns() {
    // Arrange
    let server = TestServer::start().await;
    let role = "arn:aws:iam::123456789012:role/levelrail";

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "aws",
                "--provider-token",
                KEY_ID,
                "--secret-access-key",
                CANARY,
                "--session-token",
                CANARY,
                "--role-arn",
                role,
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.prompts.is_empty());
    assert_eq!(
        out.stderr,
        "warning: --provider-token lands in shell history and the process list; pipe the value or omit the flag for a prompt\n\
         warning: --secret-access-key lands in shell history and the process list; pipe the value or omit the flag for a prompt\n\
         warning: --session-token lands in shell history and the process list\n"
    );
    assert_eq!(
        server.only_set_request().credential,
        static_key(CANARY, "", role)
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_ambient_credentials_read_nothing_and_send_no_key() {
    // Arrange
    let server = TestServer::start().await;
    let role = "arn:aws:iam::123456789012:role/narrow";

    // Act: stdin holds text that must not be consumed or sent.
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "aws",
                "--use-ambient-credentials",
                "--role-arn",
                role,
            ],
            FakeSecrets::terminal(&[CANARY]),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.prompts.is_empty());
    assert_eq!(
        server.only_set_request().credential,
        Some(Credential::Aws(AwsCredential {
            role_arn: role.into(),
            use_ambient_credentials: true,
            ..AwsCredential::default()
        }))
    );
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_ambient_credentials_combined_with_a_key_are_rejected() {
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
                "aws",
                "--use-ambient-credentials",
                "--secret-access-key",
                CANARY,
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--use-ambient-credentials cannot be combined"),
        "{}",
        out.stderr
    );
    assert!(server.state().set_requests.is_empty());
    out.assert_no_canary();
}

#[tokio::test]
async fn aws_without_a_secret_access_key_names_both_required_flags() {
    // Arrange
    let server = TestServer::start().await;

    // Act: only the key id is piped.
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "aws"],
            FakeSecrets::piped(&format!("{KEY_ID}\n")),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, AWS_REQUIRED);
    assert!(server.state().set_requests.is_empty());
}

#[tokio::test]
async fn aws_with_nothing_at_all_names_both_required_flags() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "set-credential", "--provider", "aws"],
            FakeSecrets::terminal(&[]),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, AWS_REQUIRED);
    assert_eq!(out.prompts, ["Provider token: "]);
}
