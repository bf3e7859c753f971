//! Amazon S3 (and S3-compatible stores such as MinIO or SeaweedFS) through
//! object_store's `aws` client.
//!
//! Configuration follows pylance: every storage option whose lower-cased key
//! object_store's `AmazonS3ConfigKey` accepts is applied (`aws_access_key_id`,
//! `aws_secret_access_key`, `aws_session_token`, `aws_endpoint` /
//! `endpoint`, `aws_region` / `region`, `allow_http`,
//! `aws_virtual_hosted_style_request`, `aws_conditional_put`, client options
//! such as `timeout`, ...); keys it does not know are ignored, as pylance
//! ignores them. `AWS_*` environment variables fill in whatever the options
//! leave unset. `client_max_retries` (default 10) and
//! `client_retry_timeout` (seconds, default 180) set the retry policy, with
//! pylance's defaults.
//!
//! Commits need put-if-not-exists: object_store's default S3 conditional-put
//! mode (`etag`) sends `If-None-Match: *` with `PutMode::Create`, which AWS
//! S3, MinIO, R2 and SeaweedFS honour. A store that does not can be told
//! `aws_conditional_put=disabled`, and then every commit is refused with an
//! `Unsupported` error rather than risking a lost update.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{ObjectStore, RetryConfig};

use super::StorageOptions;
use crate::error::{Error, Result};

/// Default number of retries of one request (pylance's default).
const DEFAULT_MAX_RETRIES: usize = 10;
/// Default total retry time in seconds (pylance's default).
const DEFAULT_RETRY_TIMEOUT_SECS: u64 = 180;

fn parse_number<T: FromStr>(key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| Error::invalid_input(format!("storage option {key}={value:?} is not a number")))
}

/// An `AmazonS3Builder` configured from `options` (over the `AWS_*`
/// environment variables), with the retry policy they set; shared by the
/// bucket and the DynamoDB store of `s3+ddb://` URIs.
pub(super) fn builder(options: &StorageOptions) -> Result<AmazonS3Builder> {
    let mut builder = AmazonS3Builder::from_env();
    let mut retry =
        RetryConfig { max_retries: DEFAULT_MAX_RETRIES, retry_timeout: Duration::from_secs(DEFAULT_RETRY_TIMEOUT_SECS), ..Default::default() };
    // Sorted, so that a key given twice under two aliases resolves the same
    // way every time.
    let mut keys: Vec<(&String, &String)> = options.iter().collect();
    keys.sort();
    for (key, value) in keys {
        let key = key.to_ascii_lowercase();
        match key.as_str() {
            "client_max_retries" => retry.max_retries = parse_number(&key, value)?,
            "client_retry_timeout" => retry.retry_timeout = Duration::from_secs(parse_number(&key, value)?),
            _ => {
                if let Ok(config_key) = AmazonS3ConfigKey::from_str(&key) {
                    builder = builder.with_config(config_key, value);
                }
            }
        }
    }
    Ok(builder.with_retry(retry))
}

/// Build the store for `s3://bucket/path` (or `s3a://`) and the object path
/// inside the bucket.
pub(super) fn open(uri: &str, options: &StorageOptions) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let url = url::Url::parse(uri).map_err(|e| Error::invalid_input(format!("bad URI {uri:?}: {e}")).with_source(e))?;
    let bucket = url
        .host_str()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| Error::invalid_input(format!("S3 URI {uri:?} names no bucket (expected s3://bucket/path)")))?;
    let store = builder(options)?
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| Error::invalid_input(format!("cannot configure S3 access for {uri}: {e}")).with_source(e))?;
    let path = Path::from_url_path(url.path()).map_err(|e| Error::invalid_input(format!("bad path in {uri}: {e}")).with_source(e))?;
    Ok((Arc::new(store), path))
}
