//! DigitalOcean (API v2): regions, sizes with their USD monthly price, idempotent droplet
//! creation (a unique provision tag listed before any create), a cloud firewall with no
//! inbound rule, operator SSH keys, status mapping, cleanup and a probe that names each token
//! scope provisioning needs and the token lacks.
use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use levelrail_types::PermissionCheck;
use secrecy::SecretString;
use tracing::{debug, instrument, warn};

use super::cloud::{Cloud, Endpoint};
use super::http::RetryPolicy;
use super::ratelimit::RateLimiter;
use super::registry::{ClientParts, Learned, ProviderSpec};
use super::{
    CapabilityReport, CloudProvider, CreateServer, ErrorKind, Ownership, PollTarget, Price,
    Pricing, ProviderError, ProviderId, Reason, Region, ServerInfo, ServerState, Size,
};

mod cleanup;
mod client;
mod create;
mod errors;
mod keys;
mod names;
mod retry;
mod scopes;
mod wire;

pub use scopes::REQUIRED_SCOPES;

use client::Api;

/// The production API (the caller may override it, e.g. for a fake cloud).
pub const DEFAULT_BASE_URL: &str = "https://api.digitalocean.com/v2";

/// DigitalOcean in the table of clouds. Its error codes mean nothing beyond their kinds.
pub(crate) static CLOUD: Cloud = Cloud {
    id: ProviderId::DigitalOcean,
    endpoints: &[Endpoint {
        key: "api",
        flag: "digitalocean-api-url",
        env: "LEVELRAIL_DIGITALOCEAN_API_URL",
        default: Some(DEFAULT_BASE_URL),
        help: "DigitalOcean API base URL (proxies, tests)",
    }],
    reason: |_| Reason::Unspecified,
    spec: |settings| {
        let id = ProviderId::DigitalOcean;
        ProviderSpec {
            base_url: settings.url(id, "api").unwrap_or_default(),
            construct: Arc::new(move |p: ClientParts<'_>| {
                let client = DigitalOceanProvider::new(
                    p.base_url,
                    p.access.bearer(id)?,
                    p.limiter,
                    p.policy,
                )?
                .sharing(p.learned);
                Ok(Arc::new(client) as Arc<dyn CloudProvider>)
            }),
            limiter: RateLimiter::digitalocean,
        }
    },
};
/// What `Learned` records when the token may not untag droplets.
const UNTAG: &str = "digitalocean untag";
/// The most droplets one poll round reads: more than an account's droplet limit usually
/// allows (DigitalOcean's default is tens).
const POLL_BATCH: usize = 1_000;
/// Droplets one untag call names (the API documents no limit; one page's worth).
const UNTAG_CHUNK: usize = 200;
/// A droplet still carrying the booting tag this long after its create is no waiting
/// provision's (a provision's deadline comes first, by default 20 minutes): whoever polls it
/// takes the tag off, so a droplet whose driver went away is not listed by every poll after.
const STALE_BOOTING: time::Duration = time::Duration::hours(1);

/// The image used when a create does not name one.
pub const DEFAULT_IMAGE: &str = "ubuntu-24-04-x64";

/// DigitalOcean as seen with one API token.
#[derive(Debug)]
pub struct DigitalOceanProvider {
    api: Api,
    policy: RetryPolicy,
    /// What this token's clients learned; `UNTAG` refused (no `droplet:update`): the booting
    /// tag's list would grow with the fleet, so servers are read one at a time.
    learned: Arc<Learned>,
}

impl DigitalOceanProvider {
    /// Takes `tag` off `droplets`, a page's worth per call, until a call fails.
    async fn untag(&self, tag: &str, droplets: &[u64]) {
        for chunk in droplets.chunks(UNTAG_CHUNK) {
            match self.api.untag_droplets(tag, chunk).await {
                Ok(()) => debug!(droplets = chunk.len(), "booting tag taken off"),
                Err(e) if e.status == Some(403) => {
                    if self.learned.refuse(UNTAG) {
                        warn!(error = %e, "the token may not take the booting tag off droplets (it lacks droplet:update or tag:delete): booting droplets are read one at a time from now on, until the credential is replaced");
                    }
                    return;
                }
                Err(e) => {
                    warn!(droplets = chunk.len(), error = %e, "could not take the booting tag off droplets; a later poll will");
                    return;
                }
            }
        }
    }

    /// A client of the API at `base_url` (`DEFAULT_BASE_URL` in production) using `token`,
    /// sharing `limiter` with every other client of the same token
    /// (`RateLimiter::digitalocean()`).
    pub fn new(
        base_url: &str,
        token: SecretString,
        limiter: Arc<RateLimiter>,
        policy: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        let api = Api::new(base_url, token, limiter, policy.clone())?;
        Ok(Self {
            api,
            policy,
            learned: Arc::default(),
        })
    }

    /// This client, sharing what `learned` records with the other clients of its token.
    pub fn sharing(mut self, learned: Arc<Learned>) -> Self {
        self.learned = learned;
        self
    }
}

#[async_trait]
impl CloudProvider for DigitalOceanProvider {
    fn id(&self) -> ProviderId {
        ProviderId::DigitalOcean
    }

    async fn list_regions(&self) -> Result<Vec<Region>, ProviderError> {
        let regions = self.api.regions().await?;
        Ok(regions
            .into_iter()
            .filter(|r| r.available)
            .map(|r| Region {
                id: r.slug,
                name: r.name,
            })
            .collect())
    }

    async fn list_sizes(&self, region: &str) -> Result<Vec<Size>, ProviderError> {
        let sizes = self.api.sizes().await?;
        Ok(sizes
            .into_iter()
            .filter(|s| s.available && s.regions.iter().any(|r| r == region))
            .map(|s| Size {
                // Every size of this catalog is x86-64.
                architecture: levelrail_types::CpuArch::X86_64,
                unavailable_reason: None,
                name: if s.description.is_empty() {
                    s.slug.clone()
                } else {
                    format!("{} {}", s.description, s.slug)
                },
                id: s.slug,
                vcpus: s.vcpus,
                memory_mb: u32::try_from(s.memory).unwrap_or(u32::MAX),
                disk_gb: s.disk,
                pricing: Pricing::Known(Price::monthly(format!("{:.2}", s.price_monthly), "USD")),
            })
            .collect())
    }

    #[instrument(skip_all, fields(provision = %req.ownership.provision_id, region = %req.region, size = %req.size))]
    async fn create_server(&self, req: &CreateServer) -> Result<ServerInfo, ProviderError> {
        let droplet = create::create_droplet(&self.api, &self.policy, req).await?;
        Ok(server_info(droplet))
    }

    async fn get_server(&self, id: &str) -> Result<ServerInfo, ProviderError> {
        // Droplet ids are numbers; anything else cannot exist (and is never put in a path).
        let id: u64 = id.parse().map_err(|_| {
            ProviderError::new(
                ProviderId::DigitalOcean,
                ErrorKind::NotFound,
                "not_found",
                "no droplet has this id",
            )
        })?;
        Ok(server_info(self.api.droplet(id).await?))
    }

    /// Every droplet still booting is read in one round: DigitalOcean lists droplets by one
    /// tag only, so the poll lists the control plane's booting tag, not chosen droplets.
    fn poll_batch(&self) -> usize {
        POLL_BATCH
    }

    /// One group while the token may untag droplets; none (each server read alone) once
    /// it was refused to a client of the token.
    fn poll_group(&self, _server_id: &str) -> Option<String> {
        (!self.learned.refused(UNTAG)).then(String::new)
    }

    /// Lists the droplets tagged `levelrail-booting-<control plane>` (every page, 200 a page),
    /// then takes that tag off the targets whose polling this answer ends (running with a
    /// public address, or off) and off any droplet created over `STALE_BOOTING` ago, so the
    /// list holds the droplets still booting, not the fleet. Only this poll's targets: a
    /// droplet another replica polls stays listed for its next round. A target absent from
    /// the list (its tag already off, or a droplet created before the tag existed) is not
    /// found by this call.
    ///
    /// An untag that fails fails no poll: the droplets stay listed and a later poll takes
    /// the tag off. One the token is not allowed to make (no `droplet:update`) ends bulk
    /// polling for every client of the token: its servers are then read one at a time.
    async fn poll_servers(
        &self,
        control_plane: &str,
        targets: &[PollTarget],
    ) -> Result<Vec<ServerInfo>, ProviderError> {
        let tag = names::booting_tag(control_plane)?;
        let droplets = self.api.droplets_tagged(&tag).await?;
        let now = time::OffsetDateTime::now_utc();
        let targets: HashSet<&str> = targets.iter().map(|t| t.server_id.as_str()).collect();
        let done: Vec<u64> = droplets
            .iter()
            .filter(|d| done_booting(d, &targets, now))
            .map(|d| d.id)
            .collect();
        if !self.learned.refused(UNTAG) {
            self.untag(&tag, &done).await;
        }
        Ok(droplets.into_iter().map(server_info).collect())
    }

    #[instrument(skip_all, fields(droplet = server.unwrap_or("-"), provision = %ownership.provision_id))]
    async fn delete_provision_resources(
        &self,
        server: Option<&str>,
        ownership: &Ownership,
    ) -> Result<(), ProviderError> {
        cleanup::delete_provision(&self.api, &self.policy, server, ownership).await
    }

    async fn list_servers(&self, control_plane: &str) -> Result<Vec<ServerInfo>, ProviderError> {
        let tag = names::control_plane_tag(control_plane)?;
        Ok(self
            .api
            .droplets_tagged(&tag)
            .await?
            .into_iter()
            .map(server_info)
            .collect())
    }

    async fn probe(&self) -> Result<CapabilityReport, ProviderError> {
        let account = match self.api.account().await {
            Ok(a) => Some(a),
            Err(e) if e.status == Some(403) => None,
            Err(e) => return Err(e),
        };
        let scopes = scopes::check_scopes(&self.api, account.is_some()).await?;
        Ok(report(account.as_ref(), &scopes))
    }
}

/// The probe's verdict: the account (unknown without `account:read`), whether it is locked,
/// each scope the token lacks and each one not checked yet (reported as not granted).
fn report(account: Option<&wire::Account>, scopes: &scopes::Scopes) -> CapabilityReport {
    let missing = &scopes.missing;
    let owner = match account {
        Some(a) => match &a.team {
            Some(team) if !team.name.is_empty() => format!("team {} ({})", team.name, team.uuid),
            _ => format!("{} ({})", a.email, a.uuid),
        },
        None => "unknown account".to_owned(),
    };
    let locked = account.is_some_and(|a| a.status == "locked");
    let message = if locked {
        format!("DigitalOcean account {owner} is locked: no droplet can be created")
    } else if missing.is_empty() {
        format!(
            "DigitalOcean account {owner}: the token holds every scope provisioning uses ({} checked)",
            REQUIRED_SCOPES.len()
        )
    } else {
        let unchecked = if scopes.unchecked.is_empty() {
            String::new()
        } else {
            format!(
                " ({} checked once those are granted)",
                scopes.unchecked.join(", ")
            )
        };
        format!(
            "DigitalOcean account {owner}: the token lacks {} of the scopes provisioning uses: {}{unchecked}; create a token with full access, or with custom scopes including these",
            missing.len(),
            missing.join(", ")
        )
    };
    let not_granted: Vec<&str> = missing.iter().chain(&scopes.unchecked).copied().collect();
    CapabilityReport {
        can_write: missing.is_empty() && !locked,
        account: owner,
        message,
        permissions: PermissionCheck::of(REQUIRED_SCOPES, &not_granted),
    }
}

/// Whether a poll of `targets` at `now` takes the booting tag off `d`: a target the poll
/// finds running with an address (its driver needs nothing more) or off (it fails), or any
/// droplet created over `STALE_BOOTING` ago.
fn done_booting(d: &wire::Droplet, targets: &HashSet<&str>, now: time::OffsetDateTime) -> bool {
    let polled_out = match d.status.as_str() {
        "active" => public_ipv4(d).is_some(),
        "off" | "archive" => true,
        _ => false,
    };
    let target = || targets.contains(d.id.to_string().as_str());
    let created = time::OffsetDateTime::parse(
        &d.created_at,
        &time::format_description::well_known::Rfc3339,
    );
    (polled_out && target()) || created.is_ok_and(|t| now - t > STALE_BOOTING)
}

/// The droplet's first public IPv4.
fn public_ipv4(d: &wire::Droplet) -> Option<&str> {
    d.networks
        .v4
        .iter()
        .find(|n| n.kind == "public")
        .map(|n| n.ip_address.as_str())
}

/// A droplet as a `ServerInfo`: `new` → pending, `active` → running, `off` / `archive` →
/// failed; the address is the first public IPv4.
fn server_info(d: wire::Droplet) -> ServerInfo {
    let state = match d.status.as_str() {
        "active" => ServerState::Running,
        "off" | "archive" => ServerState::Failed,
        _ => ServerState::Pending,
    };
    ServerInfo {
        id: d.id.to_string(),
        ipv4: public_ipv4(&d).map(str::to_owned),
        provision_id: names::provision_from_tags(&d.tags),
        name: d.name,
        state,
        provider_state: d.status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn droplet(status: &str) -> wire::Droplet {
        serde_json::from_value(serde_json::json!({
            "id": 42, "name": "web-1", "status": status,
            "networks": {"v4": [
                {"ip_address": "10.0.0.2", "type": "private"},
                {"ip_address": "203.0.113.9", "type": "public"}
            ]},
            "tags": ["levelrail", "levelrail-provision-npv_7"]
        }))
        .unwrap()
    }

    #[test]
    fn droplet_states_map_to_server_states() {
        for (status, want) in [
            ("new", ServerState::Pending),
            ("active", ServerState::Running),
            ("off", ServerState::Failed),
            ("archive", ServerState::Failed),
        ] {
            let info = server_info(droplet(status));
            assert_eq!((info.state, info.provider_state.as_str()), (want, status));
        }
        let info = server_info(droplet("active"));
        assert_eq!(info.ipv4.as_deref(), Some("203.0.113.9"));
        assert_eq!(info.provision_id.as_deref(), Some("npv_7"));
        assert_eq!(info.id, "42");
    }

    #[test]
    fn the_booting_tag_comes_off_targets_done_booting_and_droplets_booting_for_an_hour() {
        let now = time::macros::datetime!(2031-03-01 12:00:00 UTC);
        let target = HashSet::from(["42"]);
        let none = HashSet::new();
        let at = |status: &str, created_at: &str, no_address: bool| {
            let mut d = droplet(status);
            d.created_at = created_at.into();
            if no_address {
                d.networks.v4.clear();
            }
            d
        };
        let recent = "2031-03-01T11:55:00Z";
        let old = "2031-03-01T10:59:59Z";
        for (d, targets, want) in [
            (at("active", recent, false), &target, true),
            (at("off", recent, false), &target, true),
            (at("archive", recent, false), &target, true),
            (at("active", recent, true), &target, false),
            (at("new", recent, false), &target, false),
            // Another replica's droplet stays listed for that replica's next round.
            (at("active", recent, false), &none, false),
            (at("new", old, true), &none, true),
            (at("new", "", true), &none, false),
        ] {
            assert_eq!(
                done_booting(&d, targets, now),
                want,
                "{} created {:?}, {} targets",
                d.status,
                d.created_at,
                targets.len()
            );
        }
    }
}
