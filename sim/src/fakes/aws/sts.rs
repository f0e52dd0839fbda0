//! STS actions of the fake: `GetCallerIdentity`; `GetSessionToken` (long-term keys only,
//! as at AWS) and `AssumeRole` (a role ARN of the fake's account), both issuing `ASIA…`
//! session credentials that the fake then accepts with their session token.
use std::sync::Arc;

use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::state::Session;
use super::wire::{Call, Reply, Shared};
use super::xml::{self, Xml};
use crate::fakes::edge::lock;

pub(crate) fn handle(shared: &Arc<Shared>, call: &Call) -> Reply {
    let result = match call.action.as_str() {
        "GetCallerIdentity" => Ok(vec![
            Xml::text("Arn", &call.caller.arn),
            Xml::text("UserId", &call.caller.user_id),
            Xml::text("Account", &shared.account_id),
        ]),
        "GetSessionToken" if call.caller.session => Err(Reply::sts_error(
            403,
            "AccessDenied",
            "Cannot call GetSessionToken with session credentials",
        )),
        "GetSessionToken" => {
            let (arn, user) = (call.caller.arn.clone(), call.caller.user_id.clone());
            duration(call, 43_200).map(|secs| vec![issue(shared, arn, user, secs)])
        }
        "AssumeRole" => assume_role(shared, call),
        other => Err(Reply::sts_error(
            400,
            "InvalidAction",
            &format!("Could not find operation {other} for version 2011-06-15"),
        )),
    };
    match result {
        Ok(children) => Reply::ok(xml::sts_response(&call.action, &call.request_id, children)),
        Err(reply) => reply,
    }
}

fn duration(call: &Call, max: i64) -> Result<i64, Reply> {
    match call.params.str("DurationSeconds").map(str::parse::<i64>) {
        None => Ok(3600),
        Some(Ok(s)) if (900..=max).contains(&s) => Ok(s),
        Some(_) => Err(Reply::sts_error(
            400,
            "ValidationError",
            &format!("DurationSeconds must be between 900 and {max}"),
        )),
    }
}

fn assume_role(shared: &Arc<Shared>, call: &Call) -> Result<Vec<Xml>, Reply> {
    let role = call.params.str("RoleArn").unwrap_or_default();
    let session = call.params.str("RoleSessionName").unwrap_or_default();
    let prefix = format!("arn:aws:iam::{}:role/", shared.account_id);
    let Some(name) = role
        .strip_prefix(&prefix)
        .and_then(|p| p.rsplit('/').next())
        .filter(|n| !n.is_empty())
    else {
        return Err(Reply::sts_error(
            403,
            "AccessDenied",
            &format!(
                "{} is not authorized to perform: sts:AssumeRole on resource: {role}",
                call.caller.arn
            ),
        ));
    };
    if session.is_empty() || session.len() > 64 {
        return Err(Reply::sts_error(
            400,
            "ValidationError",
            "RoleSessionName must be 1 to 64 characters",
        ));
    }
    let secs = duration(call, 3600)?;
    let role_id = format!("AROA{:016X}", name.len() * 7919);
    let arn = format!(
        "arn:aws:sts::{}:assumed-role/{name}/{session}",
        shared.account_id
    );
    let user = format!("{role_id}:{session}");
    Ok(vec![
        issue(shared, arn.clone(), user.clone(), secs),
        Xml::node(
            "AssumedRoleUser",
            vec![Xml::text("AssumedRoleId", user), Xml::text("Arn", arn)],
        ),
        Xml::text("PackedPolicySize", 6),
    ])
}

/// New session credentials acting as `arn`.
fn issue(shared: &Arc<Shared>, arn: String, user_id: String, secs: i64) -> Xml {
    let life = shared
        .session_lifetime
        .map_or(secs, |l| i64::try_from(l.as_secs()).unwrap_or(i64::MAX));
    let expires_at = std::time::SystemTime::now()
        + std::time::Duration::from_secs(u64::try_from(life).unwrap_or(0));
    let mut inv = lock(&shared.inventory);
    let n = inv.serial();
    let key = format!("ASIAFAKE{n:012X}");
    let secret = format!("fakeSessionSecret{n:023}");
    let token = format!("FakeSessionToken{n:08}/{}", "A".repeat(64));
    inv.sessions.insert(
        key.clone(),
        Session {
            token: token.clone(),
            arn,
            user_id,
            expires: expires_at,
        },
    );
    let expires = (OffsetDateTime::now_utc() + Duration::seconds(life))
        .replace_nanosecond(0)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    Xml::node(
        "Credentials",
        vec![
            Xml::text("AccessKeyId", key),
            Xml::text("SecretAccessKey", secret),
            Xml::text("SessionToken", token),
            Xml::text("Expiration", expires.format(&Rfc3339).unwrap_or_default()),
        ],
    )
}
