//! `nodes providers regions|sizes`: the catalog the Add-node wizard shows, over
//! `ProvisionerService.ListRegions/ListSizes` (served from the control plane's cache), with
//! the monthly price, its currency and basis, or why it is unavailable.
use clap::Args;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_proto::provisioner::v1::{ListRegionsRequest, ListSizesRequest, Size};
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::table;
use crate::{provider, validate};

/// What the table shows for a size without a price (the basis column says why).
const NO_PRICE: &str = "price unavailable";

/// The flags of `nodes providers sizes`.
#[derive(Debug, Args)]
pub(crate) struct SizesArgs {
    /// The provider: hetzner, digitalocean, aws, azure or gcp.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,

    /// The region or zone id, as `nodes providers regions` lists it.
    #[arg(long, value_name = "REGION")]
    region: Option<String>,
}

/// `nodes providers regions --provider P`: `ID  NAME`.
pub(crate) async fn regions(
    provider: Option<&str>,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    let provider = provider::parse(provider)?;
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let response = client
        .list_regions(ListRegionsRequest {
            provider: provider as i32,
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    if ctx.json() {
        let regions: Vec<Value> = response
            .regions
            .iter()
            .map(|r| json!({ "id": r.id, "name": r.name }))
            .collect();
        ctx.print_json(&json!({ "regions": regions }))?;
    } else {
        let rows: Vec<Vec<String>> = response
            .regions
            .iter()
            .map(|r| vec![r.id.clone(), r.name.clone()])
            .collect();
        ctx.print(&table(&["ID", "NAME"], &rows))?;
    }
    Ok(Outcome::Success)
}

/// `nodes providers sizes --provider P --region R`:
/// `ID  NAME  VCPUS  MEMORY  DISK  PRICE/MONTH  ARCH  AVAILABLE`.
pub(crate) async fn sizes(
    args: &SizesArgs,
    ctx: &mut Context<'_, '_>,
) -> Result<Outcome, CliError> {
    let provider = provider::parse(args.provider.as_deref())?;
    let region = args.region.as_deref().map(str::trim).unwrap_or_default();
    if region.is_empty() {
        return Err(CliError::usage("--region is required"));
    }
    validate::identifier("--region", region)?;
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let response = client
        .list_sizes(ListSizesRequest {
            provider: provider as i32,
            region: region.to_owned(),
        })
        .await
        .map_err(|s| ctx.rpc_error(&s))?
        .into_inner();
    if ctx.json() {
        let sizes: Vec<Value> = response.sizes.iter().map(size_json).collect();
        ctx.print_json(&json!({ "sizes": sizes }))?;
    } else {
        let rows: Vec<Vec<String>> = response.sizes.iter().map(size_row).collect();
        ctx.print(&table(
            &[
                "ID",
                "NAME",
                "VCPUS",
                "MEMORY",
                "DISK",
                "PRICE/MONTH",
                "PRICE BASIS",
                "ARCH",
                "AVAILABLE",
            ],
            &rows,
        ))?;
    }
    Ok(Outcome::Success)
}

fn size_row(size: &Size) -> Vec<String> {
    let memory = if size.memory_mb >= 1024 && size.memory_mb.is_multiple_of(1024) {
        format!("{} GB", size.memory_mb / 1024)
    } else if size.memory_mb >= 1024 {
        format!("{:.1} GB", f64::from(size.memory_mb) / 1024.0)
    } else {
        format!("{} MB", size.memory_mb)
    };
    let disk = match size.disk_gb {
        0 => "-".to_owned(),
        gb => format!("{gb} GB"),
    };
    vec![
        size.id.clone(),
        size.name.clone(),
        size.vcpus.to_string(),
        memory,
        disk,
        price(size),
        if size.price_monthly.is_empty() {
            size.price_unavailable.clone()
        } else {
            size.price_basis.clone()
        },
        size.architecture.clone(),
        availability(size),
    ]
}

/// `yes`, or `no: <why>` for a size the control plane cannot boot (say, an Arm size with
/// no Arm agent binary served).
fn availability(size: &Size) -> String {
    match size.unavailable_reason.as_str() {
        "" => "yes".to_owned(),
        why => format!("no: {why}"),
    }
}

/// `4.51 EUR`, `~24.46 USD (estimate)`, or the no-price note.
fn price(size: &Size) -> String {
    let amount = match (size.price_monthly.as_str(), size.currency.as_str()) {
        ("", _) => return NO_PRICE.to_owned(),
        (amount, "") => amount.to_owned(),
        (amount, currency) => format!("{amount} {currency}"),
    };
    if size.price_estimate {
        format!("~{amount} (estimate)")
    } else {
        amount
    }
}

fn size_json(size: &Size) -> Value {
    let price = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    json!({
        "id": size.id,
        "name": size.name,
        "vcpus": size.vcpus,
        "memory_mb": size.memory_mb,
        "disk_gb": size.disk_gb,
        "price_monthly": price(&size.price_monthly),
        "currency": price(&size.currency),
        "price_basis": price(&size.price_basis),
        "price_estimate": size.price_estimate,
        "price_unavailable": price(&size.price_unavailable),
        "architecture": size.architecture,
        "unavailable_reason": price(&size.unavailable_reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_row_shows_memory_disk_and_price_for_people() {
        let size = Size {
            id: "cx22".into(),
            name: "CX22".into(),
            vcpus: 2,
            memory_mb: 4096,
            disk_gb: 40,
            price_monthly: "4.51".into(),
            currency: "EUR".into(),
            price_basis: "monthly price".into(),
            architecture: "x86_64".into(),
            ..Size::default()
        };
        assert_eq!(
            size_row(&size),
            [
                "cx22",
                "CX22",
                "2",
                "4 GB",
                "40 GB",
                "4.51 EUR",
                "monthly price",
                "x86_64",
                "yes"
            ]
        );
        let estimate = Size {
            price_monthly: "24.46".into(),
            currency: "USD".into(),
            price_estimate: true,
            ..size.clone()
        };
        assert_eq!(size_row(&estimate)[5], "~24.46 USD (estimate)");
        let arm = Size {
            architecture: "aarch64".into(),
            unavailable_reason: "no agent binary for aarch64".into(),
            ..size.clone()
        };
        assert_eq!(size_row(&arm)[8], "no: no agent binary for aarch64");
        let unpriced = Size {
            memory_mb: 512,
            disk_gb: 0,
            price_monthly: String::new(),
            currency: String::new(),
            price_basis: String::new(),
            price_unavailable: "the price list could not be read".into(),
            ..size.clone()
        };
        let row = size_row(&unpriced);
        assert_eq!(
            row[3..7],
            ["512 MB", "-", NO_PRICE, "the price list could not be read"]
        );
        let odd = Size {
            memory_mb: 1536,
            ..size
        };
        assert_eq!(size_row(&odd)[3], "1.5 GB");
    }
}
