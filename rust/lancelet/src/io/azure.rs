//! Azure Blob Storage (`az://container/path`) through object_store's
//! `azure` client, configured with pylance's storage option names.
//!
//! Every key object_store's `AzureConfigKey` accepts is applied
//! (`account_name` / `azure_storage_account_name`, `account_key` /
//! `azure_storage_account_key` / `access_key`, `sas_token` /
//! `azure_storage_sas_key`, `endpoint` / `azure_storage_endpoint`,
//! `use_emulator`, `client_id`, `tenant_id`, `client_secret`, `bearer_token`,
//! `skip_signature`, client options such as `allow_http` ...), over the
//! `AZURE_*` environment variables; `client_max_retries` /
//! `client_retry_timeout` set the retry policy (pylance's defaults).
//! Unknown keys are ignored, as pylance ignores them.
//!
//! pylance's OpenDAL client (`use_opendal=true`) reads `account_name`,
//! `account_key`, `sas_token`, `endpoint` (and their aliases) and `root`;
//! like its GCS twin it replaces `root` by `/<path>` for `az://c/<path>` and
//! names objects by their full path, so `az://c/p` lives under `p/p/`; the
//! same options reach the same objects here. Its other options are
//! refused, as is `root` without `use_opendal=true`.
//!
//! No Azure emulator can be installed where lancelet is tested, so only
//! this option handling is tested; requests follow object_store's client.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::path::Path;
use object_store::{ClientConfigKey, ObjectStore, RetryConfig};

use super::StorageOptions;
use crate::error::{Error, Result};

const DEFAULT_MAX_RETRIES: usize = 10;
const DEFAULT_RETRY_TIMEOUT_SECS: u64 = 180;

fn bad(uri: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("az:// storage options for {uri}: {why}"))
}

/// The configured builder for `uri` and the object path inside the
/// container (nothing is contacted).
pub(crate) fn configure(uri: &str, options: &StorageOptions) -> Result<(MicrosoftAzureBuilder, Path)> {
    let url = url::Url::parse(uri).map_err(|e| Error::invalid_input(format!("bad URI {uri:?}: {e}")).with_source(e))?;
    if url.host_str().is_none_or(|h| h.is_empty()) {
        return Err(Error::invalid_input(format!("Azure URI {uri:?} names no container (expected az://container/path)")));
    }
    let uri_path = url.path().trim_matches('/').to_string();
    let opts: BTreeMap<String, String> = options.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
    let opendal = match opts.get("use_opendal").map(|v| v.trim().to_ascii_lowercase()) {
        None => false,
        Some(v) if v == "true" => true,
        Some(v) if v == "false" || v.is_empty() => false,
        Some(v) => return Err(bad(uri, format!("use_opendal={v:?} is not a boolean"))),
    };
    let mut builder = MicrosoftAzureBuilder::from_env().with_url(uri);
    let mut retry =
        RetryConfig { max_retries: DEFAULT_MAX_RETRIES, retry_timeout: Duration::from_secs(DEFAULT_RETRY_TIMEOUT_SECS), ..Default::default() };
    let mut root = None;
    let number = |key: &str, v: &str| v.trim().parse::<u64>().map_err(|_| bad(uri, format!("{key}={v:?} is not a number")));
    for (key, value) in &opts {
        let key = key.as_str();
        match key {
            "use_opendal" => {}
            "client_max_retries" => retry.max_retries = number(key, value)? as usize,
            "client_retry_timeout" => retry.retry_timeout = Duration::from_secs(number(key, value)?),
            "root" | "allow_anonymous" if !opendal => {
                return Err(bad(uri, format!("{key} is an option of pylance's OpenDAL client (use_opendal=true), which the default client ignores")))
            }
            "root" => root = Some(value.clone()),
            _ => {
                let Ok(config_key) = AzureConfigKey::from_str(key) else { continue };
                let opendal_reads = matches!(
                    config_key,
                    AzureConfigKey::AccountName
                        | AzureConfigKey::AccessKey
                        | AzureConfigKey::SasKey
                        | AzureConfigKey::Endpoint
                        | AzureConfigKey::Client(_)
                );
                if opendal && !opendal_reads {
                    return Err(bad(
                        uri,
                        format!("{key} is not read by pylance's OpenDAL Azure client (use_opendal=true): it takes account_name, account_key, sas_token, endpoint and root"),
                    ));
                }
                if opendal && config_key == AzureConfigKey::Endpoint && value.starts_with("http://") {
                    builder = builder.with_config(AzureConfigKey::Client(ClientConfigKey::AllowHttp), "true");
                }
                builder = builder.with_config(config_key, value);
            }
        }
    }
    let path = if opendal {
        let root = if uri_path.is_empty() { root.unwrap_or_default().trim_matches('/').to_string() } else { uri_path.clone() };
        [root, uri_path].into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("/")
    } else {
        uri_path
    };
    let path = Path::from_url_path(&path).map_err(|e| Error::invalid_input(format!("bad path in {uri}: {e}")).with_source(e))?;
    Ok((builder.with_retry(retry), path))
}

/// Build the store for `az://container/path` and the object path inside
/// the container.
pub(super) fn open(uri: &str, options: &StorageOptions) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let (builder, path) = configure(uri, options)?;
    let store = builder.build().map_err(|e| bad(uri, e.to_string()).with_source(e))?;
    Ok((Arc::new(store), path))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::io::test_options as opts;

    fn invalid(uri: &str, pairs: &[(&str, &str)]) -> String {
        match open(uri, &opts(pairs)) {
            Err(e @ Error::InvalidInput { .. }) => e.to_string(),
            Err(e) => panic!("not InvalidInput: {e:?}"),
            Ok(_) => panic!("{pairs:?} accepted"),
        }
    }

    #[test]
    fn pylance_option_names_configure_the_client() {
        let key = "a2V5"; // base64 "key"
        let (b, path) = configure(
            "az://c/p/d",
            &opts(&[("azure_storage_account_name", "acct"), ("account_key", key), ("client_max_retries", "3"), ("aws_region", "x")]),
        )
        .unwrap();
        assert_eq!(path.as_ref(), "p/d");
        assert_eq!(b.get_config_value(&AzureConfigKey::AccountName).as_deref(), Some("acct"));
        assert_eq!(b.get_config_value(&AzureConfigKey::AccessKey).as_deref(), Some(key));
        // the container is read from the URL when the store is built (a
        // missing one fails the build: MissingContainerName)
        open("az://c/p/d", &opts(&[("azure_storage_account_name", "acct"), ("account_key", key)])).unwrap();
        open("az://c/p", &opts(&[("account_name", "acct"), ("sas_token", "sv=1&sig=x")])).unwrap();
        let (b, _) = configure("az://c", &opts(&[("use_emulator", "true")])).unwrap();
        assert_eq!(b.get_config_value(&AzureConfigKey::UseEmulator).as_deref(), Some("true"));
    }

    #[test]
    fn opendal_options_map_to_paths_as_pylance_stores_them() {
        let base = [("use_opendal", "true"), ("account_name", "acct"), ("account_key", "a2V5"), ("endpoint", "http://127.0.0.1:1/acct")];
        let (b, path) = configure("az://c", &opts(&[&base[..], &[("root", "/p")]].concat())).unwrap();
        assert_eq!(path.as_ref(), "p");
        assert_eq!(b.get_config_value(&AzureConfigKey::Client(ClientConfigKey::AllowHttp)).as_deref(), Some("true"));
        let (_, path) = configure("az://c/p", &opts(&base)).unwrap();
        assert_eq!(path.as_ref(), "p/p");
    }

    #[test]
    fn bad_options_are_named() {
        assert!(invalid("az:///p", &[]).contains("names no container"));
        assert!(invalid("az://c/p", &[("root", "/x")]).contains("use_opendal=true"));
        assert!(invalid("az://c/p", &[("use_opendal", "true"), ("client_id", "x")]).contains("not read by pylance's OpenDAL"));
        assert!(invalid("az://c/p", &[("use_opendal", "perhaps")]).contains("not a boolean"));
        assert!(invalid("az://c/p", &[("client_retry_timeout", "soon")]).contains("not a number"));
        // object_store's own checks surface as InvalidInput naming the URI.
        assert!(invalid("az://c/p", &[("account_name", "acct"), ("use_emulator", "sure")]).contains("az://c/p"));
    }
}
