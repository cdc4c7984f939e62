//! Azure OpenAI, for the `azure_openai` provider.
//!
//! Azure serves the OpenAI Chat Completions wire format, so this module only
//! resolves where and how to send it, and hands the rest to
//! [`OpenAiClient`]: requests go to
//! `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`
//! with the key in an `api-key` header. The deployment is the agent's model
//! id (`runtime.model_id` / `agents.<id>.model_id`).
//!
//! Settings: the endpoint is `runtime.host`, else `AZURE_OPENAI_ENDPOINT`
//! (e.g. `https://my-resource.openai.azure.com`); the key is
//! `AZURE_OPENAI_API_KEY`; the API version is `AZURE_OPENAI_API_VERSION`,
//! else [`DEFAULT_API_VERSION`]. A missing endpoint or key is
//! `Error::Usage` naming the variable. Microsoft Entra ID tokens are not
//! supported.

use super::openai::{key_header, Auth, OpenAiClient, Route};
use super::{retry, ProviderConfig};
use crate::error::{Error, Result};

/// The `api-version` sent when `AZURE_OPENAI_API_VERSION` is unset: the
/// latest generally available data-plane version.
pub const DEFAULT_API_VERSION: &str = "2024-10-21";

/// Builds the client from `config` and its credentials.
pub fn client(config: &ProviderConfig) -> Result<OpenAiClient> {
    with_env(config, |name| config.credentials.get(name))
}

/// [`client`] with the environment given as a lookup function.
fn with_env(config: &ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Result<OpenAiClient> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let host = config.host.as_deref().filter(|h| !h.trim().is_empty());
    let (origin, endpoint) = match (host, env("AZURE_OPENAI_ENDPOINT")) {
        (Some(h), _) => ("runtime.host", h.to_string()),
        (None, Some(e)) => ("AZURE_OPENAI_ENDPOINT", e),
        (None, None) => {
            return Err(Error::Usage(
                "azure_openai: no endpoint: set AZURE_OPENAI_ENDPOINT \
                 (https://<resource>.openai.azure.com) or runtime.host"
                    .to_string(),
            ))
        }
    };
    let endpoint = retry::normalize_base_url("azure_openai", origin, &endpoint)?;
    let endpoint = reqwest::Url::parse(&endpoint).map_err(|e| {
        Error::Usage(format!(
            "azure_openai: the endpoint from {origin} is not a URL: {e}"
        ))
    })?;
    let Some(key) = env("AZURE_OPENAI_API_KEY") else {
        return Err(Error::Usage(
            "AZURE_OPENAI_API_KEY is not set: export it to use provider `azure_openai`, \
             or use provider `echo` for an offline rehearsal"
                .to_string(),
        ));
    };
    let key = key_header("AZURE_OPENAI_API_KEY", key.trim())?;
    let api_version = env("AZURE_OPENAI_API_VERSION")
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| DEFAULT_API_VERSION.to_string());
    OpenAiClient::from_parts(
        "azure_openai",
        Route::AzureDeployment {
            endpoint,
            api_version,
        },
        Auth::Header("api-key", key),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::retry::fake_server::{start, Reply};
    use crate::provider::{ChatRequest, Message, ProviderKind};
    use crate::retry::RetryPolicy;
    use std::time::Duration;

    const OK_BODY: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"from azure"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#;

    fn config(host: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::AzureOpenAi,
            host: host.map(str::to_string),
            region: None,
            timeout: Duration::from_secs(5),
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(5),
                max_server_delay: Duration::from_millis(5),
            },
            credentials: Default::default(),
        }
    }

    fn env_with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn request(model: &str) -> ChatRequest {
        ChatRequest {
            agent: "a".into(),
            model: model.into(),
            system: "sys".into(),
            messages: vec![Message::user("hi")],
            temperature: Some(0.1),
            top_p: None,
            max_tokens: Some(5),
            tools: vec![],
        }
    }

    #[test]
    fn missing_endpoint_or_key_names_the_variable() {
        let err = with_env(&config(None), env_with(&[("AZURE_OPENAI_API_KEY", "k")]))
            .expect_err("no endpoint");
        assert!(matches!(err, Error::Usage(_)), "{err:?}");
        assert!(err.to_string().contains("AZURE_OPENAI_ENDPOINT"), "{err}");
        let err = with_env(
            &config(None),
            env_with(&[("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com")]),
        )
        .expect_err("no key");
        assert!(err.to_string().contains("AZURE_OPENAI_API_KEY"), "{err}");
        let err = with_env(
            &config(Some("r.openai.azure.com")),
            env_with(&[("AZURE_OPENAI_API_KEY", "k")]),
        )
        .expect_err("no scheme");
        assert!(err.to_string().contains("runtime.host"), "{err}");
    }

    #[test]
    fn url_names_the_deployment_and_the_api_version() {
        let env = [
            ("AZURE_OPENAI_ENDPOINT", "https://r.openai.azure.com/"),
            ("AZURE_OPENAI_API_KEY", "k"),
        ];
        let c = with_env(&config(None), env_with(&env)).expect("client");
        assert_eq!(
            c.url("gpt-4o"),
            "https://r.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        );
        // A deployment name is one path segment, whatever it holds.
        assert_eq!(
            c.url("my dep/x"),
            "https://r.openai.azure.com/openai/deployments/my%20dep%2Fx/chat/completions?api-version=2024-10-21"
        );
        let env = [
            ("AZURE_OPENAI_ENDPOINT", "https://ignored.example"),
            ("AZURE_OPENAI_API_KEY", "k"),
            ("AZURE_OPENAI_API_VERSION", "2025-01-01-preview"),
        ];
        let c = with_env(&config(Some("http://proxy:1/base")), env_with(&env)).expect("client");
        assert_eq!(
            c.url("d"),
            "http://proxy:1/base/openai/deployments/d/chat/completions?api-version=2025-01-01-preview"
        );
        let shown = format!("{c:?}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[tokio::test]
    async fn sends_api_key_header_to_the_deployment_and_retries_503() {
        let server = start(|i| {
            if i == 0 {
                Reply::new(503, r#"{"error":{"message":"busy"}}"#)
            } else {
                Reply::new(200, OK_BODY)
            }
        })
        .await;
        let env = [("AZURE_OPENAI_API_KEY", "az-secret")];
        let c = with_env(&config(Some(&server.url)), env_with(&env)).expect("client");
        let r = c.complete(&request("prod-gpt")).await.expect("answer");
        assert_eq!(r.text, "from azure");
        assert_eq!(r.usage.input_tokens, 9);
        let seen = server.seen();
        assert_eq!(seen.len(), 2);
        let req = &seen[1];
        assert_eq!(
            req.path,
            "/openai/deployments/prod-gpt/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(req.header("api-key"), Some("az-secret"));
        assert_eq!(req.header("authorization"), None);
        let body = req.json();
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["max_tokens"], 5);
    }

    #[tokio::test]
    async fn errors_name_the_url_without_key_or_query() {
        let server = start(|_| Reply::new(404, r#"{"error":{"code":"DeploymentNotFound"}}"#)).await;
        let env = [("AZURE_OPENAI_API_KEY", "az-secret")];
        let c = with_env(&config(Some(&server.url)), env_with(&env)).expect("client");
        let err = c.complete(&request("nope")).await.expect_err("404");
        let msg = err.to_string();
        assert!(msg.starts_with("azure_openai:"), "{msg}");
        assert!(
            msg.contains(&format!(
                "{}/openai/deployments/nope/chat/completions",
                server.url
            )),
            "{msg}"
        );
        assert!(msg.contains("DeploymentNotFound"), "{msg}");
        assert!(!msg.contains("az-secret"), "{msg}");
        assert!(!msg.contains("api-version"), "{msg}");
        assert_eq!(server.hits(), 1, "a 404 is not retried");
    }
}
