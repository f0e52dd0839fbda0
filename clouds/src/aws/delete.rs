//! Deleting a provision's instance and what was created only for it. The instance (and any
//! other live instance carrying the provision's tag: an answer that was lost) is
//! terminated; then each dedicated security group of the provision is deleted once no
//! network interface uses it any more (deleting it right after `TerminateInstances` fails
//! with `DependencyViolation` while the interface is still attached: the original ignored
//! that error and leaked the group); then the provision's key pair. "Not found" counts as
//! done everywhere; the shared zero-ingress group stays.
use std::collections::BTreeMap;

use tracing::info;

use super::errors::classify;
use super::tags::{self, tag_filter};
use super::{AwsProvider, parse_id};
use crate::{ErrorKind, Ownership, ProviderError, ProviderId};

pub(super) async fn delete_provision_resources(
    p: &AwsProvider,
    server: Option<&str>,
    o: &Ownership,
) -> Result<(), ProviderError> {
    let provision = o.provision(ProviderId::Aws)?;
    let c = &p.clients;
    // region → instance ids
    let mut targets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if let Some(id) = server {
        let (region, instance) = parse_id(id, &c.default_region)?;
        targets.entry(region).or_default().push(instance);
    }
    let regions: Vec<String> = if targets.is_empty() {
        // The create never answered: its region is unknown, so look everywhere.
        p.region_ids().await?
    } else {
        targets.keys().cloned().collect()
    };
    for region in regions {
        let found = p.provision_instances(&region, provision).await?;
        let ids = targets.entry(region).or_default();
        for i in found.iter().filter_map(|i| i.instance_id()) {
            if !ids.iter().any(|x| x == i) {
                ids.push(i.to_owned());
            }
        }
    }
    for (region, ids) in &targets {
        if ids.is_empty() {
            continue;
        }
        let done = c
            .ec2(region)
            .await
            .terminate_instances()
            .set_instance_ids(Some(ids.clone()))
            .send()
            .await
            .map_err(classify);
        match done {
            Ok(_) => info!(region, instances = ?ids, "termination requested"),
            Err(e) if e.kind == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    for region in targets.keys() {
        for group in super::groups::provision_groups(c, region, o).await? {
            super::groups::delete_group_when_released(c, region, &group).await?;
        }
        let keys = c
            .ec2(region)
            .await
            .describe_key_pairs()
            .filters(tag_filter(tags::PROVISION, &o.provision_id))
            .send()
            .await
            .map_err(classify)?;
        for key in keys.key_pairs() {
            let mut call = c.ec2(region).await.delete_key_pair();
            // By name: unique in a region, and understood by every EC2 (moto ignores ids).
            call = match (key.key_name(), key.key_pair_id()) {
                (Some(name), _) => call.key_name(name),
                (None, Some(id)) => call.key_pair_id(id),
                (None, None) => continue,
            };
            match call.send().await.map_err(classify) {
                Ok(_) => info!(
                    region,
                    key = key.key_name().unwrap_or_default(),
                    "key pair deleted"
                ),
                Err(e) if e.kind == ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    info!(provision = %o.provision_id, "provision resources deleted");
    Ok(())
}
