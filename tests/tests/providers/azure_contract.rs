//! Azure contracts: the VM create body has the shape of the Microsoft.Compute 2024-07-01
//! example and of the Azure SDK's recorded create (every field we send appears in one of
//! them, or is a documented field named here), and the token request the broker sends to
//! the fake Azure AD over HTTPS matches the Azure SDK's recorded request field by field.
use std::collections::BTreeSet;

use levelrail_clouds::CloudProvider as _;
use levelrail_credentials::broker::GrantIssuer as _;
use levelrail_credentials::broker::azure::AzureGrantIssuer;
use levelrail_credentials::broker::token_files::TokenFileDir;
use levelrail_credentials::model::CredentialSecret;
use serde_json::Value;

use crate::azure_support::*;

/// Documented VM fields we send that neither reference happens to use.
const DOCUMENTED_EXTRAS: [&str; 2] = [
    // VirtualMachineNetworkInterfaceReferenceProperties.deleteOption (2021-03-01 and later).
    "properties.networkProfile.networkInterfaces[].properties.deleteOption",
    // OSProfile.adminPassword, sent only when no SSH key is given.
    "properties.osProfile.adminPassword",
];

/// Every leaf path of `v` (`a.b[].c`; `tags.*` for tag maps).
fn paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) if at == "tags" => {
            out.insert("tags.*".into());
            let _ = m;
        }
        Value::Object(m) => {
            for (k, x) in m {
                paths(
                    x,
                    &if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    },
                    out,
                );
            }
        }
        Value::Array(a) => {
            for x in a {
                paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {
            out.insert(at.to_owned());
        }
    }
}

#[tokio::test]
async fn the_vm_body_has_the_shape_of_the_compute_example_and_the_sdks_create() {
    // Arrange: the two references.
    let example = spec_json(
        "azure-compute-2024-07-01-example-VirtualMachine_Create_WithSshAuthentication.json",
    );
    let sdk: Value = serde_json::from_str(
        golden("golden-azure-sdk-requests.jsonl")[1]["b"]
            .as_str()
            .expect("body"),
    )
    .expect("json");
    let mut known = BTreeSet::new();
    paths(&example["parameters"]["parameters"], "", &mut known);
    paths(&sdk, "", &mut known);
    known.extend(DOCUMENTED_EXTRAS.iter().map(|s| (*s).to_owned()));
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);

    // Act: one VM with keys, one without.
    azure
        .create_server(&create_request("shape-1", "npv_shape1"))
        .await
        .expect("create");
    let mut keyless = create_request("shape-2", "npv_shape2");
    keyless.ssh_public_keys.clear();
    azure.create_server(&keyless).await.expect("create");

    // Assert
    for r in fake
        .request_log()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.contains("/virtualMachines/"))
    {
        let mut ours = BTreeSet::new();
        paths(&r.body, "", &mut ours);
        let unknown: Vec<&String> = ours.difference(&known).collect();
        assert!(
            unknown.is_empty(),
            "{}: fields in neither reference: {unknown:?}",
            r.path
        );
        for required in [
            "location",
            "properties.hardwareProfile.vmSize",
            "properties.storageProfile.imageReference.publisher",
            "properties.storageProfile.osDisk.createOption",
            "properties.osProfile.adminUsername",
            "properties.osProfile.computerName",
            "properties.networkProfile.networkInterfaces[].id",
            "properties.networkProfile.networkInterfaces[].properties.primary",
        ] {
            assert!(ours.contains(required), "{}: {required} missing", r.path);
        }
        assert!(
            r.path.ends_with("?api-version=2024-07-01"),
            "the example's api-version: {}",
            r.path
        );
    }
}

#[tokio::test]
async fn the_brokers_federated_token_request_over_https_matches_the_azure_sdks() {
    // Arrange: the fake AAD over HTTPS; the client trusts only through the test CA.
    let fake = start_fake(|_| {}).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, "a.b.c").expect("write");
    let cfg = fake.config();
    let secret = CredentialSecret::Azure {
        tenant_id: cfg.tenant_id.clone(),
        client_id: cfg.client_id.clone(),
        client_secret: None,
        federated_token_file: Some(file.to_string_lossy().into_owned()),
        subscription_id: cfg.subscription_id.clone(),
        resource_group: GROUP.into(),
    };
    let files = TokenFileDir::new(dir.path(), std::path::Path::new("/nonexistent-data-dir"))
        .expect("token directory");
    let issuer = AzureGrantIssuer::new(&fake.authority_url(), Some(fake.ca_pem()))
        .expect("issuer")
        .with_token_files(files.clone());
    assert!(
        AzureGrantIssuer::new(&fake.authority_url(), None)
            .expect("issuer")
            .with_token_files(files)
            .issue("c", &secret)
            .await
            .is_err(),
        "the test CA is needed"
    );

    // Act
    issuer.issue("c", &secret).await.expect("grant");

    // Assert: the SDK's fields, in its order, with its values (the ids are the fake's).
    let want = &golden("golden-azure-sdk-requests.jsonl")[0];
    let got = fake
        .request_log()
        .into_iter()
        .rfind(|r| r.path.ends_with("/oauth2/v2.0/token"))
        .expect("token request");
    assert_eq!(got.method, want["m"].as_str().expect("m"));
    assert_eq!(got.path, format!("/{}/oauth2/v2.0/token", cfg.tenant_id));
    assert_eq!(
        Some(got.content_type.as_str()),
        want["h"]["Content-Type"].as_str()
    );
    let want_body = want["b"]
        .as_str()
        .expect("b")
        .replace("client_id=app", &format!("client_id={}", cfg.client_id));
    assert_eq!(got.raw_body, want_body);
}

/// Resource SKU fields the example's two Gen1 sizes leave out, as documented for 2021-07-01
/// (`ResourceSkuRestrictions`, `ResourceSkuRestrictionInfo`).
const SKU_EXTRAS: [&str; 5] = [
    "value[].restrictions[].type",
    "value[].restrictions[].values[]",
    "value[].restrictions[].reasonCode",
    "value[].restrictions[].restrictionInfo.locations[]",
    "value[].restrictions[].restrictionInfo.zones[]",
];

#[tokio::test]
async fn the_sku_request_and_answer_have_the_shape_of_the_skus_example() {
    // Arrange
    let example =
        spec_json("azure-compute-skus-2021-07-01-example-ListAvailableResourceSkusForARegion.json");
    let mut documented = BTreeSet::new();
    paths(&example["responses"]["200"]["body"], "", &mut documented);
    documented.extend(SKU_EXTRAS.iter().map(|s| (*s).to_owned()));
    let fake = start_fake(|_| {}).await;
    let azure = client(&fake);

    // Act
    azure.list_sizes(LOCATION).await.expect("sizes");

    // Assert: the example's parameters, for our location.
    let log = fake.request_log();
    let call = log
        .iter()
        .find(|r| r.path.contains("/providers/Microsoft.Compute/skus?"))
        .expect("the SKU list was read");
    let url = reqwest::Url::parse(&format!("https://arm{}", call.path)).expect("url");
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let want = &example["parameters"];
    assert_eq!(
        url.path(),
        format!(
            "/subscriptions/{}/providers/Microsoft.Compute/skus",
            fake.config().subscription_id
        )
    );
    assert_eq!(
        query,
        [
            (
                "$filter".to_owned(),
                want["$filter"]
                    .as_str()
                    .expect("filter")
                    .replace("westus", LOCATION)
            ),
            (
                "api-version".to_owned(),
                want["api-version"].as_str().expect("version").to_owned()
            ),
        ]
    );
    // The answer: every field the example has, and only documented ones.
    let mut answered = BTreeSet::new();
    paths(&call.response, "", &mut answered);
    let unknown: Vec<&String> = answered.difference(&documented).collect();
    assert!(
        unknown.is_empty(),
        "fields the API does not document: {unknown:?}"
    );
    let missing: Vec<&String> = documented
        .difference(&answered)
        .filter(|p| !p.contains("zoneDetails") && !SKU_EXTRAS.contains(&p.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the example's fields missing: {missing:?}"
    );
    let names = |v: &Value| -> BTreeSet<String> {
        v.pointer("/value/0/capabilities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    };
    let example_caps = names(&example["responses"]["200"]["body"]);
    assert!(
        example_caps.is_subset(&names(&call.response)),
        "every capability of the example is answered"
    );
}
