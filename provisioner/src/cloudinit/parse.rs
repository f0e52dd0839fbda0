//! Reading a rendered document back: demo mode's simulated boot starts a real agent
//! process from what the cloud-init would have written.
use std::fmt;

use secrecy::SecretString;
use serde::Deserialize;
use zeroize::Zeroizing;

use super::params::{
    check_addr, check_ca_pem, check_fingerprint, check_node_name, check_progress_url, check_token,
};
use super::render::{
    BEARER_PREFIX, ENV_ADDR, ENV_CA_FINGERPRINT, ENV_NODE_NAME, HEADER, PULL_LINE_PREFIX,
    URL_LINE_PREFIX,
};
use super::{
    AgentImage, CA_PEM_PATH, ENV_FILE_PATH, JOIN_TOKEN_PATH, PROGRESS_HEADER_PATH, ParseError,
    REPORT_PROGRESS_PATH, RenderError, UNIT_PATH,
};

/// What a node's cloud-init hands the agent, read back from the user-data.
pub struct AgentBootstrap {
    /// The env file's variables, in file order (`APP_CONTROL_PLANE_ADDR`, `APP_NODE_NAME`,
    /// `APP_CA_FINGERPRINT`, `APP_JOIN_TOKEN_FILE`, `APP_AGENT_IDENTITY_FILE`). The paths
    /// are the node's; a simulated boot writes the token elsewhere and overrides them.
    pub env: Vec<(String, String)>,
    /// The join token (the content of `/etc/levelrail/join-token`).
    pub join_token: SecretString,
    /// The control-plane CA, PEM.
    pub ca_pem: String,
    /// Where `report-progress` posts.
    pub progress_url: String,
    /// The image the unit runs.
    pub image: AgentImage,
}

impl AgentBootstrap {
    /// The env file's value of `name`, if set.
    pub fn env_var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

impl fmt::Debug for AgentBootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBootstrap")
            .field("env", &self.env)
            .field("join_token", &"<redacted>")
            .field("progress_url", &self.progress_url)
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Document {
    write_files: Vec<FileEntry>,
}

#[derive(Deserialize)]
struct FileEntry {
    path: String,
    #[serde(default)]
    content: String,
}

impl Drop for FileEntry {
    fn drop(&mut self) {
        // Two of the files hold the join token.
        zeroize::Zeroize::zeroize(&mut self.content);
    }
}

/// Reads the agent's bootstrap from user-data written by [`render()`](fn@super::render). Each
/// value passes the same validation as when it was rendered, and the token must agree
/// with the env file's CA fingerprint and the bearer header. Errors never contain the
/// token.
pub fn extract_agent_bootstrap(user_data: &str) -> Result<AgentBootstrap, ParseError> {
    if user_data.lines().next().map(str::trim_end) != Some(HEADER) {
        return Err(ParseError::NotCloudConfig);
    }
    let document: Document = serde_norway::from_str(user_data).map_err(|e| ParseError::Yaml {
        line: e.location().map_or(0, |location| location.line()),
    })?;
    let content = |path: &'static str| {
        document
            .write_files
            .iter()
            .find(|file| file.path == path)
            .map(|file| file.content.as_str())
            .ok_or(ParseError::MissingFile { path })
    };

    let env = parse_env(content(ENV_FILE_PATH)?)?;
    let get = |name: &str| {
        env.iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .ok_or(ParseError::Malformed {
                path: ENV_FILE_PATH,
                reason: "a required variable is missing",
            })
    };
    check_addr(get(ENV_ADDR)?)?;
    check_node_name(get(ENV_NODE_NAME)?)?;
    let fingerprint = check_fingerprint("ca_fingerprint", get(ENV_CA_FINGERPRINT)?)?;

    let token = Zeroizing::new(content(JOIN_TOKEN_PATH)?.trim().to_owned());
    let pin = check_token(&token)?;
    if !pin.eq_ignore_ascii_case(&fingerprint) {
        let reason = "its CA pin does not match ca_fingerprint";
        return Err(ParseError::Invalid(RenderError::invalid(
            "join_token",
            reason,
        )));
    }
    let header = content(PROGRESS_HEADER_PATH)?;
    if header.trim_end().strip_prefix(BEARER_PREFIX) != Some(token.as_str()) {
        return Err(ParseError::Malformed {
            path: PROGRESS_HEADER_PATH,
            reason: "it is not the bearer header of the join token",
        });
    }

    let ca_pem = check_ca_pem(content(CA_PEM_PATH)?, &fingerprint)?;
    let progress_url = progress_url(content(REPORT_PROGRESS_PATH)?)?;
    let image = image(content(UNIT_PATH)?)?;
    Ok(AgentBootstrap {
        env,
        join_token: SecretString::from(token.as_str()),
        ca_pem,
        progress_url,
        image,
    })
}

/// `KEY=VALUE` lines, in order.
fn parse_env(text: &str) -> Result<Vec<(String, String)>, ParseError> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (key, value) = line.split_once('=').ok_or(ParseError::Malformed {
                path: ENV_FILE_PATH,
                reason: "a line is not KEY=VALUE",
            })?;
            Ok((key.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The URL on the script's `url='…'` line.
fn progress_url(script: &str) -> Result<String, ParseError> {
    let url = script
        .lines()
        .find_map(|line| line.strip_prefix(URL_LINE_PREFIX))
        .and_then(|quoted| quoted.strip_prefix('\'')?.strip_suffix('\''))
        .ok_or(ParseError::Malformed {
            path: REPORT_PROGRESS_PATH,
            reason: "it has no url='…' line",
        })?;
    check_progress_url(url)?;
    Ok(url.to_owned())
}

/// The image on the unit's `ExecStartPre=/usr/bin/docker pull …` line.
fn image(unit: &str) -> Result<AgentImage, ParseError> {
    let reference = unit
        .lines()
        .find_map(|line| line.strip_prefix(PULL_LINE_PREFIX))
        .ok_or(ParseError::Malformed {
            path: UNIT_PATH,
            reason: "it has no docker pull line",
        })?;
    Ok(AgentImage::parse(reference)?)
}
