//! `strands config`: the effective settings — every variable of
//! `config::vars`, its value (secrets masked: `xoxb-…(set)`, `********`,
//! a URL's password; unset, the default as it comes out, e.g. the public
//! URL from the bind address) and where it came from (`default`, `env`, the
//! `strands.toml` file, a flag) — then what the settings would refuse
//! (a half-configured room, a bad number), exit 2 when there is any.
//! `--json` for scripts; `--markdown` prints the table of variables the
//! README's settings tables are generated from.
//!
//! It runs before the settings are built, so it shows them even when they
//! would stop every other command.

use clap::Args;
use serde_json::{json, Value};

use crate::config::env::{Env, Shown, Source};
use crate::config::vars::{self, Section};
use crate::error::{exit, Error, Result};

#[derive(Args, Debug)]
pub struct ConfigArgs {
    /// Only these sections (store, serve, slack, …), comma-separated.
    #[arg(long, value_delimiter = ',')]
    section: Vec<String>,
    #[arg(long)]
    pub(super) json: bool,
    /// The table of variables, as the README's settings tables show it
    /// (no values).
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
}

/// A setting that would stop a command.
struct Problem {
    section: &'static str,
    message: String,
}

pub(super) fn config(env: &Env, store: &std::path::Path, args: ConfigArgs) -> Result<u8> {
    let sections: Vec<Section> = if args.section.is_empty() {
        Section::ALL.to_vec()
    } else {
        args.section
            .iter()
            .map(|name| {
                Section::parse(name).ok_or_else(|| {
                    Error::Usage(format!(
                        "--section {name}: no such section (sections: {})",
                        Section::ALL.map(Section::name).join(", ")
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    if args.markdown {
        outln!("{}", vars::markdown_all(&sections).trim_end())?;
        return Ok(exit::OK);
    }
    let shown: Vec<Shown> = env
        .shown()
        .into_iter()
        .filter(|s| sections.contains(&s.var.section))
        .collect();
    let (problems, serve) = problems(env, store);
    // Defaults that depend on the machine or on other settings, as they
    // come out.
    let derived = |name: &str| -> Option<String> {
        match name {
            "STRANDS_STORE" => Some(store.display().to_string()),
            "STRANDS_PUBLIC_URL" => serve.as_ref().map(|c| c.public_url.clone()),
            _ => None,
        }
    };
    let effective = |s: &Shown| -> Option<String> {
        s.value
            .clone()
            .or_else(|| derived(s.var.name))
            .or_else(|| s.var.default.map(plain))
    };
    let code = if problems.is_empty() {
        exit::OK
    } else {
        exit::USAGE
    };
    if args.json {
        let settings: Vec<Value> = shown
            .iter()
            .map(|s| {
                json!({
                    "name": s.var.name,
                    "section": s.var.section.name(),
                    "type": s.var.kind.name(),
                    "secret": s.var.secret != vars::Secret::No,
                    "value": s.value,
                    "effective": effective(s),
                    "default": s.var.default.map(plain),
                    "source": source(&s.source),
                    "flag": s.var.flag,
                })
            })
            .collect();
        let problems: Vec<Value> = problems
            .iter()
            .map(|p| json!({ "section": p.section, "message": p.message }))
            .collect();
        outln!(
            "{}",
            json!({
                "file": env.file().map(|p| p.display().to_string()),
                "settings": settings,
                "problems": problems,
                "exit_code": code,
            })
        )?;
        return Ok(code);
    }
    match env.file() {
        Some(p) => outln!(
            "# strands settings: flags, then the environment, then {}, then the defaults",
            p.display()
        )?,
        None => outln!(
            "# strands settings: flags, then the environment, then the defaults (no {})",
            crate::config::env::CONFIG_FILE
        )?,
    }
    let width = shown.iter().map(|s| s.var.name.len()).max().unwrap_or(0);
    let mut current = None;
    for s in &shown {
        if current != Some(s.var.section) {
            current = Some(s.var.section);
            outln!("\n[{}]", s.var.section.name())?;
        }
        let value = effective(s).unwrap_or_else(|| "(unset)".into());
        outln!("{:<width$}  {value}  ({})", s.var.name, source(&s.source))?;
    }
    if !problems.is_empty() {
        outln!("\nproblems:")?;
        for p in &problems {
            outln!("  [{}] {}", p.section, p.message)?;
        }
    }
    Ok(code)
}

/// Where a value came from, as shown.
fn source(s: &Source) -> String {
    match s {
        Source::Default => "default".into(),
        Source::Env => "env".into(),
        Source::File(p) => p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string()),
        Source::Flag(f) => format!("flag {f}"),
    }
}

/// A default as the README writes it, without its code marks.
fn plain(d: &str) -> String {
    d.replace('`', "")
}

/// What the settings would refuse: every command's (the service file, the
/// store), the server's (`strands serve`), the client's (`STRANDS_SERVER`);
/// and the server's settings when it would start.
fn problems(env: &Env, store: &std::path::Path) -> (Vec<Problem>, Option<crate::serve::Config>) {
    let mut out = Vec::new();
    let mut serve = None;
    if let Err(e) = crate::config::Settings::load(env.lookup()) {
        out.push(Problem {
            section: "engine",
            message: e.to_string(),
        });
    }
    match crate::serve::Config::from_lookup(
        env.lookup(),
        store.to_path_buf(),
        crate::serve::config::Overrides::default(),
    ) {
        Ok(config) => serve = Some(config),
        Err(e) => {
            let message = e.to_string();
            // Settings::load's own errors are reported once, above.
            if !out.iter().any(|p| p.message == message) {
                out.push(Problem {
                    section: "serve",
                    message: format!("strands serve would refuse to start: {message}"),
                });
            }
        }
    }
    if let Err(e) = super::remote::Remote::from_settings(env, None) {
        out.push(Problem {
            section: "client",
            message: e.to_string(),
        });
    }
    (out, serve)
}
