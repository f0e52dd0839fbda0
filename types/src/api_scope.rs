//! What an operator API token may call: its scope, and the scope each API method needs.
//! The listener checks it on every call; the CLI and the web app name scopes the same way.
use std::fmt;
use std::str::FromStr;

/// An API token's scope. `Provision` and `CredentialsAdmin` each include `Read`; `Admin`
/// includes everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiScope {
    /// Lists and reads: providers, regions, sizes, provisions and their watch streams,
    /// nodes, orphans.
    Read,
    /// Read, plus provisioning: provisions, cancels, join tokens, node deletes, orphans'
    /// adoption and deletion.
    Provision,
    /// Read, plus the cloud credentials: set, delete, verify.
    CredentialsAdmin,
    /// Everything, the API tokens included.
    Admin,
}

/// Every method of the operator API and the scope it needs. A method missing here (a new
/// one) needs [`ApiScope::Admin`] until it is listed.
const METHODS: &[(&str, ApiScope)] = &[
    (
        "/levelrail.auth.v1.ApiTokensService/CreateApiToken",
        ApiScope::Admin,
    ),
    (
        "/levelrail.auth.v1.ApiTokensService/ListApiTokens",
        ApiScope::Admin,
    ),
    (
        "/levelrail.auth.v1.ApiTokensService/RevokeApiToken",
        ApiScope::Admin,
    ),
    (
        "/levelrail.audit.v1.AuditService/ListAuditEvents",
        ApiScope::Admin,
    ),
    (
        "/levelrail.credentials.v1.CredentialsService/ListProviders",
        ApiScope::Read,
    ),
    (
        "/levelrail.credentials.v1.CredentialsService/SetCredential",
        ApiScope::CredentialsAdmin,
    ),
    (
        "/levelrail.credentials.v1.CredentialsService/DeleteCredential",
        ApiScope::CredentialsAdmin,
    ),
    (
        "/levelrail.credentials.v1.CredentialsService/VerifyCredential",
        ApiScope::CredentialsAdmin,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/ListRegions",
        ApiScope::Read,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/ListSizes",
        ApiScope::Read,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/GetProvision",
        ApiScope::Read,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/ListProvisions",
        ApiScope::Read,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/WatchProvision",
        ApiScope::Read,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/Provision",
        ApiScope::Provision,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/CancelProvision",
        ApiScope::Provision,
    ),
    (
        "/levelrail.provisioner.v1.ProvisionerService/RetryProvision",
        ApiScope::Provision,
    ),
    ("/levelrail.nodes.v1.NodesService/ListNodes", ApiScope::Read),
    ("/levelrail.nodes.v1.NodesService/GetNode", ApiScope::Read),
    (
        "/levelrail.nodes.v1.NodesService/ListOrphans",
        ApiScope::Read,
    ),
    (
        "/levelrail.nodes.v1.NodesService/CreateJoinToken",
        ApiScope::Provision,
    ),
    (
        "/levelrail.nodes.v1.NodesService/RevokeJoinToken",
        ApiScope::Provision,
    ),
    (
        "/levelrail.nodes.v1.NodesService/DeleteNode",
        ApiScope::Provision,
    ),
    (
        "/levelrail.nodes.v1.NodesService/AdoptOrphan",
        ApiScope::Provision,
    ),
    (
        "/levelrail.nodes.v1.NodesService/DeleteOrphan",
        ApiScope::Provision,
    ),
    // The API's own description.
    (
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        ApiScope::Read,
    ),
    (
        "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ApiScope::Read,
    ),
];

/// The method name of a gRPC path (`Provision` of `/levelrail.provisioner.v1.ProvisionerService/Provision`).
pub fn method_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl ApiScope {
    /// Every scope, narrowest first.
    pub const ALL: [ApiScope; 4] = [
        ApiScope::Read,
        ApiScope::Provision,
        ApiScope::CredentialsAdmin,
        ApiScope::Admin,
    ];

    /// The scope's name: `read`, `provision`, `credentials-admin` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiScope::Read => "read",
            ApiScope::Provision => "provision",
            ApiScope::CredentialsAdmin => "credentials-admin",
            ApiScope::Admin => "admin",
        }
    }

    /// Whether a token of this scope may make a call that needs `needed`.
    pub fn includes(self, needed: ApiScope) -> bool {
        self == needed || self == ApiScope::Admin || needed == ApiScope::Read
    }

    /// The scope a call of the gRPC method `path` (`/package.Service/Method`) needs.
    pub fn needed_for(path: &str) -> ApiScope {
        Self::listed(path).unwrap_or(ApiScope::Admin)
    }

    /// The scope of `path` when it is a method of the API (`None`: no such method, or
    /// one not listed yet).
    pub fn listed(path: &str) -> Option<ApiScope> {
        METHODS
            .iter()
            .find(|(method, _)| *method == path)
            .map(|(_, scope)| *scope)
    }
}

impl fmt::Display for ApiScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope `{0}`: use read, provision, credentials-admin or admin")]
pub struct UnknownScope(pub String);

impl FromStr for ApiScope {
    type Err = UnknownScope;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApiScope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| UnknownScope(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_is_in_every_scope_and_admin_holds_all() {
        for scope in ApiScope::ALL {
            assert!(scope.includes(ApiScope::Read), "{scope} lacks read");
            assert!(ApiScope::Admin.includes(scope), "admin lacks {scope}");
            assert_eq!(scope.as_str().parse::<ApiScope>(), Ok(scope));
        }
        assert!(!ApiScope::Read.includes(ApiScope::Provision));
        assert!(!ApiScope::Provision.includes(ApiScope::CredentialsAdmin));
        assert!(!ApiScope::CredentialsAdmin.includes(ApiScope::Provision));
        assert!(!ApiScope::Provision.includes(ApiScope::Admin));
        assert!("root".parse::<ApiScope>().is_err());
    }

    #[test]
    fn methods_need_their_scope_and_unlisted_ones_need_admin() {
        let needs = ApiScope::needed_for;
        assert_eq!(
            needs("/levelrail.provisioner.v1.ProvisionerService/WatchProvision"),
            ApiScope::Read
        );
        assert_eq!(
            needs("/levelrail.provisioner.v1.ProvisionerService/Provision"),
            ApiScope::Provision
        );
        assert_eq!(
            needs("/levelrail.credentials.v1.CredentialsService/SetCredential"),
            ApiScope::CredentialsAdmin
        );
        assert_eq!(
            needs("/levelrail.auth.v1.ApiTokensService/ListApiTokens"),
            ApiScope::Admin
        );
        assert_eq!(
            needs("/levelrail.provisioner.v1.ProvisionerService/SomethingNew"),
            ApiScope::Admin
        );
    }
}
