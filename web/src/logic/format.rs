//! Display formatting: durations, relative times, sizes and prices.
use levelrail_proto::provisioner::v1::Size;

/// `4 s`, `1 min 05 s`, `1 h 02 min`.
pub fn duration(ms: f64) -> String {
    let s = (ms / 1000.0).floor().max(0.0) as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// `just now`, `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`.
pub fn ago(then_ms: f64, now_ms: f64) -> String {
    let s = ((now_ms - then_ms) / 1000.0).floor().max(0.0) as u64;
    match s {
        0..=4 => "just now".to_owned(),
        5..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// `in 364 d`, `in 5 h`, `in 10 min`; `expired 2 d ago` once past.
pub fn until(then_ms: f64, now_ms: f64) -> String {
    if then_ms <= now_ms {
        return format!("expired {}", ago(then_ms, now_ms));
    }
    let s = ((then_ms - now_ms) / 1000.0).floor() as u64;
    match s {
        0..=59 => format!("in {s} s"),
        60..=3599 => format!("in {} min", s / 60),
        3600..=86_399 => format!("in {} h", s / 3600),
        _ => format!("in {} d", s / 86_400),
    }
}

/// `4 GB RAM` from MB, with one decimal below 10 GB when not whole (`0.5 GB`).
/// (Integer arithmetic: it keeps float formatting out of the wasm bundle.)
pub fn memory(mb: u32) -> String {
    let tenths = (u64::from(mb) * 10 + 512) / 1024;
    if tenths % 10 == 0 || tenths >= 100 {
        format!("{} GB RAM", (tenths + 5) / 10)
    } else {
        format!("{}.{} GB RAM", tenths / 10, tenths % 10)
    }
}

/// A decimal price string rounded to cents (`"4.5101"` → `"4.51"`); the input unchanged
/// when it is not a plain decimal.
pub fn cents(price: &str) -> String {
    let (whole, frac) = price.split_once('.').unwrap_or((price, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) {
        return price.to_owned();
    }
    let Ok(whole) = whole.parse::<u64>() else {
        return price.to_owned();
    };
    let f: Vec<u64> = frac
        .chars()
        .take(3)
        .map(|c| u64::from(c as u8 - b'0'))
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    let mut c = whole * 100 + at(0) * 10 + at(1);
    if at(2) >= 5 {
        c += 1;
    }
    format!("{}.{:02}", c / 100, c % 100)
}

/// The size line of the picker: `2 vCPU · 4 GB RAM · 40 GB disk`.
pub fn size_specs(s: &Size) -> String {
    let cpu = format!("{} vCPU", s.vcpus);
    let disk = match s.disk_gb {
        0 => "disk set by provider".to_owned(),
        d => format!("{d} GB disk"),
    };
    let arch = match s.architecture.as_str() {
        "" => String::new(),
        a => format!(" · {a}"),
    };
    format!("{cpu} · {} · {disk}{arch}", memory(s.memory_mb))
}

/// `4.51 EUR/mo`, `≈ 24.46 USD/mo (estimate)`, or `price unavailable`: always with its
/// currency.
pub fn price(s: &Size) -> String {
    if s.price_monthly.is_empty() {
        return "price unavailable".to_owned();
    }
    let amount = format!("{} {}/mo", cents(&s.price_monthly), s.currency);
    if s.price_estimate {
        format!("≈ {amount} (estimate)")
    } else {
        amount
    }
}

/// How the price was reached (`monthly price`, `730 h × 0.0416 USD/h`), or why there is
/// none.
pub fn price_basis(s: &Size) -> String {
    if s.price_monthly.is_empty() {
        s.price_unavailable.clone()
    } else {
        s.price_basis.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_reads_as_time_left_or_past() {
        let day = 86_400_000.0;
        assert_eq!(until(365.0 * day, 0.5 * day), "in 364 d");
        assert_eq!(until(2.0 * 3_600_000.0, 0.0), "in 2 h");
        assert_eq!(until(0.0, 2.0 * day), "expired 2 d ago");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(4_200.0), "4 s");
        assert_eq!(duration(65_000.0), "1 min 05 s");
        assert_eq!(duration(3_720_000.0), "1 h 02 min");
        assert_eq!(duration(-5.0), "0 s");
    }

    #[test]
    fn relative_times_read_naturally() {
        assert_eq!(ago(0.0, 1_000.0), "just now");
        assert_eq!(ago(0.0, 30_000.0), "30 s ago");
        assert_eq!(ago(0.0, 7_200_000.0), "2 h ago");
    }

    #[test]
    fn prices_round_to_cents() {
        assert_eq!(cents("4.5101"), "4.51");
        assert_eq!(cents("8.9951"), "9.00");
        assert_eq!(cents("12"), "12.00");
        assert_eq!(cents("0.5"), "0.50");
        assert_eq!(cents("n/a"), "n/a");
    }

    #[test]
    fn memory_reads_in_gigabytes() {
        assert_eq!(memory(4096), "4 GB RAM");
        assert_eq!(memory(512), "0.5 GB RAM");
        assert_eq!(memory(1536), "1.5 GB RAM");
        assert_eq!(memory(16_384), "16 GB RAM");
    }

    #[test]
    fn sizes_show_cpu_memory_disk_and_price() {
        let mut s = Size {
            vcpus: 2,
            memory_mb: 4096,
            disk_gb: 40,
            price_monthly: "4.51".into(),
            currency: "EUR".into(),
            ..Default::default()
        };
        assert_eq!(size_specs(&s), "2 vCPU · 4 GB RAM · 40 GB disk");
        assert_eq!(price(&s), "4.51 EUR/mo");
        s.price_monthly = "4.5151".into();
        assert_eq!(price(&s), "4.52 EUR/mo");
        s.currency = "USD".into();
        s.price_estimate = true;
        s.price_basis = "730 h × (2 vCPU × 0.0219 + 4 GiB × 0.0029 USD/h)".into();
        assert_eq!(price(&s), "≈ 4.52 USD/mo (estimate)");
        assert_eq!(price_basis(&s), s.price_basis);
        s.price_monthly.clear();
        s.price_unavailable = "the AWS Price List could not be read: denied".into();
        assert_eq!(price(&s), "price unavailable");
        assert_eq!(
            price_basis(&s),
            "the AWS Price List could not be read: denied"
        );
        s.memory_mb = 512;
        s.disk_gb = 0;
        assert_eq!(size_specs(&s), "2 vCPU · 0.5 GB RAM · disk set by provider");
        s.architecture = "aarch64".into();
        assert_eq!(
            size_specs(&s),
            "2 vCPU · 0.5 GB RAM · disk set by provider · aarch64"
        );
    }
}
