//! CPU architectures: of a provider's sizes, of the agent binaries the control plane
//! serves, and of the machine a booting node finds itself on (`uname -m`).
use std::fmt;

/// A CPU architecture a node can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CpuArch {
    /// 64-bit x86 (`x86_64`, `amd64`).
    X86_64,
    /// 64-bit Arm (`aarch64`, `arm64`): Hetzner CAX, AWS Graviton, GCP Tau T2A/Axion,
    /// Azure Ampere/Cobalt sizes.
    Aarch64,
}

impl CpuArch {
    /// Every architecture, in a stable order.
    pub const ALL: [CpuArch; 2] = [CpuArch::X86_64, CpuArch::Aarch64];

    /// The canonical name (`uname -m` of a Linux kernel, the path segment of the agent
    /// download).
    pub fn as_str(self) -> &'static str {
        match self {
            CpuArch::X86_64 => "x86_64",
            CpuArch::Aarch64 => "aarch64",
        }
    }

    /// The `uname -m` values (and common aliases) a node on this architecture reports, as a
    /// shell `case` pattern.
    pub fn uname_pattern(self) -> &'static str {
        match self {
            CpuArch::X86_64 => "x86_64|amd64",
            CpuArch::Aarch64 => "aarch64|arm64",
        }
    }

    /// Parses a canonical name or an alias (`amd64`, `arm64`, as providers spell them),
    /// case-insensitively.
    pub fn parse(value: &str) -> Option<CpuArch> {
        match value.to_ascii_lowercase().as_str() {
            // `x86` and `arm` are Hetzner's spellings.
            "x86_64" | "amd64" | "x86-64" | "x64" | "x86" => Some(CpuArch::X86_64),
            "aarch64" | "arm64" | "arm" => Some(CpuArch::Aarch64),
            _ => None,
        }
    }

    /// The architecture of an ELF `e_machine` value.
    pub fn from_elf_machine(machine: u16) -> Option<CpuArch> {
        match machine {
            62 => Some(CpuArch::X86_64),
            183 => Some(CpuArch::Aarch64),
            _ => None,
        }
    }
}

impl fmt::Display for CpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_parse_to_the_architecture() {
        for (name, arch) in [
            ("x86_64", CpuArch::X86_64),
            ("AMD64", CpuArch::X86_64),
            ("arm64", CpuArch::Aarch64),
            ("aarch64", CpuArch::Aarch64),
        ] {
            assert_eq!(CpuArch::parse(name), Some(arch), "{name}");
        }
        for arch in CpuArch::ALL {
            assert_eq!(CpuArch::parse(arch.as_str()), Some(arch));
        }
        assert_eq!(CpuArch::parse("riscv64"), None);
        assert_eq!(CpuArch::from_elf_machine(62), Some(CpuArch::X86_64));
        assert_eq!(CpuArch::from_elf_machine(183), Some(CpuArch::Aarch64));
        assert_eq!(CpuArch::from_elf_machine(3), None);
    }
}
