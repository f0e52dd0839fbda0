//! The behaviour every `NodeStore` backend must show, as one suite run against each. It
//! panics, naming the broken behaviour, on the first deviation.
mod fixtures;
mod redeem;

use std::sync::Arc;

use time::Duration;

use self::fixtures::{T0, T0_STORED, get, name, new_node, put, token};
pub use self::fixtures::{assert_dump_holds_no_secret, store_canary_tokens};
use crate::model::ports::{NodeStore, StoreError};
use crate::model::{
    HeartbeatReport, InstallReport, InstallStep, JoinTokenId, NodeFilter, NodeId, Role,
    WorkloadKind,
};

/// Runs every behaviour in sequence against `store`, which must be empty (a fresh
/// database). Needs a multi-thread Tokio runtime (the concurrency checks spawn tasks).
pub async fn run(store: Arc<dyn NodeStore>) {
    starts_empty(&*store).await;
    tokens_round_trip(&*store).await;
    duplicate_token_ids_are_refused(&*store).await;
    revocation_applies_only_to_unused_tokens(&*store).await;
    provision_tokens_are_revoked_together(&*store).await;
    redeem::run(Arc::clone(&store)).await;
    heartbeats_update_the_node(&*store).await;
    deleted_nodes_are_gone(&*store).await;
    nodes_are_listed_by_filter(&*store).await;
    install_progress_is_recorded_once_per_step(&*store).await;
}

async fn starts_empty(store: &dyn NodeStore) {
    assert!(
        store
            .list_join_tokens()
            .await
            .expect("list tokens")
            .is_empty(),
        "tokens in a fresh store"
    );
    assert!(
        store.list_nodes().await.expect("list nodes").is_empty(),
        "nodes in a fresh store"
    );
    let missing = store
        .get_join_token(&JoinTokenId::generate())
        .await
        .expect("get token");
    assert!(missing.is_none(), "a fresh store has a token");
    let missing = store.get_node(&NodeId::generate()).await.expect("get node");
    assert!(missing.is_none(), "a fresh store has a node");
}

async fn tokens_round_trip(store: &dyn NodeStore) {
    let plain = token();
    let mut bound = token();
    bound.node_name = Some(name("bound-node"));
    bound.provision_id = Some("prv_'; DROP TABLE join_tokens;--".into());
    bound.role = Role::Build;
    put(store, &plain).await;
    put(store, &bound).await;
    for original in [&plain, &bound] {
        let got = get(store, &original.id).await;
        assert_eq!(
            got.created_at, T0_STORED,
            "created_at is not stored to the microsecond"
        );
        let expected = crate::model::JoinTokenRecord {
            created_at: T0_STORED,
            expires_at: T0_STORED + Duration::minutes(15),
            ..original.clone()
        };
        assert_eq!(
            got, expected,
            "join token {} did not round-trip",
            original.id
        );
    }
    let listed = store.list_join_tokens().await.expect("list tokens");
    let mut want: Vec<_> = [&plain.id, &bound.id].into_iter().cloned().collect();
    want.sort();
    let ids: Vec<_> = listed.iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids, want, "tokens are not listed by id");
}

async fn duplicate_token_ids_are_refused(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    let mut again = token();
    again.id = t.id.clone();
    let err = store
        .create_join_token(&again)
        .await
        .expect_err("a duplicate id was stored");
    assert!(
        matches!(err, StoreError::Duplicate(_)),
        "duplicate id gave {err:?}"
    );
    assert_eq!(
        get(store, &t.id).await.secret_sha256,
        t.secret_sha256,
        "a duplicate overwrote a token"
    );
}

async fn revocation_applies_only_to_unused_tokens(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    assert!(
        store.revoke_join_token(&t.id, T0).await.expect("revoke"),
        "revoking an unused token failed"
    );
    let later = T0 + Duration::minutes(1);
    assert!(
        store
            .revoke_join_token(&t.id, later)
            .await
            .expect("revoke again"),
        "revoking twice failed"
    );
    assert_eq!(
        get(store, &t.id).await.revoked_at,
        Some(T0_STORED),
        "revoking twice moved revoked_at"
    );

    let unknown = store
        .revoke_join_token(&JoinTokenId::generate(), T0)
        .await
        .expect("revoke unknown");
    assert!(!unknown, "revoking an unknown token reported success");

    let used = token();
    put(store, &used).await;
    store
        .redeem_join_token(
            &used.id,
            &used.secret_sha256,
            &name("revoke-used"),
            T0,
            &new_node(),
        )
        .await
        .expect("redeem");
    let revoked = store
        .revoke_join_token(&used.id, T0)
        .await
        .expect("revoke used");
    assert!(!revoked, "revoking a used token reported success");
    assert_eq!(
        get(store, &used.id).await.revoked_at,
        None,
        "a used token was revoked"
    );
}

async fn provision_tokens_are_revoked_together(store: &dyn NodeStore) {
    let provision = "prv_revoke_together";
    let mut a = token();
    a.provision_id = Some(provision.into());
    let mut b = token();
    b.provision_id = Some(provision.into());
    let mut other = token();
    other.provision_id = Some("prv_other".into());
    for t in [&a, &b, &other] {
        put(store, t).await;
    }
    store
        .redeem_join_token(
            &b.id,
            &b.secret_sha256,
            &name("provisioned-b"),
            T0,
            &new_node(),
        )
        .await
        .expect("redeem b");

    let n = store
        .revoke_join_tokens_for_provision(provision, T0)
        .await
        .expect("revoke provision");

    assert_eq!(n, 1, "only the unused token of the provision is revoked");
    assert_eq!(
        get(store, &a.id).await.revoked_at,
        Some(T0_STORED),
        "the provision's token is live"
    );
    assert_eq!(
        get(store, &b.id).await.revoked_at,
        None,
        "a used token was revoked"
    );
    assert_eq!(
        get(store, &other.id).await.revoked_at,
        None,
        "another provision's token was revoked"
    );
}

async fn heartbeats_update_the_node(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    let node = store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("heartbeat-node"),
            T0,
            &new_node(),
        )
        .await
        .expect("redeem");
    let later = T0 + Duration::seconds(30);
    let addresses = vec!["192.0.2.1".to_owned(), "'; DROP TABLE nodes;--".to_owned()];

    assert_eq!(
        node.docker_version, None,
        "a new node has reported no Docker engine"
    );
    let report = HeartbeatReport {
        addresses: addresses.clone(),
        agent_version: "2.0.0".into(),
        docker_version: Some("26.1.5+dfsg1".into()),
    };
    let touched = store
        .touch_node(&node.id, later, &report)
        .await
        .expect("touch");

    assert!(touched, "touching an existing node reported it missing");
    let got = store
        .get_node(&node.id)
        .await
        .expect("get")
        .expect("node exists");
    assert_eq!(
        got.last_seen_at,
        T0_STORED + Duration::seconds(30),
        "last_seen_at did not move"
    );
    assert_eq!(got.enrolled_at, T0_STORED, "enrolled_at moved");
    assert_eq!(got.addresses, addresses, "addresses were not replaced");
    assert_eq!(got.agent_version, "2.0.0", "agent_version was not replaced");
    assert_eq!(
        got.docker_version.as_deref(),
        Some("26.1.5+dfsg1"),
        "docker_version was not stored"
    );
    // An engine that stops answering clears it.
    let down = HeartbeatReport {
        docker_version: None,
        ..report
    };
    assert!(
        store
            .touch_node(&node.id, later, &down)
            .await
            .expect("touch")
    );
    let got = store.get_node(&node.id).await.expect("get").expect("node");
    assert_eq!(got.docker_version, None, "docker_version was not cleared");
    let missing = store
        .touch_node(&NodeId::generate(), later, &HeartbeatReport::default())
        .await
        .expect("touch");
    assert!(!missing, "touching an unknown node reported success");
}

async fn deleted_nodes_are_gone(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    let node = store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("deleted-node"),
            T0,
            &new_node(),
        )
        .await
        .expect("redeem");

    assert!(
        store.delete_node(&node.id).await.expect("delete"),
        "deleting a node reported it missing"
    );

    assert!(
        store.get_node(&node.id).await.expect("get").is_none(),
        "a deleted node is still there"
    );
    assert!(
        !store.delete_node(&node.id).await.expect("delete again"),
        "deleting twice reported success"
    );
    let names: Vec<_> = store
        .list_nodes()
        .await
        .expect("list")
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert!(
        !names.contains(&name("deleted-node")),
        "a deleted node is listed"
    );
    // Pages of two walk the same names in the same order.
    let mut paged = Vec::new();
    let mut after: Option<crate::model::NodeName> = None;
    loop {
        let page = store
            .list_nodes_page(2, after.as_ref(), &NodeFilter::default())
            .await
            .expect("a page");
        assert!(page.len() <= 2, "a page longer than asked");
        let Some(last) = page.last() else { break };
        after = Some(last.name.clone());
        paged.extend(page.into_iter().map(|n| n.name));
    }
    assert_eq!(paged, names, "the pages do not add up to the list");
    let touched = store
        .touch_node(&node.id, T0, &HeartbeatReport::default())
        .await
        .expect("touch");
    assert!(!touched, "a deleted node accepted a heartbeat");
}

/// Filters by last heartbeat and workload kind, a page at a time, and by cloud (a node
/// enrolled by hand has none); the certificate's expiry round-trips.
async fn nodes_are_listed_by_filter(store: &dyn NodeStore) {
    let later = T0 + Duration::minutes(10);
    let mut enrolled = Vec::new();
    for (node_name, kind, seen) in [
        ("filter-a", WorkloadKind::Apps, T0),
        ("filter-b", WorkloadKind::Builds, later),
        ("filter-c", WorkloadKind::Apps, later),
        ("filter-d", WorkloadKind::Builds, T0),
    ] {
        let t = token();
        put(store, &t).await;
        let mut n = new_node();
        n.workload_kinds = vec![kind];
        let node = store
            .redeem_join_token(&t.id, &t.secret_sha256, &name(node_name), T0, &n)
            .await
            .expect("redeem");
        assert_eq!(
            node.cert_expires_at, n.cert_expires_at,
            "the certificate's expiry"
        );
        let read = store.get_node(&node.id).await.expect("get").expect("node");
        assert_eq!(read.cert_expires_at, n.cert_expires_at, "expiry as read");
        assert_eq!(read.server, None, "a node enrolled by hand has no server");
        assert!(
            store
                .touch_node(&node.id, seen, &HeartbeatReport::default())
                .await
                .expect("touch")
        );
        enrolled.push(node.id);
    }
    let cutoff = T0 + Duration::minutes(5);
    // At the cutoff exactly a node is still online (`Node::liveness`).
    let edge = NodeFilter {
        seen_since: Some(T0_STORED),
        ..NodeFilter::default()
    };
    let at_edge = store
        .list_nodes_page(10, None, &edge)
        .await
        .expect("a page")
        .into_iter()
        .filter(|n| n.name.as_str() == "filter-a")
        .count();
    assert_eq!(at_edge, 1, "a node seen at the cutoff counts as online");
    let listed = |filter: NodeFilter| async move {
        let mut names = Vec::new();
        let mut after: Option<crate::model::NodeName> = None;
        loop {
            let page = store
                .list_nodes_page(1, after.as_ref(), &filter)
                .await
                .expect("a page");
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            names.extend(page.iter().map(|n| n.name.to_string()));
        }
        names.retain(|n| n.starts_with("filter-"));
        names
    };
    let seen_since = NodeFilter {
        seen_since: Some(cutoff),
        ..NodeFilter::default()
    };
    assert_eq!(
        listed(seen_since).await,
        ["filter-b", "filter-c"],
        "seen since"
    );
    let seen_before = NodeFilter {
        seen_before: Some(cutoff),
        ..NodeFilter::default()
    };
    assert_eq!(
        listed(seen_before).await,
        ["filter-a", "filter-d"],
        "seen before"
    );
    let builds = NodeFilter {
        workload_kind: Some(WorkloadKind::Builds),
        ..NodeFilter::default()
    };
    assert_eq!(listed(builds).await, ["filter-b", "filter-d"], "builds");
    let recent_apps = NodeFilter {
        seen_since: Some(cutoff),
        workload_kind: Some(WorkloadKind::Apps),
        ..NodeFilter::default()
    };
    assert_eq!(listed(recent_apps).await, ["filter-c"], "recent apps");
    let at_a_cloud = NodeFilter {
        provider: Some(levelrail_types::ProviderId::Hetzner),
        ..NodeFilter::default()
    };
    assert!(
        listed(at_a_cloud).await.is_empty(),
        "nodes enrolled by hand"
    );
    for id in enrolled {
        store.delete_node(&id).await.expect("delete");
    }
}

async fn install_progress_is_recorded_once_per_step(store: &dyn NodeStore) {
    let p = "prv_progress";
    let later = T0 + Duration::minutes(1);
    store
        .record_install_progress(p, InstallStep::AgentVerified, later, Some("bad checksum"))
        .await
        .expect("record");
    store
        .record_install_progress(p, InstallStep::DockerReady, T0, None)
        .await
        .expect("record");
    store
        .record_install_progress(p, InstallStep::DockerReady, later, Some("late"))
        .await
        .expect("record again");
    store
        .record_install_progress("prv_elsewhere", InstallStep::AgentStarted, T0, None)
        .await
        .expect("record");

    let got = store.list_install_progress(p).await.expect("list progress");

    let want = vec![
        InstallReport {
            step: InstallStep::DockerReady,
            reported_at: T0_STORED,
            error: None,
        },
        InstallReport {
            step: InstallStep::AgentVerified,
            reported_at: T0_STORED + Duration::minutes(1),
            error: Some("bad checksum".into()),
        },
    ];
    assert_eq!(
        got, want,
        "install progress is not kept once per step, in step order"
    );
    let none = store
        .list_install_progress("prv_none")
        .await
        .expect("list progress");
    assert!(none.is_empty(), "an unknown provision has progress");
}
