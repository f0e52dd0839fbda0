//! Reading a `#cloud-config` document as cloud-init does, for the parts the harness runs:
//! `write_files` (plain `content`, octal `permissions`) and `runcmd` (strings run as shell
//! lines, lists quoted word by word), and re-rooting the node's paths under a directory.
use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

/// Directories the document uses without writing a file there (the agent's install path).
const EXTRA_NODE_DIRS: [&str; 3] = ["/usr/local/bin", "/run", "/var/run"];

/// A parsed user-data document.
#[derive(Debug)]
pub struct Document {
    files: Vec<File>,
    runcmd: Vec<String>,
}

#[derive(Debug)]
struct File {
    path: String,
    content: String,
    permissions: u32,
}

impl Document {
    /// Parses the document; anything cloud-init would refuse, or that the harness cannot
    /// do faithfully (encoded content, a relative path), is an error.
    pub fn parse(user_data: &str) -> Result<Self, String> {
        if user_data.lines().next().map(str::trim_end) != Some("#cloud-config") {
            return Err("the user-data does not start with #cloud-config".into());
        }
        let value: Value = serde_norway::from_str(user_data)
            .map_err(|e| format!("the user-data is not YAML: {e}"))?;
        let mut files = Vec::new();
        for entry in value["write_files"].as_array().into_iter().flatten() {
            let path = entry["path"]
                .as_str()
                .ok_or("a write_files entry has no path")?;
            if !path.starts_with('/') {
                return Err(format!("write_files path {path} is not absolute"));
            }
            if entry.get("encoding").is_some() {
                return Err(format!(
                    "write_files {path}: encoded content is not supported"
                ));
            }
            let permissions = match &entry["permissions"] {
                Value::Null => 0o644,
                Value::String(p) => u32::from_str_radix(p.trim_start_matches("0o"), 8)
                    .map_err(|_| format!("write_files {path}: permissions {p} is not octal"))?,
                other => {
                    return Err(format!(
                        "write_files {path}: permissions {other} is not a quoted octal string"
                    ));
                }
            };
            files.push(File {
                path: path.to_owned(),
                content: entry["content"].as_str().unwrap_or_default().to_owned(),
                permissions,
            });
        }
        let mut runcmd = Vec::new();
        for entry in value["runcmd"].as_array().into_iter().flatten() {
            match entry {
                Value::String(line) => runcmd.push(line.clone()),
                Value::Array(words) => {
                    let quoted: Result<Vec<String>, String> = words
                        .iter()
                        .map(|w| {
                            w.as_str()
                                .map(shell_quote)
                                .ok_or_else(|| "a runcmd word is not a string".to_owned())
                        })
                        .collect();
                    runcmd.push(quoted?.join(" "));
                }
                other => {
                    return Err(format!(
                        "a runcmd entry is neither a string nor a list: {other}"
                    ));
                }
            }
        }
        Ok(Self { files, runcmd })
    }

    /// The node directories to re-root: every directory a file is written to, plus the
    /// few the document uses without writing there.
    pub fn node_dirs(&self) -> Vec<String> {
        let mut dirs: BTreeSet<String> = EXTRA_NODE_DIRS.iter().map(|d| (*d).to_owned()).collect();
        for file in &self.files {
            if let Some((dir, _)) = file.path.rsplit_once('/')
                && !dir.is_empty()
            {
                dirs.insert(dir.to_owned());
            }
        }
        // Longest first, so `/usr/local/lib/levelrail` wins over a shorter prefix.
        let mut dirs: Vec<String> = dirs.into_iter().collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
        dirs
    }

    /// Writes every file under `root`, its content re-rooted, with its permissions.
    pub fn write_files(&self, root: &Path, dirs: &[String]) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt as _;
        for file in &self.files {
            let target = root.join(file.path.trim_start_matches('/'));
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&target, reroot(&file.content, root, dirs))
                .map_err(|e| format!("{}: {e}", target.display()))?;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(file.permissions))
                .map_err(|e| format!("{}: {e}", target.display()))?;
        }
        Ok(())
    }

    /// The runcmd entries as cloud-init's `runcmd` script: `#!/bin/sh` and one line each.
    pub fn runcmd_script(&self, root: &Path, dirs: &[String]) -> String {
        let mut script = String::from("#!/bin/sh\n");
        for line in &self.runcmd {
            script.push_str(&reroot(line, root, dirs));
            script.push('\n');
        }
        script
    }
}

/// `text` with every node path under one of `dirs` moved under `root`. A path counts where
/// it starts a word (after a space, quote, `=`, `@`, `(`, `:`, `unix://` or a line start)
/// and the directory name ends there or continues with `/`: URL paths and longer names stay.
pub fn reroot(text: &str, root: &Path, dirs: &[String]) -> String {
    let root = root.display().to_string();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let starts_word =
            i == 0 || b" \t\n'\"=@(:;|&`".contains(&bytes[i - 1]) || text[..i].ends_with("unix://");
        let hit = starts_word
            .then(|| {
                dirs.iter().find(|dir| {
                    text[i..].starts_with(dir.as_str())
                        && text[i + dir.len()..].bytes().next().is_none_or(|next| {
                            !(next.is_ascii_alphanumeric() || b"._-".contains(&next))
                        })
                })
            })
            .flatten();
        match hit {
            Some(dir) => {
                out.push_str(&root);
                out.push_str(dir);
                i += dir.len();
            }
            None => {
                let c = text[i..].chars().next().unwrap_or_default();
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// One word for `/bin/sh`, single-quoted.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_paths_move_under_the_root_and_urls_stay() {
        let dirs = vec![
            "/etc/levelrail".to_owned(),
            "/usr/local/bin".to_owned(),
            "/var/run".to_owned(),
        ];
        let root = Path::new("/tmp/n1");
        let text = "curl --cacert /etc/levelrail/ca.pem https://cp:9443/etc/levelrail/x \
                    ExecStart=/usr/local/bin/levelrail-agent /etc/levelrailx '/etc/levelrail' \
                    DOCKER_HOST=unix:///var/run/docker.sock";
        assert_eq!(
            reroot(text, root, &dirs),
            "curl --cacert /tmp/n1/etc/levelrail/ca.pem https://cp:9443/etc/levelrail/x \
             ExecStart=/tmp/n1/usr/local/bin/levelrail-agent /etc/levelrailx '/tmp/n1/etc/levelrail' \
             DOCKER_HOST=unix:///tmp/n1/var/run/docker.sock"
        );
    }

    #[test]
    fn runcmd_lists_are_quoted_word_by_word() {
        let doc = Document::parse(
            "#cloud-config\nruncmd:\n  - ['chmod', '0700', \"it's\"]\n  - 'echo hi'\n",
        )
        .unwrap();
        assert_eq!(
            doc.runcmd_script(Path::new("/r"), &[]),
            "#!/bin/sh\n'chmod' '0700' 'it'\\''s'\necho hi\n"
        );
        assert!(Document::parse("#cloud-init\nruncmd: []\n").is_err());
    }
}
