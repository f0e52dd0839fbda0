//! One line per figure, which `scripts/bench` gathers into its table:
//! `FIGURE<TAB>figure<TAB>measured<TAB>floor<TAB>target<TAB>pass|fail|—` (`—`: no target).
use std::time::Duration;

/// Prints a figure, its floor measured in the same run, its target and the verdict.
pub(crate) fn figure(name: &str, measured: String, floor: String, target: String, pass: bool) {
    let verdict = if pass { "pass" } else { "fail" };
    println!("FIGURE\t{name}\t{measured}\t{floor}\t{target}\t{verdict}");
}

/// Prints a figure that has no target (it is measured to be watched, not to pass).
pub(crate) fn info(name: &str, measured: String, floor: String) {
    println!("FIGURE\t{name}\t{measured}\t{floor}\tnone set\t—");
}

/// p50 and p99 of sorted latencies, in milliseconds (`p50 … ms, p99 … ms`).
pub(crate) fn p50_p99(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.2} ms, p99 {:.2} ms",
        pct_ms(sorted, 0.5),
        pct_ms(sorted, 0.99)
    )
}

/// The `q` quantile of sorted latencies, in milliseconds.
pub(crate) fn pct_ms(sorted: &[Duration], q: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3
}

/// The resident set of process `pid` in KiB (0 when unreadable).
pub(crate) fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time (user and system) this process has used so far: all of it, and that of its
/// threads whose name starts with `prefix` (`/proc/self/task/*/stat`, in clock ticks of
/// 10 ms). Unlike wall time, it does not grow when another program takes the cores.
pub(crate) fn cpu_time(prefix: &str) -> (Duration, Duration) {
    let all = std::fs::read_to_string("/proc/self/stat").map_or(0, |s| ticks(&s));
    let mut named = 0;
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = task.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            named += std::fs::read_to_string(path.join("stat")).map_or(0, |s| ticks(&s));
        }
    }
    (TICK * all as u32, TICK * named as u32)
}

/// The kernel counts CPU time in ticks of 10 ms.
const TICK: Duration = Duration::from_millis(10);

/// `utime` and `stime` of a `stat` line (fields 14 and 15).
fn ticks(stat: &str) -> u64 {
    stat_fields(stat, 11, 2)
}

/// The sum of `n` numeric fields of a `stat` line from the `from`-th (from 0) after the
/// parenthesised name, which may hold spaces (field 3 of `proc(5)` is the 0th).
fn stat_fields(stat: &str, from: usize, n: usize) -> u64 {
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    rest.split_whitespace()
        .skip(from)
        .take(n)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum()
}

/// The parent of process `pid`, when `pid` is a process of this machine named `name`
/// (`comm`); `None` otherwise (a pid from another machine or PID namespace).
pub(crate) fn parent_named(pid: u32, name: &str) -> Option<u32> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    if comm.trim_end() != name {
        return None;
    }
    ppid(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The parent's pid in a `stat` line (field 4, the 1st after the state).
fn ppid(stat: &str) -> Option<u32> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The CPU time so far of process `root` and its children (a database server's
/// postmaster and its backends): what they spent serving this process is the difference
/// over a load. A child that ends in between is counted by `root` once reaped (its
/// children's times).
pub(crate) fn family_cpu(root: u32) -> Duration {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if pid == root {
            // With `cutime` and `cstime`: the times of its children that ended, once reaped.
            total += stat_fields(&stat, 11, 4);
        } else if ppid(&stat) == Some(root) {
            total += ticks(&stat);
        }
    }
    TICK * total as u32
}
