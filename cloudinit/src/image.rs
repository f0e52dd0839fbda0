//! The agent's container image, for operators who run the agent from a registry: always a
//! digest pin, with the reference grammar checked (a lowercase subset of the distribution
//! reference grammar).
use std::fmt;

use super::RenderError;
use super::params::plain_ascii;

const PARAM: &str = "agent_image";
const MAX_REPOSITORY_LEN: usize = 255;
const DIGEST_PREFIX: &str = "sha256:";

/// A registry image of the agent, pinned by digest (`--agent-image repo@sha256:<digest>`):
/// the exact image, immune to a moved tag. Tags are refused, and no default names any
/// image: without one the node runs the control plane's own binary.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentImage {
    /// e.g. `registry.example.com/ops/levelrail-agent`.
    pub repository: String,
    /// `sha256:` followed by 64 lowercase hex digits.
    pub digest: String,
}

impl AgentImage {
    /// Parses `repository@sha256:<64 hex>`. A tag (`repository:tag`, even next to a
    /// digest) is refused: a tag can move, a digest cannot.
    pub fn parse(reference: &str) -> Result<Self, RenderError> {
        plain_ascii(
            PARAM,
            reference,
            MAX_REPOSITORY_LEN + 1 + DIGEST_PREFIX.len() + 64,
        )?;
        let Some((repository, digest)) = reference.split_once('@') else {
            return Err(RenderError::invalid(
                PARAM,
                "needs a digest (repository@sha256:<64 hex digits>); tags are refused because \
                 they can move",
            ));
        };
        if last_component(repository).contains(':') {
            return Err(RenderError::invalid(
                PARAM,
                "give a digest only (repository@sha256:<digest>), not a tag",
            ));
        }
        let image = AgentImage {
            repository: repository.into(),
            digest: digest.into(),
        };
        image.validate()?;
        Ok(image)
    }

    /// Checks the repository and digest grammar. The error names `agent_image`.
    pub fn validate(&self) -> Result<(), RenderError> {
        plain_ascii(PARAM, &self.repository, MAX_REPOSITORY_LEN)?;
        check_repository(&self.repository).map_err(|reason| RenderError::invalid(PARAM, reason))?;
        plain_ascii(PARAM, &self.digest, DIGEST_PREFIX.len() + 64)?;
        check_digest(&self.digest).map_err(|reason| RenderError::invalid(PARAM, reason))
    }
}

impl fmt::Display for AgentImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.repository, self.digest)
    }
}

fn last_component(repository: &str) -> &str {
    repository.rsplit('/').next().unwrap_or(repository)
}

/// `[registry[:port]/]component(/component)*`, all lowercase.
fn check_repository(repository: &str) -> Result<(), &'static str> {
    let mut components: Vec<&str> = repository.split('/').collect();
    let first = components[0];
    if components.len() > 1 && (first.contains('.') || first.contains(':') || first == "localhost")
    {
        check_registry(first)?;
        components.remove(0);
    }
    if components.iter().all(|c| is_path_component(c)) {
        Ok(())
    } else {
        Err(
            "the repository must be lowercase path components ([a-z0-9] separated by '.', \
             '_', '__' or '-') joined by '/'",
        )
    }
}

/// A registry host (lowercase DNS labels) with an optional port.
fn check_registry(registry: &str) -> Result<(), &'static str> {
    const BAD: &str = "the registry must be a lowercase host name with an optional :port";
    let (host, port) = match registry.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (registry, None),
    };
    let labels_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if labels_ok && port_ok {
        Ok(())
    } else {
        Err(BAD)
    }
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn is_path_component(component: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = component.as_bytes();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let ok = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `sha256:` + 64 lowercase hex digits.
fn check_digest(digest: &str) -> Result<(), &'static str> {
    let ok = digest.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if ok {
        Ok(())
    } else {
        Err("the digest must be sha256: followed by 64 lowercase hex digits")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn digest_references_parse_and_print_back() {
        for reference in [
            format!("ghcr.io/example/levelrail-agent@{DIGEST}"),
            format!("localhost:5000/a__b.c-d--e/f@{DIGEST}"),
            format!("agent@{DIGEST}"),
        ] {
            let image = AgentImage::parse(&reference).unwrap();
            assert_eq!(image.to_string(), reference);
        }
        let pinned = AgentImage::parse(&format!("ghcr.io/x/agent@{DIGEST}")).unwrap();
        assert_eq!(
            pinned,
            AgentImage {
                repository: "ghcr.io/x/agent".into(),
                digest: DIGEST.into()
            }
        );
    }

    #[test]
    fn tags_are_refused_with_a_reason_naming_the_digest() {
        for reference in [
            "ghcr.io/example/levelrail-agent:0.4.0".to_owned(),
            "ghcr.io/example/levelrail-agent".to_owned(),
            "agent:latest".to_owned(),
            format!("ghcr.io/x/agent:1@{DIGEST}"),
        ] {
            let err = AgentImage::parse(&reference).unwrap_err();
            assert_eq!(err.param(), "agent_image", "{reference}");
            assert!(err.to_string().contains("digest"), "{err}");
        }
    }

    #[test]
    fn malformed_references_are_rejected_naming_the_parameter() {
        let bad = [
            String::new(),
            format!("Ghcr.io/x/agent@{DIGEST}"),
            format!("ghcr.io/X/agent@{DIGEST}"),
            format!("ghcr.io/x//agent@{DIGEST}"),
            format!("ghcr.io/x/-agent@{DIGEST}"),
            format!("ghcr.io/x/a..b@{DIGEST}"),
            format!("ghcr.io/x/a___b@{DIGEST}"),
            format!("ghcr.io/x/agent@{}", DIGEST.to_uppercase()),
            "ghcr.io/x/agent@sha256:abc".to_owned(),
            "ghcr.io/x/agent@md5:0123456789abcdef0123456789abcdef".to_owned(),
            format!("ghcr.io/x/agent@{DIGEST}\nExecStart=/bin/sh"),
            format!("ghcr.io/x/agent@{DIGEST}'"),
            format!("ghcr.io/x/ag$(id)ent@{DIGEST}"),
            format!("ghcr.io/x/agént@{DIGEST}"),
        ];
        for reference in bad {
            let err = AgentImage::parse(&reference).unwrap_err();
            assert_eq!(err.param(), "agent_image", "{reference:?}");
        }
    }
}
