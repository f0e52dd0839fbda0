//! Builders shared by the provision conformance behaviours.
use time::macros::datetime;
use time::{Duration, OffsetDateTime};

use crate::model::provision::ProvisionRecord;
use crate::model::provision::{NewProvision, ProvisionId};
use crate::model::{JoinTokenId, NodeId, NodeName, Role, WorkloadKind};
use crate::model::{JoinTokenRecord, NewNode};
use levelrail_types::ProviderId;

/// The suite's "now", with a sub-microsecond part every backend must truncate.
pub(in crate::store::provisions) const T0: OffsetDateTime =
    datetime!(2031-03-01 09:00:00.654321987 UTC);
/// `T0` as stored.
pub(super) const T0_STORED: OffsetDateTime = datetime!(2031-03-01 09:00:00.654321 UTC);
/// The lease owner new records are created with.
pub(in crate::store::provisions) const OWNER: &str = "replica-a";

/// A valid node name.
pub(super) fn name(s: &str) -> NodeName {
    NodeName::parse(s).expect("test names are valid")
}

/// A new provision named `node_name`, created at `at`, leased to [`OWNER`] for a minute.
pub(in crate::store::provisions) fn record(node_name: &str, at: OffsetDateTime) -> ProvisionRecord {
    let spec = NewProvision {
        provider: ProviderId::Hetzner,
        region: "fsn1".into(),
        size: "cx22".into(),
        name: name(node_name),
        role: Role::General,
        ssh_public_keys: vec![],
        ssh_source_cidr: None,
        image: None,
        control_plane_addr: "cp.example.com:9443".into(),
        request_id: None,
        keep_on_failure: false,
        fallback_regions: vec![],
        fallback_sizes: vec![],
    };
    ProvisionRecord::new(
        ProvisionId::generate(),
        &spec,
        "cred_1",
        at,
        OWNER,
        at + Duration::minutes(1),
    )
}

/// Renews `OWNER`'s lease of `id` (at `T0`) for two minutes and checks the renewal answered
/// with `epoch` and the stored lease moved (the backends' own lease tests).
#[cfg(test)]
pub(in crate::store::provisions) async fn renew_for_two_minutes(
    store: &dyn crate::model::ports::ProvisionStore,
    id: &ProvisionId,
    epoch: u64,
) {
    let until = T0 + Duration::minutes(2);
    let renewed = store
        .renew_leases(OWNER, std::slice::from_ref(id), T0, until)
        .await
        .expect("the renewal writes");
    assert_eq!(renewed, vec![(id.clone(), epoch)]);
    let read = store.get_provision(id).await.expect("read").expect("kept");
    let until = crate::model::stored_time(until).expect("in range");
    assert_eq!(read.lease_until, Some(until));
}

/// The lease an older release left on a provision in flight, in its provisions row, for
/// the lease table migration tests: holder, until when, epoch.
#[cfg(test)]
pub(in crate::store::provisions) const OLD_LEASE: (&str, OffsetDateTime, u64) =
    ("replica-old", datetime!(2031-03-01 09:01:00 UTC), 2);

/// Checks a store migrated to the lease table from a database where `in_flight` held
/// `OLD_LEASE` and `finished` was ready: the lease survived (read with the provision,
/// resumable once lapsed, renewable by its holder) and the finished one has none.
#[cfg(test)]
pub(in crate::store::provisions) async fn check_migrated_leases(
    store: &dyn crate::model::ports::ProvisionStore,
    in_flight: &ProvisionId,
    finished: &ProvisionId,
) {
    let (owner, until, epoch) = OLD_LEASE;
    let read = store
        .get_provision(in_flight)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!(read.lease_owner.as_deref(), Some(owner));
    assert_eq!(read.lease_until, Some(until));
    assert_eq!(read.lease_epoch, epoch);
    let done = store
        .get_provision(finished)
        .await
        .expect("read")
        .expect("kept");
    assert_eq!((done.lease_owner, done.lease_until), (None, None));
    let (live, lapsed) = (until - Duration::seconds(30), until + Duration::minutes(1));
    assert_eq!(store.list_resumable(live).await.expect("resumable"), vec![]);
    assert_eq!(
        store.list_resumable(lapsed).await.expect("resumable"),
        vec![in_flight.clone()]
    );
    let renewed = store
        .renew_leases(owner, std::slice::from_ref(in_flight), live, lapsed)
        .await
        .expect("renew");
    assert_eq!(renewed, vec![(in_flight.clone(), epoch)]);
}

/// An unused token bound to `provision` (when given), valid for an hour from `T0`.
pub(super) fn token(provision: Option<&ProvisionId>) -> JoinTokenRecord {
    JoinTokenRecord {
        id: JoinTokenId::generate(),
        secret_sha256: [7; 32],
        node_name: None,
        provision_id: provision.map(|p| p.to_string()),
        role: Role::General,
        created_at: T0,
        expires_at: T0 + Duration::hours(1),
        used_at: None,
        used_by_node: None,
        revoked_at: None,
    }
}

/// A node enrolled from `provision` (when given).
pub(super) fn new_node(provision: Option<&ProvisionId>) -> NewNode {
    NewNode {
        id: NodeId::generate(),
        addresses: vec!["10.0.0.9".into()],
        agent_version: "1.0.0".into(),
        workload_kinds: vec![WorkloadKind::Apps],
        provision_id: provision.map(|p| p.to_string()),
        cert_serial: "01".into(),
        cert_fingerprint: "ab".repeat(32),
        cert_expires_at: T0_STORED + time::Duration::days(365),
        certificate_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
    }
}
