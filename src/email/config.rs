//! The e-mail room's settings, read once from the environment:
//!
//! | variable | setting |
//! |---|---|
//! | `STRANDS_SMTP_URL` | `smtp://user:pass@host:587` (STARTTLS, required), `smtps://user:pass@host:465` (TLS from the start), `smtp://127.0.0.1:2525?tls=none` (no TLS: loopback only, for tests); unset: no mail |
//! | `STRANDS_EMAIL_FROM` | the sender, `Strands <approvals@corp.example>`; required with a URL |
//! | `STRANDS_EMAIL_MAX_ATTEMPTS` | attempts per mail before it is given up (8) |
//! | `STRANDS_EMAIL_RETRY_BASE_MS` | the first retry's backoff (2000), doubled per attempt, capped at 10 min, jittered |
//!
//! The password is kept as a [`SecretString`]: `Debug` shows it redacted,
//! and no message names it.

use std::time::Duration;

use secrecy::SecretString;

/// How the connection to the mail server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtp://`: STARTTLS, required (a server that does not offer it is
    /// refused).
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Tls,
    /// `smtp://…?tls=none`: none; loopback servers only.
    None,
}

/// Where mail goes and who it is from.
#[derive(Debug, Clone)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub user: Option<String>,
    pub password: Option<SecretString>,
    /// `STRANDS_EMAIL_FROM`, checked to be one mailbox.
    pub from: String,
    /// The sender's domain: the right side of every Message-ID.
    pub domain: String,
    pub max_attempts: u32,
    pub retry_base: Duration,
}

/// A setting that cannot be used; names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("STRANDS_SMTP_URL is set but STRANDS_EMAIL_FROM is not: set it to the sender, e.g. `Strands <approvals@corp.example>`")]
    NoFrom,
    #[error("STRANDS_EMAIL_FROM is set but STRANDS_SMTP_URL is not: set it to your mail server, e.g. smtp://user:pass@smtp.corp.example:587")]
    NoUrl,
    #[error("STRANDS_SMTP_URL is not a URL like smtp://user:pass@host:587 ({0})")]
    BadUrl(String),
    #[error("STRANDS_SMTP_URL: `tls=none` sends mail and password in the clear, so it is for a server on this machine only (127.0.0.1, ::1, localhost), not {0}")]
    PlainNotLoopback(String),
    #[error("STRANDS_EMAIL_FROM `{0}` is not one address like `Strands <approvals@corp.example>`")]
    BadFrom(String),
    #[error("{0} `{1}` is not a positive whole number")]
    BadNumber(&'static str, String),
}

impl Settings {
    /// From the environment through `get`; `None` when mail is off (neither
    /// variable set).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, SettingsError> {
        let set = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let (url, from) = match (set("STRANDS_SMTP_URL"), set("STRANDS_EMAIL_FROM")) {
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(SettingsError::NoFrom),
            (None, Some(_)) => return Err(SettingsError::NoUrl),
            (Some(u), Some(f)) => (u, f),
        };
        // Never echo the URL: it may hold the password.
        let parsed = url::Url::parse(&url).map_err(|e| SettingsError::BadUrl(e.to_string()))?;
        let plain = parsed
            .query_pairs()
            .any(|(k, v)| k == "tls" && v.eq_ignore_ascii_case("none"));
        let security = match (parsed.scheme(), plain) {
            ("smtp", false) => Security::StartTls,
            ("smtp", true) => Security::None,
            ("smtps", _) => Security::Tls,
            (other, _) => {
                return Err(SettingsError::BadUrl(format!(
                    "the scheme is `{other}`, not smtp or smtps"
                )))
            }
        };
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| SettingsError::BadUrl("no host".into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if security == Security::None && !is_loopback(&host) {
            return Err(SettingsError::PlainNotLoopback(host));
        }
        let port = parsed.port().unwrap_or(match security {
            Security::Tls => 465,
            Security::StartTls => 587,
            Security::None => 25,
        });
        let decode = |s: &str| {
            percent_decode(s).map_err(|_| {
                SettingsError::BadUrl(
                    "the user or password is not valid percent-encoded UTF-8".into(),
                )
            })
        };
        let user = match parsed.username() {
            "" => None,
            u => Some(decode(u)?),
        };
        let password = match parsed.password() {
            None => None,
            Some(p) => Some(SecretString::from(decode(p)?)),
        };
        let mailbox: lettre::message::Mailbox = from
            .parse()
            .map_err(|_| SettingsError::BadFrom(from.clone()))?;
        let domain = mailbox.email.domain().to_string();
        let number = |name: &'static str, default: u64| -> Result<u64, SettingsError> {
            match set(name) {
                None => Ok(default),
                Some(v) => v
                    .parse::<u64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(SettingsError::BadNumber(name, v)),
            }
        };
        Ok(Some(Settings {
            host,
            port,
            security,
            user,
            password,
            from,
            domain,
            max_attempts: u32::try_from(number("STRANDS_EMAIL_MAX_ATTEMPTS", 8)?)
                .unwrap_or(u32::MAX),
            retry_base: Duration::from_millis(number("STRANDS_EMAIL_RETRY_BASE_MS", 2000)?),
        }))
    }

    /// `smtp://host:port` without credentials: for logs.
    pub fn server_shown(&self) -> String {
        let scheme = if self.security == Security::Tls {
            "smtps"
        } else {
            "smtp"
        };
        format!("{scheme}://{}:{}", self.host, self.port)
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn percent_decode(s: &str) -> Result<String, std::str::Utf8Error> {
    let bytes: Vec<u8> =
        url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned().into_bytes())
            .unwrap_or_default();
    std::str::from_utf8(&bytes).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn read(vars: &[(&str, &str)]) -> Result<Option<Settings>, SettingsError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn mail_is_off_unless_both_are_set_and_names_what_is_wrong() {
        assert!(read(&[]).expect("off").is_none());
        let from = ("STRANDS_EMAIL_FROM", "Strands <approvals@corp.example>");
        assert_eq!(
            read(&[("STRANDS_SMTP_URL", "smtp://h:587")]).unwrap_err(),
            SettingsError::NoFrom
        );
        assert_eq!(read(&[from]).unwrap_err(), SettingsError::NoUrl);
        let s = read(&[
            (
                "STRANDS_SMTP_URL",
                "smtp://ann%40corp:p%40ss+w@smtp.corp.example",
            ),
            from,
        ])
        .expect("ok")
        .expect("on");
        assert_eq!((s.security, s.port), (Security::StartTls, 587));
        assert_eq!(s.user.as_deref(), Some("ann@corp"));
        assert_eq!(
            s.password
                .as_ref()
                .map(|p| p.expose_secret().to_string())
                .as_deref(),
            Some("p@ss+w")
        );
        assert_eq!(s.domain, "corp.example");
        assert!(
            !format!("{s:?}").contains("p@ss"),
            "the password is never shown"
        );
        assert_eq!(s.server_shown(), "smtp://smtp.corp.example:587");
        let s = read(&[("STRANDS_SMTP_URL", "smtps://u:p@mail.example"), from])
            .expect("ok")
            .expect("on");
        assert_eq!((s.security, s.port), (Security::Tls, 465));
        let s = read(&[("STRANDS_SMTP_URL", "smtp://127.0.0.1:2525?tls=none"), from])
            .expect("ok")
            .expect("on");
        assert_eq!((s.security, s.port, s.user), (Security::None, 2525, None));
        assert!(matches!(
            read(&[
                ("STRANDS_SMTP_URL", "smtp://mail.example:25?tls=none"),
                from
            ]),
            Err(SettingsError::PlainNotLoopback(_))
        ));
        let e = read(&[("STRANDS_SMTP_URL", "http://u:secret@h"), from]).unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(matches!(
            read(&[
                ("STRANDS_SMTP_URL", "smtp://h"),
                ("STRANDS_EMAIL_FROM", "not an address")
            ]),
            Err(SettingsError::BadFrom(_))
        ));
    }
}
