//! The wire enum `levelrail.auth.v1.ApiTokenScope` and the workspace's one scope type
//! (`levelrail_types::ApiScope`), mapped here once for every crate, by name:
//! `API_TOKEN_SCOPE_<NAME>` on the wire is the scope named `<name>` (`-` as `_`).
use levelrail_types::ApiScope;

use crate::auth::v1::ApiTokenScope;

/// The prefix of every wire name (`API_TOKEN_SCOPE_READ`).
const PREFIX: &str = "API_TOKEN_SCOPE_";

impl From<ApiScope> for ApiTokenScope {
    /// `UNSPECIFIED` for a scope the proto does not list, which the round-trip test forbids.
    fn from(s: ApiScope) -> Self {
        let wire = format!(
            "{PREFIX}{}",
            s.as_str().to_ascii_uppercase().replace('-', "_")
        );
        ApiTokenScope::from_str_name(&wire).unwrap_or(ApiTokenScope::Unspecified)
    }
}

impl ApiTokenScope {
    /// The scope this wire value names; `None` for `UNSPECIFIED`.
    pub fn scope(self) -> Option<ApiScope> {
        self.as_str_name()
            .strip_prefix(PREFIX)?
            .to_ascii_lowercase()
            .replace('_', "-")
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_round_trips_through_the_wire_enum() {
        for s in ApiScope::ALL {
            assert_eq!(ApiTokenScope::from(s).scope(), Some(s));
        }
        assert_eq!(ApiTokenScope::Unspecified.scope(), None);
        let wire: Vec<ApiTokenScope> = (1..)
            .map_while(|n| ApiTokenScope::try_from(n).ok())
            .collect();
        assert_eq!(wire.len(), ApiScope::ALL.len());
    }
}

#[cfg(test)]
mod every_method {
    use levelrail_types::ApiScope;
    use prost::Message as _;

    /// Every operator RPC is listed with the scope it needs: a new one would otherwise need
    /// `admin` silently. The agents' `EnrollmentService` is served on the agent listener,
    /// which takes no API tokens; the broker is internal.
    #[test]
    fn every_operator_rpc_names_its_scope() {
        let set = prost_types::FileDescriptorSet::decode(crate::FILE_DESCRIPTOR_SET)
            .expect("descriptor set");
        let mut checked = 0;
        for file in &set.file {
            let package = file.package();
            if !package.starts_with("levelrail.") || package.contains(".internal.") {
                continue;
            }
            for service in &file.service {
                if service.name() == "EnrollmentService" {
                    continue;
                }
                for method in &service.method {
                    let path = format!("/{package}.{}/{}", service.name(), method.name());
                    let listed = ApiScope::listed(&path);
                    if ["ApiTokensService", "AuditService"].contains(&service.name()) {
                        assert_eq!(listed, Some(ApiScope::Admin), "{path}");
                    } else {
                        assert!(
                            listed.is_some_and(|s| s != ApiScope::Admin),
                            "{path} is not given a scope"
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "only {checked} methods seen");
    }
}
