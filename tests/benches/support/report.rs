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
