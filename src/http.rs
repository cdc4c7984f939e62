//! The outbound HTTP clients' shared set-up. Building a `reqwest` client
//! with its default TLS reads the machine's root certificates from disk and
//! parses every one (tens of milliseconds of CPU); the service used to do
//! that for every run it resumed, since each drive builds its model client
//! afresh. Here the TLS configuration is built once per process, every
//! client starts from it, and the models' clients themselves are kept per
//! timeout ([`shared`]), so runs also reuse their connections.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Installs rustls' ring crypto provider once per process (reqwest is built
/// without a default provider so that it shares ring with slack-morphism).
pub fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The process's TLS client configuration: ring, TLS 1.2 and 1.3, the
/// platform's verifier over the machine's roots, HTTP/1.1 by ALPN (what
/// reqwest would build for each client). `None` when the roots cannot be
/// loaded: callers then fall back to reqwest's own (which reports why).
fn tls() -> Option<rustls::ClientConfig> {
    static TLS: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    TLS.get_or_init(|| {
        use rustls_platform_verifier::BuilderVerifierExt;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let built = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_platform_verifier());
        match built {
            Ok(b) => {
                let mut config = b.with_no_client_auth();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Some(config)
            }
            Err(e) => {
                tracing::warn!("cannot set up TLS from the machine's roots: {e}");
                None
            }
        }
    })
    .clone()
}

/// A client builder on the process's TLS configuration.
pub fn builder() -> reqwest::ClientBuilder {
    install_crypto();
    let builder = reqwest::Client::builder();
    match tls() {
        Some(config) => builder.tls_backend_preconfigured(config),
        None => builder,
    }
}

/// The one client for requests that time out after `timeout` (none when
/// zero), built on first use: a clone shares its connection pool.
pub fn shared(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    static CLIENTS: OnceLock<Mutex<HashMap<Duration, reqwest::Client>>> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Mutex::default);
    if let Some(c) = clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&timeout)
    {
        return Ok(c.clone());
    }
    let mut b = builder();
    if !timeout.is_zero() {
        b = b.timeout(timeout);
    }
    let client = b.build()?;
    Ok(clients
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(timeout)
        .or_insert(client)
        .clone())
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A plain HTTP/1.1 server on 127.0.0.1 that keeps connections open
    /// and counts them.
    fn counting_server() -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut out = conn.try_clone().expect("clone");
                    let mut lines = BufReader::new(conn);
                    let mut line = String::new();
                    while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if line == "\r\n" {
                            let ok =
                                out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                            if ok.is_err() {
                                return;
                            }
                        }
                        line.clear();
                    }
                });
            }
        });
        (url, accepted)
    }

    /// Clients asked for with one timeout are one pool: the second run's
    /// request goes over the first run's connection (before, each drive
    /// built a client, read the machine's roots and connected afresh).
    #[tokio::test]
    async fn clients_for_one_timeout_share_their_connections() {
        let (url, accepted) = counting_server();
        for _ in 0..3 {
            let client = super::shared(Duration::from_secs(9)).expect("a client");
            let body = client.get(&url).send().await.expect("sent");
            assert_eq!(body.text().await.expect("body"), "ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // Another timeout is another client (and connection).
        let other = super::shared(Duration::from_secs(10)).expect("another");
        other.get(&url).send().await.expect("sent");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }
}
