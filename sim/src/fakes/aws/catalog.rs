//! What every region of the fake offers: the region list (two opted out), three
//! availability zones, the instance types (one offered in two regions only), and public
//! images: Canonical's Ubuntu 24.04
//! builds (the newest is what a client should pick), a 22.04 build, an arm64 build, one
//! still pending, and an impostor with the same name from another owner.
use super::xml::Xml;

/// Canonical's account.
pub const CANONICAL: &str = "099720109477";
/// The image a correct Ubuntu 24.04 lookup picks in every region of the fake.
pub const NEWEST_NOBLE: &str = "ami-0f0e0d0c0b0a09082";

/// (region, opted in).
pub(crate) const REGIONS: [(&str, bool); 14] = [
    ("us-east-1", true),
    ("us-east-2", true),
    ("us-west-1", true),
    ("us-west-2", true),
    ("ca-central-1", true),
    ("eu-central-1", true),
    ("eu-west-1", true),
    ("eu-west-2", true),
    ("eu-north-1", true),
    ("ap-northeast-1", true),
    ("ap-southeast-1", true),
    ("sa-east-1", true),
    ("af-south-1", false),
    ("me-south-1", false),
];

/// An instance type of the fake, with what `DescribeInstanceTypes` tells of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TypeInfo {
    pub(crate) name: &'static str,
    pub(crate) vcpus: u32,
    pub(crate) mib: u32,
    /// `processorInfo.supportedArchitectures`.
    pub(crate) archs: &'static [&'static str],
    pub(crate) current: bool,
    pub(crate) metal: bool,
    /// The regions offering it (`None`: every region).
    pub(crate) regions: Option<&'static [&'static str]>,
}

const fn t(name: &'static str, vcpus: u32, mib: u32, archs: &'static [&'static str]) -> TypeInfo {
    TypeInfo {
        name,
        vcpus,
        mib,
        archs,
        current: true,
        metal: false,
        regions: None,
    }
}

const X86: &[&str] = &["x86_64"];
const ARM: &[&str] = &["arm64"];

/// The instance types of the fake: current x86_64 and arm64 types, a previous-generation
/// one, bare-metal ones (one a Mac), and one offered only in two US regions.
pub(crate) const INSTANCE_TYPES: [TypeInfo; 15] = [
    TypeInfo {
        current: false,
        ..t("t1.micro", 1, 627, &["i386", "x86_64"])
    },
    t("t3.nano", 2, 512, X86),
    t("t3.micro", 2, 1024, X86),
    t("t3.small", 2, 2048, X86),
    t("t3.medium", 2, 4096, X86),
    t("t3.large", 2, 8192, X86),
    t("t3.xlarge", 4, 16384, X86),
    t("t3.2xlarge", 8, 32768, X86),
    t("m7i.large", 2, 8192, X86),
    TypeInfo {
        regions: Some(&["us-east-1", "us-west-2"]),
        ..t("c7a.large", 2, 4096, X86)
    },
    TypeInfo {
        metal: true,
        ..t("m7i.metal-24xl", 96, 393216, X86)
    },
    t("t4g.micro", 2, 1024, ARM),
    t("t4g.small", 2, 2048, ARM),
    t("m7g.large", 2, 8192, ARM),
    TypeInfo {
        metal: true,
        ..t("mac2.metal", 12, 32768, &["arm64_mac"])
    },
];

/// A public image.
#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub(crate) id: &'static str,
    pub(crate) name: &'static str,
    pub(crate) owner: &'static str,
    pub(crate) created: &'static str,
    pub(crate) architecture: &'static str,
    pub(crate) state: &'static str,
}

pub(crate) const IMAGES: [Image; 6] = [
    Image {
        id: "ami-0a1b2c3d4e5f60001",
        name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250115",
        owner: CANONICAL,
        created: "2025-01-15T10:11:12.000Z",
        architecture: "x86_64",
        state: "available",
    },
    Image {
        id: NEWEST_NOBLE,
        name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20260301",
        owner: CANONICAL,
        created: "2026-03-01T08:00:00.000Z",
        architecture: "x86_64",
        state: "available",
    },
    Image {
        id: "ami-0a1b2c3d4e5f60003",
        name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20260410",
        owner: CANONICAL,
        created: "2026-04-10T08:00:00.000Z",
        architecture: "x86_64",
        state: "pending",
    },
    Image {
        id: "ami-0a1b2c3d4e5f60004",
        name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-arm64-server-20260402",
        owner: CANONICAL,
        created: "2026-04-02T08:00:00.000Z",
        architecture: "arm64",
        state: "available",
    },
    Image {
        id: "ami-0a1b2c3d4e5f60005",
        name: "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20260310",
        owner: CANONICAL,
        created: "2026-03-10T08:00:00.000Z",
        architecture: "x86_64",
        state: "available",
    },
    Image {
        id: "ami-0a1b2c3d4e5f60006",
        name: "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20270101",
        owner: "111122223333",
        created: "2027-01-01T00:00:00.000Z",
        architecture: "x86_64",
        state: "available",
    },
];

/// A type the fake knows.
pub(crate) fn instance_type(name: &str) -> Option<&'static TypeInfo> {
    INSTANCE_TYPES.iter().find(|t| t.name == name)
}

/// Whether `region` offers type `t`.
pub(crate) fn offered_in(t: &TypeInfo, region: &str) -> bool {
    t.regions.is_none_or(|r| r.contains(&region))
}

/// Whether `name` matches an EC2 filter pattern (`*` any run, `?` one character).
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

/// `<item>` of `imagesSet`.
pub(crate) fn image_xml(i: &Image) -> Vec<Xml> {
    vec![
        Xml::text("imageId", i.id),
        Xml::text("imageLocation", format!("{}/{}", i.owner, i.name)),
        Xml::text("imageState", i.state),
        Xml::text("imageOwnerId", i.owner),
        Xml::text("creationDate", i.created),
        Xml::text("isPublic", true),
        Xml::text("architecture", i.architecture),
        Xml::text("imageType", "machine"),
        Xml::text("name", i.name),
        Xml::text("rootDeviceType", "ebs"),
        Xml::text("rootDeviceName", "/dev/sda1"),
        Xml::items(
            "blockDeviceMapping",
            vec![vec![
                Xml::text("deviceName", "/dev/sda1"),
                Xml::node(
                    "ebs",
                    vec![
                        Xml::text("volumeSize", 8),
                        Xml::text("deleteOnTermination", true),
                        Xml::text("volumeType", "gp3"),
                    ],
                ),
            ]],
        ),
        Xml::text("virtualizationType", "hvm"),
        Xml::text("hypervisor", "xen"),
        Xml::text("enaSupport", true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_ec2_filters() {
        assert!(glob("ubuntu/images/*-24.04-amd64-server-*", IMAGES[1].name));
        assert!(!glob(
            "ubuntu/images/*-24.04-amd64-server-*",
            IMAGES[3].name
        ));
        assert!(glob("t3.?icro", "t3.micro"));
        assert!(!glob("abc", "abcd"));
    }
}
