//! What the ARM router (`arm.rs`) and the resource handlers share: the resource a request
//! addresses, parsed from its path, and `nextLink` paging. A leaf: it imports neither the
//! router nor a handler.
use serde_json::Value;

use super::Shared;
use crate::fakes::edge::Call;

/// A resource addressed by a request.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The resource group's name as created.
    pub(crate) group: String,
    /// `Microsoft.Network/networkInterfaces`, `Microsoft.Network/virtualNetworks/subnets`, …
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    /// The canonical id.
    pub(crate) id: String,
    /// For subnets: the VNet's id.
    pub(crate) parent: Option<String>,
}

const KINDS: [(&str, &str); 6] = [
    ("Microsoft.Compute", "virtualMachines"),
    ("Microsoft.Compute", "disks"),
    ("Microsoft.Network", "virtualNetworks"),
    ("Microsoft.Network", "networkSecurityGroups"),
    ("Microsoft.Network", "publicIPAddresses"),
    ("Microsoft.Network", "networkInterfaces"),
];

/// The resource that the path segments `segs` (under resource group `group`, whose id
/// is `scope`) address.
pub(crate) fn target(segs: &[&str], scope: &str, group: &str) -> Option<Target> {
    if segs.len() < 8 || !segs[4].eq_ignore_ascii_case("providers") {
        return None;
    }
    let (ns, kind) = KINDS
        .iter()
        .find(|(n, k)| n.eq_ignore_ascii_case(segs[5]) && k.eq_ignore_ascii_case(segs[6]))?;
    let base = format!("{scope}/providers/{ns}/{kind}/{}", segs[7]);
    match segs.len() {
        8 => Some(Target {
            group: group.to_owned(),
            kind: kind_name(ns, kind),
            name: segs[7].to_owned(),
            id: base,
            parent: None,
        }),
        10 if *kind == "virtualNetworks" && segs[8].eq_ignore_ascii_case("subnets") => {
            Some(Target {
                group: group.to_owned(),
                kind: "Microsoft.Network/virtualNetworks/subnets",
                name: segs[9].to_owned(),
                id: format!("{base}/subnets/{}", segs[9]),
                parent: Some(base),
            })
        }
        _ => None,
    }
}

fn kind_name(ns: &str, kind: &str) -> &'static str {
    match (ns, kind) {
        ("Microsoft.Compute", "virtualMachines") => "Microsoft.Compute/virtualMachines",
        ("Microsoft.Compute", "disks") => "Microsoft.Compute/disks",
        ("Microsoft.Network", "virtualNetworks") => "Microsoft.Network/virtualNetworks",
        ("Microsoft.Network", "networkSecurityGroups") => "Microsoft.Network/networkSecurityGroups",
        ("Microsoft.Network", "publicIPAddresses") => "Microsoft.Network/publicIPAddresses",
        _ => "Microsoft.Network/networkInterfaces",
    }
}

/// One page of `all` by `$skiptoken` (the configured page size), only its items turned
/// into JSON by `json`, and the `nextLink` of the rest: the request's own URL with the next
/// `$skiptoken`.
pub(crate) fn page_of<T>(
    shared: &Shared,
    call: &Call,
    all: Vec<T>,
    json: impl FnMut(T) -> Value,
) -> (Vec<Value>, Option<String>) {
    let skip: usize = call
        .param("$skiptoken")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let size = shared.cfg.page_size.max(1);
    let more = skip + size < all.len();
    let page: Vec<Value> = all.into_iter().skip(skip).take(size).map(json).collect();
    let next = more.then(|| {
        let base = shared.base.get().cloned().unwrap_or_default();
        let q: Vec<String> = call
            .query
            .iter()
            .filter(|(k, _)| k != "$skiptoken")
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect();
        format!(
            "{base}{}?{}&$skiptoken={}",
            call.path,
            q.join("&"),
            skip + size
        )
    });
    (page, next)
}

/// Percent-encodes a query key or value of a `nextLink`.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~$".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
