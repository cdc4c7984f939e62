//! The web inbox's pages, from minijinja templates compiled into the
//! binary; a file of the same name in `STRANDS_WEB_TEMPLATES` replaces a
//! built-in one. Every value is HTML-escaped on output (auto-escape on
//! `.html` templates), so hostile text in prompts and outputs shows as
//! text.

use std::path::Path;

use axum::http::StatusCode;
use minijinja::Environment;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::hub::durations::duration;

/// The built-in templates, by name.
const BUILT_IN: [(&str, &str); 11] = [
    ("base.html", include_str!("templates/base.html")),
    ("login.html", include_str!("templates/login.html")),
    ("inbox.html", include_str!("templates/inbox.html")),
    ("inbox_list.html", include_str!("templates/inbox_list.html")),
    ("session.html", include_str!("templates/session.html")),
    ("link.html", include_str!("templates/link.html")),
    ("audit.html", include_str!("templates/audit.html")),
    ("insights.html", include_str!("templates/insights.html")),
    ("error.html", include_str!("templates/error.html")),
    ("passkeys.html", include_str!("templates/passkeys.html")),
    ("grants.html", include_str!("templates/grants.html")),
];

/// The compiled pages.
pub struct Pages {
    env: Environment<'static>,
}

/// "2026-11-23 10:00:05 UTC" for an RFC 3339 time (as serde writes it).
fn when(value: String) -> String {
    chrono::DateTime::parse_from_rfc3339(&value)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S UTC")
                .to_string()
        })
        .unwrap_or(value)
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Chainable);
    env.add_filter("duration", duration);
    env.add_filter("when", when);
    env.add_filter("pretty", |v: minijinja::Value| -> String {
        serde_json::to_value(&v)
            .ok()
            .and_then(|j| serde_json::to_string_pretty(&j).ok())
            .unwrap_or_default()
    });
    env
}

impl Pages {
    /// The built-in templates with `dir`'s replacing them; a template that
    /// does not compile is an error naming its file and line.
    pub fn load(dir: Option<&Path>) -> Result<Pages> {
        let mut env = environment();
        for (name, text) in BUILT_IN {
            let custom = match dir {
                Some(d) if d.join(name).is_file() => {
                    let path = d.join(name);
                    Some(
                        std::fs::read_to_string(&path)
                            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?,
                    )
                }
                _ => None,
            };
            let from = match (&custom, dir) {
                (Some(_), Some(d)) => d.join(name).display().to_string(),
                _ => format!("the built-in {name}"),
            };
            let text = custom.unwrap_or_else(|| text.to_string());
            env.add_template_owned(name.to_string(), text)
                .map_err(|e| {
                    Error::Usage(format!(
                        "web template {from}:{}: {}",
                        e.line().unwrap_or(0),
                        e.detail().unwrap_or("does not compile")
                    ))
                })?;
        }
        Ok(Pages { env })
    }

    /// Renders template `name` with `ctx`; a failure is logged and shown
    /// as a short error (never the template's internals).
    pub fn render(&self, name: &str, ctx: impl Serialize) -> String {
        match self
            .env
            .get_template(name)
            .and_then(|t| t.render(minijinja::Value::from_serialize(&ctx)))
        {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("web template {name} failed: {e:#}");
                error_page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("the page `{name}` could not be rendered; see the server log"),
                )
            }
        }
    }

    /// The login page; `oidc`: the identity provider's name, for its
    /// sign-in link.
    pub fn login(&self, next: &str, error: Option<&str>, oidc: Option<&str>) -> String {
        let oidc_href = format!(
            "/auth/oidc/login?next={}",
            url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
        );
        self.render(
            "login.html",
            serde_json::json!({
                "next": next,
                "error": error,
                "title": "Sign in",
                "oidc": oidc,
                "oidc_href": oidc_href,
            }),
        )
    }
}

/// An error page (built-in template: it must render whatever the
/// overrides hold).
pub fn error_page(status: StatusCode, message: &str) -> String {
    static ENV: std::sync::OnceLock<Environment<'static>> = std::sync::OnceLock::new();
    let env = ENV.get_or_init(|| {
        let mut env = environment();
        for (name, text) in BUILT_IN {
            if matches!(name, "base.html" | "error.html") {
                let _ = env.add_template(name, text);
            }
        }
        env
    });
    let ctx = serde_json::json!({
        "status": status.as_u16(),
        "reason": status.canonical_reason().unwrap_or("error"),
        "message": message,
        "title": status.canonical_reason().unwrap_or("error"),
    });
    env.get_template("error.html")
        .and_then(|t| t.render(ctx))
        .unwrap_or_else(|_| format!("{} {}", status.as_u16(), status.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_templates_compile_and_escape() {
        let pages = Pages::load(None).expect("built-in templates compile");
        let page = pages.login("/sessions/x?a=<b>", Some("<script>alert(1)</script>"), None);
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>alert(1)"));
        let e = error_page(StatusCode::FORBIDDEN, "<img src=x onerror=alert(1)>");
        assert!(e.contains("&lt;img") && !e.contains("<img src=x"), "{e}");
    }

    #[test]
    fn an_override_replaces_a_template_and_a_broken_one_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("login.html"), "custom {{ next }}").expect("write");
        let pages = Pages::load(Some(dir.path())).expect("loads");
        // Overrides are HTML templates too: escaped like the built-in ones.
        assert_eq!(pages.login("<b>", None, None), "custom &lt;b&gt;");
        std::fs::write(dir.path().join("inbox.html"), "{% if %}").expect("write");
        let err = Pages::load(Some(dir.path())).err().expect("refused");
        assert!(err.to_string().contains("inbox.html:1"), "{err}");
    }
}
