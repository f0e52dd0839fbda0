//! Conversion between proto messages and model types. Proto types stop here: the model,
//! the application layer and the store never see them.
use levelrail_proto::nodes::v1 as pb;
use secrecy::{ExposeSecret as _, SecretString};
use time::{Duration, OffsetDateTime};

use crate::app::JoinTokenInfo;
use crate::model::{
    FieldError, HEARTBEAT_INTERVAL, Liveness, Node, NodeFilter, NodeName, WorkloadKind,
};
use levelrail_proto::credentials::v1::Provider as PbProvider;

/// A proto timestamp.
pub(super) fn timestamp(t: OffsetDateTime) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        // Always below 10^9, so it fits.
        nanos: i32::try_from(t.nanosecond()).unwrap_or_default(),
    }
}

fn workload_kind(k: WorkloadKind) -> pb::WorkloadKind {
    match k {
        WorkloadKind::Apps => pb::WorkloadKind::Apps,
        WorkloadKind::Builds => pb::WorkloadKind::Builds,
    }
}

fn node_status(l: Liveness) -> pb::NodeStatus {
    match l {
        Liveness::Online => pb::NodeStatus::Online,
        Liveness::Offline => pb::NodeStatus::Offline,
    }
}

/// A node as the API shows it, with its status at `now`.
pub(super) fn node(n: Node, now: OffsetDateTime) -> pb::Node {
    let server = n.server.clone();
    pb::Node {
        certificate_expires_at: Some(timestamp(n.cert_expires_at)),
        provider: server
            .as_ref()
            .map_or(PbProvider::Unspecified, |s| PbProvider::from(s.provider))
            as i32,
        region: server
            .as_ref()
            .map(|s| s.region.clone())
            .unwrap_or_default(),
        size: server.as_ref().map(|s| s.size.clone()).unwrap_or_default(),
        server_id: server.and_then(|s| s.server_id).unwrap_or_default(),
        status: node_status(n.liveness(now)).into(),
        id: n.id.to_string(),
        name: n.name.to_string(),
        addresses: n.addresses,
        agent_version: n.agent_version,
        docker_version: n.docker_version.unwrap_or_default(),
        enrolled_at: Some(timestamp(n.enrolled_at)),
        last_seen_at: Some(timestamp(n.last_seen_at)),
        workload_kinds: n
            .workload_kinds
            .into_iter()
            .map(|k| workload_kind(k).into())
            .collect(),
        provision_id: n.provision_id.unwrap_or_default(),
    }
}

/// The filter a `ListNodesRequest` asks for, at `now` (online and offline are relative to
/// it).
pub(super) fn node_filter(
    req: &pb::ListNodesRequest,
    now: OffsetDateTime,
) -> Result<NodeFilter, FieldError> {
    let mut filter = NodeFilter {
        // Unspecified: any cloud.
        provider: match PbProvider::try_from(req.provider) {
            Ok(known) => levelrail_types::ProviderId::try_from(known).ok(),
            Err(_) => return Err(FieldError::new("provider", "is not a known provider")),
        },
        workload_kind: match pb::WorkloadKind::try_from(req.workload_kind) {
            Ok(pb::WorkloadKind::Unspecified) => None,
            Ok(pb::WorkloadKind::Apps) => Some(WorkloadKind::Apps),
            Ok(pb::WorkloadKind::Builds) => Some(WorkloadKind::Builds),
            Err(_) => {
                return Err(FieldError::new("workload_kind", "must be apps or builds"));
            }
        },
        ..NodeFilter::default()
    };
    filter = match pb::NodeStatus::try_from(req.status) {
        Ok(pb::NodeStatus::Unspecified) => filter,
        Ok(pb::NodeStatus::Online) => filter.with_liveness(Liveness::Online, now),
        Ok(pb::NodeStatus::Offline) => filter.with_liveness(Liveness::Offline, now),
        Err(_) => return Err(FieldError::new("status", "must be online or offline")),
    };
    Ok(filter)
}

/// The arguments of `CreateJoinToken`: TTL (`0` = default), bound name, provision.
pub(super) type CreateJoinTokenArgs = (Option<Duration>, Option<NodeName>, Option<String>);

/// Validates a `CreateJoinTokenRequest`.
pub(super) fn create_join_token_args(
    req: pb::CreateJoinTokenRequest,
) -> Result<CreateJoinTokenArgs, FieldError> {
    let ttl = (req.ttl_seconds > 0).then(|| Duration::seconds(i64::from(req.ttl_seconds)));
    let node_name = match req.node_name.as_str() {
        "" => None,
        name => Some(NodeName::parse_as(name, "node_name")?),
    };
    let provision_id = Some(req.provision_id).filter(|p| !p.is_empty());
    Ok((ttl, node_name, provision_id))
}

/// The response to `CreateJoinToken`: the only place the full token string leaves.
pub(super) fn create_join_token_response(
    info: JoinTokenInfo,
    token: &SecretString,
) -> pb::CreateJoinTokenResponse {
    pb::CreateJoinTokenResponse {
        token_id: info.id.to_string(),
        token: token.expose_secret().to_owned(),
        expires_at: Some(timestamp(info.expires_at)),
        ca_fingerprint: info.ca_fingerprint,
    }
}

/// The response to `Enroll`.
pub(super) fn enroll_response(
    node: &Node,
    certificate_pem: String,
    ca_pem: &str,
) -> pb::EnrollResponse {
    pb::EnrollResponse {
        node_id: node.id.to_string(),
        certificate_pem,
        ca_pem: ca_pem.to_owned(),
        heartbeat_interval_seconds: u32::try_from(HEARTBEAT_INTERVAL.whole_seconds()).unwrap_or(30),
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use crate::model::NodeId;

    #[test]
    fn timestamps_keep_seconds_and_nanoseconds() {
        let ts = timestamp(datetime!(2030-01-01 00:00:01.5 UTC));
        assert_eq!((ts.seconds, ts.nanos), (1_893_456_001, 500_000_000));
    }

    #[test]
    fn an_empty_create_request_means_defaults() {
        let args = create_join_token_args(pb::CreateJoinTokenRequest::default()).expect("valid");
        assert_eq!(args, (None, None, None));
    }

    #[test]
    fn a_create_request_with_a_bad_name_names_the_field() {
        let req = pb::CreateJoinTokenRequest {
            node_name: "Bad_Name".into(),
            ..Default::default()
        };
        assert_eq!(
            create_join_token_args(req).expect_err("bad").field,
            "node_name"
        );
    }

    #[test]
    fn a_node_converts_with_its_kinds_and_status() {
        let t = datetime!(2030-01-01 00:00:00 UTC);
        let n = Node {
            id: NodeId::generate(),
            name: NodeName::parse("web-1").expect("name"),
            addresses: vec!["10.0.0.1".into()],
            agent_version: "1.0.0".into(),
            docker_version: Some("26.1.5".into()),
            workload_kinds: vec![WorkloadKind::Builds],
            provision_id: None,
            enrolled_at: t,
            last_seen_at: t,
            cert_serial: "01".into(),
            cert_fingerprint: "00".repeat(32),
            cert_expires_at: t + Duration::days(365),
            server: Some(crate::model::NodeServer {
                provider: levelrail_types::ProviderId::Hetzner,
                region: "fsn1".into(),
                size: "cx22".into(),
                server_id: Some("42".into()),
            }),
        };

        let online = node(n.clone(), t);
        let offline = node(n, t + Duration::hours(1));

        assert_eq!(online.workload_kinds, vec![pb::WorkloadKind::Builds as i32]);
        assert_eq!(online.status, pb::NodeStatus::Online as i32);
        assert_eq!(offline.status, pb::NodeStatus::Offline as i32);
        assert_eq!(online.provision_id, "");
        assert_eq!(online.name, "web-1");
        assert_eq!(online.docker_version, "26.1.5");
        assert_eq!(online.provider, PbProvider::Hetzner as i32);
        assert_eq!(
            (
                online.region.as_str(),
                online.size.as_str(),
                online.server_id.as_str()
            ),
            ("fsn1", "cx22", "42")
        );
        assert_eq!(
            online.certificate_expires_at,
            Some(timestamp(t + Duration::days(365)))
        );
    }

    #[test]
    fn a_node_filter_names_each_bad_field() {
        let now = datetime!(2030-01-01 00:00:00 UTC);
        for (req, field) in [
            (
                pb::ListNodesRequest {
                    status: 9,
                    ..Default::default()
                },
                "status",
            ),
            (
                pb::ListNodesRequest {
                    provider: 99,
                    ..Default::default()
                },
                "provider",
            ),
            (
                pb::ListNodesRequest {
                    workload_kind: 7,
                    ..Default::default()
                },
                "workload_kind",
            ),
        ] {
            assert_eq!(node_filter(&req, now).expect_err(field).field, field);
        }
        let online = node_filter(
            &pb::ListNodesRequest {
                status: pb::NodeStatus::Online as i32,
                provider: PbProvider::Aws as i32,
                workload_kind: pb::WorkloadKind::Builds as i32,
                ..Default::default()
            },
            now,
        )
        .expect("valid");
        assert_eq!(
            online,
            NodeFilter {
                seen_since: Some(now - crate::model::LIVENESS_WINDOW),
                seen_before: None,
                provider: Some(levelrail_types::ProviderId::Aws),
                workload_kind: Some(WorkloadKind::Builds),
            }
        );
    }
}
