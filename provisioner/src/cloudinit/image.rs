//! The agent's container image: a release tag or a digest pin, with the reference
//! grammar checked (a lowercase subset of the distribution reference grammar).
use std::fmt;

use super::RenderError;
use super::params::plain_ascii;

/// The repository of the released agent images.
pub const DEFAULT_AGENT_REPOSITORY: &str = "ghcr.io/glincker/levelrail-agent";

const PARAM: &str = "agent_image";
const MAX_REPOSITORY_LEN: usize = 255;
const MAX_TAG_LEN: usize = 128;
const DIGEST_PREFIX: &str = "sha256:";
/// Tags that move between releases; the default image never uses them.
const MUTABLE_TAGS: [&str; 2] = ["edge", "latest"];

/// The container image the node runs as its agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AgentImage {
    /// `repository:tag`.
    Tag {
        /// e.g. `ghcr.io/glincker/levelrail-agent`.
        repository: String,
        /// e.g. `0.4.0`.
        tag: String,
    },
    /// `repository@sha256:<64 hex>`: the exact image, immune to a moved tag.
    Digest {
        /// e.g. `ghcr.io/glincker/levelrail-agent`.
        repository: String,
        /// `sha256:` followed by 64 lowercase hex digits.
        digest: String,
    },
}

impl AgentImage {
    /// The released agent image of control-plane version `version`:
    /// `ghcr.io/glincker/levelrail-agent:<version>`. A development build (`dev` or an empty
    /// version) has no released image, and `edge`/`latest` are mutable: both are errors
    /// asking the operator to configure an image.
    pub fn default_for_version(version: &str) -> Result<Self, RenderError> {
        if version.is_empty() || version == "dev" {
            return Err(RenderError::invalid(
                PARAM,
                "this control plane is a development build with no released agent image; \
                 configure one (repository:tag or repository@sha256:<digest>)",
            ));
        }
        if MUTABLE_TAGS.contains(&version) {
            return Err(RenderError::invalid(
                PARAM,
                "the version names a mutable tag; configure an agent image with a release tag \
                 or a digest",
            ));
        }
        let image = AgentImage::Tag {
            repository: DEFAULT_AGENT_REPOSITORY.into(),
            tag: version.into(),
        };
        image.validate()?;
        Ok(image)
    }

    /// Parses `repository:tag` or `repository@sha256:<64 hex>`. A reference with neither
    /// (which would mean the mutable `latest`) or with both is rejected.
    pub fn parse(reference: &str) -> Result<Self, RenderError> {
        plain_ascii(
            PARAM,
            reference,
            MAX_REPOSITORY_LEN + 1 + DIGEST_PREFIX.len() + 64,
        )?;
        let image = if let Some((repository, digest)) = reference.split_once('@') {
            if last_component(repository).contains(':') {
                return Err(RenderError::invalid(
                    PARAM,
                    "give either a tag or a digest, not both",
                ));
            }
            AgentImage::Digest {
                repository: repository.into(),
                digest: digest.into(),
            }
        } else {
            match reference.rsplit_once(':') {
                Some((repository, tag)) if !tag.contains('/') => AgentImage::Tag {
                    repository: repository.into(),
                    tag: tag.into(),
                },
                _ => {
                    return Err(RenderError::invalid(
                        PARAM,
                        "needs an explicit tag (repository:tag) or digest \
                         (repository@sha256:<digest>)",
                    ));
                }
            }
        };
        image.validate()?;
        Ok(image)
    }

    /// The repository part.
    pub fn repository(&self) -> &str {
        match self {
            AgentImage::Tag { repository, .. } | AgentImage::Digest { repository, .. } => {
                repository
            }
        }
    }

    /// Checks the repository, tag and digest grammar. The error names `agent_image`.
    pub fn validate(&self) -> Result<(), RenderError> {
        let repository = self.repository();
        plain_ascii(PARAM, repository, MAX_REPOSITORY_LEN)?;
        check_repository(repository).map_err(|reason| RenderError::invalid(PARAM, reason))?;
        match self {
            AgentImage::Tag { tag, .. } => {
                plain_ascii(PARAM, tag, MAX_TAG_LEN)?;
                check_tag(tag).map_err(|reason| RenderError::invalid(PARAM, reason))
            }
            AgentImage::Digest { digest, .. } => {
                plain_ascii(PARAM, digest, DIGEST_PREFIX.len() + 64)?;
                check_digest(digest).map_err(|reason| RenderError::invalid(PARAM, reason))
            }
        }
    }
}

impl fmt::Display for AgentImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentImage::Tag { repository, tag } => write!(f, "{repository}:{tag}"),
            AgentImage::Digest { repository, digest } => write!(f, "{repository}@{digest}"),
        }
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

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), &'static str> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_TAG_LEN
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err("the tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
    }
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
    fn the_default_image_is_the_release_tag_and_never_a_mutable_one() {
        let image = AgentImage::default_for_version("0.4.0").unwrap();
        assert_eq!(image.to_string(), "ghcr.io/glincker/levelrail-agent:0.4.0");
        for version in ["", "dev", "edge", "latest", "1.0.0+build", "0.1\n"] {
            let err = AgentImage::default_for_version(version).unwrap_err();
            assert_eq!(err.param(), "agent_image", "{version:?}");
        }
        let dev = AgentImage::default_for_version("dev")
            .unwrap_err()
            .to_string();
        assert!(dev.contains("configure"), "{dev}");
    }

    #[test]
    fn references_parse_into_tags_and_digest_pins_and_print_back() {
        let cases = [
            "ghcr.io/glincker/levelrail-agent:0.4.0",
            "registry.example:5000/team/agent:v1_2.3-rc.1",
            "localhost/agent:dev",
            "agent:1",
            &format!("ghcr.io/glincker/levelrail-agent@{DIGEST}"),
            &format!("localhost:5000/a__b.c-d--e/f@{DIGEST}"),
        ];
        for reference in cases {
            let image = AgentImage::parse(reference).unwrap();
            assert_eq!(image.to_string(), reference);
        }
        let pinned = AgentImage::parse(&format!("ghcr.io/x/agent@{DIGEST}")).unwrap();
        assert_eq!(
            pinned,
            AgentImage::Digest {
                repository: "ghcr.io/x/agent".into(),
                digest: DIGEST.into()
            }
        );
    }

    #[test]
    fn malformed_references_are_rejected_naming_the_parameter() {
        let bad = [
            "",
            "ghcr.io/glincker/levelrail-agent",
            "registry:5000/agent",
            "Ghcr.io/x/agent:1",
            "ghcr.io/X/agent:1",
            "ghcr.io/x/agent:",
            "ghcr.io/x/agent:.hidden",
            "ghcr.io/x/agent:tag with space",
            "ghcr.io/x//agent:1",
            "ghcr.io/x/-agent:1",
            "ghcr.io/x/a..b:1",
            "ghcr.io/x/a___b:1",
            "ghcr.io/x/agent:1@sha256:0",
            &format!("ghcr.io/x/agent:1@{DIGEST}"),
            &format!("ghcr.io/x/agent@{}", DIGEST.to_uppercase()),
            "ghcr.io/x/agent@sha256:abc",
            "ghcr.io/x/agent@md5:0123456789abcdef0123456789abcdef",
            &format!("ghcr.io/x/agent:{}", "a".repeat(129)),
            "ghcr.io/x/agent:1\nExecStart=/bin/sh",
            "ghcr.io/x/agent:1'",
            "ghcr.io/x/agent:1$(id)",
            "ghcr.io/x/agént:1",
        ];
        for reference in bad {
            let err = AgentImage::parse(reference).unwrap_err();
            assert_eq!(err.param(), "agent_image", "{reference:?}");
        }
    }
}
