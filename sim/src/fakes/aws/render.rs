//! How the fake renders its inventory in EC2's XML: instances (with their interface,
//! volume and state), security groups with their rules, key pairs and network interfaces.
use super::state::{Eni, Group, Instance, Inventory, KeyPair};
use super::xml::Xml;

/// EC2's numeric state code.
pub(crate) fn state_code(state: &str) -> u32 {
    match state {
        "pending" => 0,
        "running" => 16,
        "shutting-down" => 32,
        "terminated" => 48,
        "stopping" => 64,
        _ => 80,
    }
}

/// `<instanceState>`-shaped children.
pub(crate) fn state_xml(state: &str) -> Vec<Xml> {
    vec![
        Xml::text("code", state_code(state)),
        Xml::text("name", state),
    ]
}

fn group_set(inv: &Inventory, ids: &[String]) -> Xml {
    Xml::items(
        "groupSet",
        ids.iter()
            .map(|id| {
                let name = inv
                    .groups
                    .get(id)
                    .map(|g| g.name.clone())
                    .unwrap_or_default();
                vec![Xml::text("groupId", id), Xml::text("groupName", name)]
            })
            .collect(),
    )
}

/// `<item>` of `instancesSet`.
pub(crate) fn instance_xml(inv: &Inventory, i: &Instance, owner: &str) -> Vec<Xml> {
    let attached = i.state != "terminated";
    let public_dns = i
        .public_ip
        .as_ref()
        .map(|ip| format!("ec2-{}.compute-1.amazonaws.com", ip.replace('.', "-")));
    let mut eni = vec![
        Xml::text("networkInterfaceId", &i.eni),
        Xml::text("subnetId", &i.subnet_id),
        Xml::text("vpcId", &i.vpc_id),
        Xml::text("ownerId", owner),
        Xml::text("status", "in-use"),
        Xml::text("privateIpAddress", &i.private_ip),
        Xml::text("sourceDestCheck", true),
        group_set(inv, &i.groups),
        Xml::node(
            "attachment",
            vec![
                Xml::text("attachmentId", i.eni.replace("eni-", "eni-attach-")),
                Xml::text("deviceIndex", 0),
                Xml::text("status", "attached"),
                Xml::text("attachTime", &i.launched),
                Xml::text("deleteOnTermination", true),
            ],
        ),
    ];
    if let Some(ip) = &i.public_ip {
        eni.push(Xml::node(
            "association",
            vec![Xml::text("publicIp", ip), Xml::text("ipOwnerId", "amazon")],
        ));
    }
    let mut x = vec![
        Xml::text("instanceId", &i.id),
        Xml::text("imageId", &i.image_id),
        Xml::node("instanceState", state_xml(i.state)),
        Xml::text(
            "privateDnsName",
            format!("ip-{}.ec2.internal", i.private_ip.replace('.', "-")),
        ),
        Xml::text("dnsName", public_dns.clone().unwrap_or_default()),
        Xml::text(
            "reason",
            if i.state == "terminated" {
                "User initiated"
            } else {
                ""
            },
        ),
        Xml::text("amiLaunchIndex", 0),
        Xml::text("instanceType", &i.instance_type),
        Xml::text("launchTime", &i.launched),
        Xml::node(
            "placement",
            vec![
                Xml::text("availabilityZone", &i.zone),
                Xml::text("tenancy", "default"),
            ],
        ),
        Xml::node("monitoring", vec![Xml::text("state", "disabled")]),
        Xml::text("subnetId", &i.subnet_id),
        Xml::text("vpcId", &i.vpc_id),
        Xml::text("privateIpAddress", &i.private_ip),
    ];
    x.extend(Xml::opt("keyName", i.key_name.as_deref()));
    if attached {
        x.extend(Xml::opt("ipAddress", i.public_ip.as_deref()));
    }
    x.extend([
        group_set(inv, &i.groups),
        Xml::text("architecture", "x86_64"),
        Xml::text("rootDeviceType", "ebs"),
        Xml::text("rootDeviceName", &i.root_device),
        Xml::items(
            "blockDeviceMapping",
            if attached {
                vec![vec![
                    Xml::text("deviceName", &i.root_device),
                    Xml::node(
                        "ebs",
                        vec![
                            Xml::text("volumeId", &i.volume),
                            Xml::text("status", "attached"),
                            Xml::text("attachTime", &i.launched),
                            Xml::text("deleteOnTermination", true),
                        ],
                    ),
                ]]
            } else {
                vec![]
            },
        ),
        Xml::text("virtualizationType", "hvm"),
        Xml::text("clientToken", &i.client_token),
        Xml::tags("tagSet", &i.tags),
        Xml::text("hypervisor", "xen"),
        Xml::items(
            "networkInterfaceSet",
            if attached { vec![eni] } else { vec![] },
        ),
        Xml::text("ebsOptimized", false),
        Xml::text("enaSupport", true),
        Xml::node(
            "metadataOptions",
            vec![
                Xml::text("state", "applied"),
                Xml::text("httpTokens", &i.http_tokens),
                Xml::text("httpEndpoint", "enabled"),
            ],
        ),
    ]);
    x
}

/// `<item>` of `securityGroupInfo`.
pub(crate) fn group_xml(g: &Group, owner: &str) -> Vec<Xml> {
    let rules: Vec<Vec<Xml>> = g
        .ingress
        .iter()
        .map(|r| {
            let range = if r.cidr.contains(':') {
                vec![
                    Xml::items("ipRanges", vec![]),
                    Xml::items("ipv6Ranges", vec![vec![Xml::text("cidrIpv6", &r.cidr)]]),
                ]
            } else {
                vec![
                    Xml::items("ipRanges", vec![vec![Xml::text("cidrIp", &r.cidr)]]),
                    Xml::items("ipv6Ranges", vec![]),
                ]
            };
            let mut item = vec![
                Xml::text("ipProtocol", &r.protocol),
                Xml::text("fromPort", r.from),
                Xml::text("toPort", r.to),
                Xml::items("groups", vec![]),
            ];
            item.extend(range);
            item.push(Xml::items("prefixListIds", vec![]));
            item
        })
        .collect();
    vec![
        Xml::text("ownerId", owner),
        Xml::text("groupId", &g.id),
        Xml::text("groupName", &g.name),
        Xml::text("groupDescription", &g.description),
        Xml::text("vpcId", &g.vpc_id),
        Xml::items("ipPermissions", rules),
        Xml::items(
            "ipPermissionsEgress",
            vec![vec![
                Xml::text("ipProtocol", "-1"),
                Xml::items("groups", vec![]),
                Xml::items("ipRanges", vec![vec![Xml::text("cidrIp", "0.0.0.0/0")]]),
                Xml::items("prefixListIds", vec![]),
            ]],
        ),
        Xml::tags("tagSet", &g.tags),
    ]
}

/// `<item>` of `keySet`.
pub(crate) fn key_xml(k: &KeyPair) -> Vec<Xml> {
    vec![
        Xml::text("keyPairId", &k.id),
        Xml::text("keyName", &k.name),
        Xml::text("keyFingerprint", &k.fingerprint),
        Xml::text(
            "keyType",
            if k.public_key.starts_with("ssh-rsa") {
                "rsa"
            } else {
                "ed25519"
            },
        ),
        Xml::tags("tagSet", &k.tags),
    ]
}

/// `<item>` of `networkInterfaceSet` (DescribeNetworkInterfaces).
pub(crate) fn eni_xml(inv: &Inventory, e: &Eni, owner: &str) -> Vec<Xml> {
    let i = inv.instances.get(&e.instance);
    vec![
        Xml::text("networkInterfaceId", &e.id),
        Xml::text(
            "subnetId",
            i.map(|i| i.subnet_id.as_str()).unwrap_or_default(),
        ),
        Xml::text("vpcId", i.map(|i| i.vpc_id.as_str()).unwrap_or_default()),
        Xml::text(
            "availabilityZone",
            i.map(|i| i.zone.as_str()).unwrap_or_default(),
        ),
        Xml::text("ownerId", owner),
        Xml::text("status", "in-use"),
        Xml::text("interfaceType", "interface"),
        Xml::text(
            "privateIpAddress",
            i.map(|i| i.private_ip.as_str()).unwrap_or_default(),
        ),
        group_set(inv, &e.groups),
        Xml::node(
            "attachment",
            vec![
                Xml::text("instanceId", &e.instance),
                Xml::text("deviceIndex", 0),
                Xml::text("status", "attached"),
            ],
        ),
        Xml::tags("tagSet", &e.tags),
    ]
}
