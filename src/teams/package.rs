//! The Teams app package that `strands teams package` writes: the zip an
//! admin (or a user, where custom apps are allowed) uploads to Teams to
//! install the bot. It holds, at its root, `manifest.json` (schema 1.20)
//! and the two icons, `color.png` (192×192) and `outline.png` (32×32,
//! white on transparent), all from `manifests/teams/` and built into the
//! binary.
//!
//! The manifest is parsed, filled and written back as JSON, never edited
//! as text: the app ID goes into `id` and `bots[0].botId` (the bot's Entra
//! app ID serves as the Teams app ID too), strands' version into `version`,
//! and, when a host is given, the developer URLs and `validDomains`.
//!
//! What this does not do: check the manifest against Microsoft's schema
//! (Teams does on upload), or upload it.

use std::io::Write as _;

use serde_json::Value;

/// The manifest template.
pub const MANIFEST: &str = include_str!("../../manifests/teams/manifest.json");
/// The color icon, 192×192.
pub const COLOR_PNG: &[u8] = include_bytes!("../../manifests/teams/color.png");
/// The outline icon, 32×32, white on transparent.
pub const OUTLINE_PNG: &[u8] = include_bytes!("../../manifests/teams/outline.png");
/// Where the template wants the app ID.
pub const APP_ID_PLACEHOLDER: &str = "${{TEAMS_APP_ID}}";
/// The host the template's developer URLs name until one is given.
pub const HOST_PLACEHOLDER: &str = "YOUR-HOST";

/// Why no package was made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    #[error("app ID {0:?} is not a GUID: use the Entra app's Application (client) ID, like 00000000-0000-0000-0000-000000000000")]
    AppId(String),
    #[error("{0:?} is not a host name (give the host alone, like strands.example.com)")]
    Host(String),
    #[error("the manifest template is broken: {0}")]
    Template(String),
    #[error("could not write the zip: {0}")]
    Zip(String),
}

/// What goes into the manifest.
#[derive(Debug, Clone, Copy)]
pub struct Fill<'a> {
    /// The bot's Entra app ID (a GUID).
    pub app_id: &'a str,
    /// The manifest's `version` (semver).
    pub version: &'a str,
    /// The host strands is reached at, for the developer URLs and
    /// `validDomains`.
    pub host: Option<&'a str>,
}

/// The filled manifest.
pub fn manifest(fill: Fill<'_>) -> Result<Value, PackageError> {
    let app_id = fill.app_id.trim();
    let guid = app_id.len() == 36 && uuid::Uuid::try_parse(app_id).is_ok();
    if !guid {
        return Err(PackageError::AppId(app_id.to_string()));
    }
    let host = fill.host.map(host).transpose()?;
    let broken = |why: &str| PackageError::Template(why.to_string());
    let mut m: Value = serde_json::from_str(MANIFEST).map_err(|e| broken(&e.to_string()))?;
    m["id"] = Value::from(app_id);
    m["version"] = Value::from(fill.version);
    let bot = m
        .pointer_mut("/bots/0")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| broken("no bots[0]"))?;
    bot.insert("botId".into(), Value::from(app_id));
    if let Some(host) = &host {
        if let Some(developer) = m.get_mut("developer").and_then(Value::as_object_mut) {
            for url in developer.values_mut() {
                if let Some(s) = url.as_str().filter(|s| s.contains(HOST_PLACEHOLDER)) {
                    *url = Value::from(s.replace(HOST_PLACEHOLDER, host));
                }
            }
        }
        let domains = m
            .get_mut("validDomains")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| broken("no validDomains"))?;
        if !domains.iter().any(|d| d.as_str() == Some(host.as_str())) {
            domains.insert(0, Value::from(host.as_str()));
        }
    }
    Ok(m)
}

/// `raw` as a bare host name, lowercase (an `https://` in front and a
/// `/` after are forgiven).
fn host(raw: &str) -> Result<String, PackageError> {
    let bad = || PackageError::Host(raw.to_string());
    let bare = raw
        .trim()
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_ascii_lowercase();
    let url = url::Url::parse(&format!("https://{bare}/")).map_err(|_| bad())?;
    if bare.is_empty() || url.host_str() != Some(bare.as_str()) || url.path() != "/" {
        return Err(bad());
    }
    Ok(bare)
}

/// The package: `manifest` (pretty-printed), `color.png` and
/// `outline.png` at the root of a zip.
pub fn zip(manifest: &Value) -> Result<Vec<u8>, PackageError> {
    let failed = |e: &dyn std::fmt::Display| PackageError::Zip(e.to_string());
    let json = serde_json::to_vec_pretty(manifest).map_err(|e| failed(&e))?;
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    for (name, bytes) in [
        ("manifest.json", json.as_slice()),
        ("color.png", COLOR_PNG),
        ("outline.png", OUTLINE_PNG),
    ] {
        out.start_file(name, options).map_err(|e| failed(&e))?;
        out.write_all(bytes).map_err(|e| failed(&e))?;
    }
    Ok(out.finish().map_err(|e| failed(&e))?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "0f4e6c1a-3b2d-4c5e-8f70-112233445566";

    /// A PNG's width and height, from its IHDR.
    fn dimensions(png: &[u8]) -> (u32, u32) {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
        (be(16), be(20))
    }

    #[test]
    fn teams_package_icons_are_the_sizes_teams_wants() {
        assert_eq!(dimensions(COLOR_PNG), (192, 192));
        assert_eq!(dimensions(OUTLINE_PNG), (32, 32));
        // The outline is RGBA: colour type 6, so it can be transparent.
        assert_eq!(OUTLINE_PNG[25], 6);
    }

    #[test]
    fn teams_package_manifest_is_filled() {
        let m = manifest(Fill {
            app_id: APP,
            version: "1.2.3",
            host: Some("https://Strands.Example.com/"),
        })
        .expect("filled");
        assert_eq!(m["id"], APP);
        assert_eq!(m["bots"][0]["botId"], APP);
        assert_eq!(m["version"], "1.2.3");
        assert_eq!(m["manifestVersion"], "1.20");
        assert_eq!(
            m["validDomains"],
            serde_json::json!(["strands.example.com", "*.botframework.com"])
        );
        assert_eq!(
            m["developer"]["privacyUrl"],
            "https://strands.example.com/privacy"
        );
        assert!(!m.to_string().contains("${{"), "no placeholder is left");
        let titles: Vec<_> = m["bots"][0]["commandLists"][0]["commands"]
            .as_array()
            .expect("commands")
            .iter()
            .map(|c| c["title"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(titles, ["run", "list", "status", "cancel", "help"]);
        assert!(m["name"]["short"].as_str().expect("short").chars().count() <= 30);
        assert!(
            m["description"]["short"]
                .as_str()
                .expect("short")
                .chars()
                .count()
                <= 80
        );
    }

    #[test]
    fn teams_package_refuses_a_bad_app_id_or_host() {
        let fill = |app_id, host| {
            manifest(Fill {
                app_id,
                version: "1.0.0",
                host,
            })
        };
        for bad in [
            "",
            "app",
            "0f4e6c1a3b2d4c5e8f70112233445566",
            "{0f4e6c1a-3b2d-4c5e-8f70-1122334455}",
        ] {
            assert!(
                matches!(fill(bad, None), Err(PackageError::AppId(_))),
                "{bad}"
            );
        }
        for bad in ["", "a b", "host/path", "host:8443", "http://x"] {
            assert!(
                matches!(fill(APP, Some(bad)), Err(PackageError::Host(_))),
                "{bad}"
            );
        }
    }
}
