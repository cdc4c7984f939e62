//! The Slack Web API, through slack-morphism's client, with the retries the
//! platform asks for: 429 waits `Retry-After` and tries again, 5xx, broken
//! connections and timeouts back off exponentially. Nothing is dropped
//! silently: a call that still fails returns an error for the caller to
//! record on the session.

use secrecy::ExposeSecret;
use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::config::Config;
use super::metrics::Metrics;
use crate::error::{Error, Result};
use crate::provider::retry::RetryPolicy;

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

/// What went wrong with one attempt, and whether to try again.
enum Attempt {
    Retry(Option<Duration>, String),
    Fail(String),
}

fn classify(e: SlackClientError) -> Attempt {
    match e {
        SlackClientError::RateLimitError(r) => {
            Attempt::Retry(r.retry_after, "rate limited (429)".into())
        }
        SlackClientError::HttpError(h) if h.status_code.is_server_error() => {
            Attempt::Retry(None, format!("HTTP {}", h.status_code))
        }
        SlackClientError::HttpError(h) => Attempt::Fail(format!("HTTP {}", h.status_code)),
        SlackClientError::HttpProtocolError(p) => Attempt::Retry(None, format!("connection: {p}")),
        SlackClientError::ApiError(a) => Attempt::Fail(format!("Slack error `{}`", a.code)),
        other => Attempt::Fail(other.to_string()),
    }
}

impl SlackApi {
    pub fn new(config: &Config, metrics: Arc<Metrics>) -> Result<SlackApi> {
        crate::provider::install_crypto();
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
            retry: RetryPolicy::from_env(),
            timeout: Duration::from_secs(10),
            metrics,
        })
    }

    async fn retrying<T, F, Fut>(&self, method: &'static str, mut call: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ClientResult<T>>,
    {
        let mut attempt: u32 = 0;
        loop {
            self.metrics.slack_call(method);
            let outcome = match tokio::time::timeout(self.timeout, call()).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) => classify(e),
                Err(_) => Attempt::Retry(None, format!("no answer within {:?}", self.timeout)),
            };
            self.metrics.slack_error(method);
            match outcome {
                Attempt::Retry(wait, why) if attempt < self.retry.max_retries => {
                    let wait = wait
                        .unwrap_or_else(|| self.retry.backoff(attempt))
                        .min(self.retry.max_delay.max(Duration::from_secs(60)));
                    tracing::warn!(
                        method,
                        attempt = attempt + 1,
                        ?wait,
                        "Slack {method} failed ({why}); retrying"
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Attempt::Retry(_, why) | Attempt::Fail(why) => {
                    return Err(Error::Runtime(format!(
                        "Slack {method} failed after {} attempt(s): {why}",
                        attempt + 1
                    )))
                }
            }
        }
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
