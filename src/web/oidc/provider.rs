//! The identity provider, as strands talks to it: its discovery document
//! and signing keys (fetched when `serve` starts), the authorization URL of
//! a new sign-in (code flow, PKCE S256, `state`, `nonce`), and the code's
//! exchange and the ID token's check (issuer, audience, expiry, nonce,
//! signature). Every request goes through the service's one reqwest stack
//! ([`crate::http`]), redirects never followed.
//!
//! Signing keys rotate: an ID token signed with a key id the cached key
//! set lacks makes one fetch of the set, then no other for
//! [`REFETCH_COOL_DOWN`] (a flood of forged tokens cannot make strands
//! hammer the provider), the pattern of the Teams room's keys.
//!
//! What this does not do: cookies, pages, the people directory (that is
//! [`super`]), or userinfo (the ID token carries what strands needs).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreErrorResponseType, CoreJsonWebKeySet,
};
use openidconnect::{
    AdditionalProviderMetadata, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret,
    CsrfToken, EndSessionUrl, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier,
    ProviderMetadata, RedirectUrl, RequestTokenError, Scope, SignatureVerificationError,
    TokenResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{OidcError, Settings};

/// The least time between two fetches of the key set caused by a token
/// whose key is unknown.
pub const REFETCH_COOL_DOWN: Duration = Duration::from_secs(60);

/// How long a request to the provider may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// What discovery tells beyond the core fields: where to sign out.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Extra {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_session_endpoint: Option<EndSessionUrl>,
}
impl AdditionalProviderMetadata for Extra {}

/// The client discovery makes: authorization endpoint set, token and
/// userinfo endpoints as discovered.
type Client = openidconnect::Client<
    openidconnect::EmptyAdditionalClaims,
    openidconnect::core::CoreAuthDisplay,
    openidconnect::core::CoreGenderClaim,
    openidconnect::core::CoreJweContentEncryptionAlgorithm,
    openidconnect::core::CoreJsonWebKey,
    openidconnect::core::CoreAuthPrompt,
    openidconnect::StandardErrorResponse<CoreErrorResponseType>,
    openidconnect::core::CoreTokenResponse,
    openidconnect::core::CoreTokenIntrospectionResponse,
    openidconnect::core::CoreRevocableToken,
    openidconnect::core::CoreRevocationErrorResponse,
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

type Metadata = ProviderMetadata<
    Extra,
    openidconnect::core::CoreAuthDisplay,
    openidconnect::core::CoreClientAuthMethod,
    openidconnect::core::CoreClaimName,
    openidconnect::core::CoreClaimType,
    openidconnect::core::CoreGrantType,
    openidconnect::core::CoreJweContentEncryptionAlgorithm,
    openidconnect::core::CoreJweKeyManagementAlgorithm,
    openidconnect::core::CoreJsonWebKey,
    openidconnect::core::CoreResponseMode,
    openidconnect::core::CoreResponseType,
    openidconnect::core::CoreSubjectIdentifierType,
>;

/// The openidconnect crate's HTTP client trait over the service's reqwest.
#[derive(Clone)]
pub struct Http(reqwest::Client);

/// A request to the provider that got no answer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future =
        Pin<Box<dyn Future<Output = Result<openidconnect::HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request =
                reqwest::Request::try_from(request).map_err(|e| HttpError(e.to_string()))?;
            let response = self
                .0
                .execute(request)
                .await
                .map_err(|e| HttpError(e.without_url().to_string()))?;
            let mut out = axum::http::Response::builder().status(response.status());
            for (k, v) in response.headers() {
                out = out.header(k, v);
            }
            let body = response
                .bytes()
                .await
                .map_err(|e| HttpError(e.without_url().to_string()))?;
            out.body(body.to_vec())
                .map_err(|e| HttpError(e.to_string()))
        })
    }
}

/// A sign-in started: where to send the browser, and what to keep (in
/// the pending cookie) to check the answer.
pub struct Started {
    pub url: url::Url,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

/// Who the provider says signed in: the ID token's checked claims.
#[derive(Debug, Clone)]
pub struct Verified {
    pub issuer: String,
    pub subject: String,
    /// Every claim of the (checked) ID token.
    pub claims: Map<String, Value>,
}

/// The provider, discovered.
pub struct Provider {
    settings: Settings,
    http: Http,
    redirect: RedirectUrl,
    metadata: RwLock<Metadata>,
    last_refetch: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.settings.issuer)
            .finish()
    }
}

impl Provider {
    /// Fetches the discovery document and keys of `settings.issuer`; the
    /// provider sends browsers back to `{public_url}/auth/oidc/callback`.
    /// An error names `STRANDS_OIDC_ISSUER`.
    pub async fn discover(settings: Settings, public_url: &str) -> Result<Provider, OidcError> {
        let http = Http(
            crate::http::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(TIMEOUT)
                .build()
                .map_err(|e| OidcError::Setup(format!("cannot build an HTTP client: {e}")))?,
        );
        let bad = |why: String| {
            OidcError::Setup(format!("STRANDS_OIDC_ISSUER `{}`: {why}", settings.issuer))
        };
        let issuer =
            IssuerUrl::new(settings.issuer.clone()).map_err(|e| bad(format!("not a URL: {e}")))?;
        let metadata = Metadata::discover_async(issuer, &http)
            .await
            .map_err(|e| {
                bad(format!(
                    "no OpenID provider answers there ({}): check the URL (its `/.well-known/openid-configuration` must answer)",
                    chain(&e)
                ))
            })?;
        let redirect = RedirectUrl::new(format!("{public_url}/auth/oidc/callback"))
            .map_err(|e| OidcError::Setup(format!("STRANDS_PUBLIC_URL: {e}")))?;
        Ok(Provider {
            settings,
            http,
            redirect,
            metadata: RwLock::new(metadata),
            last_refetch: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the login page's link names: the issuer's host.
    pub fn name(&self) -> String {
        url::Url::parse(&self.settings.issuer)
            .ok()
            .and_then(|u| {
                u.host_str().map(|h| match u.port() {
                    Some(p) => format!("{h}:{p}"),
                    None => h.to_string(),
                })
            })
            .unwrap_or_else(|| self.settings.issuer.clone())
    }

    fn metadata(&self) -> Metadata {
        self.metadata
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn client(&self, metadata: Metadata) -> Client {
        CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(
                self.settings.client_secret.expose().to_string(),
            )),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// A new sign-in: the authorization URL with fresh `state`, `nonce`
    /// and PKCE challenge.
    pub fn start(&self) -> Started {
        let client = self.client(self.metadata());
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for s in &self.settings.scopes {
            if s != "openid" {
                request = request.add_scope(Scope::new(s.clone()));
            }
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Started {
            url,
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
        }
    }

    /// Exchanges `code` (with the sign-in's PKCE `verifier`) and checks
    /// the ID token against `nonce`.
    pub async fn finish(
        &self,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Verified, OidcError> {
        let client = self.client(self.metadata());
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| OidcError::Provider(format!("no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_string()))
            .request_async(&self.http)
            .await
            .map_err(refused)?;
        let token = response.id_token().ok_or(OidcError::NoIdToken)?.clone();
        let nonce = Nonce::new(nonce.to_string());
        let checked = {
            let verifier = client.id_token_verifier();
            token.claims(&verifier, &nonce).cloned()
        };
        let claims = match checked {
            Ok(c) => c,
            Err(ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            )) if self.refetch_keys().await => {
                let client = self.client(self.metadata());
                let verifier = client.id_token_verifier();
                token
                    .claims(&verifier, &nonce)
                    .cloned()
                    .map_err(|e| self.refusal(e))?
            }
            Err(e) => return Err(self.refusal(e)),
        };
        // The signature is checked: every claim of the payload, as sent.
        let payload = token
            .to_string()
            .split('.')
            .nth(1)
            .and_then(|p| {
                use base64::Engine as _;
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(p.trim_end_matches('='))
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice::<Map<String, Value>>(&bytes).ok())
            .unwrap_or_default();
        Ok(Verified {
            issuer: claims.issuer().to_string(),
            subject: claims.subject().to_string(),
            claims: payload,
        })
    }

    /// Fetches the key set again, unless one fetch for an unknown key was
    /// made within [`REFETCH_COOL_DOWN`]; whether new keys were read.
    async fn refetch_keys(&self) -> bool {
        {
            let mut last = self.last_refetch.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| t.elapsed() < REFETCH_COOL_DOWN) {
                return false;
            }
            *last = Some(Instant::now());
        }
        let url = self.metadata().jwks_uri().clone();
        match CoreJsonWebKeySet::fetch_async(&url, &self.http).await {
            Ok(keys) => {
                tracing::info!(issuer = %self.settings.issuer, "fetched the identity provider's signing keys again (a token named an unknown key)");
                let mut m = self.metadata.write().unwrap_or_else(|p| p.into_inner());
                *m = m.clone().set_jwks(keys);
                true
            }
            Err(e) => {
                tracing::warn!(issuer = %self.settings.issuer, "could not fetch the identity provider's signing keys: {}", chain(&e));
                false
            }
        }
    }

    fn refusal(&self, e: ClaimsVerificationError) -> OidcError {
        match e {
            ClaimsVerificationError::Expired(_) => OidcError::Expired,
            ClaimsVerificationError::InvalidAudience(_) => {
                OidcError::Audience(self.settings.client_id.clone())
            }
            ClaimsVerificationError::InvalidIssuer(_) => {
                OidcError::Issuer(self.settings.issuer.clone())
            }
            ClaimsVerificationError::InvalidNonce(_) => OidcError::Nonce,
            ClaimsVerificationError::SignatureVerification(
                SignatureVerificationError::NoMatchingKey,
            ) => OidcError::UnknownKey,
            ClaimsVerificationError::SignatureVerification(e) => {
                OidcError::Signature(e.to_string())
            }
            other => OidcError::Token(other.to_string()),
        }
    }

    /// Where to send a browser signing out of the provider too, if it
    /// has such an endpoint: back to `{public_url}/login` afterwards.
    pub fn end_session(&self, public_url: &str) -> Option<url::Url> {
        let end = self
            .metadata()
            .additional_metadata()
            .end_session_endpoint
            .clone()?;
        let mut url = end.url().clone();
        url.query_pairs_mut()
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("post_logout_redirect_uri", &format!("{public_url}/login"));
        Some(url)
    }
}

/// What the token endpoint's refusal means for the person.
fn refused<E: std::error::Error + 'static>(
    e: RequestTokenError<E, openidconnect::StandardErrorResponse<CoreErrorResponseType>>,
) -> OidcError {
    match e {
        RequestTokenError::ServerResponse(r) => match r.error() {
            CoreErrorResponseType::InvalidClient | CoreErrorResponseType::UnauthorizedClient => {
                OidcError::ClientRefused
            }
            CoreErrorResponseType::InvalidGrant => OidcError::CodeRefused(
                r.error_description()
                    .cloned()
                    .unwrap_or_else(|| "invalid_grant".into()),
            ),
            other => OidcError::Provider(format!(
                "{}{}",
                other.as_ref(),
                r.error_description()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )),
        },
        RequestTokenError::Request(e) => OidcError::Unreachable(chain(&e)),
        other => OidcError::Provider(chain(&other)),
    }
}

/// An error and its sources, one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
