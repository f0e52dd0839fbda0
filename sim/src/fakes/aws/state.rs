//! The fake account's inventory, partitioned by region like EC2's: a default VPC with a
//! default subnet per zone and its `default` security group (made on first use of a
//! region), security groups with ingress rules, key pairs, instances with their network
//! interface and root volume, the zones or subnets told to refuse launches, and the STS
//! sessions issued.
use std::collections::{BTreeMap, BTreeSet};

use super::query::Rule;

#[derive(Debug, Clone)]
pub(crate) struct Vpc {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) is_default: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Subnet {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) vpc_id: String,
    pub(crate) zone: String,
    pub(crate) cidr: String,
    pub(crate) default_for_az: bool,
}

/// A security group.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) vpc_id: String,
    pub(crate) tags: BTreeMap<String, String>,
    pub(crate) ingress: BTreeSet<Rule>,
}

#[derive(Debug, Clone)]
pub(crate) struct KeyPair {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) name: String,
    pub(crate) public_key: String,
    pub(crate) fingerprint: String,
    pub(crate) tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) reservation: String,
    pub(crate) image_id: String,
    pub(crate) instance_type: String,
    pub(crate) state: &'static str,
    pub(crate) key_name: Option<String>,
    pub(crate) subnet_id: String,
    pub(crate) vpc_id: String,
    pub(crate) zone: String,
    pub(crate) private_ip: String,
    pub(crate) public_ip: Option<String>,
    pub(crate) groups: Vec<String>,
    pub(crate) eni: String,
    pub(crate) volume: String,
    pub(crate) root_device: String,
    pub(crate) user_data: String,
    pub(crate) client_token: String,
    pub(crate) http_tokens: String,
    pub(crate) tags: BTreeMap<String, String>,
    pub(crate) launched: String,
}

/// A network interface (exists while its instance does).
#[derive(Debug, Clone)]
pub(crate) struct Eni {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) instance: String,
    pub(crate) groups: Vec<String>,
    pub(crate) tags: BTreeMap<String, String>,
}

/// An EBS volume (exists while its instance does).
#[derive(Debug, Clone)]
pub(crate) struct Volume {
    pub(crate) size_gb: u32,
    pub(crate) volume_type: String,
    pub(crate) tags: BTreeMap<String, String>,
}

/// Session credentials issued by STS.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) token: String,
    pub(crate) arn: String,
    pub(crate) user_id: String,
    /// When the session stops working.
    pub(crate) expires: std::time::SystemTime,
}

/// Everything in the fake account.
#[derive(Debug, Default)]
pub(crate) struct Inventory {
    next: u64,
    pub(crate) vpcs: BTreeMap<String, Vpc>,
    pub(crate) subnets: BTreeMap<String, Subnet>,
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) keys: BTreeMap<String, KeyPair>,
    pub(crate) instances: BTreeMap<String, Instance>,
    pub(crate) enis: BTreeMap<String, Eni>,
    pub(crate) volumes: BTreeMap<String, Volume>,
    pub(crate) sessions: BTreeMap<String, Session>,
    /// The tags of every instance ever launched (terminated ones included).
    pub(crate) launched_tags: Vec<BTreeMap<String, String>>,
    /// How many more `DescribeInstances` by filter answer as if no instance existed yet.
    pub(crate) stale_describes: usize,
    /// Zones and subnets that refuse launches, by zone name or subnet id.
    pub(crate) refusals: BTreeMap<String, LaunchRefusal>,
    /// Regions whose every zone refuses launches for lack of capacity.
    pub(crate) full_regions: BTreeSet<String>,
    regions: BTreeSet<String>,
}

impl Inventory {
    /// An empty account whose `full` regions refuse every launch for lack of capacity.
    pub(crate) fn with_full_regions(full: Vec<String>) -> Self {
        Self {
            full_regions: full.into_iter().collect(),
            ..Self::default()
        }
    }

    /// A fresh id with `prefix` (`i`, `sg`, …) and 17 hex digits.
    pub(crate) fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{:017x}", 0x0c0f_fee0_0000_0000u64 + self.next)
    }

    /// A counter value (addresses).
    pub(crate) fn serial(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Creates the region's default VPC, subnets and `default` group on first use.
    pub(crate) fn ensure_region(&mut self, region: &str) {
        if !self.regions.insert(region.to_owned()) {
            return;
        }
        let vpc = self.id("vpc");
        self.vpcs.insert(
            vpc.clone(),
            Vpc {
                id: vpc.clone(),
                region: region.to_owned(),
                is_default: true,
            },
        );
        for (i, zone) in ["a", "b", "c"].iter().enumerate() {
            let id = self.id("subnet");
            let subnet = Subnet {
                id: id.clone(),
                region: region.to_owned(),
                vpc_id: vpc.clone(),
                zone: format!("{region}{zone}"),
                cidr: format!("172.31.{}.0/20", i * 16),
                default_for_az: true,
            };
            self.subnets.insert(id, subnet);
        }
        let sg = self.id("sg");
        self.groups.insert(
            sg.clone(),
            Group {
                id: sg,
                region: region.to_owned(),
                name: "default".into(),
                description: "default VPC security group".into(),
                vpc_id: vpc,
                tags: BTreeMap::new(),
                ingress: BTreeSet::new(),
            },
        );
    }

    /// The zones of `region`, in order.
    pub(crate) fn zones(&self, region: &str) -> Vec<String> {
        let mut zones: Vec<String> = self
            .subnets
            .values()
            .filter(|s| s.region == region && s.default_for_az)
            .map(|s| s.zone.clone())
            .collect();
        zones.sort();
        zones.dedup();
        zones
    }

    /// Adds a subnet outside the default VPC (an operator-named network) in a new VPC.
    pub(crate) fn add_custom_subnet(&mut self, region: &str) -> (String, String) {
        self.ensure_region(region);
        let vpc = self.id("vpc");
        self.vpcs.insert(
            vpc.clone(),
            Vpc {
                id: vpc.clone(),
                region: region.to_owned(),
                is_default: false,
            },
        );
        let id = self.id("subnet");
        let subnet = Subnet {
            id: id.clone(),
            region: region.to_owned(),
            vpc_id: vpc.clone(),
            zone: format!("{region}b"),
            cidr: "10.20.1.0/24".into(),
            default_for_az: false,
        };
        self.subnets.insert(id.clone(), subnet);
        (vpc, id)
    }
}

/// Why a zone or subnet refuses launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchRefusal {
    /// `InsufficientInstanceCapacity`: no capacity for the type in the zone now.
    InsufficientCapacity,
    /// `Unsupported`: the zone does not offer the type.
    Unsupported,
}
