//! The wire enum `levelrail.auth.v1.ApiTokenScope` and the workspace's one scope type
//! (`levelrail_types::ApiScope`), mapped here once for every crate.
use levelrail_types::ApiScope;

use crate::auth::v1::ApiTokenScope;

impl From<ApiScope> for ApiTokenScope {
    fn from(s: ApiScope) -> Self {
        match s {
            ApiScope::Read => ApiTokenScope::Read,
            ApiScope::Provision => ApiTokenScope::Provision,
            ApiScope::CredentialsAdmin => ApiTokenScope::CredentialsAdmin,
            ApiScope::Admin => ApiTokenScope::Admin,
        }
    }
}

impl ApiTokenScope {
    /// The scope this wire value names; `None` for `UNSPECIFIED`.
    pub fn scope(self) -> Option<ApiScope> {
        match self {
            ApiTokenScope::Unspecified => None,
            ApiTokenScope::Read => Some(ApiScope::Read),
            ApiTokenScope::Provision => Some(ApiScope::Provision),
            ApiTokenScope::CredentialsAdmin => Some(ApiScope::CredentialsAdmin),
            ApiTokenScope::Admin => Some(ApiScope::Admin),
        }
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
