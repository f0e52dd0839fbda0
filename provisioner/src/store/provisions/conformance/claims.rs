//! Conformance of name claims: one holder per name across provisions and nodes, decided by
//! the database even under concurrency.
use std::sync::Arc;

use tokio::task::JoinSet;

use super::fixtures::{T0, name, new_node, record, token};
use crate::model::RedeemError;
use crate::model::ports::ProvisionerStore;
use crate::model::provision::ProvisionStatus;
use crate::model::provision::{ClaimHolder, InsertProvisionError};

/// Concurrent provisions of one name.
const RACERS: usize = 50;

pub(super) async fn run(store: Arc<dyn ProvisionerStore>) {
    a_provision_claims_its_name_until_it_fails(&*store).await;
    a_manually_enrolled_node_claims_its_name_until_it_is_deleted(&*store).await;
    a_provisions_own_node_takes_its_claim_over(&*store).await;
    a_name_held_by_a_provision_cannot_be_enrolled_by_another(&*store).await;
    one_of_fifty_concurrent_provisions_of_a_name_is_accepted(store).await;
}

async fn a_provision_claims_its_name_until_it_fails(store: &dyn ProvisionerStore) {
    let a = store
        .insert_provision(&record("claimed", T0))
        .await
        .expect("first");

    let second = store.insert_provision(&record("claimed", T0)).await;

    assert!(
        matches!(second, Err(InsertProvisionError::NameTaken)),
        "a held name gave {second:?}"
    );
    let holder = store.name_claim(&name("claimed")).await.expect("claim");
    assert_eq!(
        holder,
        Some(ClaimHolder::Provision(a.id.clone())),
        "the claim holder"
    );
    let mut failed = a.clone();
    failed.status = ProvisionStatus::Failed;
    failed.failed_phase = Some(ProvisionStatus::Creating);
    store
        .update_provision(&failed)
        .await
        .expect("fail")
        .expect("applied");
    assert_eq!(
        store.name_claim(&name("claimed")).await.expect("claim"),
        None,
        "a failed provision kept its name"
    );
    store
        .insert_provision(&record("claimed", T0))
        .await
        .expect("the released name is reusable");
}

async fn a_manually_enrolled_node_claims_its_name_until_it_is_deleted(
    store: &dyn ProvisionerStore,
) {
    let t = token(None);
    store.create_join_token(&t).await.expect("token");
    let node = store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("manual"),
            T0,
            &new_node(None),
        )
        .await
        .expect("enroll");

    let taken = store.insert_provision(&record("manual", T0)).await;

    assert!(
        matches!(taken, Err(InsertProvisionError::NameTaken)),
        "a node's name gave {taken:?}"
    );
    assert_eq!(
        store.name_claim(&name("manual")).await.expect("claim"),
        Some(ClaimHolder::Node(node.id.clone()))
    );
    assert!(
        store.delete_node(&node.id).await.expect("delete"),
        "node missing"
    );
    assert_eq!(
        store.name_claim(&name("manual")).await.expect("claim"),
        None,
        "a deleted node kept its name"
    );
    store
        .insert_provision(&record("manual", T0))
        .await
        .expect("a deleted node's name is reusable");
}

async fn a_provisions_own_node_takes_its_claim_over(store: &dyn ProvisionerStore) {
    let p = store
        .insert_provision(&record("adopted", T0))
        .await
        .expect("provision");
    let t = token(Some(&p.id));
    store.create_join_token(&t).await.expect("token");

    let node = store
        .redeem_join_token(
            &t.id,
            &t.secret_sha256,
            &name("adopted"),
            T0,
            &new_node(Some(&p.id)),
        )
        .await
        .expect("the provision's own node enrolls under its name");

    assert_eq!(
        store.name_claim(&name("adopted")).await.expect("claim"),
        Some(ClaimHolder::Node(node.id))
    );
    let mut failed = p.clone();
    failed.status = ProvisionStatus::Failed;
    store
        .update_provision(&failed)
        .await
        .expect("fail")
        .expect("applied");
    let again = store.insert_provision(&record("adopted", T0)).await;
    assert!(
        matches!(again, Err(InsertProvisionError::NameTaken)),
        "failing the provision released its node's name: {again:?}"
    );
}

async fn a_name_held_by_a_provision_cannot_be_enrolled_by_another(store: &dyn ProvisionerStore) {
    let held = store
        .insert_provision(&record("held", T0))
        .await
        .expect("provision");
    let other = store
        .insert_provision(&record("held-other", T0))
        .await
        .expect("other");
    let unbound = token(None);
    let foreign = token(Some(&other.id));
    for t in [&unbound, &foreign] {
        store.create_join_token(t).await.expect("token");
    }

    let manual = store
        .redeem_join_token(
            &unbound.id,
            &unbound.secret_sha256,
            &name("held"),
            T0,
            &new_node(None),
        )
        .await;
    let stolen = store
        .redeem_join_token(
            &foreign.id,
            &foreign.secret_sha256,
            &name("held"),
            T0,
            &new_node(Some(&other.id)),
        )
        .await;

    assert!(
        matches!(manual, Err(RedeemError::NameTaken)),
        "manual enrollment gave {manual:?}"
    );
    assert!(
        matches!(stolen, Err(RedeemError::NameTaken)),
        "another provision's node gave {stolen:?}"
    );
    let after = store
        .get_join_token(&unbound.id)
        .await
        .expect("get")
        .expect("token");
    assert_eq!(after.used_at, None, "a refused enrollment used its token");
    assert_eq!(
        store.name_claim(&name("held")).await.expect("claim"),
        Some(ClaimHolder::Provision(held.id))
    );
}

/// Fifty requests for one name, each alone (`insert_provision`) or each with its join token,
/// as `Provision` writes (group commit on SQLite and PostgreSQL, where racers share batches).
async fn one_of_fifty_concurrent_provisions_of_a_name_is_accepted(
    store: Arc<dyn ProvisionerStore>,
) {
    for (contested, with_token) in [("contested-provision", false), ("contested-grouped", true)] {
        one_of_fifty_concurrent_writes_of_a_name_is_accepted(
            Arc::clone(&store),
            contested,
            with_token,
        )
        .await;
    }
}

async fn one_of_fifty_concurrent_writes_of_a_name_is_accepted(
    store: Arc<dyn ProvisionerStore>,
    contested: &'static str,
    with_token: bool,
) {
    let mut racers = JoinSet::new();
    let mut ids = Vec::with_capacity(RACERS);
    for _ in 0..RACERS {
        let store = Arc::clone(&store);
        let r = record(contested, T0);
        ids.push(r.id.to_string());
        racers.spawn(async move {
            if with_token {
                let token = token(Some(&r.id));
                store.insert_provision_with_token(&r, Some(&token)).await
            } else {
                store.insert_provision(&r).await
            }
        });
    }

    let outcomes = racers.join_all().await;

    let accepted: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    let taken = outcomes
        .iter()
        .filter(|o| matches!(o, Err(InsertProvisionError::NameTaken)))
        .count();
    let others: Vec<_> = outcomes
        .iter()
        .filter(|o| !matches!(o, Ok(_) | Err(InsertProvisionError::NameTaken)))
        .collect();
    assert_eq!(
        (accepted.len(), taken),
        (1, RACERS - 1),
        "concurrent provisions of {contested}; others: {others:?}"
    );
    let stored = store.list_provisions(1000, None).await.expect("list");
    let rows = stored.iter().filter(|p| p.name == name(contested)).count();
    assert_eq!(rows, 1, "{rows} rows hold the contested name {contested}");
    assert_eq!(
        store.name_claim(&name(contested)).await.expect("claim"),
        Some(ClaimHolder::Provision(accepted[0].id.clone()))
    );
    if with_token {
        let tokens = store.list_join_tokens().await.expect("tokens");
        let bound: Vec<_> = tokens
            .iter()
            .filter(|t| t.provision_id.as_ref().is_some_and(|p| ids.contains(p)))
            .collect();
        assert_eq!(
            bound.len(),
            1,
            "the refused requests left tokens: {bound:?}"
        );
        assert_eq!(
            bound[0].provision_id.as_deref(),
            Some(accepted[0].id.as_str())
        );
    }
}
