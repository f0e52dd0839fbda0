//! Target `cloudinit`: the user-data renderer (`render`), over inputs that differ from a
//! valid set of parameters in the fields the fuzzer supplies.
//!
//! Bytes: a selector byte (odd: the agent is a digest-pinned image; even: the control
//! plane's binary), then up to nine fields split at NUL, each replacing one parameter when
//! it is not empty: `control_plane_addr`, `join_token`, `progress_credential`, `node_name`,
//! `ca_fingerprint`, `ca_pem`, `progress_url`, then the image's repository and digest (or
//! the binary's base URL and x86_64 SHA-256).
//!
//! Properties of an accepted input:
//! - **Parsed back to the same values.** The document is YAML (`serde_norway`) whose every
//!   leaf is a string, and the files it writes hold exactly the inputs: the join token, the
//!   progress header, the node name, address and fingerprint in the environment file, and a
//!   CA file that renders the same document again.
//! - **No input outside a quoted scalar or a literal block.** With quoted scalars masked
//!   and literal blocks' lines dropped, the document's lines are those of the valid
//!   parameters' document, and every file but the CA has as many lines as there: an input
//!   adds no key, item, line or comment to the YAML or to a script.
//! - **No input in the shell or unit syntax.** Each line of the scripts and the unit, with
//!   quoted words and 64-digit hashes masked, is the valid document's line; the environment
//!   file has the same keys in the same order.
//!
//! A refused input names a parameter and repeats none of the input values.
use levelrail_cloudinit::{
    AgentDownload, AgentImage, AgentSource, CA_PEM_PATH, CloudInitParams, ENV_FILE_PATH,
    JOIN_TOKEN_PATH, PROGRESS_HEADER_PATH, render,
};
use levelrail_types::CpuArch;
use secrecy::SecretString;

use crate::opaque::assert_no_echo;

/// The valid parameters the fuzzer's fields replace: the renderer's own test CA.
const CA_PEM: &str = include_str!("../../cloudinit/src/testdata/ca.pem");
const FINGERPRINT: &str = "58cbcfdc6b47da3ac07b8bf30238138a6b3af4b5c251d13098cb3c8800acec70";
/// The first seven parameters; the agent's two follow from [`IMAGE`] or [`BINARY`].
const BASE: [&str; 7] = [
    "cp.example:9443",
    "LR1.58cbcfdc6b47da3ac07b8bf30238138a6b3af4b5c251d13098cb3c8800acec70.njt_0123456789abcdef.c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I",
    "LRP1.npv_0123456789abcdef0123456789abcdef.cHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3Jlc3MtcHJvZ3I",
    "node-1",
    FINGERPRINT,
    CA_PEM,
    "https://cp.example:9443/v1/provision-progress",
];
const IMAGE: [&str; 2] = [
    "registry.example:5000/team/levelrail-agent",
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
];
const BINARY: [&str; 2] = [
    "https://cp.example:9443/v1/agent/0.4.0",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
];
/// The parameters' names, as the renderer's errors give them.
const PARAMS: [&str; 9] = [
    "control_plane_addr",
    "join_token",
    "progress_credential",
    "node_name",
    "ca_fingerprint",
    "ca_pem",
    "progress_url",
    "agent_image",
    "agent",
];

/// Whether the parameters render.
pub fn accepts(data: &[u8]) -> bool {
    let Some((&selector, rest)) = data.split_first() else {
        return false;
    };
    let image = selector % 2 == 1;
    crate::padded_fields(rest, PARAMS.len())
        .is_some_and(|given| render(&params_of(image, &with_defaults(image, &given))).is_ok())
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let image = selector % 2 == 1;
    let Some(given) = crate::padded_fields(rest, PARAMS.len()) else {
        return;
    };
    let fields = with_defaults(image, &given);
    match render(&params_of(image, &fields)) {
        Ok(document) => accepted(image, &fields, &document),
        Err(error) => {
            assert!(
                PARAMS.contains(&error.param()),
                "the error names a parameter"
            );
            let mut values = fields.clone();
            for secret in [&fields[1], &fields[2]] {
                values.extend(secret.split('.').map(str::to_owned));
            }
            assert_no_echo(&fields, &values, "a render error", |f| {
                render(&params_of(image, f)).err().map(|e| e.to_string())
            });
        }
    }
}

/// `given`, each empty or missing field replaced by the valid parameters' value.
fn with_defaults(image: bool, given: &[String]) -> Vec<String> {
    let agent = if image { IMAGE } else { BINARY };
    BASE.iter()
        .chain(agent.iter())
        .enumerate()
        .map(|(i, default)| match given.get(i) {
            Some(g) if !g.is_empty() => g.clone(),
            _ => (*default).to_owned(),
        })
        .collect()
}

fn params_of(image: bool, f: &[String]) -> CloudInitParams {
    CloudInitParams {
        control_plane_addr: f[0].clone(),
        join_token: SecretString::from(f[1].clone()),
        progress_credential: SecretString::from(f[2].clone()),
        node_name: f[3].clone(),
        ca_fingerprint: f[4].clone(),
        ca_pem: f[5].clone(),
        progress_url: f[6].clone(),
        agent: if image {
            AgentSource::Image(AgentImage {
                repository: f[7].clone(),
                digest: f[8].clone(),
            })
        } else {
            AgentSource::Binary(AgentDownload {
                base_url: f[7].clone(),
                sha256: vec![(CpuArch::X86_64, f[8].clone())],
            })
        },
    }
}

/// What the checks compare with in the valid parameters' document for one kind of
/// agent, computed once.
struct Base {
    fields: Vec<String>,
    skeleton: Vec<String>,
    masked: Vec<(String, Vec<String>)>,
}

fn base(image: bool) -> &'static Base {
    static BASES: std::sync::OnceLock<[Base; 2]> = std::sync::OnceLock::new();
    let make = |image: bool| {
        let fields = with_defaults(image, &[]);
        let document = render(&params_of(image, &fields)).expect("the base renders");
        let value = serde_norway::from_str(&document).expect("the base is YAML");
        Base {
            skeleton: skeleton(&document),
            masked: masked_files(&files_of(&value)),
            fields,
        }
    };
    &BASES.get_or_init(|| [make(false), make(true)])[usize::from(image)]
}

fn accepted(image: bool, fields: &[String], document: &str) {
    let base = base(image);

    // Parsed back: YAML with string leaves only, and the files hold the inputs.
    let value: serde_norway::Value =
        serde_norway::from_str(document).expect("an accepted document is YAML");
    assert_string_leaves(&value);
    let files = files_of(&value);
    let file = |path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, content)| content.clone())
            .expect("the document writes the file")
    };
    assert_eq!(file(JOIN_TOKEN_PATH), format!("{}\n", fields[1]));
    assert_eq!(
        file(PROGRESS_HEADER_PATH),
        format!("Authorization: Bearer {}\n", fields[2])
    );
    let env = file(ENV_FILE_PATH);
    let env: Vec<&str> = env.lines().collect();
    for line in [
        format!("APP_CONTROL_PLANE_ADDR={}", fields[0]),
        format!("APP_NODE_NAME={}", fields[3]),
        format!("APP_CA_FINGERPRINT={}", fields[4].to_ascii_lowercase()),
    ] {
        assert!(
            env.contains(&line.as_str()),
            "the environment file holds the input"
        );
    }
    let again = CloudInitParams {
        ca_pem: file(CA_PEM_PATH),
        ..params_of(image, fields)
    };
    assert_eq!(
        render(&again).expect("the written CA renders"),
        document,
        "the CA file holds the CA"
    );

    // Structure: only quoted scalars and literal blocks differ from the base document.
    assert_eq!(
        skeleton(document),
        base.skeleton,
        "an input changed the YAML"
    );
    // Inside the files: as many lines as in the valid document, and each line of a script
    // or the unit, quoted words and 64-digit hashes masked, is the valid document's line
    // with the valid inputs replaced by these ones, where an input in an unquoted place
    // (the image in `docker run`) is one plain word; an environment file has the same keys
    // in the same order.
    let got = masked_files(&files);
    let shape = |files: &[(String, Vec<String>)]| -> Vec<(String, usize)> {
        files
            .iter()
            .map(|(path, lines)| (path.clone(), lines.len()))
            .collect()
    };
    assert_eq!(
        shape(&got),
        shape(&base.masked),
        "an input added a line to a file"
    );
    for ((path, got), (_, want)) in got.iter().zip(base.masked.iter()) {
        for (line, base_line) in got.iter().zip(want.iter()) {
            assert_eq!(
                line,
                &with_inputs(base_line, &base.fields, fields),
                "an input reached the shell or unit syntax of {path}"
            );
        }
    }
}

/// The `(path, content)` of every file a parsed document writes.
fn files_of(value: &serde_norway::Value) -> Vec<(String, String)> {
    value["write_files"]
        .as_sequence()
        .expect("write_files")
        .iter()
        .filter_map(|f| {
            Some((
                f["path"].as_str()?.to_owned(),
                f["content"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// The lines of each written file but the CA and the two secrets: an environment file's
/// keys, and the other files' lines with quoted words and 64-digit hashes masked.
fn masked_files(files: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    files
        .iter()
        .filter_map(|(path, content)| {
            let lines = match path.as_str() {
                CA_PEM_PATH | JOIN_TOKEN_PATH | PROGRESS_HEADER_PATH => return None,
                ENV_FILE_PATH => content
                    .lines()
                    .map(|l| l.split_once('=').map_or(l, |(key, _)| key).to_owned())
                    .collect(),
                _ => content
                    .lines()
                    .map(|l| mask_hashes(&mask_quoted(l)))
                    .collect(),
            };
            Some((path.clone(), lines))
        })
        .collect()
}

/// `base_line` with each of the valid inputs it still shows (an unquoted place) replaced by
/// the matching one of `inputs`, after checking that one is a plain word: no whitespace,
/// quote, shell or systemd metacharacter.
fn with_inputs(base_line: &str, base_inputs: &[String], inputs: &[String]) -> String {
    let mut order: Vec<usize> = (0..base_inputs.len()).collect();
    // Longest first: the address is part of the URLs.
    order.sort_by_key(|&i| std::cmp::Reverse(base_inputs[i].len()));
    let marker = |i: usize| format!("\u{1}{i}\u{1}");
    let mut line = base_line.to_owned();
    for &i in &order {
        if line.contains(base_inputs[i].as_str()) {
            assert!(
                inputs[i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-/:@+[]".contains(&b)),
                "{} is unquoted in a script or the unit without being one plain word",
                PARAMS[i.min(PARAMS.len() - 1)]
            );
            line = line.replace(base_inputs[i].as_str(), &marker(i));
        }
    }
    for i in order {
        line = line.replace(&marker(i), &inputs[i]);
    }
    line
}

/// `line` with every run of exactly 64 hex digits replaced by `H`.
fn mask_hashes(line: &str) -> String {
    let bytes = line.as_bytes();
    let (mut out, mut i) = (String::new(), 0);
    while i < bytes.len() {
        let run = bytes[i..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if run == 64 {
            out.push('H');
            i += run;
        } else if run > 0 {
            out.push_str(&line[i..i + run]);
            i += run;
        } else {
            let c = line[i..].chars().next().expect("a character");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn assert_string_leaves(value: &serde_norway::Value) {
    match value {
        serde_norway::Value::String(_) => {}
        serde_norway::Value::Sequence(items) => items.iter().for_each(assert_string_leaves),
        serde_norway::Value::Mapping(map) => {
            for (key, value) in map {
                assert!(key.is_string(), "every key is a string");
                assert_string_leaves(value);
            }
        }
        other => panic!("a leaf that is not a string: {other:?}"),
    }
}

/// The document's lines with every quoted scalar masked as `Q` and the lines of every
/// literal block (a line ending in `|`, then the lines indented deeper) dropped.
fn skeleton(document: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for line in document.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(deeper_than) = block {
            if line.is_empty() || indent > deeper_than {
                continue;
            }
            block = None;
        }
        let masked = mask_quoted(line);
        if masked.ends_with('|') {
            block = Some(indent);
        }
        out.push(masked);
    }
    out
}

/// `line` with each `'…'` (a doubled `''` inside) and `"…"` (backslash escapes inside)
/// replaced by `Q`. An unterminated quote is kept as it is.
fn mask_quoted(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(['\'', '"']) {
        out.push_str(&rest[..at]);
        let quote = rest.as_bytes()[at];
        let body = &rest[at + 1..];
        let mut end = None;
        let mut i = 0;
        let bytes = body.as_bytes();
        while i < bytes.len() {
            match (quote, bytes[i]) {
                (b'\'', b'\'') if bytes.get(i + 1) == Some(&b'\'') => i += 2,
                (b'"', b'\\') => i += 2,
                (q, b) if q == b => {
                    end = Some(i);
                    break;
                }
                _ => i += 1,
            }
        }
        match end {
            Some(end) => {
                out.push('Q');
                rest = &body[end + 1..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skeleton_masks_quotes_and_drops_literal_blocks() {
        let doc = "a: 'x''y'\nb: \"q\\\"r\"\nc: |\n  line 1\n\n  line 2\nd: ['e', 'f']\n";
        assert_eq!(skeleton(doc), ["a: Q", "b: Q", "c: |", "d: [Q, Q]"]);
    }

    #[test]
    fn hashes_are_masked_whole_only() {
        let hash = "a".repeat(64);
        assert_eq!(mask_hashes(&format!("sum={hash} ;")), "sum=H ;");
        let long = format!("x{}", "b".repeat(65));
        assert_eq!(mask_hashes(&long), long);
    }

    #[test]
    fn the_valid_parameters_render_and_pass() {
        check(b"\x00");
        check(b"\x01");
    }
}
