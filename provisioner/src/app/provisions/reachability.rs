//! Whether a node could reach the agent address its user-data would name. A provision that
//! would boot a node dialling `0.0.0.0`, `::` or (without an explicit opt-in) loopback is
//! refused before anything is created: on a real cloud it could never enroll.
use std::net::IpAddr;

use crate::model::provision::ProvisionError;

/// How an agent address a provision names may look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentAddrPolicy {
    /// A routable address or a DNS name (a real deployment).
    #[default]
    Routable,
    /// Loopback is accepted too: the nodes run on this machine (demo mode, tests,
    /// `--allow-loopback-agent-advertise`).
    AllowLoopback,
}

impl AgentAddrPolicy {
    /// Checks `addr` (`host:port` or `[v6]:port`, already validated as such).
    pub fn check(self, addr: &str) -> Result<(), ProvisionError> {
        let host = match addr.strip_prefix('[') {
            Some(rest) => rest.split_once(']').map_or(rest, |(h, _)| h),
            None => addr.rsplit_once(':').map_or(addr, |(h, _)| h),
        };
        let refuse = |why: &str| {
            ProvisionError::FailedPrecondition(format!(
                "the agent address {addr} {why}; set --agent-advertise HOST:PORT to the \
                 address the new servers can reach this control plane's agent listener at"
            ))
        };
        let loopback_name = host.eq_ignore_ascii_case("localhost")
            || host.to_ascii_lowercase().ends_with(".localhost");
        match host.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => {
                Err(refuse("is a wildcard, not an address a server can dial"))
            }
            Ok(ip) if ip.is_loopback() && self == AgentAddrPolicy::Routable => Err(refuse(
                "is loopback, which a cloud server cannot reach (pass \
                 --allow-loopback-agent-advertise only when the nodes run on this machine)",
            )),
            Err(_) if loopback_name && self == AgentAddrPolicy::Routable => {
                Err(refuse("names this machine's loopback"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_refused_always_and_loopback_unless_allowed() {
        for addr in ["0.0.0.0:9443", "[::]:9443"] {
            for policy in [AgentAddrPolicy::Routable, AgentAddrPolicy::AllowLoopback] {
                let err = policy.check(addr).unwrap_err().to_string();
                assert!(err.contains("--agent-advertise"), "{err}");
            }
        }
        for addr in [
            "127.0.0.1:9443",
            "127.0.0.2:1",
            "[::1]:9443",
            "localhost:9443",
        ] {
            assert!(AgentAddrPolicy::Routable.check(addr).is_err(), "{addr}");
            assert!(AgentAddrPolicy::AllowLoopback.check(addr).is_ok(), "{addr}");
        }
        for addr in [
            "203.0.113.7:9443",
            "cp.example.com:9443",
            "[2001:db8::1]:443",
        ] {
            assert!(AgentAddrPolicy::Routable.check(addr).is_ok(), "{addr}");
        }
    }
}
