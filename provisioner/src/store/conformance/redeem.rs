//! Conformance of `redeem_join_token`: atomic single use under concurrency, the reason of
//! every failure, and node-name uniqueness enforced by the database.
use std::sync::Arc;

use time::Duration;
use tokio::task::JoinSet;

use super::fixtures::{T0, T0_STORED, get, name, new_node, put, random_hash, token};
use crate::model::RedeemError;
use crate::model::ports::NodeStore;
use crate::model::{JoinTokenId, NodeName, Role, WorkloadKind};

/// Concurrent redemptions of one token.
const RACERS: usize = 100;

pub(super) async fn run(store: Arc<dyn NodeStore>) {
    a_redemption_creates_the_node_and_uses_the_token(&*store).await;
    a_used_token_cannot_be_replayed(&*store).await;
    an_expired_token_is_refused(&*store).await;
    a_revoked_token_is_refused(&*store).await;
    a_bound_token_refuses_other_names(&*store).await;
    unknown_ids_and_wrong_secrets_are_unknown(&*store).await;
    a_taken_name_rolls_back_and_leaves_the_token_unused(&*store).await;
    one_of_many_concurrent_redemptions_wins(Arc::clone(&store)).await;
    one_of_many_concurrent_enrolments_of_a_name_wins(store).await;
}

async fn a_redemption_creates_the_node_and_uses_the_token(store: &dyn NodeStore) {
    let mut t = token();
    t.provision_id = Some("prv_1".into());
    t.role = Role::Build;
    put(store, &t).await;
    let mut nn = new_node();
    nn.provision_id = Some("prv_1".into());
    nn.workload_kinds = vec![WorkloadKind::Builds];

    let node = store
        .redeem_join_token(&t.id, &t.secret_sha256, &name("redeemed-node"), T0, &nn)
        .await
        .expect("a valid token is redeemed");

    assert_eq!(node.id, nn.id, "the node does not have the requested id");
    assert_eq!(
        node.name,
        name("redeemed-node"),
        "the node does not have the requested name"
    );
    assert_eq!(
        (node.enrolled_at, node.last_seen_at),
        (T0_STORED, T0_STORED),
        "node times"
    );
    assert_eq!(node.addresses, nn.addresses, "addresses");
    assert_eq!(
        node.workload_kinds,
        vec![WorkloadKind::Builds],
        "workload kinds"
    );
    assert_eq!(node.provision_id.as_deref(), Some("prv_1"), "provision id");
    assert_eq!(
        (&node.cert_serial, &node.cert_fingerprint),
        (&nn.cert_serial, &nn.cert_fingerprint)
    );
    let stored = store
        .get_node(&nn.id)
        .await
        .expect("get node")
        .expect("the node was not stored");
    assert_eq!(
        stored, node,
        "the stored node differs from the returned one"
    );
    let used = get(store, &t.id).await;
    assert_eq!(
        used.used_at,
        Some(T0_STORED),
        "the token's used_at was not set"
    );
    assert_eq!(
        used.used_by_node,
        Some(nn.id),
        "the token's used_by_node was not set"
    );
}

async fn a_used_token_cannot_be_replayed(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    redeem(store, &t.id, &t.secret_sha256, "replay-first")
        .await
        .expect("first redemption");

    let err = redeem(store, &t.id, &t.secret_sha256, "replay-second")
        .await
        .expect_err("replay");

    assert!(
        matches!(err, RedeemError::Used),
        "a replayed token gave {err:?}"
    );
    let names: Vec<_> = store
        .list_nodes()
        .await
        .expect("list")
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert!(
        !names.contains(&name("replay-second")),
        "a replay created a node"
    );
}

async fn an_expired_token_is_refused(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    let nn = new_node();

    let at_expiry = store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("expired-node"),
            t.expires_at,
            &nn,
        )
        .await
        .expect_err("a token at its expiry time was redeemed");

    assert!(
        matches!(at_expiry, RedeemError::Expired),
        "an expired token gave {at_expiry:?}"
    );
    assert_eq!(
        get(store, &t.id).await.used_at,
        None,
        "an expired token was marked used"
    );
    let just_before = t.expires_at - Duration::seconds(1);
    store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("expired-node"),
            just_before,
            &nn,
        )
        .await
        .expect("a token one second before expiry is redeemable");
}

async fn a_revoked_token_is_refused(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;
    assert!(store.revoke_join_token(&t.id, T0).await.expect("revoke"));

    let err = redeem(store, &t.id, &t.secret_sha256, "revoked-node")
        .await
        .expect_err("revoked");

    assert!(
        matches!(err, RedeemError::Revoked),
        "a revoked token gave {err:?}"
    );
}

async fn a_bound_token_refuses_other_names(store: &dyn NodeStore) {
    let mut t = token();
    t.node_name = Some(name("bound-right"));
    put(store, &t).await;

    let err = redeem(store, &t.id, &t.secret_sha256, "bound-wrong")
        .await
        .expect_err("wrong name");

    assert!(
        matches!(err, RedeemError::WrongName),
        "a wrong name gave {err:?}"
    );
    assert_eq!(
        get(store, &t.id).await.used_at,
        None,
        "a wrong name used the token"
    );
    redeem(store, &t.id, &t.secret_sha256, "bound-right")
        .await
        .expect("the bound name enrolls");
}

async fn unknown_ids_and_wrong_secrets_are_unknown(store: &dyn NodeStore) {
    let t = token();
    put(store, &t).await;

    let unknown = redeem(
        store,
        &JoinTokenId::generate(),
        &t.secret_sha256,
        "unknown-a",
    )
    .await;
    let wrong = redeem(store, &t.id, &random_hash(), "unknown-b").await;

    assert!(
        matches!(unknown, Err(RedeemError::Unknown)),
        "an unknown id gave {unknown:?}"
    );
    assert!(
        matches!(wrong, Err(RedeemError::Unknown)),
        "a wrong secret gave {wrong:?}"
    );
    assert_eq!(
        get(store, &t.id).await.used_at,
        None,
        "a wrong secret used the token"
    );
}

async fn a_taken_name_rolls_back_and_leaves_the_token_unused(store: &dyn NodeStore) {
    let first = token();
    let second = token();
    put(store, &first).await;
    put(store, &second).await;
    redeem(store, &first.id, &first.secret_sha256, "taken-name")
        .await
        .expect("first");

    let err = redeem(store, &second.id, &second.secret_sha256, "taken-name")
        .await
        .expect_err("dup");

    assert!(
        matches!(err, RedeemError::NameTaken),
        "a taken name gave {err:?}"
    );
    let after = get(store, &second.id).await;
    assert_eq!(
        (after.used_at, after.used_by_node),
        (None, None),
        "the token was used anyway"
    );
    redeem(store, &second.id, &second.secret_sha256, "untaken-name")
        .await
        .expect("the rolled-back token still redeems under a free name");
}

async fn one_of_many_concurrent_redemptions_wins(store: Arc<dyn NodeStore>) {
    let t = token();
    put(&*store, &t).await;
    let mut racers = JoinSet::new();
    for i in 0..RACERS {
        let (store, id, hash) = (Arc::clone(&store), t.id.clone(), t.secret_sha256);
        racers.spawn(async move { redeem(&*store, &id, &hash, &format!("racer-{i}")).await });
    }

    let outcomes = racers.join_all().await;

    let wins = outcomes.iter().filter(|o| o.is_ok()).count();
    let used = outcomes
        .iter()
        .filter(|o| matches!(o, Err(RedeemError::Used)))
        .count();
    let others: Vec<_> = outcomes
        .iter()
        .filter_map(|o| o.as_ref().err())
        .filter(|e| !matches!(e, RedeemError::Used))
        .collect();
    assert_eq!(
        (wins, used),
        (1, RACERS - 1),
        "concurrent redemptions; other failures: {others:?}"
    );
    let racer_nodes = store.list_nodes().await.expect("list").into_iter();
    let racer_nodes = racer_nodes
        .filter(|n| n.name.as_str().starts_with("racer-"))
        .count();
    assert_eq!(
        racer_nodes, 1,
        "concurrent redemptions created {racer_nodes} nodes"
    );
}

async fn one_of_many_concurrent_enrolments_of_a_name_wins(store: Arc<dyn NodeStore>) {
    let tokens: Vec<_> = (0..16).map(|_| token()).collect();
    for t in &tokens {
        put(&*store, t).await;
    }
    let mut racers = JoinSet::new();
    for t in &tokens {
        let (store, id, hash) = (Arc::clone(&store), t.id.clone(), t.secret_sha256);
        racers.spawn(async move { redeem(&*store, &id, &hash, "contested").await });
    }

    let outcomes = racers.join_all().await;

    let wins = outcomes.iter().filter(|o| o.is_ok()).count();
    let taken = outcomes
        .iter()
        .filter(|o| matches!(o, Err(RedeemError::NameTaken)))
        .count();
    assert_eq!(
        (wins, taken),
        (1, tokens.len() - 1),
        "contested name: {outcomes:?}"
    );
    let mut used = 0;
    for t in &tokens {
        used += usize::from(get(&*store, &t.id).await.used_at.is_some());
    }
    assert_eq!(used, 1, "losing enrolments used their tokens");
}

async fn redeem(
    store: &dyn NodeStore,
    id: &JoinTokenId,
    hash: &[u8; 32],
    node_name: &str,
) -> Result<crate::model::Node, RedeemError> {
    let node_name = NodeName::parse(node_name).expect("valid name");
    store
        .redeem_join_token(id, hash, &node_name, T0, &new_node())
        .await
}
