//! The forward path: every stage in order, steps run twice, idempotent requests, roles,
//! name uniqueness and the server teardown of `DeleteNode`.
use super::harness::{Harness, NAME, ScriptedHook, input};
use crate::app::workflow::hooks::{HookAction, HookPoint};
use crate::model::provision::ClaimHolder;
use crate::model::provision::{ProvisionError, ProvisionStatus, SagaStep};
use crate::model::{InstallStep, Role, WorkloadKind};

#[tokio::test(start_paused = true)]
async fn a_provision_goes_through_every_stage_to_ready() {
    let h = Harness::new();

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    assert_eq!(
        p.status,
        ProvisionStatus::Creating,
        "Provision answers at once with creating"
    );
    assert_eq!(ready.status, ProvisionStatus::Ready);
    let stages: Vec<_> = ready.stages.iter().map(|s| s.status).collect();
    use ProvisionStatus::*;
    assert_eq!(
        stages,
        vec![Creating, Booting, Installing, Enrolling, Ready]
    );
    assert_eq!(ready.install_step, Some(InstallStep::AgentStarted));
    assert!(ready.ip_address.is_some(), "no address recorded");
    let node_id = ready.node_id.clone().expect("the node is recorded");
    assert_eq!(h.fake.created(p.id.as_str()), 1);
    assert_eq!(h.live_tokens(&p.id).await, 0, "a token is still live");
    let claim = h.store.name_claim(&ready.name).await.expect("claim");
    assert_eq!(
        claim,
        Some(ClaimHolder::Node(node_id)),
        "the node did not take the name over"
    );
    let row = h
        .store
        .get_provision(&p.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.sealed_join_token, None,
        "a ready provision kept its sealed token"
    );
    assert_eq!(row.saga_step, SagaStep::Done);
}

#[tokio::test(start_paused = true)]
async fn each_step_run_twice_ends_in_the_same_state() {
    // The join token is minted with the provision's insert: the driver starts at rendering.
    let steps = [
        SagaStep::RenderUserData,
        SagaStep::CreateServer,
        SagaStep::WaitRunning,
        SagaStep::Installing,
    ];
    let script: Vec<_> = steps
        .iter()
        .map(|s| (HookPoint::After(*s), HookAction::Replay))
        .collect();
    let hook = ScriptedHook::many(&script);
    let h = Harness::with_hook(Some(hook.clone()));

    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;

    for step in steps {
        assert!(
            hook.fired(HookPoint::After(step)),
            "{step:?} was not replayed"
        );
    }
    assert_eq!(ready.status, ProvisionStatus::Ready);
    assert_eq!(
        h.fake.created(p.id.as_str()),
        1,
        "a replayed create made a second server"
    );
    assert_eq!(h.fake.inventory(p.id.as_str()), (1, 1));
    assert_eq!(
        h.live_tokens(&p.id).await,
        0,
        "a replayed mint left a live token"
    );
    let row = h
        .store
        .get_provision(&p.id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        row.saga.completed.len(),
        6,
        "every step is recorded once: {:?}",
        row.saga.completed
    );
}

#[tokio::test(start_paused = true)]
async fn provision_is_idempotent_by_request_id() {
    let h = Harness::new();
    let request = || crate::model::provision::ProvisionInput {
        request_id: "3f1c2a9e-7b9d".into(),
        ..input(NAME)
    };

    let first = h.provisioner.provision(request()).await.expect("first");
    let second = h.provisioner.provision(request()).await.expect("repeat");

    assert_eq!(first.id, second.id);
    let listed = h.provisioner.list_provisions(0, "").await.expect("list");
    assert_eq!(
        listed.provisions.len(),
        1,
        "a repeated request created a second provision"
    );
}

#[tokio::test(start_paused = true)]
async fn a_name_in_use_is_already_exists_until_its_provision_fails() {
    let h = Harness::new();
    h.fake.fail_next(
        "create_server",
        1,
        levelrail_clouds::ErrorKind::CapacityUnavailable,
        "resource_unavailable",
    );
    let first = h.provision(NAME).await;

    let taken = h.provisioner.provision(input(NAME)).await;
    h.finish(&first.id).await;
    let again = h.provisioner.provision(input(NAME)).await;

    assert!(
        matches!(taken, Err(ProvisionError::AlreadyExists(_))),
        "{taken:?}"
    );
    assert!(
        again.is_ok(),
        "the failed provision's name is not reusable: {again:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_build_role_reaches_the_node_as_build_workloads() {
    let h = Harness::new();
    let build = crate::model::provision::ProvisionInput {
        role: Role::Build,
        ..input("builder-1")
    };

    let p = h.provisioner.provision(build).await.expect("provision");
    let ready = h.complete(&p.id, "builder-1").await;

    let node = h
        .nodes
        .get_node(&ready.node_id.expect("node"))
        .await
        .expect("node");
    assert_eq!(node.workload_kinds, vec![WorkloadKind::Builds]);
    assert_eq!(node.provision_id.as_deref(), Some(p.id.as_str()));
}

#[tokio::test(start_paused = true)]
async fn deleting_a_provisioned_node_with_destroy_server_deletes_its_server() {
    let h = Harness::new();
    let p = h.provision(NAME).await;
    let ready = h.complete(&p.id, NAME).await;
    let node_id = ready.node_id.expect("node");

    h.nodes.delete_node(&node_id, true).await.expect("delete");

    assert_eq!(
        h.fake.inventory(p.id.as_str()),
        (0, 0),
        "the server or its firewall is left"
    );
    assert!(h.store.get_node(&node_id).await.expect("get").is_none());
    assert_eq!(
        h.store.name_claim(&ready.name).await.expect("claim"),
        None,
        "the name is still held"
    );
}
