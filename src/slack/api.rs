//! The Slack Web API, through slack-morphism's client, with the retries the
//! platform asks for: 429 waits `Retry-After` and tries again, 5xx, broken
//! connections and timeouts back off exponentially, all under the policy the
//! model providers share ([`crate::retry`]). Nothing is dropped silently: a
//! call that still fails returns an error for the caller to record on the
//! session.

use secrecy::ExposeSecret;
use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::config::Config;
use crate::error::{Error, Result};
use crate::hub::metrics::Metrics;
use crate::retry::{Retry, RetryPolicy, Transient};

/// The longest `Retry-After` honoured. Slack's rate-limit windows run up to
/// a minute, and a message that waits beats a message that is dropped.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

type Connector = SlackClientHyperConnector<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
>;

#[derive(Clone)]
pub struct SlackApi {
    client: Arc<SlackClient<Connector>>,
    token: SlackApiToken,
    retry: RetryPolicy,
    timeout: Duration,
    metrics: Arc<Metrics>,
}

/// What went wrong with one attempt, for the log and the final error, and
/// whether to try again.
struct Failure {
    why: String,
    retry: Retry,
}

impl Transient for Failure {
    fn retry(&self) -> Retry {
        self.retry
    }
}

fn classify(e: SlackClientError) -> Failure {
    let (why, retry) = match e {
        SlackClientError::RateLimitError(r) => (
            "rate limited (429)".to_string(),
            r.retry_after.map_or(Retry::Backoff, Retry::After),
        ),
        SlackClientError::HttpError(h) if h.status_code.is_server_error() => {
            (format!("HTTP {}", h.status_code), Retry::Backoff)
        }
        SlackClientError::HttpError(h) => (format!("HTTP {}", h.status_code), Retry::Never),
        SlackClientError::HttpProtocolError(p) => (format!("connection: {p}"), Retry::Backoff),
        SlackClientError::ApiError(a) => (format!("Slack error `{}`", a.code), Retry::Never),
        other => (other.to_string(), Retry::Never),
    };
    Failure { why, retry }
}

impl SlackApi {
    pub fn new(config: &Config, retry: RetryPolicy, metrics: Arc<Metrics>) -> Result<SlackApi> {
        crate::http::install_crypto();
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let https = match builder.with_native_roots() {
            Ok(b) => b.https_or_http().enable_http1().enable_http2().build(),
            Err(e) if config.api_url.starts_with("http://") => {
                tracing::warn!(
                    "no native TLS roots ({e}); plain HTTP only, for {}",
                    config.api_url
                );
                let tls = rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(tls)
                    .https_or_http()
                    .enable_http1()
                    .build()
            }
            Err(e) => return Err(Error::io("cannot load TLS root certificates for Slack", e)),
        };
        let connector =
            SlackClientHyperConnector::with_connector(https).with_slack_api_url(&config.api_url);
        Ok(SlackApi {
            client: Arc::new(SlackClient::new(connector)),
            token: SlackApiToken::new(SlackApiTokenValue(
                config.bot_token.expose_secret().to_string(),
            )),
            retry: RetryPolicy {
                max_server_delay: MAX_RETRY_AFTER,
                ..retry
            },
            timeout: Duration::from_secs(10),
            metrics,
        })
    }

    /// Makes the call `call` builds, retrying per the policy; every attempt
    /// and every failure is counted in the metrics.
    async fn retrying<T, F, Fut>(&self, method: &'static str, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ClientResult<T>>,
    {
        let attempts = AtomicU32::new(0);
        let outcome = self
            .retry
            .run(
                || {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    self.metrics.slack_call(method);
                    let pending = call();
                    async move {
                        let failure = match tokio::time::timeout(self.timeout, pending).await {
                            Ok(Ok(v)) => return Ok(v),
                            Ok(Err(e)) => classify(e),
                            Err(_) => Failure {
                                why: format!("no answer within {:?}", self.timeout),
                                retry: Retry::Backoff,
                            },
                        };
                        self.metrics.slack_error(method);
                        Err(failure)
                    }
                },
                |failure: &Failure, wait| {
                    tracing::warn!(
                        method,
                        attempt = attempts.load(Ordering::Relaxed),
                        ?wait,
                        "Slack {method} failed ({}); retrying",
                        failure.why
                    );
                },
            )
            .await;
        outcome.map_err(|failure| {
            Error::Runtime(format!(
                "Slack {method} failed after {} attempt(s): {}",
                attempts.load(Ordering::Relaxed),
                failure.why
            ))
        })
    }

    fn blocks(blocks: Vec<Value>) -> Result<Vec<SlackBlock>> {
        serde_json::from_value(Value::Array(blocks))
            .map_err(|e| Error::Runtime(format!("rendered blocks are not Block Kit: {e}")))
    }

    /// Posts a message; returns its `ts`.
    pub async fn post_message(
        &self,
        channel: &str,
        text: &str,
        blocks: Vec<Value>,
        thread_ts: Option<&str>,
    ) -> Result<String> {
        let content = SlackMessageContent::new()
            .with_text(text.to_string())
            .with_blocks(Self::blocks(blocks)?);
        let mut req = SlackApiChatPostMessageRequest::new(channel.into(), content);
        if let Some(t) = thread_ts {
            req = req.with_thread_ts(t.into());
        }
        let res = self
            .retrying("chat.postMessage", || async {
                self.client
                    .open_session(&self.token)
                    .chat_post_message(&req)
                    .await
            })
            .await?;
        Ok(res.ts.0)
    }

    /// Posts a message; returns the channel Slack put it in (a user id
    /// becomes the direct-message channel a click will name) and its `ts`.
    pub async fn post_message_in(
        &self,
        channel: &str,
        text: &str,
        blocks: Vec<Value>,
    ) -> Result<(String, String)> {
        let content = SlackMessageContent::new()
            .with_text(text.to_string())
            .with_blocks(Self::blocks(blocks)?);
        let req = SlackApiChatPostMessageRequest::new(channel.into(), content);
        let res = self
            .retrying("chat.postMessage", || async {
                self.client
                    .open_session(&self.token)
                    .chat_post_message(&req)
                    .await
            })
            .await?;
        Ok((res.channel.0, res.ts.0))
    }

    pub async fn update(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: Vec<Value>,
    ) -> Result<()> {
        let content = SlackMessageContent::new()
            .with_text(text.to_string())
            .with_blocks(Self::blocks(blocks)?);
        let req = SlackApiChatUpdateRequest::new(channel.into(), content, ts.into());
        self.retrying("chat.update", || async {
            self.client
                .open_session(&self.token)
                .chat_update(&req)
                .await
        })
        .await
        .map(|_| ())
    }

    pub async fn post_ephemeral(&self, channel: &str, user: &str, text: &str) -> Result<()> {
        let content = SlackMessageContent::new().with_text(text.to_string());
        let req = SlackApiChatPostEphemeralRequest::new(channel.into(), user.into(), content);
        self.retrying("chat.postEphemeral", || async {
            self.client
                .open_session(&self.token)
                .chat_post_ephemeral(&req)
                .await
        })
        .await
        .map(|_| ())
    }

    /// The direct-message channel between the bot and `user`
    /// (`conversations.open`), opened if it was not.
    pub async fn open_dm(&self, user: &str) -> Result<String> {
        let req = SlackApiConversationsOpenRequest::new().with_users(vec![user.into()]);
        let res = self
            .retrying("conversations.open", || async {
                self.client
                    .open_session(&self.token)
                    .conversations_open(&req)
                    .await
            })
            .await?;
        Ok(res.channel.id.0)
    }

    /// The members of a user group (`usergroups.users.list`).
    pub async fn usergroup_members(&self, group: &str) -> Result<Vec<String>> {
        let req = SlackApiUserGroupsUsersListRequest::new(group.into());
        let res = self
            .retrying("usergroups.users.list", || async {
                self.client
                    .open_session(&self.token)
                    .usergroups_users_list(&req)
                    .await
            })
            .await?;
        Ok(res.users.into_iter().map(|u| u.0).collect())
    }

    /// Opens a modal. No retries: a `trigger_id` works once, within 3 s.
    pub async fn views_open(&self, trigger_id: &str, view: Value) -> Result<()> {
        let view: SlackView = serde_json::from_value(view)
            .map_err(|e| Error::Runtime(format!("rendered modal is not a Slack view: {e}")))?;
        let req = SlackApiViewsOpenRequest::new(trigger_id.into(), view);
        self.metrics.slack_call("views.open");
        match tokio::time::timeout(
            Duration::from_secs(3),
            self.client.open_session(&self.token).views_open(&req),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                self.metrics.slack_error("views.open");
                Err(Error::Runtime(format!("Slack views.open failed: {e}")))
            }
            Err(_) => {
                self.metrics.slack_error("views.open");
                Err(Error::Runtime(
                    "Slack views.open did not answer within 3 s".into(),
                ))
            }
        }
    }

    /// Publishes `user`'s App Home tab.
    pub async fn views_publish(&self, user: &str, view: Value) -> Result<()> {
        let view: SlackView = serde_json::from_value(view)
            .map_err(|e| Error::Runtime(format!("rendered home tab is not a Slack view: {e}")))?;
        let req = SlackApiViewsPublishRequest::new(SlackUserId(user.to_string()), view);
        self.retrying("views.publish", || async {
            self.client
                .open_session(&self.token)
                .views_publish(&req)
                .await
        })
        .await?;
        Ok(())
    }

    /// Asks Slack for a Socket Mode connection (`apps.connections.open`,
    /// with the app-level token): the WebSocket URL to dial, good once.
    pub async fn open_connection(&self, app_token: &secrecy::SecretString) -> Result<String> {
        let token = SlackApiToken::new(SlackApiTokenValue(app_token.expose_secret().to_string()));
        let req = SlackApiAppsConnectionOpenRequest::new();
        let res = self
            .retrying("apps.connections.open", || async {
                self.client
                    .open_session(&token)
                    .apps_connections_open(&req)
                    .await
            })
            .await?;
        Ok(res.url.0.to_string())
    }

    /// Answers through an interaction's or command's `response_url`.
    pub async fn respond(&self, response_url: &str, text: &str) -> Result<()> {
        let url: url::Url = response_url
            .parse()
            .map_err(|_| Error::Runtime("response_url is not a URL".into()))?;
        let req = SlackApiPostWebhookMessageRequest::new(
            SlackMessageContent::new().with_text(text.to_string()),
        );
        let target = SlackResponseUrl(url);
        self.retrying("response_url", || async {
            self.client.respond_to_event(&target, &req).await
        })
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use slack_morphism::errors::{SlackClientApiError, SlackClientHttpError, SlackRateLimitError};

    fn http(status: u16) -> SlackClientError {
        SlackClientError::HttpError(SlackClientHttpError::new(
            StatusCode::from_u16(status).expect("status"),
        ))
    }

    #[test]
    fn failures_are_sorted_for_the_shared_policy() {
        let limited = classify(SlackClientError::RateLimitError(
            SlackRateLimitError::new().with_retry_after(Duration::from_secs(7)),
        ));
        assert_eq!(limited.retry, Retry::After(Duration::from_secs(7)));
        assert_eq!(limited.why, "rate limited (429)");
        let no_header = classify(SlackClientError::RateLimitError(SlackRateLimitError::new()));
        assert_eq!(no_header.retry, Retry::Backoff);
        assert_eq!(classify(http(503)).retry, Retry::Backoff);
        let not_found = classify(http(404));
        assert_eq!(not_found.retry, Retry::Never);
        assert_eq!(not_found.why, "HTTP 404 Not Found");
        let api = classify(SlackClientError::ApiError(SlackClientApiError::new(
            "channel_not_found".into(),
        )));
        assert_eq!(api.retry, Retry::Never);
        assert_eq!(api.why, "Slack error `channel_not_found`");
    }

    #[test]
    fn slack_honours_a_longer_retry_after_than_the_providers() {
        let policy = RetryPolicy {
            max_server_delay: MAX_RETRY_AFTER,
            ..RetryPolicy::default()
        };
        let asked = Retry::After(Duration::from_secs(45));
        let backoff = Some(Duration::from_millis(500));
        assert_eq!(policy.wait(asked, backoff), Some(Duration::from_secs(45)));
        assert_eq!(
            RetryPolicy::default().wait(asked, backoff),
            Some(Duration::from_secs(20))
        );
    }
}
