//! The AWS catalog: regions from `DescribeRegions` (opted-out regions hidden) with their
//! console names, and the root volume every size gets (the sizes themselves are live, in
//! `sizes.rs`).
use crate::Region;

/// Root volume of every instance, in GB.
pub(crate) const ROOT_VOLUME_GB: i32 = 20;

/// The console name of `id`, or the id itself for a region added later.
pub(crate) fn region(id: &str) -> Region {
    let name = match id {
        "us-east-1" => "US East (N. Virginia)",
        "us-east-2" => "US East (Ohio)",
        "us-west-1" => "US West (N. California)",
        "us-west-2" => "US West (Oregon)",
        "af-south-1" => "Africa (Cape Town)",
        "ap-east-1" => "Asia Pacific (Hong Kong)",
        "ap-south-1" => "Asia Pacific (Mumbai)",
        "ap-south-2" => "Asia Pacific (Hyderabad)",
        "ap-southeast-1" => "Asia Pacific (Singapore)",
        "ap-southeast-2" => "Asia Pacific (Sydney)",
        "ap-southeast-3" => "Asia Pacific (Jakarta)",
        "ap-southeast-4" => "Asia Pacific (Melbourne)",
        "ap-northeast-1" => "Asia Pacific (Tokyo)",
        "ap-northeast-2" => "Asia Pacific (Seoul)",
        "ap-northeast-3" => "Asia Pacific (Osaka)",
        "ca-central-1" => "Canada (Central)",
        "ca-west-1" => "Canada West (Calgary)",
        "eu-central-1" => "Europe (Frankfurt)",
        "eu-central-2" => "Europe (Zurich)",
        "eu-west-1" => "Europe (Ireland)",
        "eu-west-2" => "Europe (London)",
        "eu-west-3" => "Europe (Paris)",
        "eu-north-1" => "Europe (Stockholm)",
        "eu-south-1" => "Europe (Milan)",
        "eu-south-2" => "Europe (Spain)",
        "il-central-1" => "Israel (Tel Aviv)",
        "me-south-1" => "Middle East (Bahrain)",
        "me-central-1" => "Middle East (UAE)",
        "sa-east-1" => "South America (São Paulo)",
        _ => id,
    };
    Region {
        id: id.to_owned(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_get_console_names() {
        assert_eq!(region("eu-west-1").name, "Europe (Ireland)");
        assert_eq!(region("xx-new-1").name, "xx-new-1");
    }
}
