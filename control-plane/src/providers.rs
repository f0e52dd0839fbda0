//! The clouds as this control plane reaches them: their endpoints as configured, the
//! clients built there (every cloud `levelrail_clouds::cloud` describes), and the
//! credentials service's token exchanges, which reach some of the same endpoints.
use std::sync::Arc;

use anyhow::Context as _;
use levelrail_clouds::cloud::Settings;
use levelrail_credentials::broker::GrantIssuers;
use levelrail_credentials::broker::aws::AwsGrantIssuer;
use levelrail_credentials::broker::azure::AzureGrantIssuer;
use levelrail_credentials::broker::gcp::{GcpGrantIssuer, GoogleEndpoints};
use levelrail_credentials::broker::token_files::TokenFileDir;
use levelrail_credentials::model::ProviderId;

use crate::config::CloudArgs;

/// The clouds' settings as configured: the endpoint flags (public clouds by default), the
/// extra root CA file, and the AWS subnets.
pub fn configured(cfg: &CloudArgs) -> anyhow::Result<Settings> {
    let mut settings = Settings::default();
    if let Some(path) = &cfg.cloud_ca_file {
        let pem =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        settings.extra_ca_pem = Some(pem);
    }
    settings.subnets = cfg.aws_subnet_map()?;
    for (id, key, url) in &cfg.cloud_endpoints.urls {
        settings.set_url(*id, key, url.clone())?;
    }
    Ok(settings)
}

/// What stored credentials may have the token exchanges use of the control plane's own.
#[derive(Debug, Clone, Default)]
pub struct Lending {
    /// AWS credentials may use the control plane's own identity.
    pub allow_ambient_aws: bool,
    /// Where token files may be read.
    pub token_files: TokenFileDir,
}

impl Lending {
    /// From the flags (`data_dir`: the service's data directory, never a token directory).
    pub fn from_args(cfg: &CloudArgs, data_dir: &std::path::Path) -> anyhow::Result<Self> {
        let token_files = match &cfg.token_file_dir {
            Some(dir) => TokenFileDir::new(dir, data_dir).map_err(anyhow::Error::msg)?,
            None => TokenFileDir::default(),
        };
        Ok(Self {
            allow_ambient_aws: cfg.allow_ambient_aws,
            token_files,
        })
    }
}

/// The token exchanges of the clouds whose grants are not the stored secret itself: AWS
/// keys become an STS session, an Azure service principal an AAD token, a Google key or
/// federation file an OAuth token. Verification exchanges them the same way.
pub fn issuers(settings: &Settings, lending: &Lending) -> anyhow::Result<GrantIssuers> {
    // Each of these has a public default; a key the cloud does not declare is a bug here.
    let url = |id: ProviderId, key: &str| {
        settings
            .url(id, key)
            .with_context(|| format!("{id} declares no endpoint `{key}`"))
    };
    let ca = settings.extra_ca_pem.as_deref();
    let mut aws = AwsGrantIssuer::new(settings.url(ProviderId::Aws, "sts"));
    if lending.allow_ambient_aws {
        aws = aws.allow_ambient();
    }
    let azure = AzureGrantIssuer::new(&url(ProviderId::Azure, "authority")?, ca)?
        .with_token_files(lending.token_files.clone());
    let google = GoogleEndpoints {
        token_url: url(ProviderId::Gcp, "token")?,
        sts_url: url(ProviderId::Gcp, "sts")?,
        iam_credentials_url: url(ProviderId::Gcp, "iam-credentials")?,
    };
    let gcp = GcpGrantIssuer::new(google, ca)?.with_token_files(lending.token_files.clone());
    Ok(GrantIssuers::default()
        .with(ProviderId::Aws, Arc::new(aws))
        .with(ProviderId::Azure, Arc::new(azure))
        .with(ProviderId::Gcp, Arc::new(gcp)))
}
