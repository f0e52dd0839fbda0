//! Security groups and key pairs of the fake: create (names unique per VPC), describe by
//! id, name or filter, ingress rules authorised and revoked (`InvalidPermission.Duplicate`
//! / `.NotFound`), deletion refused while a network interface uses the group
//! (`DependencyViolation`), and OpenSSH keys imported with their SHA-256 fingerprint.
use std::collections::BTreeSet;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::render;
use super::state::{Group, Inventory, KeyPair};
use super::wire::{Call, Handled, bad, one, passes};
use super::xml::Xml;

/// The characters EC2 accepts, besides ASCII letters, digits and spaces, in security group
/// names and descriptions and in rule descriptions (the botocore model's "Valid
/// characters" of `CreateSecurityGroupRequest` and `IpRange`; a contract test holds this
/// constant to the model's text).
pub const EC2_TEXT_PUNCTUATION: &str = "._-:/()#,@[]+=&;{}!$*";
/// The longest such text.
pub const EC2_TEXT_MAX: usize = 255;

/// Whether EC2 accepts `text` as a group name or description or a rule description.
pub fn ec2_text_ok(text: &str) -> bool {
    text.len() <= EC2_TEXT_MAX
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == ' ' || EC2_TEXT_PUNCTUATION.contains(c))
}

fn default_vpc(inv: &Inventory, region: &str) -> Option<String> {
    inv.vpcs
        .values()
        .find(|v| v.region == region && v.is_default)
        .map(|v| v.id.clone())
}

pub(crate) fn create_group(inv: &mut Inventory, call: &Call) -> Handled {
    let p = &call.params;
    let (Some(name), Some(description)) = (p.str("GroupName"), p.str("GroupDescription")) else {
        return Err(bad(
            "MissingParameter",
            "The request must contain the parameters GroupName and GroupDescription",
        ));
    };
    if name.starts_with("sg-") || name.is_empty() || !ec2_text_ok(name) {
        return Err(bad(
            "InvalidParameterValue",
            &format!(
                "Value ({name}) for parameter GroupName is invalid. Valid names are strings of up to 255 characters from a-zA-Z0-9 ._-:/()#,@[]+=&;{{}}!$* not starting with sg-."
            ),
        ));
    }
    if !ec2_text_ok(description) {
        return Err(bad(
            "InvalidParameterValue",
            &format!(
                "Value ({description}) for parameter GroupDescription is invalid. Valid descriptions are strings of up to 255 characters from a-zA-Z0-9 ._-:/()#,@[]+=&;{{}}!$*"
            ),
        ));
    }
    let vpc = match p.str("VpcId") {
        Some(v) if inv.vpcs.get(v).is_some_and(|x| x.region == call.region) => v.to_owned(),
        Some(v) => {
            return Err(bad(
                "InvalidVpcID.NotFound",
                &format!("The vpc ID '{v}' does not exist"),
            ));
        }
        None => default_vpc(inv, &call.region).unwrap_or_default(),
    };
    if inv
        .groups
        .values()
        .any(|g| g.vpc_id == vpc && g.name == name)
    {
        return Err(bad(
            "InvalidGroup.Duplicate",
            &format!("The security group '{name}' already exists for VPC '{vpc}'"),
        ));
    }
    let id = inv.id("sg");
    let tags = p.tags_for("security-group");
    inv.groups.insert(
        id.clone(),
        Group {
            id: id.clone(),
            region: call.region.clone(),
            name: name.into(),
            description: description.into(),
            vpc_id: vpc,
            tags: tags.clone(),
            ingress: BTreeSet::new(),
        },
    );
    Ok(vec![Xml::text("groupId", id), Xml::tags("tagSet", &tags)])
}

pub(crate) fn describe_groups(inv: &Inventory, call: &Call, owner: &str) -> Handled {
    let ids = call.params.list("GroupId");
    let names = call.params.list("GroupName");
    let here = |g: &&Group| g.region == call.region;
    if let Some(missing) = ids
        .iter()
        .find(|id| inv.groups.get(*id).is_none_or(|g| g.region != call.region))
    {
        return Err(bad(
            "InvalidGroup.NotFound",
            &format!("The security group '{missing}' does not exist"),
        ));
    }
    let default = default_vpc(inv, &call.region).unwrap_or_default();
    if let Some(missing) = names.iter().find(|n| {
        !inv.groups
            .values()
            .filter(here)
            .any(|g| &g.name == *n && g.vpc_id == default)
    }) {
        return Err(bad(
            "InvalidGroup.NotFound",
            &format!("The security group '{missing}' does not exist in default VPC '{default}'"),
        ));
    }
    let filters = call.params.filters();
    let mut items = Vec::new();
    for g in inv.groups.values().filter(here) {
        if (!ids.is_empty() && !ids.contains(&g.id))
            || !(names.is_empty() || (names.contains(&g.name) && g.vpc_id == default))
        {
            continue;
        }
        if passes(&filters, &g.tags, |n| match n {
            "group-name" => one(&g.name),
            "group-id" => one(&g.id),
            "vpc-id" => one(&g.vpc_id),
            "description" => one(&g.description),
            _ => None,
        })? {
            items.push(render::group_xml(g, owner));
        }
    }
    Ok(vec![Xml::items("securityGroupInfo", items)])
}

pub(crate) fn change_ingress(inv: &mut Inventory, call: &Call, add: bool) -> Handled {
    let region = call.region.clone();
    let Some(group) = call
        .params
        .str("GroupId")
        .and_then(|id| inv.groups.get_mut(id))
        .filter(|g| g.region == region)
    else {
        return Err(bad(
            "InvalidGroup.NotFound",
            "The security group does not exist",
        ));
    };
    if let Some(d) = call
        .params
        .rule_descriptions()
        .into_iter()
        .find(|d| !ec2_text_ok(d))
    {
        return Err(bad(
            "InvalidParameterValue",
            &format!(
                "Invalid rule description ({d}). Valid descriptions are strings less than 256 characters from the following set:  a-zA-Z0-9. _-:/()#,@[]+=&;{{}}!$*"
            ),
        ));
    }
    let rules = call.params.ip_permissions();
    if rules.is_empty() {
        return Err(bad(
            "MissingParameter",
            "No IpPermissions with an IP range were given",
        ));
    }
    for r in &rules {
        let present = group.ingress.contains(r);
        match (add, present) {
            (true, true) => {
                return Err(bad(
                    "InvalidPermission.Duplicate",
                    &format!(
                        "the specified rule \"peer: {}, {}, from port: {}, to port: {}\" already exists",
                        r.cidr, r.protocol, r.from, r.to
                    ),
                ));
            }
            (false, false) => {
                return Err(bad(
                    "InvalidPermission.NotFound",
                    "The specified rule does not exist in this security group.",
                ));
            }
            _ => {}
        }
    }
    for r in rules {
        if add {
            group.ingress.insert(r);
        } else {
            group.ingress.remove(&r);
        }
    }
    Ok(vec![Xml::text("return", true)])
}

pub(crate) fn delete_group(inv: &mut Inventory, call: &Call) -> Handled {
    let id = call.params.str("GroupId").unwrap_or_default().to_owned();
    let Some(group) = inv.groups.get(&id).filter(|g| g.region == call.region) else {
        return Err(bad(
            "InvalidGroup.NotFound",
            &format!("The security group '{id}' does not exist"),
        ));
    };
    if group.name == "default" {
        return Err(bad(
            "CannotDelete",
            "the specified group: \"default\" name: \"default\" cannot be deleted by a user",
        ));
    }
    if inv.enis.values().any(|e| e.groups.contains(&id)) {
        return Err(bad(
            "DependencyViolation",
            &format!("resource {id} has a dependent object"),
        ));
    }
    inv.groups.remove(&id);
    Ok(vec![Xml::text("return", true), Xml::text("groupId", id)])
}

pub(crate) fn import_key(inv: &mut Inventory, call: &Call) -> Handled {
    let Some(name) = call.params.str("KeyName").map(str::to_owned) else {
        return Err(bad(
            "MissingParameter",
            "The request must contain the parameter KeyName",
        ));
    };
    let material = call
        .params
        .str("PublicKeyMaterial")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    let mut parts = material.split_whitespace();
    let blob = match (parts.next(), parts.next()) {
        (Some("ssh-ed25519" | "ssh-rsa" | "ecdsa-sha2-nistp256"), Some(b64)) => {
            base64::engine::general_purpose::STANDARD.decode(b64).ok()
        }
        _ => None,
    };
    let Some(blob) = blob else {
        return Err(bad(
            "InvalidKey.Format",
            "Key is not in valid OpenSSH public key format",
        ));
    };
    if inv
        .keys
        .values()
        .any(|k| k.region == call.region && k.name == name)
    {
        return Err(bad(
            "InvalidKeyPair.Duplicate",
            &format!("The keypair '{name}' already exists."),
        ));
    }
    let fingerprint =
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(Sha256::digest(&blob));
    let id = inv.id("key");
    let tags = call.params.tags_for("key-pair");
    let key = KeyPair {
        id: id.clone(),
        region: call.region.clone(),
        name: name.clone(),
        public_key: material.trim().to_owned(),
        fingerprint: fingerprint.clone(),
        tags: tags.clone(),
    };
    inv.keys.insert(id.clone(), key);
    Ok(vec![
        Xml::text("keyFingerprint", fingerprint),
        Xml::text("keyName", name),
        Xml::text("keyPairId", id),
        Xml::tags("tagSet", &tags),
    ])
}

pub(crate) fn describe_keys(inv: &Inventory, call: &Call) -> Handled {
    let names = call.params.list("KeyName");
    let ids = call.params.list("KeyPairId");
    let here: Vec<&KeyPair> = inv
        .keys
        .values()
        .filter(|k| k.region == call.region)
        .collect();
    if let Some(missing) = names.iter().find(|n| !here.iter().any(|k| &k.name == *n)) {
        return Err(bad(
            "InvalidKeyPair.NotFound",
            &format!("The key pair '{missing}' does not exist"),
        ));
    }
    let filters = call.params.filters();
    let mut items = Vec::new();
    for k in here {
        if (!names.is_empty() && !names.contains(&k.name))
            || (!ids.is_empty() && !ids.contains(&k.id))
        {
            continue;
        }
        if passes(&filters, &k.tags, |n| match n {
            "key-name" => one(&k.name),
            "key-pair-id" => one(&k.id),
            "fingerprint" => one(&k.fingerprint),
            _ => None,
        })? {
            items.push(render::key_xml(k));
        }
    }
    Ok(vec![Xml::items("keySet", items)])
}

/// Deleting a key pair that does not exist succeeds, as at AWS.
pub(crate) fn delete_key(inv: &mut Inventory, call: &Call) -> Vec<Xml> {
    let found = inv
        .keys
        .values()
        .find(|k| {
            k.region == call.region
                && (call.params.get("KeyPairId") == Some(k.id.as_str())
                    || call.params.get("KeyName") == Some(k.name.as_str()))
        })
        .map(|k| k.id.clone());
    if let Some(id) = &found {
        inv.keys.remove(id);
    }
    let mut out = vec![Xml::text("return", true)];
    out.extend(Xml::opt("keyPairId", found.as_deref()));
    out
}
