//! Orphan conversions between the model and `levelrail.nodes.v1`.
use levelrail_proto::nodes::v1 as pb;
use secrecy::ExposeSecret as _;

use super::convert::timestamp;
use super::provision_convert::provider_to_pb;
use crate::app::Adoption;
use crate::model::{Orphan, OrphanReason, OrphanState};

fn reason(r: OrphanReason) -> pb::OrphanReason {
    match r {
        OrphanReason::UndoGaveUp => pb::OrphanReason::UndoGaveUp,
        OrphanReason::FailedProvision => pb::OrphanReason::FailedProvision,
        OrphanReason::UnknownProvision => pb::OrphanReason::UnknownProvision,
    }
}

fn state(s: OrphanState) -> pb::OrphanState {
    match s {
        OrphanState::Pending => pb::OrphanState::Pending,
        OrphanState::Deleted => pb::OrphanState::Deleted,
        OrphanState::Adopted => pb::OrphanState::Adopted,
    }
}

/// An orphan on the wire.
pub(super) fn orphan(o: Orphan) -> pb::Orphan {
    pb::Orphan {
        id: o.id.to_string(),
        provider: provider_to_pb(o.provider).into(),
        server_id: o.server_id.unwrap_or_default(),
        provision_id: o.provision_id,
        node_name: o.node_name,
        region: o.region,
        reason: reason(o.reason).into(),
        first_seen: Some(timestamp(o.first_seen)),
        attempts: o.attempts,
        last_error: o.last_error.unwrap_or_default(),
        state: state(o.state).into(),
    }
}

/// `AdoptOrphan`'s answer: the token and env file, shown once.
pub(super) fn adoption(a: Adoption) -> pb::AdoptOrphanResponse {
    pb::AdoptOrphanResponse {
        token_id: a.token.id.to_string(),
        token: a.secret.expose_secret().to_owned(),
        expires_at: Some(timestamp(a.token.expires_at)),
        env_file: a.env_file.expose_secret().to_owned(),
        env_file_path: a.env_file_path.to_owned(),
        command: a.command,
        orphan: Some(orphan(a.orphan)),
    }
}

/// `DeleteOrphan`'s answer.
pub(super) fn deletion(o: Orphan) -> pb::DeleteOrphanResponse {
    pb::DeleteOrphanResponse {
        deleted: o.state == OrphanState::Deleted,
        orphan: Some(orphan(o)),
    }
}
