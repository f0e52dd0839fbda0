//! The size picker's arrangement: the sizes that meet a minimum of vCPUs and memory, in
//! the order asked for (sizes that cannot be provisioned last), and the cheapest one of a
//! cloud for the comparison across clouds.
use std::cmp::Ordering;

use levelrail_proto::provisioner::v1::Size;

/// How the picker orders sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeOrder {
    /// Cheapest first; sizes without a price after those with one.
    #[default]
    Price,
    /// Fewest vCPUs first.
    Vcpus,
    /// Least memory first.
    Memory,
}

impl SizeOrder {
    /// The `<select>` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Price => "price",
            Self::Vcpus => "vcpus",
            Self::Memory => "memory",
        }
    }

    /// The order a `<select>` value names (price for anything else).
    pub fn from_value(v: &str) -> Self {
        match v {
            "vcpus" => Self::Vcpus,
            "memory" => Self::Memory,
            _ => Self::Price,
        }
    }
}

/// The least a size must offer; zero means any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SizeFilter {
    pub min_vcpus: u32,
    pub min_memory_gb: u32,
}

impl SizeFilter {
    /// Whether `s` offers at least the minimum. (Memory is compared in MiB, with a GB
    /// rounded down by 5 % so a "4 GB" size of 3,840 MiB counts as 4 GB.)
    pub fn admits(&self, s: &Size) -> bool {
        let floor = u64::from(self.min_memory_gb) * 1024 * 95 / 100;
        s.vcpus >= self.min_vcpus && u64::from(s.memory_mb) >= floor
    }
}

/// Whether `s` can be provisioned (the server gives a reason when it cannot).
pub fn bootable(s: &Size) -> bool {
    s.unavailable_reason.is_empty()
}

/// The monthly price in hundredths of its currency, when the size has one.
pub fn monthly_cents(s: &Size) -> Option<u64> {
    if s.price_monthly.is_empty() {
        return None;
    }
    let rounded = super::format::cents(&s.price_monthly);
    let (whole, frac) = rounded.split_once('.')?;
    Some(whole.parse::<u64>().ok()? * 100 + frac.parse::<u64>().ok()?)
}

/// The sizes `filter` admits, bootable ones first, each group in `order` (ties by vCPUs,
/// memory, then id, so the order never depends on the cloud's listing).
pub fn arrange(sizes: &[Size], filter: SizeFilter, order: SizeOrder) -> Vec<Size> {
    let mut out: Vec<Size> = sizes.iter().filter(|s| filter.admits(s)).cloned().collect();
    out.sort_by(|a, b| {
        bootable(b)
            .cmp(&bootable(a))
            .then_with(|| by(order, a, b))
            .then_with(|| a.vcpus.cmp(&b.vcpus))
            .then_with(|| a.memory_mb.cmp(&b.memory_mb))
            .then_with(|| a.id.cmp(&b.id))
    });
    out
}

fn by(order: SizeOrder, a: &Size, b: &Size) -> Ordering {
    match order {
        // `None` after every price.
        SizeOrder::Price => match (monthly_cents(a), monthly_cents(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
        SizeOrder::Vcpus => a.vcpus.cmp(&b.vcpus),
        SizeOrder::Memory => a.memory_mb.cmp(&b.memory_mb),
    }
}

/// A cloud's cheapest bootable size that `filter` admits; a priced one when any is.
pub fn cheapest(sizes: &[Size], filter: SizeFilter) -> Option<Size> {
    arrange(sizes, filter, SizeOrder::Price)
        .into_iter()
        .find(bootable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(id: &str, vcpus: u32, memory_mb: u32, price: &str, why: &str) -> Size {
        Size {
            id: id.into(),
            vcpus,
            memory_mb,
            price_monthly: price.into(),
            currency: "EUR".into(),
            unavailable_reason: why.into(),
            ..Default::default()
        }
    }

    fn ids(v: &[Size]) -> Vec<&str> {
        v.iter().map(|s| s.id.as_str()).collect()
    }

    fn catalog() -> Vec<Size> {
        vec![
            size("big", 8, 16_384, "30.10", ""),
            size("arm", 2, 4096, "3.79", "no aarch64 agent"),
            size("small", 2, 4096, "4.51", ""),
            size("unpriced", 4, 8192, "", ""),
            size("mid", 4, 7900, "15.9", ""),
        ]
    }

    #[test]
    fn sizes_sort_by_price_with_unbootable_and_unpriced_last() {
        let got = arrange(&catalog(), SizeFilter::default(), SizeOrder::Price);
        assert_eq!(ids(&got), ["small", "mid", "big", "unpriced", "arm"]);
        let got = arrange(&catalog(), SizeFilter::default(), SizeOrder::Memory);
        assert_eq!(ids(&got), ["small", "mid", "unpriced", "big", "arm"]);
    }

    #[test]
    fn the_filter_keeps_sizes_with_enough_cpu_and_memory() {
        let filter = SizeFilter {
            min_vcpus: 4,
            min_memory_gb: 8,
        };
        // 7,900 MiB counts as 8 GB (within 5 %).
        let got = arrange(&catalog(), filter, SizeOrder::Vcpus);
        assert_eq!(ids(&got), ["mid", "unpriced", "big"]);
    }

    #[test]
    fn the_cheapest_is_bootable_and_priced_when_possible() {
        let got = cheapest(&catalog(), SizeFilter::default()).expect("one");
        assert_eq!(got.id, "small", "the cheaper Arm size cannot boot");
        let only_unpriced = vec![size("u", 2, 2048, "", "")];
        assert_eq!(
            cheapest(&only_unpriced, SizeFilter::default()).map(|s| s.id),
            Some("u".into())
        );
        let filter = SizeFilter {
            min_vcpus: 64,
            min_memory_gb: 0,
        };
        assert_eq!(cheapest(&catalog(), filter), None);
        assert_eq!(monthly_cents(&size("x", 1, 1, "15.9", "")), Some(1590));
    }
}
