//! The principal's roles as ARM enforces them: at subscription scope Reader (`*/read`), none,
//! or a custom role's actions; on the resource groups Contributor (everything but
//! `Microsoft.Authorization` writes), Reader, or a custom role (`actions`, `notActions`).
//! A refused call gets 403 `AuthorizationFailed` naming the action and the scope.
use super::Shared;
use super::state::error;
use crate::fakes::edge::{Reply, lock};

/// `None` when the principal may perform `action` at subscription scope, else ARM's 403.
pub(crate) fn subscription_check(shared: &Shared, action: &str) -> Option<Reply> {
    let allowed = {
        let s = lock(&shared.settings);
        match &s.subscription_actions {
            Some(actions) => actions.iter().any(|p| glob(p, action)),
            None => s.subscription_reader && glob("*/read", action),
        }
    };
    (!allowed).then(|| {
        forbidden(
            action,
            &format!("/subscriptions/{}", shared.cfg.subscription_id),
        )
    })
}

/// 403 `AuthorizationFailed` for `action` over `scope`.
pub(crate) fn forbidden(action: &str, scope: &str) -> Reply {
    Reply::json(
        403,
        error(
            "AuthorizationFailed",
            &format!(
                "The client does not have authorization to perform action '{action}' over scope '{scope}' or the scope is invalid."
            ),
        ),
    )
}

/// Whether the principal's role on the resource groups allows `action`.
pub(crate) fn group_allows(shared: &Shared, action: &str) -> bool {
    let s = lock(&shared.settings);
    let (actions, not_actions): (Vec<String>, Vec<String>) = match &s.custom_role {
        Some(role) => role.clone(),
        None if s.contributor => (
            vec!["*".into()],
            vec!["Microsoft.Authorization/*/Write".into()],
        ),
        None => (vec!["*/read".into()], vec![]),
    };
    actions.iter().any(|p| glob(p, action)) && !not_actions.iter().any(|p| glob(p, action))
}

/// An Azure action pattern: case-insensitive, `*` matching any run of characters.
fn glob(pattern: &str, action: &str) -> bool {
    fn go(p: &[u8], a: &[u8]) -> bool {
        match p.split_first() {
            None => a.is_empty(),
            Some((b'*', rest)) => (0..=a.len()).any(|i| go(rest, &a[i..])),
            Some((c, rest)) => a
                .split_first()
                .is_some_and(|(d, tail)| c.eq_ignore_ascii_case(d) && go(rest, tail)),
        }
    }
    go(pattern.as_bytes(), action.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_patterns_match_case_insensitively_with_wildcards() {
        assert!(glob("*/read", "Microsoft.Compute/skus/read"));
        assert!(glob("microsoft.compute/*", "Microsoft.Compute/skus/read"));
        assert!(!glob("*/read", "Microsoft.Compute/virtualMachines/write"));
    }
}
