//! The Query protocol's request side: a form-encoded body (`Action=…&Version=…&Filter.1.Name=…`)
//! read into flat parameters, with the EC2 serialization of lists (`Name.N`), filters,
//! tag specifications and IP permissions, and the SigV4 `Authorization` header's scope.
use std::collections::BTreeMap;

/// The decoded parameters of one request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Params(pub(crate) BTreeMap<String, String>);

impl Params {
    /// Decodes `application/x-www-form-urlencoded`.
    pub(crate) fn parse(body: &str) -> Self {
        Self(
            body.split('&')
                .filter(|p| !p.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A non-empty value.
    pub(crate) fn str(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub(crate) fn flag(&self, key: &str) -> bool {
        self.get(key) == Some("true")
    }

    /// `prefix.1`, `prefix.2`, … until one is missing.
    pub(crate) fn list(&self, prefix: &str) -> Vec<String> {
        (1..)
            .map_while(|i| self.get(&format!("{prefix}.{i}")).map(str::to_owned))
            .collect()
    }

    /// How many `prefix.N.…` entries there are.
    pub(crate) fn count(&self, prefix: &str) -> usize {
        (1..)
            .take_while(|i| {
                let p = format!("{prefix}.{i}.");
                self.0
                    .range(p.clone()..)
                    .next()
                    .is_some_and(|(k, _)| k.starts_with(&p))
            })
            .count()
    }

    /// `Filter.N.Name` with its `Filter.N.Value.M`.
    pub(crate) fn filters(&self) -> Vec<(String, Vec<String>)> {
        (1..=self.count("Filter"))
            .filter_map(|i| {
                let name = self.get(&format!("Filter.{i}.Name"))?.to_owned();
                Some((name, self.list(&format!("Filter.{i}.Value"))))
            })
            .collect()
    }

    /// The tags of `TagSpecification.N` whose resource type is `resource`.
    pub(crate) fn tags_for(&self, resource: &str) -> BTreeMap<String, String> {
        let mut tags = BTreeMap::new();
        for i in 1..=self.count("TagSpecification") {
            if self.get(&format!("TagSpecification.{i}.ResourceType")) != Some(resource) {
                continue;
            }
            for j in 1..=self.count(&format!("TagSpecification.{i}.Tag")) {
                let p = format!("TagSpecification.{i}.Tag.{j}");
                if let Some(k) = self.get(&format!("{p}.Key")) {
                    tags.insert(
                        k.to_owned(),
                        self.get(&format!("{p}.Value"))
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
            }
        }
        tags
    }

    /// Resource types named by `TagSpecification.N.ResourceType`.
    pub(crate) fn tagged_types(&self) -> Vec<String> {
        (1..=self.count("TagSpecification"))
            .filter_map(|i| {
                self.get(&format!("TagSpecification.{i}.ResourceType"))
                    .map(str::to_owned)
            })
            .collect()
    }

    /// `IpPermissions.N` as rules (protocol, from, to, CIDR), one per range.
    /// Every rule description (`IpPermissions.N.IpRanges.M.Description`, and the IPv6
    /// ranges'), in order.
    pub(crate) fn rule_descriptions(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for i in 1..=self.count("IpPermissions") {
            for ranges in ["IpRanges", "Ipv6Ranges"] {
                let p = format!("IpPermissions.{i}.{ranges}");
                for j in 1..=self.count(&p) {
                    out.extend(self.get(&format!("{p}.{j}.Description")));
                }
            }
        }
        out
    }

    pub(crate) fn ip_permissions(&self) -> Vec<Rule> {
        let mut rules = Vec::new();
        for i in 1..=self.count("IpPermissions") {
            let p = format!("IpPermissions.{i}");
            let protocol = self
                .get(&format!("{p}.IpProtocol"))
                .unwrap_or("-1")
                .to_owned();
            let port = |k: &str| {
                self.get(&format!("{p}.{k}"))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(-1)
            };
            let (from, to) = (port("FromPort"), port("ToPort"));
            let mut cidrs: Vec<String> = (1..=self.count(&format!("{p}.IpRanges")))
                .filter_map(|j| {
                    self.get(&format!("{p}.IpRanges.{j}.CidrIp"))
                        .map(str::to_owned)
                })
                .collect();
            cidrs.extend(
                (1..=self.count(&format!("{p}.Ipv6Ranges"))).filter_map(|j| {
                    self.get(&format!("{p}.Ipv6Ranges.{j}.CidrIpv6"))
                        .map(str::to_owned)
                }),
            );
            rules.extend(cidrs.into_iter().map(|cidr| Rule {
                protocol: protocol.clone(),
                from,
                to,
                cidr,
            }));
        }
        rules
    }
}

/// One ingress rule of a security group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rule {
    pub(crate) protocol: String,
    pub(crate) from: i64,
    pub(crate) to: i64,
    /// IPv4 or IPv6 CIDR.
    pub(crate) cidr: String,
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'+', _) => out.push(b' '),
            (b'%', Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the SigV4 `Authorization` header names: access key, region and service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scope {
    pub(crate) access_key_id: String,
    pub(crate) region: String,
    pub(crate) service: String,
}

/// `AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/ec2/aws4_request, SignedHeaders=…, Signature=…`.
pub(crate) fn scope(authorization: &str) -> Option<Scope> {
    let rest = authorization.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let credential = rest
        .split(',')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("Credential="))?;
    let parts: Vec<&str> = credential.split('/').collect();
    let signed = rest.contains("SignedHeaders=") && rest.contains("Signature=");
    match parts.as_slice() {
        [key, _date, region, service, "aws4_request"] if signed && !key.is_empty() => Some(Scope {
            access_key_id: (*key).to_owned(),
            region: (*region).to_owned(),
            service: (*service).to_owned(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_filters_and_tags_follow_the_ec2_serialization() {
        let p = Params::parse(
            "Action=DescribeImages&Owner.1=099720109477&Filter.1.Name=name&Filter.1.Value.1=ubuntu%2Fimages%2A\
             &Filter.2.Name=state&Filter.2.Value.1=available&TagSpecification.1.ResourceType=instance\
             &TagSpecification.1.Tag.1.Key=Name&TagSpecification.1.Tag.1.Value=web+1",
        );
        assert_eq!(p.list("Owner"), ["099720109477"]);
        assert_eq!(
            p.filters(),
            vec![
                ("name".into(), vec!["ubuntu/images*".into()]),
                ("state".into(), vec!["available".into()])
            ]
        );
        assert_eq!(
            p.tags_for("instance").get("Name").map(String::as_str),
            Some("web 1")
        );
    }

    #[test]
    fn the_scope_names_key_region_and_service() {
        let s = scope(
            "AWS4-HMAC-SHA256 Credential=AKIDX/20260101/eu-west-1/ec2/aws4_request, SignedHeaders=host, Signature=ab",
        );
        assert_eq!(
            s.map(|s| (s.access_key_id, s.region, s.service)),
            Some(("AKIDX".into(), "eu-west-1".into(), "ec2".into()))
        );
        assert!(scope("Bearer x").is_none());
    }
}
