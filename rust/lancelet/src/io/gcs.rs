//! Google Cloud Storage (`gs://bucket/path`) through object_store's `gcp`
//! client, configured with pylance's storage option names.
//!
//! Options (keys are matched lower-cased, as pylance does):
//! - every key object_store's `GoogleConfigKey` accepts:
//!   `google_service_account` (a key file's path), `google_service_account_key`
//!   (the key's JSON), `google_application_credentials`, `google_base_url`
//!   (the endpoint, e.g. an emulator's), `google_skip_signature` (send
//!   unsigned requests), `google_bearer_token`, and client options such as
//!   `allow_http` or `timeout`; `GOOGLE_*` environment variables fill in what
//!   the options leave unset;
//! - `google_storage_token` (or `GOOGLE_STORAGE_TOKEN`): a static OAuth
//!   token, as pylance reads it;
//! - `client_max_retries` / `client_retry_timeout`: the retry policy
//!   (pylance's defaults: 10 retries, 180 s);
//! - pylance's OpenDAL client, `use_opendal=true`, with its options
//!   `endpoint` (→ the base URL; `http://` allowed), `allow_anonymous`
//!   (→ unsigned requests), `root`, `credential` (base64 key JSON),
//!   `credential_path` and `token`. pylance's OpenDAL store keeps objects
//!   below `root` and, for `gs://b/p`, replaces `root` by `/p` and still
//!   names objects by their full path: `gs://b/p` lives under `p/p/`. The
//!   same options reach the same objects here.
//!
//! Keys that only one of pylance's two clients reads are refused with the
//! other (`endpoint`/`root`/`allow_anonymous` without `use_opendal=true`,
//! `google_*` keys with it), and so are combinations that cannot both be
//! honoured (`google_skip_signature` with a token): pylance would
//! silently ignore one of them and talk to another endpoint, or with other
//! credentials, than the caller meant. Unknown keys are ignored (an
//! options map is often shared with S3).
//!
//! Reads and listings go through object_store's client (GCS's XML API).
//! Writes and deletes go through GCS's JSON API ([`JsonApi`]): a commit
//! needs put-if-not-exists, which GCS gives as `ifGenerationMatch=0`, and
//! the JSON API's multipart and resumable uploads are where both GCS and
//! the fake-gcs-server emulator honour it (the emulator accepts no
//! XML-API write at all). Small objects are one multipart upload; streamed
//! ones a resumable upload whose chunks are sent in order, each held back
//! until the next arrives, so that only the last one (sent with the total
//! size) may be shorter than GCS's 256 KiB granularity; copies are
//! `rewriteTo` calls.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use futures::future::{BoxFuture, FutureExt, Shared};
use futures::stream::{BoxStream, StreamExt};
use object_store::client::{HttpClient, HttpConnector, HttpRequest, HttpRequestBody, ReqwestConnector};
use object_store::gcp::{GcpCredentialProvider, GoogleCloudStorage, GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path;
use object_store::{
    ClientConfigKey, ClientOptions, CopyMode, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RetryConfig, UploadPart,
};
use serde_json::Value;

use super::StorageOptions;
use crate::error::{Error, Result};

/// GCS's public endpoint (XML and JSON APIs).
const DEFAULT_BASE_URL: &str = "https://storage.googleapis.com";
const DEFAULT_MAX_RETRIES: usize = 10;
const DEFAULT_RETRY_TIMEOUT_SECS: u64 = 180;
/// Options only pylance's OpenDAL client reads that lancelet maps.
const OPENDAL_MAPPED: &[&str] = &["endpoint", "root", "allow_anonymous", "credential", "credential_path", "token"];
/// OpenDAL GCS options with no object_store equivalent.
const OPENDAL_UNSUPPORTED: &[&str] =
    &["scope", "service_account", "predefined_acl", "default_storage_class", "disable_vm_metadata", "disable_config_load"];

/// Why a `google_*` key is refused with `use_opendal=true`.
const DEFAULT_ONLY: &str = "is an option of pylance's default GCS client, which use_opendal=true replaces (see endpoint, credential, token)";

/// What `gs://` URI and options resolve to.
pub(crate) struct Config {
    builder: GoogleCloudStorageBuilder,
    /// The bucket.
    pub bucket: String,
    /// Object path of the URI inside the bucket.
    pub path: Path,
    /// Endpoint of both APIs, without a trailing `/`.
    pub base_url: String,
    /// Requests go unsigned.
    pub skip_signature: bool,
    client: ClientOptions,
    retry: RetryConfig,
}

fn bad(uri: &str, why: impl std::fmt::Display) -> Error {
    Error::invalid_input(format!("gs:// storage options for {uri}: {why}"))
}

fn parse_bool(uri: &str, key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" | "" => Ok(false),
        _ => Err(bad(uri, format!("{key}={value:?} is not a boolean"))),
    }
}

fn parse_number<T: FromStr>(uri: &str, key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| bad(uri, format!("{key}={value:?} is not a number")))
}

/// Resolve `uri` and `options` (see the module docs) without building
/// anything that talks to the network.
pub(crate) fn configure(uri: &str, options: &StorageOptions) -> Result<Config> {
    let url = url::Url::parse(uri).map_err(|e| Error::invalid_input(format!("bad URI {uri:?}: {e}")).with_source(e))?;
    let bucket = url
        .host_str()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| Error::invalid_input(format!("GCS URI {uri:?} names no bucket (expected gs://bucket/path)")))?
        .to_string();
    let uri_path = url.path().trim_matches('/').to_string();
    let opts: BTreeMap<String, String> = options.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
    let opendal = match opts.get("use_opendal") {
        Some(v) => parse_bool(uri, "use_opendal", v)?,
        None => false,
    };
    let mut builder = GoogleCloudStorageBuilder::from_env();
    let mut retry =
        RetryConfig { max_retries: DEFAULT_MAX_RETRIES, retry_timeout: Duration::from_secs(DEFAULT_RETRY_TIMEOUT_SECS), ..Default::default() };
    let mut client = ClientOptions::new();
    let mut token = None;
    let mut skip_signature = false;
    let mut base_url = None;
    let mut root = None;
    for (key, value) in &opts {
        let key = key.as_str();
        match key {
            "use_opendal" => {}
            "client_max_retries" => retry.max_retries = parse_number(uri, key, value)?,
            "client_retry_timeout" => retry.retry_timeout = Duration::from_secs(parse_number(uri, key, value)?),
            "google_storage_token" if opendal => {
                return Err(bad(
                    uri,
                    "google_storage_token is an option of pylance's default GCS client, which use_opendal=true replaces (use token)",
                ))
            }
            "google_storage_token" => token = Some(value.clone()),
            _ if OPENDAL_MAPPED.contains(&key) || (opendal && OPENDAL_UNSUPPORTED.contains(&key)) => {
                if !opendal {
                    return Err(bad(
                        uri,
                        format!(
                            "{key} is an option of pylance's OpenDAL GCS client (use_opendal=true); \
                             the default client ignores it (its endpoint option is google_base_url)"
                        ),
                    ));
                }
                match key {
                    "endpoint" => base_url = Some(value.clone()),
                    "root" => root = Some(value.clone()),
                    "allow_anonymous" => skip_signature = parse_bool(uri, key, value)?,
                    "credential" => {
                        let json = base64::engine::general_purpose::STANDARD
                            .decode(value.trim())
                            .ok()
                            .and_then(|b| String::from_utf8(b).ok())
                            .ok_or_else(|| bad(uri, "credential is not a base64-encoded service account key"))?;
                        builder = builder.with_config(GoogleConfigKey::ServiceAccountKey, json);
                    }
                    "credential_path" => builder = builder.with_config(GoogleConfigKey::ServiceAccount, value),
                    "token" => token = Some(value.clone()),
                    _ => return Err(bad(uri, format!("OpenDAL's GCS option {key} has no equivalent in lancelet's GCS client"))),
                }
            }
            _ => {
                let Ok(config_key) = GoogleConfigKey::from_str(key) else { continue };
                match config_key {
                    GoogleConfigKey::Client(client_key) => client = client.with_config(client_key, value),
                    _ if opendal => return Err(bad(uri, format!("{key} {DEFAULT_ONLY}"))),
                    GoogleConfigKey::SkipSignature => skip_signature = parse_bool(uri, key, value)?,
                    GoogleConfigKey::BaseUrl => base_url = Some(value.clone()),
                    GoogleConfigKey::Bucket => {}
                    other => builder = builder.with_config(other, value),
                }
            }
        }
    }
    if token.is_none() && !opendal {
        token = std::env::var("GOOGLE_STORAGE_TOKEN").ok().filter(|t| !t.is_empty());
    }
    if skip_signature && token.is_some() {
        let (skip, tok) = if opendal { ("allow_anonymous", "token") } else { ("google_skip_signature", "google_storage_token") };
        return Err(bad(uri, format!("{skip}=true sends unsigned requests, so {tok} would be ignored: give one of them")));
    }
    let base_url = base_url
        .or_else(|| builder.get_config_value(&GoogleConfigKey::BaseUrl))
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
        .trim_end_matches('/')
        .to_string();
    if !base_url.starts_with("http://") && !base_url.starts_with("https://") {
        return Err(bad(uri, format!("the endpoint {base_url:?} is not an http(s) URL")));
    }
    if opendal && base_url.starts_with("http://") {
        // OpenDAL talks to any endpoint it is given; object_store wants
        // plain HTTP allowed explicitly.
        client = client.with_config(ClientConfigKey::AllowHttp, "true");
    }
    let path = if opendal {
        // pylance's OpenDAL store: root is `/<uri path>` when the URI has
        // a path (the `root` option is then overwritten), and objects are
        // still named by their path from the bucket.
        let root = if uri_path.is_empty() { root.unwrap_or_default().trim_matches('/').to_string() } else { uri_path.clone() };
        [root, uri_path].into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("/")
    } else {
        uri_path
    };
    let path = Path::from_url_path(&path).map_err(|e| Error::invalid_input(format!("bad path in {uri}: {e}")).with_source(e))?;
    builder = builder
        .with_bucket_name(&bucket)
        .with_config(GoogleConfigKey::BaseUrl, &base_url)
        .with_skip_signature(skip_signature)
        .with_retry(retry.clone())
        .with_client_options(client.clone());
    if let Some(t) = token {
        builder = builder.with_bearer_token(t);
    }
    Ok(Config { builder, bucket, path, base_url, skip_signature, client, retry })
}

/// Build the store for `gs://bucket/path` and the object path inside the
/// bucket.
pub(super) fn open(uri: &str, options: &StorageOptions) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let config = configure(uri, options)?;
    let inner = config.builder.build().map_err(|e| bad(uri, e.to_string()).with_source(e))?;
    let http = ReqwestConnector::default().connect(&config.client).map_err(|e| bad(uri, e.to_string()).with_source(e))?;
    let api = JsonApi {
        http,
        credentials: inner.credentials().clone(),
        base_url: config.base_url,
        bucket: config.bucket,
        skip_signature: config.skip_signature,
        retry: config.retry,
    };
    Ok((Arc::new(GcsStore { inner, api: Arc::new(api) }), config.path))
}

/// object_store's GCS client, with writes sent through [`JsonApi`].
#[derive(Debug)]
struct GcsStore {
    inner: GoogleCloudStorage,
    api: Arc<JsonApi>,
}

impl std::fmt::Display for GcsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GCS({}, {})", self.api.base_url, self.api.bucket)
    }
}

/// Writes through GCS's JSON API (see the module docs).
struct JsonApi {
    http: HttpClient,
    credentials: GcpCredentialProvider,
    base_url: String,
    bucket: String,
    skip_signature: bool,
    retry: RetryConfig,
}

impl std::fmt::Debug for JsonApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JsonApi({}, {})", self.base_url, self.bucket)
    }
}

fn generic(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> object_store::Error {
    object_store::Error::Generic { store: "GCS", source: e.into() }
}

/// Percent-encode an object name (or any text) for a URL path segment or
/// query value: everything but unreserved characters.
fn encode(s: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    percent_encoding::utf8_percent_encode(s, SET).to_string()
}

/// A finished upload's generation and etag, from the object resource GCS
/// answers with.
fn put_result(body: &[u8]) -> PutResult {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let field = |k: &str| v[k].as_str().map(str::to_string).or_else(|| v[k].as_i64().map(|n| n.to_string()));
    PutResult { e_tag: field("etag"), version: field("generation"), extensions: Default::default() }
}

/// A request as data, so that it can be sent again.
struct Req {
    method: &'static str,
    url: String,
    headers: Vec<(&'static str, String)>,
    body: Bytes,
}

/// Statuses worth trying again (GCS's retry guidance).
fn transient(status: u16) -> bool {
    status == 408 || status == 429 || status >= 500
}

impl JsonApi {
    async fn request(&self, req: &Req) -> object_store::Result<HttpRequest> {
        let mut b = http::Request::builder().method(req.method).uri(&req.url);
        for (k, v) in &req.headers {
            b = b.header(*k, v);
        }
        if !self.skip_signature {
            let credential = self.credentials.get_credential().await?;
            if !credential.bearer.is_empty() {
                b = b.header("authorization", format!("Bearer {}", credential.bearer));
            }
        }
        b.body(HttpRequestBody::from(req.body.clone())).map_err(generic)
    }

    /// Send `req`, trying again after transport failures and transient
    /// statuses within the retry policy; the final status and body.
    async fn send(&self, req: Req, path: &str) -> object_store::Result<(u16, http::HeaderMap, Bytes)> {
        let started = std::time::Instant::now();
        let mut attempt = 0usize;
        loop {
            let outcome = match self.http.execute(self.request(&req).await?).await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let headers = response.headers().clone();
                    match response.into_body().bytes().await {
                        Ok(body) if !transient(status) => return Ok((status, headers, body)),
                        Ok(body) => format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
                        Err(e) => e.to_string(),
                    }
                }
                Err(e) => e.to_string(),
            };
            attempt += 1;
            if attempt > self.retry.max_retries || started.elapsed() >= self.retry.retry_timeout {
                return Err(generic(format!("{} {} ({path}) failed after {attempt} attempt(s): {outcome}", req.method, req.url)));
            }
            let ms = (100u64 << attempt.min(7)).min(15_000);
            tokio::time::sleep(Duration::from_millis(ms / 2 + crate::ids::random_u64() % (ms / 2 + 1))).await;
        }
    }

    /// The error of a request that GCS refused.
    fn refused(path: &Path, what: &str, status: u16, body: &[u8]) -> object_store::Error {
        let source = format!("{what}: HTTP {status}: {}", String::from_utf8_lossy(body)).into();
        match status {
            404 => object_store::Error::NotFound { path: path.to_string(), source },
            // ifGenerationMatch=0 failed: the object exists.
            412 => object_store::Error::AlreadyExists { path: path.to_string(), source },
            _ => object_store::Error::Generic { store: "GCS", source },
        }
    }

    fn precondition(mode: &PutMode) -> object_store::Result<Option<String>> {
        Ok(match mode {
            PutMode::Overwrite => None,
            PutMode::Create => Some("0".into()),
            PutMode::Update(v) => Some(v.version.clone().ok_or_else(|| generic("a conditional GCS update needs the object's generation"))?),
        })
    }

    /// One multipart upload (metadata + media) of a whole object.
    async fn upload(&self, path: &Path, payload: PutPayload, mode: &PutMode) -> object_store::Result<PutResult> {
        let boundary = format!("lancelet{:016x}", crate::ids::random_u64());
        let meta = serde_json::json!({ "name": path.as_ref() }).to_string();
        let mut body = BytesMut::with_capacity(payload.content_length() + meta.len() + 256);
        body.extend_from_slice(format!("--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{meta}\r\n").as_bytes());
        body.extend_from_slice(format!("--{boundary}\r\ncontent-type: application/octet-stream\r\n\r\n").as_bytes());
        for chunk in payload.iter() {
            body.extend_from_slice(chunk);
        }
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut url = format!("{}/upload/storage/v1/b/{}/o?uploadType=multipart", self.base_url, encode(&self.bucket));
        if let Some(g) = Self::precondition(mode)? {
            url.push_str(&format!("&ifGenerationMatch={g}"));
        }
        let headers = vec![("content-type", format!("multipart/related; boundary={boundary}"))];
        let (status, _, body) = self.send(Req { method: "POST", url, headers, body: body.freeze() }, path.as_ref()).await?;
        match status {
            200 | 201 => Ok(put_result(&body)),
            _ => Err(Self::refused(path, "upload", status, &body)),
        }
    }

    /// Copy `from` to `to` (`rewriteTo`, repeated until GCS says done).
    async fn rewrite(&self, from: &Path, to: &Path, mode: CopyMode) -> object_store::Result<()> {
        let mut token: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/storage/v1/b/{b}/o/{}/rewriteTo/b/{b}/o/{}?",
                self.base_url,
                encode(from.as_ref()),
                encode(to.as_ref()),
                b = encode(&self.bucket)
            );
            if matches!(mode, CopyMode::Create) {
                url.push_str("ifGenerationMatch=0&");
            }
            if let Some(t) = &token {
                url.push_str(&format!("rewriteToken={}", encode(t)));
            }
            let headers = vec![("content-type", "application/json".to_string())];
            let (status, _, body) = self.send(Req { method: "POST", url, headers, body: Bytes::from_static(b"{}") }, from.as_ref()).await?;
            if status != 200 {
                // A missing source is NotFound on `from`; an existing
                // target (Create) AlreadyExists on `to`.
                return Err(Self::refused(if status == 412 { to } else { from }, "copy", status, &body));
            }
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if v["done"].as_bool().unwrap_or(true) {
                return Ok(());
            }
            token = v["rewriteToken"].as_str().map(str::to_string);
            if token.is_none() {
                return Err(generic(format!("GCS rewrite of {from} is not done but gave no rewriteToken")));
            }
        }
    }

    /// Delete one object (object_store's XML delete asks for a token even
    /// with `skip_signature`).
    async fn delete(&self, path: &Path) -> object_store::Result<()> {
        let url = format!("{}/storage/v1/b/{}/o/{}", self.base_url, encode(&self.bucket), encode(path.as_ref()));
        let (status, _, body) = self.send(Req { method: "DELETE", url, headers: Vec::new(), body: Bytes::new() }, path.as_ref()).await?;
        match status {
            200 | 204 => Ok(()),
            _ => Err(Self::refused(path, "delete", status, &body)),
        }
    }

    /// Open a resumable upload session: its URL.
    async fn start_resumable(&self, path: &Path) -> object_store::Result<String> {
        let url = format!("{}/upload/storage/v1/b/{}/o?uploadType=resumable&name={}", self.base_url, encode(&self.bucket), encode(path.as_ref()));
        let meta = serde_json::json!({ "name": path.as_ref() }).to_string();
        let headers = vec![("content-type", "application/json; charset=UTF-8".to_string())];
        let (status, headers, body) = self.send(Req { method: "POST", url, headers, body: Bytes::from(meta) }, path.as_ref()).await?;
        if status != 200 && status != 201 {
            return Err(Self::refused(path, "starting an upload", status, &body));
        }
        headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| generic(format!("GCS started an upload of {path} but gave no session URL")))
    }

    /// Send `data` at `start` of a resumable upload; `total` on the last
    /// chunk, which finishes the object.
    async fn put_chunk(&self, session: &str, path: &Path, start: u64, data: Bytes, total: Option<u64>) -> object_store::Result<PutResult> {
        let len = data.len() as u64;
        let total_s = total.map(|t| t.to_string()).unwrap_or_else(|| "*".into());
        let range = if len == 0 { format!("bytes */{total_s}") } else { format!("bytes {start}-{}/{total_s}", start + len - 1) };
        let req = Req { method: "PUT", url: session.to_string(), headers: vec![("content-range", range)], body: data };
        let (status, _, body) = self.send(req, path.as_ref()).await?;
        match (status, total) {
            (200 | 201, Some(_)) => Ok(put_result(&body)),
            // 308: more expected (GCS; the emulator as for Python clients).
            (200 | 201 | 308, None) => Ok(PutResult { e_tag: None, version: None, extensions: Default::default() }),
            _ => Err(Self::refused(path, "uploading a chunk", status, &body)),
        }
    }
}

type Chain = Shared<BoxFuture<'static, std::result::Result<(), String>>>;

/// A streamed upload: a resumable upload session (see the module docs).
struct Resumable {
    api: Arc<JsonApi>,
    session: Arc<String>,
    path: Path,
    /// Bytes handed over so far.
    offset: u64,
    /// The last part, not sent until it is known whether it is the last.
    pending: Option<(u64, Bytes)>,
    /// Completion of the parts sent so far, in order.
    chain: Chain,
}

impl std::fmt::Debug for Resumable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resumable({})", self.path)
    }
}

fn payload_bytes(payload: PutPayload) -> Bytes {
    let mut parts: Vec<Bytes> = payload.into_iter().collect();
    if parts.len() == 1 {
        return parts.pop().expect("one part");
    }
    let mut all = BytesMut::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|p| all.extend_from_slice(p));
    all.freeze()
}

#[async_trait]
impl MultipartUpload for Resumable {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let data = payload_bytes(data);
        let start = self.offset;
        self.offset += data.len() as u64;
        let Some((at, previous)) = self.pending.replace((start, data)) else {
            return futures::future::ready(Ok(())).boxed();
        };
        let (prior, api, session, path) = (self.chain.clone(), self.api.clone(), self.session.clone(), self.path.clone());
        let next: Chain = async move {
            prior.await?;
            api.put_chunk(&session, &path, at, previous, None).await.map(|_| ()).map_err(|e| e.to_string())
        }
        .boxed()
        .shared();
        self.chain = next.clone();
        next.map(|r| r.map_err(generic)).boxed()
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        self.chain.clone().await.map_err(generic)?;
        let (at, last) = self.pending.take().unwrap_or((self.offset, Bytes::new()));
        self.api.put_chunk(&self.session, &self.path, at, last, Some(self.offset)).await
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        let _ = self.chain.clone().await;
        let req = Req { method: "DELETE", url: self.session.to_string(), headers: Vec::new(), body: Bytes::new() };
        // GCS answers 499 to a cancelled session; any answer will do.
        self.api.send(req, self.path.as_ref()).await.map(|_| ())
    }
}

#[async_trait]
impl ObjectStore for GcsStore {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> object_store::Result<PutResult> {
        self.api.upload(location, payload, &opts.mode).await
    }

    async fn put_multipart_opts(&self, location: &Path, _opts: PutMultipartOptions) -> object_store::Result<Box<dyn MultipartUpload>> {
        let session = self.api.start_resumable(location).await?;
        Ok(Box::new(Resumable {
            api: self.api.clone(),
            session: Arc::new(session),
            path: location.clone(),
            offset: 0,
            pending: None,
            chain: futures::future::ready(Ok(())).boxed().shared(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[std::ops::Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, object_store::Result<Path>>) -> BoxStream<'static, object_store::Result<Path>> {
        let api = self.api.clone();
        locations
            .map(move |location| {
                let api = api.clone();
                async move {
                    let location = location?;
                    api.delete(&location).await?;
                    Ok(location)
                }
            })
            .buffered(10)
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(&self, prefix: Option<&Path>, offset: &Path) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> object_store::Result<()> {
        self.api.rewrite(from, to, options.mode).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::io::test_options as opts;

    fn err(uri: &str, pairs: &[(&str, &str)]) -> String {
        match configure(uri, &opts(pairs)) {
            Err(e @ Error::InvalidInput { .. }) => e.to_string(),
            Err(e) => panic!("not InvalidInput: {e:?}"),
            Ok(_) => panic!("{pairs:?} accepted"),
        }
    }

    #[test]
    fn default_client_options() {
        let c = configure("gs://b/p/d", &opts(&[("google_base_url", "http://127.0.0.1:9/"), ("ALLOW_HTTP", "true"), ("aws_region", "x")])).unwrap();
        assert_eq!((c.bucket.as_str(), c.path.as_ref(), c.base_url.as_str()), ("b", "p/d", "http://127.0.0.1:9"));
        assert!(!c.skip_signature);
        let c = configure("gs://b", &opts(&[("google_skip_signature", "true"), ("client_max_retries", "2")])).unwrap();
        assert!(c.skip_signature && c.path.as_ref().is_empty() && c.base_url == DEFAULT_BASE_URL && c.retry.max_retries == 2);
        assert!(err("gs:///p", &[]).contains("names no bucket"));
        assert!(err("gs://b/p", &[("client_max_retries", "many")]).contains("not a number"));
    }

    #[test]
    fn opendal_options_map_to_paths_as_pylance_stores_them() {
        let c =
            configure("gs://b", &opts(&[("use_opendal", "true"), ("endpoint", "http://h:1"), ("allow_anonymous", "true"), ("root", "/p")])).unwrap();
        assert_eq!((c.path.as_ref(), c.base_url.as_str(), c.skip_signature), ("p", "http://h:1", true));
        // gs://b/p: pylance sets root=/p and names objects p/...: p/p/...
        let c = configure("gs://b/p", &opts(&[("use_opendal", "true"), ("endpoint", "http://h:1"), ("root", "/other")])).unwrap();
        assert_eq!(c.path.as_ref(), "p/p");
        let key = base64::engine::general_purpose::STANDARD.encode("not json");
        configure("gs://b", &opts(&[("use_opendal", "true"), ("credential", &key)])).unwrap();
        assert!(err("gs://b", &[("use_opendal", "true"), ("credential", "%%%")]).contains("base64"));
    }

    #[test]
    fn options_of_the_other_client_are_refused() {
        for key in ["endpoint", "root", "allow_anonymous", "token"] {
            assert!(err("gs://b/p", &[(key, "x")]).contains("use_opendal=true"), "{key}");
        }
        assert!(err("gs://b/p", &[("use_opendal", "true"), ("google_base_url", "http://h")]).contains("default GCS client"));
        assert!(err("gs://b/p", &[("use_opendal", "true"), ("google_storage_token", "t")]).contains("default GCS client"));
        assert!(err("gs://b/p", &[("use_opendal", "true"), ("predefined_acl", "publicRead")]).contains("no equivalent"));
        assert!(err("gs://b/p", &[("use_opendal", "maybe")]).contains("not a boolean"));
        let e = err("gs://b/p", &[("google_skip_signature", "true"), ("google_storage_token", "t")]);
        assert!(e.contains("give one of them"), "{e}");
        let e = err("gs://b", &[("use_opendal", "true"), ("allow_anonymous", "true"), ("token", "t")]);
        assert!(e.contains("allow_anonymous"), "{e}");
        assert!(err("gs://b", &[("use_opendal", "true"), ("endpoint", "ftp://h")]).contains("not an http(s) URL"));
    }

    #[test]
    fn names_are_encoded_whole() {
        assert_eq!(encode("a/b c+ü~.-_"), "a%2Fb%20c%2B%C3%BC~.-_");
        let r = put_result(br#"{"generation":"17","etag":"CAE="}"#);
        assert_eq!((r.version.as_deref(), r.e_tag.as_deref()), (Some("17"), Some("CAE=")));
    }
}
