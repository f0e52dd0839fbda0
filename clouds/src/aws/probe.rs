//! The probe's dry runs of every other EC2 action the client calls that EC2 can dry-run
//! (the security groups, the key pairs, tagging, termination) and of the instance-type
//! reads the size list needs (added after the first policy: an older policy lacks them),
//! so a missing permission is named before a provision needs it. A dry run creates nothing: EC2 answers
//! `DryRunOperation` when the action is allowed and `UnauthorizedOperation` when it is not.
//! The names and ids are placeholders no provision uses; a cloud that ignored `DryRun` and
//! made a group or key has it deleted at once.
use aws_sdk_ec2::types::{IpPermission, IpRange, Tag};
use tracing::warn;

use super::client::Clients;
use super::errors::classify;
use crate::{ErrorKind, ProviderError, Reason};

const PROBE_NAME: &str = "levelrail-probe";
const PROBE_GROUP_ID: &str = "sg-00000000000000000";
const PROBE_INSTANCE_ID: &str = "i-00000000000000000";
/// A well-formed public key of no use to anyone (its private half was thrown away).
const PROBE_PUBLIC_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBPFDjMUbkmUa8NMpNe9ckVnLtJv9X2m3mKsnlRyD6/+ levelrail-probe";

/// What the dry runs found.
#[derive(Debug, Default)]
pub(super) struct DryRuns {
    /// How many actions were dry-run.
    pub(super) checked: usize,
    /// The actions a dry run proved allowed.
    pub(super) proven: Vec<&'static str>,
    /// Actions refused (`UnauthorizedOperation`).
    pub(super) missing: Vec<&'static str>,
    /// Actions whose dry run answered something else, with that answer's code.
    pub(super) unverified: Vec<(&'static str, String)>,
}

/// Dry-runs, in `region`, every action the client calls besides `RunInstances` that EC2
/// can dry-run.
pub(super) async fn dry_run_actions(c: &Clients, region: &str) -> DryRuns {
    let ec2 = c.ec2(region).await;
    let rule = || {
        IpPermission::builder()
            .ip_protocol("tcp")
            .from_port(22)
            .to_port(22)
            .ip_ranges(IpRange::builder().cidr_ip("192.0.2.1/32").build())
            .build()
    };
    let created_group = ec2
        .create_security_group()
        .dry_run(true)
        .group_name(PROBE_NAME)
        .description("Levelrail probe: a dry run, never created")
        .send()
        .await
        .map_err(classify);
    if let Ok(out) = &created_group
        && let Some(id) = out.group_id()
    {
        warn!(
            group = id,
            "the cloud ignored DryRun; deleting the probe group"
        );
        let _ = ec2.delete_security_group().group_id(id).send().await;
    }
    let imported_key = ec2
        .import_key_pair()
        .dry_run(true)
        .key_name(PROBE_NAME)
        .public_key_material(aws_sdk_ec2::primitives::Blob::new(PROBE_PUBLIC_KEY))
        .send()
        .await
        .map_err(classify);
    if imported_key.is_ok() {
        warn!("the cloud ignored DryRun; deleting the probe key pair");
        let _ = ec2.delete_key_pair().key_name(PROBE_NAME).send().await;
    }
    let outcomes: [(&'static str, Result<(), ProviderError>); 10] = [
        (
            "ec2:DescribeInstanceTypes",
            ec2.describe_instance_types()
                .dry_run(true)
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        (
            "ec2:DescribeInstanceTypeOfferings",
            ec2.describe_instance_type_offerings()
                .dry_run(true)
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        ("ec2:CreateSecurityGroup", created_group.map(drop)),
        (
            "ec2:AuthorizeSecurityGroupIngress",
            ec2.authorize_security_group_ingress()
                .dry_run(true)
                .group_id(PROBE_GROUP_ID)
                .ip_permissions(rule())
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        (
            "ec2:RevokeSecurityGroupIngress",
            ec2.revoke_security_group_ingress()
                .dry_run(true)
                .group_id(PROBE_GROUP_ID)
                .ip_permissions(rule())
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        (
            "ec2:DeleteSecurityGroup",
            ec2.delete_security_group()
                .dry_run(true)
                .group_id(PROBE_GROUP_ID)
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        ("ec2:ImportKeyPair", imported_key.map(drop)),
        (
            "ec2:DeleteKeyPair",
            ec2.delete_key_pair()
                .dry_run(true)
                .key_name(PROBE_NAME)
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        (
            "ec2:CreateTags",
            ec2.create_tags()
                .dry_run(true)
                .resources(PROBE_INSTANCE_ID)
                .tags(Tag::builder().key("levelrail-probe").value("1").build())
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
        (
            "ec2:TerminateInstances",
            ec2.terminate_instances()
                .dry_run(true)
                .instance_ids(PROBE_INSTANCE_ID)
                .send()
                .await
                .map(drop)
                .map_err(classify),
        ),
    ];
    let mut found = DryRuns {
        checked: outcomes.len(),
        ..DryRuns::default()
    };
    for (action, outcome) in outcomes {
        match outcome {
            Ok(()) => found.proven.push(action),
            Err(e) if e.reason == Reason::DryRunPassed => found.proven.push(action),
            Err(e) if e.kind == ErrorKind::Unauthorized => found.missing.push(action),
            Err(e) => found.unverified.push((action, e.code)),
        }
    }
    found
}
