//! The behaviour every `ProvisionStore` backend must show, as one suite run against each
//! (on the same database as its node half). It panics, naming the broken behaviour, on the
//! first deviation.
mod claims;
pub(in crate::store::provisions) mod fixtures;
mod lease;
mod replicas;

use std::sync::Arc;

use time::Duration;

use self::fixtures::{T0, T0_STORED, record};
use crate::model::ports::{ProvisionStore, ProvisionerStore, StoreError};
use crate::model::provision::{InsertProvisionError, PageCursor, ProvisionRecord};
use crate::model::provision::{ProvisionId, ProvisionStatus, SagaStep, StageTiming};
use crate::model::{InstallStep, JoinTokenId, NodeName};

/// Runs every behaviour against `store`, which must be empty. Needs a multi-thread Tokio
/// runtime (the concurrency checks spawn tasks).
pub async fn run(store: Arc<dyn ProvisionerStore>) {
    starts_empty(&*store).await;
    provisions_round_trip(&*store).await;
    a_request_id_returns_the_original_provision(&*store).await;
    a_provision_and_its_token_are_stored_together_or_not_at_all(&*store).await;
    updates_are_conditional_on_the_generation(&*store).await;
    a_terminal_write_wipes_the_sealed_token_and_the_lease(&*store).await;
    lists_are_newest_first_and_paged(&*store).await;
    many_are_read_by_id_in_batches(&*store).await;
    concurrent_inserts_each_get_their_own_answer(Arc::clone(&store)).await;
    a_waiting_driver_reads_its_row_reports_and_enrollment_at_once(&*store).await;
    claims::run(Arc::clone(&store)).await;
    replicas::run(Arc::clone(&store)).await;
    lease::run(store).await;
}

/// Many provisions inserted with their tokens at once (as concurrent requests are, which
/// a store may write together): each gets its own answer, every field of each (text that
/// needs escaping, bytes, NULLs, times to the microsecond) reads back as written, and of
/// two asking for one name, exactly one has it.
pub(in crate::store::provisions) async fn concurrent_inserts_each_get_their_own_answer(
    store: Arc<dyn ProvisionerStore>,
) {
    const MANY: usize = 48;
    let mut tasks = Vec::new();
    for i in 0..MANY {
        // The last two ask for one name.
        let name = format!("together-{}", i.min(MANY - 2));
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let mut rec = record(&name, T0);
            let token = fixtures::token(Some(&rec.id));
            rec.join_token_id = Some(token.id.clone());
            if i % 2 == 0 {
                rec.request_id = Some(format!("req-together-{i}"));
                rec.ssh_public_keys = vec![format!("ssh-ed25519 AAAA \"ü\\{i}\" ,{{}}\t'x'")];
                rec.image = Some("ubuntu-24.04".into());
                rec.sealed_join_token = Some(vec![0, 0xff, i as u8, b'\\']);
                rec.keep_on_failure = true;
            }
            let result = store.insert_provision_with_token(&rec, Some(&token)).await;
            (rec, token, result)
        }));
    }
    let mut taken = 0;
    for task in tasks {
        let (rec, token, result) = task.await.expect("insert task");
        match result {
            Ok(stored) => {
                assert_eq!(stored.id, rec.id);
                assert!(stored.lease_until.is_some(), "no lease on {}", rec.name);
                let got = store.get_provision(&rec.id).await.expect("get");
                assert_eq!(
                    got.as_ref(),
                    Some(&stored),
                    "{} did not round-trip",
                    rec.name
                );
                let expected = rec.stored().expect("stored form");
                assert_eq!(
                    got.map(|p| ProvisionRecord {
                        lease_until: expected.lease_until,
                        ..p
                    }),
                    Some(expected),
                    "{} was not stored as asked",
                    rec.name
                );
                let t = store.get_join_token(&token.id).await.expect("get token");
                assert_eq!(
                    t.map(|t| (t.secret_sha256, t.provision_id, t.expires_at)),
                    Some((
                        token.secret_sha256,
                        token.provision_id,
                        T0_STORED + Duration::hours(1)
                    )),
                    "{}'s token did not round-trip",
                    rec.name
                );
            }
            Err(InsertProvisionError::NameTaken) => {
                assert_eq!(rec.name.as_str(), format!("together-{}", MANY - 2));
                assert!(store.get_provision(&rec.id).await.expect("get").is_none());
                assert!(
                    store
                        .get_join_token(&token.id)
                        .await
                        .expect("get")
                        .is_none()
                );
                taken += 1;
            }
            Err(e) => panic!("{}: {e:?}", rec.name),
        }
    }
    assert_eq!(taken, 1, "of two asking for one name, exactly one gets it");
}

async fn starts_empty(store: &dyn ProvisionStore) {
    let listed = store.list_provisions(10, None).await.expect("list");
    assert!(listed.is_empty(), "provisions in a fresh store");
    let missing = store
        .get_provision(&ProvisionId::generate())
        .await
        .expect("get");
    assert!(missing.is_none(), "a fresh store has a provision");
}

async fn provisions_round_trip(store: &dyn ProvisionStore) {
    let mut r = record("round-trip", T0);
    r.ssh_public_keys = vec![
        "ssh-ed25519 AAAA me@x".into(),
        "'; DROP TABLE provisions;--".into(),
    ];
    r.ssh_source_cidr = Some("203.0.113.7/32".into());
    r.image = Some("ubuntu-24.04".into());
    r.request_id = Some("req-round-trip".into());
    r.keep_on_failure = true;

    let inserted = store.insert_provision(&r).await.expect("insert");
    let got = store
        .get_provision(&r.id)
        .await
        .expect("get")
        .expect("stored");

    assert_eq!(
        got.created_at, T0_STORED,
        "created_at is not stored to the microsecond"
    );
    assert_eq!(
        got, inserted,
        "the stored provision differs from the returned one"
    );
    assert_eq!(got.generation, 1, "a new provision starts at generation 1");
    let mut expected = r.stored().expect("stored form");
    if let Some(now) = store.database_time().await.expect("database time") {
        // The lease asked for (a minute from the record's time, long past) runs from the
        // database's time of the insert instead.
        let until = got.lease_until.expect("leased");
        let asked = now + time::Duration::minutes(1);
        assert!(
            (until - asked).abs() < time::Duration::seconds(10),
            "the inserted lease runs until {until}, not a minute from the database's time {now}"
        );
        expected.lease_until = got.lease_until;
    }
    assert_eq!(got, expected, "the provision did not round-trip");
    let by_request = store
        .get_provision_by_request("req-round-trip")
        .await
        .expect("by request");
    assert_eq!(
        by_request.map(|p| p.id),
        Some(r.id.clone()),
        "lookup by request id"
    );
}

async fn a_request_id_returns_the_original_provision(store: &dyn ProvisionStore) {
    let mut first = record("replayed", T0);
    first.request_id = Some("req-replay".into());
    store.insert_provision(&first).await.expect("first insert");
    let mut again = record("replayed-other-name", T0);
    again.request_id = Some("req-replay".into());

    let outcome = store.insert_provision(&again).await;

    match outcome {
        Err(InsertProvisionError::Replayed(existing)) => assert_eq!(existing.id, first.id),
        other => panic!("a repeated request id gave {other:?}"),
    }
    assert!(
        store.get_provision(&again.id).await.expect("get").is_none(),
        "a replay inserted a row"
    );
    assert!(
        store
            .name_claim(&again.name)
            .await
            .expect("claim")
            .is_none(),
        "a replay kept a claim on its name"
    );
}

async fn a_provision_and_its_token_are_stored_together_or_not_at_all(store: &dyn ProvisionerStore) {
    let mut first = record("with-token", T0);
    first.request_id = Some("req-with-token".into());
    let token = fixtures::token(Some(&first.id));
    first.join_token_id = Some(token.id.clone());

    let inserted = store
        .insert_provision_with_token(&first, Some(&token))
        .await
        .expect("insert");
    let mut taken = record("with-token", T0);
    let lost = fixtures::token(Some(&taken.id));
    taken.join_token_id = Some(lost.id.clone());
    let name_taken = store.insert_provision_with_token(&taken, Some(&lost)).await;
    let mut replay = record("with-token-replay", T0);
    replay.request_id = Some("req-with-token".into());
    let replayed_token = fixtures::token(Some(&replay.id));
    let replayed = store
        .insert_provision_with_token(&replay, Some(&replayed_token))
        .await;

    assert_eq!(
        store.get_provision(&first.id).await.expect("get"),
        Some(inserted),
        "the provision inserted with its token"
    );
    let stored = store.get_join_token(&token.id).await.expect("get token");
    assert_eq!(
        stored.map(|t| t.provision_id),
        Some(Some(first.id.to_string())),
        "the token was not stored with its provision"
    );
    assert!(
        matches!(name_taken, Err(InsertProvisionError::NameTaken)),
        "{name_taken:?}"
    );
    assert!(
        matches!(&replayed, Err(InsertProvisionError::Replayed(p)) if p.id == first.id),
        "{replayed:?}"
    );
    let mut clash = record("with-token-clash", T0);
    clash.join_token_id = Some(token.id.clone());
    let mut clashing = fixtures::token(Some(&clash.id));
    clashing.id = token.id.clone();
    let clashed = store
        .insert_provision_with_token(&clash, Some(&clashing))
        .await;
    assert!(
        matches!(
            clashed,
            Err(InsertProvisionError::Store(StoreError::Duplicate(
                "join_tokens"
            )))
        ),
        "a token id in use: {clashed:?}"
    );
    assert!(
        store
            .name_claim(&clash.name)
            .await
            .expect("claim")
            .is_none(),
        "a token clash kept a claim on its name"
    );
    for (row, why) in [
        (&taken.id, "a taken name"),
        (&replay.id, "a replay"),
        (&clash.id, "a token clash"),
    ] {
        assert!(
            store.get_provision(row).await.expect("get").is_none(),
            "{why} stored its provision"
        );
    }
    assert!(
        store
            .name_claim(&replay.name)
            .await
            .expect("claim")
            .is_none(),
        "a replay kept a claim on its name"
    );
    for (lost, why) in [(&lost, "a taken name"), (&replayed_token, "a replay")] {
        assert!(
            store
                .get_join_token(&lost.id)
                .await
                .expect("get token")
                .is_none(),
            "{why} stored its token"
        );
    }
}

async fn a_waiting_driver_reads_its_row_reports_and_enrollment_at_once(
    store: &dyn ProvisionerStore,
) {
    let mut p = record("waiting", T0);
    let token = fixtures::token(Some(&p.id));
    p.join_token_id = Some(token.id.clone());
    let inserted = store
        .insert_provision_with_token(&p, Some(&token))
        .await
        .expect("insert");

    let view = store.wait_view(&p.id).await.expect("view").expect("found");
    assert_eq!(view.record, inserted, "the row, as get_provision reads it");
    assert!(view.progress.is_empty(), "reports before any: {view:?}");
    assert_eq!(view.enrolled_node, None, "an enrollment before any");

    let id = p.id.as_str();
    store
        .record_install_progress(id, InstallStep::AgentVerified, T0, Some("bad checksum"))
        .await
        .expect("report");
    store
        .record_install_progress(id, InstallStep::DockerReady, T0, None)
        .await
        .expect("report");
    let node = fixtures::new_node(Some(&p.id));
    let name = NodeName::parse("waiting-node").expect("name");
    store
        .redeem_join_token(&token.id, &token.secret_sha256, &name, T0, &node)
        .await
        .expect("redeem");

    let view = store.wait_view(&p.id).await.expect("view").expect("found");
    assert_eq!(view.record, inserted);
    assert_eq!(
        view.progress,
        store.list_install_progress(id).await.expect("list"),
        "the reports, as list_install_progress reads them"
    );
    assert_eq!(view.progress.len(), 2);
    assert_eq!(
        view.enrolled_node,
        Some(node.id.clone()),
        "the enrolled node"
    );
    // The node reads the server its provision created, and lists by that cloud.
    // Created in the second choice: fsn1 had no capacity.
    let mut created = inserted.clone();
    created.provider_server_id = Some("4711".into());
    let mut full = crate::model::provision::Placement::pending("fsn1", "cx22");
    full.outcome = crate::model::provision::PlacementOutcome::Rejected;
    let mut used = crate::model::provision::Placement::pending("nbg1", "cx32");
    used.outcome = crate::model::provision::PlacementOutcome::InUse;
    created.saga.placements = vec![full, used];
    store
        .update_provision(&created)
        .await
        .expect("record the server")
        .expect("the update applies");
    let read = store.get_node(&node.id).await.expect("get").expect("node");
    assert_eq!(
        read.server,
        Some(crate::model::NodeServer {
            provider: levelrail_types::ProviderId::Hetzner,
            region: "nbg1".into(),
            size: "cx32".into(),
            server_id: Some("4711".into()),
        }),
        "the node's server, where it runs"
    );
    for (provider, listed) in [
        (levelrail_types::ProviderId::Hetzner, true),
        (levelrail_types::ProviderId::Aws, false),
    ] {
        let filter = crate::model::NodeFilter {
            provider: Some(provider),
            ..Default::default()
        };
        let page = store
            .list_nodes_page(10, None, &filter)
            .await
            .expect("a page");
        assert_eq!(
            page.iter().any(|n| n.id == node.id),
            listed,
            "listed by {provider:?}: {page:?}"
        );
    }
    store.delete_node(&node.id).await.expect("delete");
    let view = store.wait_view(&p.id).await.expect("view").expect("found");
    assert_eq!(view.enrolled_node, None, "a deleted node");
    assert!(
        store
            .wait_view(&ProvisionId::generate())
            .await
            .expect("view")
            .is_none(),
        "a provision that does not exist"
    );
}

async fn updates_are_conditional_on_the_generation(store: &dyn ProvisionStore) {
    let r = store
        .insert_provision(&record("generations", T0))
        .await
        .expect("insert");
    let mut next = r.clone();
    next.status = ProvisionStatus::Booting;
    next.provider_server_id = Some("4711".into());
    next.saga_step = SagaStep::WaitRunning;
    next.saga.create_attempts = 1;
    next.install_step = Some(InstallStep::DockerReady);
    next.join_token_id = Some(JoinTokenId::generate());
    next.stages.push(StageTiming {
        status: ProvisionStatus::Booting,
        entered_at: T0 + Duration::seconds(5),
    });
    next.updated_at = T0 + Duration::seconds(5);

    let stored = store
        .update_provision(&next)
        .await
        .expect("update")
        .expect("current generation");

    assert_eq!(
        stored.generation, 2,
        "an update did not bump the generation"
    );
    let got = store.get_provision(&r.id).await.expect("get").expect("row");
    assert_eq!(got, stored, "the stored row differs from the returned one");
    assert_eq!(got.provider_server_id.as_deref(), Some("4711"));
    assert_eq!(got.saga.create_attempts, 1, "the saga log was not stored");
    let stale = store.update_provision(&next).await.expect("stale update");
    assert!(
        stale.is_none(),
        "a write with a stale generation was applied"
    );
    let mut gone = next.clone();
    gone.id = ProvisionId::generate();
    assert!(
        store
            .update_provision(&gone)
            .await
            .expect("missing")
            .is_none(),
        "an unknown row was updated"
    );
}

async fn a_terminal_write_wipes_the_sealed_token_and_the_lease(store: &dyn ProvisionStore) {
    let mut r = record("sealed-wipe", T0);
    r.sealed_join_token = Some(vec![1, 2, 3]);
    let r = store.insert_provision(&r).await.expect("insert");
    assert_eq!(
        r.sealed_join_token.as_deref(),
        Some(&[1u8, 2, 3][..]),
        "sealed token not stored"
    );
    let mut ready = r.clone();
    ready.status = ProvisionStatus::Ready;

    let stored = store
        .update_provision(&ready)
        .await
        .expect("update")
        .expect("applied");

    let got = store.get_provision(&r.id).await.expect("get").expect("row");
    assert_eq!(
        got.sealed_join_token, None,
        "a terminal provision kept its sealed token"
    );
    assert_eq!(
        (got.lease_owner, got.lease_until),
        (None, None),
        "a terminal provision kept its lease"
    );
    assert_eq!(stored.sealed_join_token, None);
}

async fn lists_are_newest_first_and_paged(store: &dyn ProvisionStore) {
    let late = T0 + Duration::days(365);
    let mut ids = Vec::new();
    for i in 0..5 {
        let r = record(&format!("listed-{i}"), late + Duration::seconds(i));
        ids.push(store.insert_provision(&r).await.expect("insert").id);
    }
    // Two with the same creation time are ordered by id.
    let tie = record("listed-tie", late + Duration::seconds(4));
    ids.push(store.insert_provision(&tie).await.expect("insert").id);

    let first = store.list_provisions(4, None).await.expect("page 1");
    let last = first.last().expect("non-empty page");
    let cursor = PageCursor {
        created_at: last.created_at,
        id: last.id.clone(),
    };
    let second = store
        .list_provisions(4, Some(&cursor))
        .await
        .expect("page 2");

    let listed: Vec<_> = first
        .iter()
        .chain(second.iter())
        .map(|p| (p.created_at, p.id.clone()))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(listed, sorted, "provisions are not listed newest first");
    assert_eq!(first.len(), 4, "a page is not full");
    let all_ids: Vec<_> = listed.iter().map(|(_, id)| id.clone()).collect();
    for id in &ids {
        assert!(
            all_ids.contains(id),
            "a provision is missing from the pages"
        );
    }
    let mut dedup = all_ids.clone();
    dedup.dedup();
    assert_eq!(
        dedup.len(),
        all_ids.len(),
        "a provision appears on two pages"
    );
}

async fn many_are_read_by_id_in_batches(store: &dyn ProvisionStore) {
    let mut ids = Vec::new();
    for i in 0..40 {
        let r = store
            .insert_provision(&record(&format!("batch-{i}"), T0))
            .await
            .expect("insert");
        ids.push(r.id);
    }
    // More than one batch, an unknown id, and an id twice.
    let mut asked = ids.clone();
    asked.push(ProvisionId::generate());
    asked.push(ids[3].clone());

    let mut got: Vec<ProvisionId> = store
        .get_provisions(&asked)
        .await
        .expect("read")
        .into_iter()
        .map(|r| r.id)
        .collect();
    got.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    got.dedup();
    let none = store.get_provisions(&[]).await.expect("read nothing");

    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(got, ids, "the provisions read by id");
    assert!(none.is_empty());
}
