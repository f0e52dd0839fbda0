//! The `levelrail-agent` binaries this control plane serves to its nodes: one per CPU
//! architecture, of the control plane's own version, at
//! `GET /v1/agent/<version>/<arch>/levelrail-agent` on the agent listener. Each is checked
//! as an ELF executable when it is loaded (a truncated or foreign file is refused at
//! startup), held in memory, and its SHA-256 goes into every user-data, so a node runs
//! exactly these bytes.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use levelrail_provisioner::cloudinit::AgentDownload;
use levelrail_types::CpuArch;
use sha2::{Digest as _, Sha256};
use tracing::info;

/// The largest binary accepted (a release agent is a few MiB; a debug one tens).
pub const MAX_AGENT_BINARY: u64 = 512 * 1024 * 1024;
/// The version whose binaries are served: this control plane's.
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One served binary.
#[derive(Debug, Clone)]
struct Served {
    bytes: Bytes,
    sha256: String,
    source: PathBuf,
}

/// The binaries, by architecture.
#[derive(Debug, Clone, Default)]
pub struct AgentBinaries {
    by_arch: BTreeMap<CpuArch, Served>,
}

impl AgentBinaries {
    /// Loads `paths` (`--agent-binary`, one per architecture), or, when none is given, what
    /// lies beside the running executable: `levelrail-agent`, and `levelrail-agent-<arch>`
    /// for each architecture (`levelrail-agent-aarch64`, as `scripts/test` and release
    /// archives place a cross-built one). Errors name the flag and the file.
    pub fn load(paths: &[PathBuf]) -> anyhow::Result<Self> {
        let mut binaries = AgentBinaries::default();
        if paths.is_empty() {
            if let Some(dir) = std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_owned))
            {
                for default in beside(&dir) {
                    binaries.add(&default)?;
                }
            }
            return Ok(binaries);
        }
        for path in paths {
            binaries.add(path)?;
        }
        Ok(binaries)
    }

    fn add(&mut self, path: &Path) -> anyhow::Result<()> {
        let served = load_one(path)?;
        let arch = elf_arch(&served.bytes)
            .map_err(|why| anyhow::anyhow!("--agent-binary {}: {why}", path.display()))?;
        if let Some(first) = self.by_arch.get(&arch) {
            anyhow::bail!(
                "--agent-binary {}: a {arch} binary is already given ({})",
                path.display(),
                first.source.display()
            );
        }
        info!(arch = %arch, path = %path.display(), sha256 = %served.sha256, bytes = served.bytes.len(), "serving the agent binary");
        self.by_arch.insert(arch, served);
        Ok(())
    }

    /// Whether no binary is served.
    pub fn is_empty(&self) -> bool {
        self.by_arch.is_empty()
    }

    /// The architectures served.
    pub fn architectures(&self) -> Vec<CpuArch> {
        self.by_arch.keys().copied().collect()
    }

    /// What the user-data needs: the download base URL on the advertised agent address
    /// and each binary's SHA-256.
    pub fn download(&self, advertised: &str) -> AgentDownload {
        AgentDownload {
            base_url: format!("https://{advertised}/v1/agent/{AGENT_VERSION}"),
            sha256: self
                .by_arch
                .iter()
                .map(|(arch, s)| (*arch, s.sha256.clone()))
                .collect(),
        }
    }

    /// The agent listener's route serving them.
    pub fn router(self) -> axum::Router {
        axum::Router::new()
            .route(
                "/v1/agent/{version}/{arch}/levelrail-agent",
                axum::routing::get(serve),
            )
            .with_state(Arc::new(self))
    }
}

/// The agent binaries in `dir` (that of the running executable): `levelrail-agent` and
/// `levelrail-agent-<arch>`, those that exist.
fn beside(dir: &Path) -> Vec<PathBuf> {
    std::iter::once("levelrail-agent".to_owned())
        .chain(CpuArch::ALL.iter().map(|a| format!("levelrail-agent-{a}")))
        .map(|name| dir.join(name))
        .filter(|path| path.is_file())
        .collect()
}

fn load_one(path: &Path) -> anyhow::Result<Served> {
    let flag = || format!("--agent-binary {}", path.display());
    let meta = std::fs::metadata(path).with_context(|| format!("{}: cannot read it", flag()))?;
    anyhow::ensure!(meta.is_file(), "{}: not a regular file", flag());
    anyhow::ensure!(
        meta.len() <= MAX_AGENT_BINARY,
        "{}: larger than {} MiB; is this the agent?",
        flag(),
        MAX_AGENT_BINARY >> 20
    );
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read it", flag()))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok(Served {
        bytes: Bytes::from(bytes),
        sha256,
        source: path.to_owned(),
    })
}

/// The architecture of a complete 64-bit little-endian ELF executable; why not, otherwise.
/// Every program header's bytes and the section header table must lie inside the file,
/// which a truncated copy fails.
pub fn elf_arch(bytes: &[u8]) -> Result<CpuArch, String> {
    let u16_at = |o: usize| {
        bytes
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |o: usize| {
        bytes
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    let u64_at = |o: usize| {
        bytes
            .get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
    };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF executable".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a 64-bit little-endian ELF executable".into());
    }
    let truncated = || "truncated: the ELF headers point past the end of the file".to_owned();
    let e_type = u16_at(16).ok_or_else(truncated)?;
    if e_type != 2 && e_type != 3 {
        return Err("an ELF file, but not an executable".into());
    }
    let machine = u16_at(18).ok_or_else(truncated)?;
    let arch = CpuArch::from_elf_machine(machine)
        .ok_or_else(|| format!("built for an unsupported CPU architecture (ELF machine {machine}); x86_64 and aarch64 are supported"))?;
    let len = bytes.len() as u64;
    let (phoff, shoff) = (
        u64_at(32).ok_or_else(truncated)?,
        u64_at(40).ok_or_else(truncated)?,
    );
    let (phentsize, phnum) = (
        u16_at(54).ok_or_else(truncated)?,
        u16_at(56).ok_or_else(truncated)?,
    );
    let (shentsize, shnum) = (
        u16_at(58).ok_or_else(truncated)?,
        u16_at(60).ok_or_else(truncated)?,
    );
    let table_end = |off: u64, size: u16, n: u16| off.checked_add(u64::from(size) * u64::from(n));
    if phnum == 0 || table_end(phoff, phentsize, phnum).is_none_or(|end| end > len) {
        return Err(truncated());
    }
    if shoff != 0 && table_end(shoff, shentsize, shnum).is_none_or(|end| end > len) {
        return Err(truncated());
    }
    for i in 0..u64::from(phnum) {
        let at = usize::try_from(phoff + i * u64::from(phentsize)).map_err(|_| truncated())?;
        let kind = u32_at(at).ok_or_else(truncated)?;
        let (offset, filesz) = (
            u64_at(at + 8).ok_or_else(truncated)?,
            u64_at(at + 32).ok_or_else(truncated)?,
        );
        // PT_LOAD (1): the bytes the kernel maps must all be in the file.
        if kind == 1 && offset.checked_add(filesz).is_none_or(|end| end > len) {
            return Err(truncated());
        }
    }
    Ok(arch)
}

async fn serve(
    State(binaries): State<Arc<AgentBinaries>>,
    UrlPath((version, arch)): UrlPath<(String, String)>,
) -> Response {
    let not_found = |why: String| (StatusCode::NOT_FOUND, format!("{why}\n")).into_response();
    if version != AGENT_VERSION {
        return not_found(format!(
            "this control plane serves levelrail-agent {AGENT_VERSION} only"
        ));
    }
    let Some(served) = CpuArch::parse(&arch)
        .filter(|a| a.as_str() == arch)
        .and_then(|a| binaries.by_arch.get(&a))
    else {
        return not_found(format!(
            "no levelrail-agent binary for architecture {arch:.32}"
        ));
    };
    let mut response = Response::new(Body::from(served.bytes.clone()));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(sum) = HeaderValue::from_str(&served.sha256) {
        headers.insert("x-levelrail-sha256", sum);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_binary() -> Vec<u8> {
        std::fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    #[test]
    fn a_real_executable_is_read_as_its_architecture() {
        let arch = elf_arch(&this_binary()).unwrap();
        assert_eq!(arch.as_str(), std::env::consts::ARCH);
    }

    #[test]
    fn truncated_foreign_and_non_elf_files_are_refused_with_the_reason() {
        let full = this_binary();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (full[..full.len() / 2].to_vec(), "truncated"),
            (full[..100].to_vec(), "truncated"),
            (b"#!/bin/sh\necho hi\n".repeat(8), "not an ELF"),
            (
                {
                    let mut riscv = full.clone();
                    riscv[18..20].copy_from_slice(&243u16.to_le_bytes());
                    riscv
                },
                "unsupported CPU architecture",
            ),
            (
                {
                    let mut object = full.clone();
                    object[16..18].copy_from_slice(&1u16.to_le_bytes());
                    object
                },
                "not an executable",
            ),
            (
                {
                    let mut big_endian = full;
                    big_endian[5] = 2;
                    big_endian
                },
                "64-bit little-endian",
            ),
        ];
        for (bytes, why) in cases {
            let err = elf_arch(&bytes).unwrap_err();
            assert!(err.contains(why), "{err} should say {why}");
        }
    }

    #[test]
    fn loading_names_the_flag_and_refuses_a_second_binary_of_one_architecture() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = AgentBinaries::load(&[missing]).unwrap_err().to_string();
        assert!(
            err.contains("--agent-binary") && err.contains("nope"),
            "{err}"
        );
        let exe = std::env::current_exe().unwrap();
        let err = AgentBinaries::load(&[exe.clone(), exe])
            .unwrap_err()
            .to_string();
        assert!(err.contains("already given"), "{err}");
        let err = AgentBinaries::load(&[dir.path().to_owned()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
        let truncated = dir.path().join("cut");
        std::fs::write(&truncated, &this_binary()[..4096]).unwrap();
        let err = format!("{:#}", AgentBinaries::load(&[truncated]).unwrap_err());
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn the_default_is_every_agent_binary_beside_the_executable() {
        let dir = tempfile::tempdir().unwrap();
        assert!(beside(dir.path()).is_empty());
        for name in [
            "levelrail-agent",
            "levelrail-agent-aarch64",
            "levelrail-agent-riscv64",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(
            beside(dir.path()),
            vec![
                dir.path().join("levelrail-agent"),
                dir.path().join("levelrail-agent-aarch64")
            ]
        );
    }
}
