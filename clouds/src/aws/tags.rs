//! Tags and names of what Levelrail creates at AWS: the ownership tags (`Ownership::labels`
//! keys) plus `Name`, on the instance, its volume and its network interface; the shared
//! zero-ingress security group of a control plane; the dedicated SSH group and the key pair
//! of one provision; and the `ClientToken` that makes `RunInstances` idempotent.
use aws_sdk_ec2::types::{Filter, ResourceType, Tag, TagSpecification};
use sha2::{Digest as _, Sha256};

use crate::Ownership;

/// Tag key of the control plane.
pub(crate) const CONTROL_PLANE: &str = "levelrail-control-plane";
/// Tag key of the provision.
pub(crate) const PROVISION: &str = "levelrail-provision";
/// Tag key telling what a security group or key pair is for (`shared`, `ssh`, `key`).
pub(crate) const ROLE: &str = "levelrail-role";

/// `tag:KEY = value`.
pub(crate) fn tag_filter(key: &str, value: &str) -> Filter {
    Filter::builder()
        .name(format!("tag:{key}"))
        .values(value)
        .build()
}

/// A filter with one or more values.
pub(crate) fn filter(name: &str, values: &[&str]) -> Filter {
    values
        .iter()
        .fold(Filter::builder().name(name), |b, v| b.values(*v))
        .build()
}

/// The ownership tags, plus `Name` when given, plus `extra`.
pub(crate) fn ownership_tags(
    o: &Ownership,
    name: Option<&str>,
    extra: &[(&str, &str)],
) -> Vec<Tag> {
    let mut tags: Vec<Tag> = o
        .labels()
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
    if let Some(name) = name {
        tags.push(Tag::builder().key("Name").value(name).build());
    }
    tags.extend(
        extra
            .iter()
            .map(|(k, v)| Tag::builder().key(*k).value(*v).build()),
    );
    tags
}

/// One tag specification per resource type, all with `tags`.
pub(crate) fn specs(types: &[ResourceType], tags: &[Tag]) -> Vec<TagSpecification> {
    types
        .iter()
        .map(|t| {
            TagSpecification::builder()
                .resource_type(t.clone())
                .set_tags(Some(tags.to_vec()))
                .build()
        })
        .collect()
}

/// The value of tag `key`.
pub(crate) fn value<'a>(tags: &'a [Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(Tag::value)
}

/// Letters, digits, `.`, `_` and `-` only (names of groups and key pairs).
fn sanitize(s: &str, max: usize) -> String {
    let clean: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(max)
        .collect();
    if clean.is_empty() {
        "default".to_owned()
    } else {
        clean
    }
}

/// The zero-ingress group every instance of control plane `cp` shares (one per VPC).
pub(crate) fn shared_group_name(cp: &str) -> String {
    format!("levelrail-{}-nodes", sanitize(cp, 200))
}

/// The dedicated group of a provision that opted into SSH.
pub(crate) fn ssh_group_name(o: &Ownership) -> String {
    format!("levelrail-{}-ssh", sanitize(&o.provision_id, 200))
}

/// The key pair imported for a provision.
pub(crate) fn key_pair_name(o: &Ownership) -> String {
    format!("levelrail-{}", sanitize(&o.provision_id, 200))
}

/// The `ClientToken` of a provision's `RunInstances` of `instance_type` in `subnet_id` (at
/// most 64 ASCII characters): `<provision id>/<subnet id>/<type>` when it fits, else
/// `levelrail-` and a digest of the three. Every retry of the same launch sends the same
/// token, so EC2 returns the instance that call created. A launch in another subnet or of
/// another type (after a capacity refusal) needs a token of its own: EC2 refuses a token
/// reused with other parameters (`IdempotentParameterMismatch`). Whatever the launch, the
/// instance carries the provision's tag, which is what a retried create looks up first.
pub(crate) fn client_token(provision_id: &str, subnet_id: &str, instance_type: &str) -> String {
    let id = provision_id.trim();
    let plain = format!("{id}/{subnet_id}/{instance_type}");
    if !id.is_empty() && plain.len() <= 64 && plain.bytes().all(|b| b.is_ascii_graphic()) {
        return plain;
    }
    let digest = hex::encode(Sha256::digest(
        format!("{id}\n{subnet_id}\n{instance_type}").as_bytes(),
    ));
    format!("levelrail-{}", &digest[..54])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_tokens_are_stable_short_and_differ_per_subnet_and_type() {
        let s = "subnet-0c0ffee0000000002";
        assert_eq!(
            client_token("npv_abc", s, "t3.micro"),
            "npv_abc/subnet-0c0ffee0000000002/t3.micro"
        );
        assert_ne!(
            client_token("npv_abc", s, "t3.micro"),
            client_token("npv_abc", "subnet-0c0ffee0000000003", "t3.micro")
        );
        assert_ne!(
            client_token("npv_abc", s, "t3.micro"),
            client_token("npv_abc", s, "t3.small")
        );
        let long = format!("npv_{}", "f".repeat(32));
        assert_eq!(
            client_token(&long, s, "t3.micro"),
            client_token(&long, s, "t3.micro")
        );
        assert_eq!(client_token(&long, s, "t3.micro").len(), 64);
        assert_ne!(
            client_token(&long, s, "t3.micro"),
            client_token(&long, "subnet-1", "t3.micro")
        );
        assert!(client_token("a b", s, "t3.micro").starts_with("levelrail-"));
    }

    #[test]
    fn names_are_sanitised() {
        assert_eq!(shared_group_name("cp one/x"), "levelrail-cp-one-x-nodes");
        let o = Ownership {
            provision_id: "npv_1".into(),
            ..Default::default()
        };
        assert_eq!(
            (ssh_group_name(&o), key_pair_name(&o)),
            ("levelrail-npv_1-ssh".into(), "levelrail-npv_1".into())
        );
    }
}
