//! `nodes providers regions|sizes`: the catalog tables, JSON, the request sent, and errors.
use levelrail_proto::provisioner::v1::{Region, Size};

use crate::helpers::{FakeSecrets, TestServer, provider_value};

async fn server_with_catalog() -> TestServer {
    let server = TestServer::start().await;
    let mut state = server.provisioner();
    state.regions = vec![
        Region {
            id: "fsn1".into(),
            name: "Falkenstein DC Park 1".into(),
        },
        Region {
            id: "nbg1".into(),
            name: "Nuremberg DC Park 1".into(),
        },
    ];
    state.sizes = vec![
        Size {
            id: "cx22".into(),
            name: "CX22".into(),
            vcpus: 2,
            memory_mb: 4096,
            disk_gb: 40,
            price_monthly: "4.51".into(),
            currency: "EUR".into(),
            price_basis: "monthly price".into(),
            architecture: "x86_64".into(),
            ..Size::default()
        },
        Size {
            id: "cx52".into(),
            name: "CX52".into(),
            vcpus: 16,
            memory_mb: 32768,
            disk_gb: 320,
            price_unavailable: "Hetzner lists no price for cx52 in fsn1".into(),
            architecture: "aarch64".into(),
            unavailable_reason: "no agent for aarch64".into(),
            ..Size::default()
        },
    ];
    drop(state);
    server
}

#[tokio::test]
async fn regions_prints_the_provider_regions() {
    // Arrange
    let server = server_with_catalog().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "regions", "--provider", "hetzner"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "ID    NAME\nfsn1  Falkenstein DC Park 1\nnbg1  Nuremberg DC Park 1\n"
    );
    assert_eq!(
        server.provisioner().catalog_requests,
        [(provider_value("hetzner"), String::new())]
    );
}

#[tokio::test]
async fn sizes_prints_vcpus_memory_disk_and_the_price_or_a_note() {
    // Arrange
    let server = server_with_catalog().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "sizes",
                "--provider",
                "hetzner",
                "--region",
                "fsn1",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let expected = "\
ID    NAME  VCPUS  MEMORY  DISK    PRICE/MONTH        PRICE BASIS                              ARCH     AVAILABLE
cx22  CX22  2      4 GB    40 GB   4.51 EUR           monthly price                            x86_64   yes
cx52  CX52  16     32 GB   320 GB  price unavailable  Hetzner lists no price for cx52 in fsn1  aarch64  no: no agent for aarch64
";
    assert_eq!(out.stdout, expected);
    assert_eq!(
        server.provisioner().catalog_requests,
        [(provider_value("hetzner"), "fsn1".to_owned())]
    );
}

#[tokio::test]
async fn sizes_json_keeps_the_raw_numbers_and_a_null_price() {
    // Arrange
    let server = server_with_catalog().await;

    // Act
    let out = server
        .run(
            &[
                "--json",
                "nodes",
                "providers",
                "sizes",
                "--provider",
                "hetzner",
                "--region",
                "fsn1",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 0, "{out:?}");
    let doc = out.json();
    assert_eq!(doc["sizes"][0]["memory_mb"], 4096);
    assert_eq!(doc["sizes"][0]["price_monthly"], "4.51");
    assert_eq!(doc["sizes"][1]["price_monthly"], serde_json::Value::Null);
    assert_eq!(doc["sizes"][0]["price_basis"], "monthly price");
    assert_eq!(
        doc["sizes"][1]["price_unavailable"],
        "Hetzner lists no price for cx52 in fsn1"
    );
}

#[tokio::test]
async fn sizes_without_a_region_names_the_flag() {
    // Arrange
    let server = server_with_catalog().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "sizes", "--provider", "hetzner"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, "error: --region is required\n");
    assert!(server.provisioner().catalog_requests.is_empty());
}

#[tokio::test]
async fn an_unknown_region_is_reported_by_the_field_the_server_names() {
    // Arrange
    let server = server_with_catalog().await;

    // Act
    let out = server
        .run(
            &[
                "nodes",
                "providers",
                "sizes",
                "--provider",
                "hetzner",
                "--region",
                "mars1",
            ],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.stderr, "error: invalid region: unknown region\n");
}

#[tokio::test]
async fn regions_without_a_stored_credential_shows_the_status_code() {
    // Arrange
    let server = TestServer::start().await;

    // Act
    let out = server
        .run(
            &["nodes", "providers", "regions", "--provider", "aws"],
            FakeSecrets::none(),
        )
        .await;

    // Assert
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "error: FAILED_PRECONDITION: no credential is stored for this provider\n"
    );
}
