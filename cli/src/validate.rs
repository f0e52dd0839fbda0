//! Local checks of flag values, run before any network call so a typo is reported at once
//! and by the flag's name: node names, CIDRs, `host:port` addresses and plain identifiers.
//! The server checks everything again; these mirror its rules.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::CliError;

/// The longest node name (a DNS label).
pub(crate) const NAME_MAX: usize = levelrail_types::MAX_NODE_NAME_LEN;

/// `invalid <flag> "<value>": <reason>`, a usage error.
pub(crate) fn invalid(flag: &str, value: &str, reason: &str) -> CliError {
    CliError::usage(format!(
        "invalid {flag} \"{}\": {reason}",
        value.escape_debug()
    ))
}

/// A node name: `^[a-z][a-z0-9-]*$`, at most 63 characters, no trailing hyphen.
pub(crate) fn node_name(flag: &str, value: &str) -> Result<(), CliError> {
    use levelrail_types::NameRule;
    let Err(rule) = levelrail_types::check_node_name(value) else {
        return Ok(());
    };
    let why = match rule {
        NameRule::Empty => return Err(CliError::usage(format!("{flag} must not be empty"))),
        NameRule::TooLong => format!("at most {NAME_MAX} characters (got {})", value.len()),
        NameRule::NotAscii | NameRule::BadStart | NameRule::BadCharacter => {
            "must start with a lowercase letter and contain only lowercase letters, digits \
             and hyphens"
                .to_owned()
        }
        NameRule::TrailingHyphen => "must not end with a hyphen".to_owned(),
    };
    Err(invalid(flag, value, &why))
}

/// A provider identifier such as a region, size or image: not empty, no whitespace or
/// control characters (it ends up in a cloud-init document and in provider requests).
pub(crate) fn identifier(flag: &str, value: &str) -> Result<(), CliError> {
    if value.is_empty() {
        return Err(CliError::usage(format!("{flag} must not be empty")));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            flag,
            value,
            "must not contain spaces or control characters",
        ));
    }
    Ok(())
}

/// A CIDR block such as `203.0.113.7/32` or `2001:db8::/48`, with no host bits set.
pub(crate) fn cidr(flag: &str, value: &str) -> Result<(), CliError> {
    let Some((address, prefix)) = value.split_once('/') else {
        return Err(invalid(
            flag,
            value,
            "want an address with a prefix length, for example 203.0.113.7/32",
        ));
    };
    let address: IpAddr = address
        .parse()
        .map_err(|_| invalid(flag, value, "not an IPv4 or IPv6 address"))?;
    let max: u32 = if address.is_ipv4() { 32 } else { 128 };
    let prefix: u32 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= max && prefix.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            invalid(
                flag,
                value,
                &format!("the prefix length must be 0 to {max}"),
            )
        })?;
    let bits = match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)) << 96,
        IpAddr::V6(v6) => u128::from(v6),
    };
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    if bits & !mask != 0 {
        let network = match address {
            // The top 32 bits hold the IPv4 address, so the shifted value always fits.
            IpAddr::V4(_) => u32::try_from((bits & mask) >> 96)
                .map(|v4| Ipv4Addr::from(v4).to_string())
                .unwrap_or_default(),
            IpAddr::V6(_) => Ipv6Addr::from(bits & mask).to_string(),
        };
        return Err(invalid(
            flag,
            value,
            &format!("host bits are set, did you mean {network}/{prefix}?"),
        ));
    }
    Ok(())
}

/// `host:port` with a DNS name or IPv4 host, or `[ipv6]:port`; port 1 to 65535.
pub(crate) fn host_port(flag: &str, value: &str) -> Result<(), CliError> {
    let want = || {
        invalid(
            flag,
            value,
            "want host:port, for example cp.example.com:9443",
        )
    };
    if value.contains("://") {
        return Err(invalid(
            flag,
            value,
            "want host:port without a scheme, for example cp.example.com:9443",
        ));
    }
    let (host_ok, port) = if let Some(rest) = value.strip_prefix('[') {
        let (host, port) = rest.split_once("]:").ok_or_else(want)?;
        (host.parse::<Ipv6Addr>().is_ok(), port)
    } else {
        let (host, port) = value.rsplit_once(':').ok_or_else(want)?;
        let ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        (ok, port)
    };
    let port_ok = !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    if host_ok && port_ok {
        Ok(())
    } else {
        Err(want())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<(), CliError>) -> String {
        result.expect_err("rejected").to_string()
    }

    #[test]
    fn node_names_follow_the_dns_label_rule() {
        for good in ["web-1", "a", "b2", &"x".repeat(63)] {
            node_name("--name", good).expect(good);
        }
        assert_eq!(
            message(node_name("--name", "Web_1")),
            "invalid --name \"Web_1\": must start with a lowercase letter and contain only \
             lowercase letters, digits and hyphens"
        );
        assert_eq!(
            message(node_name("--name", "web-")),
            "invalid --name \"web-\": must not end with a hyphen"
        );
        assert!(message(node_name("--name", &"x".repeat(64))).contains("at most 63 characters"));
        assert!(node_name("--name", "1web").is_err());
        assert!(node_name("--name", "web\n1").is_err());
        assert_eq!(message(node_name("--name", "")), "--name must not be empty");
    }

    #[test]
    fn cidrs_need_a_prefix_and_no_host_bits() {
        for good in [
            "203.0.113.7/32",
            "10.0.0.0/8",
            "0.0.0.0/0",
            "2001:db8::/48",
            "::/0",
        ] {
            cidr("--ssh-source-cidr", good).expect(good);
        }
        assert_eq!(
            message(cidr("--ssh-source-cidr", "203.0.113.7/24")),
            "invalid --ssh-source-cidr \"203.0.113.7/24\": host bits are set, did you mean \
             203.0.113.0/24?"
        );
        assert!(message(cidr("--ssh-source-cidr", "203.0.113.7")).contains("prefix length"));
        assert!(message(cidr("--ssh-source-cidr", "1.2.3.4/33")).contains("0 to 32"));
        assert!(message(cidr("--ssh-source-cidr", "1.2.3/8")).contains("not an IPv4"));
        assert!(cidr("--ssh-source-cidr", "1.2.3.4/+8").is_err());
        assert!(message(cidr("--x", "2001:db8::1/64")).contains("2001:db8::/64"));
    }

    #[test]
    fn control_plane_addresses_are_host_and_port() {
        for good in [
            "cp.example.com:9443",
            "10.0.0.1:1",
            "[2001:db8::1]:9443",
            "cp:65535",
        ] {
            host_port("--control-plane-addr", good).expect(good);
        }
        for bad in [
            "cp.example.com",
            "cp:0",
            "cp:65536",
            ":9443",
            "cp:x",
            "a b:1",
            "[::1:9",
        ] {
            assert!(host_port("--control-plane-addr", bad).is_err(), "{bad}");
        }
        assert!(message(host_port("--x", "https://cp:9443")).contains("without a scheme"));
    }

    #[test]
    fn identifiers_reject_whitespace_and_control_characters() {
        identifier("--image", "ubuntu-24.04").expect("plain");
        assert!(identifier("--image", "a b").is_err());
        assert!(identifier("--image", "a\nb").is_err());
        assert_eq!(
            message(identifier("--region", "")),
            "--region must not be empty"
        );
    }
}
