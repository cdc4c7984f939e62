//! Amazon Bedrock through the AWS SDK's Converse API, for the `bedrock`
//! provider.
//!
//! Bedrock requests are signed with SigV4 from credentials that may come
//! from many places (environment, profiles, SSO caches, web identity,
//! container and instance roles), which is what the SDK is for: this module
//! uses `aws-config`'s standard chain and `aws-sdk-bedrockruntime`, on
//! rustls with ring like the rest of strands, and translates [`ChatRequest`]
//! in [`wire`]. The SDK's own retries are off: its errors are sorted into
//! the shared [`RetryPolicy`] like every other provider's (429 honouring
//! `Retry-After`, 5xx, timeouts and broken connections), and failures read
//! `bedrock: POST {url} …`, never a credential.
//!
//! Settings: the region is `runtime.region`, else the SDK's chain
//! (`AWS_REGION`, `AWS_DEFAULT_REGION`, the profile); the endpoint is
//! `runtime.host`, else `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, else
//! `AWS_ENDPOINT_URL` (both skipped when `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`
//! is true), else the regional default. The SDK is set up on the first
//! call (it is async), and the credentials are resolved then: a missing
//! region or no credentials is an `Error::Usage` naming what to set.
//!
//! Not done: SSO profiles (the `sso` feature of `aws-config` is left out to
//! keep the build lean; export the session's keys instead), streaming,
//! guardrails, prompt caching.

mod wire;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::config::{BehaviorVersion, ProvideCredentials, Region};
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::ConverseError;
use aws_sdk_bedrockruntime::Client;

use super::retry::{excerpt, normalize_base_url};
use super::{ChatRequest, ChatResponse, ProviderConfig};
use crate::error::{chain, Error, Result};
use crate::retry::{retry_after_value, Retry, RetryPolicy, Transient};

/// The longest connect timeout, whatever the call timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A Converse client. Clones share the SDK client once it is set up.
#[derive(Clone)]
pub struct BedrockClient {
    inner: Arc<Inner>,
}

struct Inner {
    /// `runtime.region`.
    region: Option<String>,
    /// The endpoint override and where it came from.
    endpoint: Option<(&'static str, String)>,
    timeout: Duration,
    retry: RetryPolicy,
    ready: tokio::sync::OnceCell<Ready>,
}

/// The SDK client and the endpoint it calls, for messages.
struct Ready {
    client: Client,
    /// No trailing slash.
    endpoint: String,
}

impl std::fmt::Debug for BedrockClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockClient")
            .field("region", &self.inner.region)
            .field("endpoint", &self.inner.endpoint)
            .field("retry", &self.inner.retry)
            .finish()
    }
}

impl BedrockClient {
    /// Builds the client from the spec's settings and the endpoint
    /// overrides among its credentials; the SDK itself is set up on the first call.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        Self::with_env(config, |name| config.credentials.get(name))
    }

    /// [`BedrockClient::new`] with the environment given as a lookup function.
    fn with_env(config: &ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let ignore_env = env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let host = config.host.as_deref().filter(|h| !h.trim().is_empty());
        let endpoint = match host {
            Some(h) => Some(("runtime.host", h.to_string())),
            None if ignore_env => None,
            None => ["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"]
                .into_iter()
                .find_map(|name| env(name).map(|url| (name, url))),
        };
        let endpoint = match endpoint {
            Some((origin, url)) => Some((origin, normalize_base_url("bedrock", origin, &url)?)),
            None => None,
        };
        Ok(BedrockClient {
            inner: Arc::new(Inner {
                region: config.region.clone().filter(|r| !r.trim().is_empty()),
                endpoint,
                timeout: config.timeout,
                retry: config.retry,
                ready: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// The SDK client, set up on first use: the standard config chain,
    /// this process's HTTP client, no SDK retries, the call timeout.
    async fn ready(&self) -> Result<&Ready> {
        self.inner
            .ready
            .get_or_try_init(|| async {
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .http_client(https_client())
                    .retry_config(RetryConfig::disabled())
                    .timeout_config(timeouts(self.inner.timeout));
                if let Some(region) = &self.inner.region {
                    loader = loader.region(Region::new(region.clone()));
                }
                let shared = loader.load().await;
                let Some(region) = shared.region().map(ToString::to_string) else {
                    return Err(Error::Usage(
                        "bedrock: no AWS region: set runtime.region in the spec, or AWS_REGION"
                            .to_string(),
                    ));
                };
                check_credentials(&shared).await?;
                let mut config = aws_sdk_bedrockruntime::config::Builder::from(&shared);
                let endpoint = match &self.inner.endpoint {
                    Some((_, url)) => {
                        config = config.endpoint_url(url);
                        url.clone()
                    }
                    None => format!("https://bedrock-runtime.{region}.amazonaws.com"),
                };
                Ok(Ready {
                    client: Client::from_conf(config.build()),
                    endpoint,
                })
            })
            .await
    }

    /// One Converse call, retried per the policy.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let ready = self.ready().await?;
        let url = converse_url(&ready.endpoint, &request.model);
        let input = wire::input(request)?;
        tracing::debug!(
            provider = "bedrock",
            agent = %request.agent,
            model = %request.model,
            url = %url,
            "calling model"
        );
        let attempts = AtomicU32::new(0);
        let max_attempts = self.inner.retry.max_retries.saturating_add(1);
        let outcome = self
            .inner
            .retry
            .run(
                || {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    let input = input.clone();
                    let call = ready
                        .client
                        .converse()
                        .model_id(&request.model)
                        .set_system(input.system)
                        .set_messages(Some(input.messages))
                        .set_tool_config(input.tool_config)
                        .set_inference_config(input.inference);
                    async move { call.send().await.map_err(Failure) }
                },
                |failure: &Failure, delay| {
                    tracing::warn!(
                        provider = "bedrock",
                        url = %url,
                        failure = %failure.summary(),
                        attempt = attempts.load(Ordering::Relaxed),
                        max_attempts,
                        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "provider call failed; retrying"
                    );
                },
            )
            .await;
        match outcome {
            Ok(output) => wire::response(&url, &output),
            Err(failure) => Err(failure.into_error(&url, attempts.load(Ordering::Relaxed))),
        }
    }
}

/// The HTTP client the SDK sends with: hyper and rustls with ring (the
/// SDK's default would bring aws-lc-rs), the platform's trusted roots.
fn https_client() -> aws_sdk_bedrockruntime::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// Each attempt may take `timeout` (none when it is zero).
fn timeouts(timeout: Duration) -> TimeoutConfig {
    if timeout.is_zero() {
        return TimeoutConfig::disabled();
    }
    TimeoutConfig::builder()
        .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
        .operation_attempt_timeout(timeout)
        .build()
}

/// Resolves the credentials once, so that having none is a clear usage
/// error before any call rather than a signing failure inside one.
async fn check_credentials(shared: &aws_config::SdkConfig) -> Result<()> {
    const HOW: &str = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN \
                       for temporary keys), or AWS_PROFILE with ~/.aws/credentials, or run where \
                       a role is available";
    let Some(provider) = shared.credentials_provider() else {
        return Err(Error::Usage(format!("bedrock: no AWS credentials: {HOW}")));
    };
    match provider.provide_credentials().await {
        Ok(_) => Ok(()),
        Err(CredentialsError::CredentialsNotLoaded(_)) => Err(Error::Usage(format!(
            "bedrock: no AWS credentials found (tried the environment, the profile, web \
             identity, container and instance roles): {HOW}"
        ))),
        Err(e) => Err(Error::Usage(format!(
            "bedrock: could not load AWS credentials ({}): {HOW}",
            excerpt(&chain(&e))
        ))),
    }
}

/// `{endpoint}/model/{model}/converse`, for logs and messages.
fn converse_url(endpoint: &str, model: &str) -> String {
    match reqwest::Url::parse(endpoint) {
        Ok(mut url) => {
            if let Ok(mut path) = url.path_segments_mut() {
                path.pop_if_empty().extend(["model", model, "converse"]);
            }
            super::retry::redact_url(&url)
        }
        Err(_) => format!("{endpoint}/model/{model}/converse"),
    }
}

/// One failed Converse attempt.
struct Failure(SdkError<ConverseError, HttpResponse>);

impl Transient for Failure {
    /// 429 (after `Retry-After` when given) and 5xx answers, timeouts,
    /// broken connections and unreadable answers are retried; other
    /// answers and requests that could not be built are not.
    fn retry(&self) -> Retry {
        match &self.0 {
            SdkError::ServiceError(e) => {
                let status = e.raw().status().as_u16();
                if status == 429 {
                    e.raw()
                        .headers()
                        .get("retry-after")
                        .and_then(retry_after_value)
                        .map_or(Retry::Backoff, Retry::After)
                } else if (500..600).contains(&status) {
                    Retry::Backoff
                } else {
                    Retry::Never
                }
            }
            SdkError::TimeoutError(_) | SdkError::ResponseError(_) => Retry::Backoff,
            SdkError::DispatchFailure(e) if e.is_io() || e.is_timeout() => Retry::Backoff,
            _ => Retry::Never,
        }
    }
}

impl Failure {
    /// What went wrong, in a few words, for the retry log.
    fn summary(&self) -> String {
        match &self.0 {
            SdkError::ServiceError(e) => format!(
                "HTTP {} {}",
                e.raw().status().as_u16(),
                e.err().code().unwrap_or("error")
            ),
            SdkError::TimeoutError(_) => "timed out".to_string(),
            other => chain(other),
        }
    }

    /// The error the caller gets after `attempts` attempts ended in this.
    fn into_error(self, url: &str, attempts: u32) -> Error {
        let attempts = if attempts == 1 {
            "1 attempt".to_string()
        } else {
            format!("{attempts} attempts")
        };
        Error::Runtime(match &self.0 {
            SdkError::ServiceError(e) => {
                let err = e.err();
                let said = match (err.code(), err.message()) {
                    (Some(code), Some(message)) => format!("{code}: {message}"),
                    (Some(code), None) => code.to_string(),
                    (None, Some(message)) => message.to_string(),
                    (None, None) => match e.raw().body().bytes() {
                        Some(body) if !body.is_empty() => excerpt(&String::from_utf8_lossy(body)),
                        _ => "<empty body>".to_string(),
                    },
                };
                format!(
                    "bedrock: POST {url} returned HTTP {} after {attempts}: {}",
                    e.raw().status().as_u16(),
                    excerpt(&said)
                )
            }
            SdkError::TimeoutError(_) => format!("bedrock: POST {url} timed out after {attempts}"),
            SdkError::ConstructionFailure(_) => format!(
                "bedrock: could not build the request for {url}: {}",
                excerpt(&chain(&self.0))
            ),
            other => format!(
                "bedrock: POST {url} failed after {attempts}: {}",
                excerpt(&chain(other))
            ),
        })
    }
}

#[cfg(test)]
mod tests;
