//! The variables of [`super::vars::VARS`], read once when the process
//! starts, each with where its value came from: the command line's flags,
//! the environment, a `strands.toml` file, or nothing (the default). This
//! is the one place that reads the process environment for settings; the
//! sections of the settings tree are built from it (`Env::get` is the
//! lookup every `from_lookup` takes) and handed down.
//!
//! `strands.toml` is read before the environment, for people who prefer a
//! file: the file `STRANDS_CONFIG` names, else `strands.toml` in the
//! current directory when there is one. Its keys are the variables' names;
//! a variable set in the environment wins over the file:
//!
//! ```toml
//! STRANDS_BIND = "0.0.0.0:3000"
//! STRANDS_ADMINS = "alice,bob"
//! STRANDS_LEASE_SECS = 30
//! ```
//!
//! What this module does not do: parse values (each section's builder
//! does, naming the variable when one is wrong), or read variables handed
//! on to child processes (`PATH` for the shell tool and MCP servers).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::vars::{self, Secret, Var};
use crate::error::{Error, Result};

/// Names the settings file (else `strands.toml` in the current directory).
pub const CONFIG_VAR: &str = "STRANDS_CONFIG";

/// The settings file looked for in the current directory.
pub const CONFIG_FILE: &str = "strands.toml";

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Unset: the default applies.
    Default,
    /// The process environment.
    Env,
    /// A settings file.
    File(PathBuf),
    /// A command-line flag, e.g. `--bind`.
    Flag(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Env => f.write_str("env"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// The variables' values, read once.
#[derive(Clone, Default)]
pub struct Env {
    values: BTreeMap<&'static str, (String, Source)>,
    /// The settings file read, if any.
    file: Option<PathBuf>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names and sources only: values may be secrets.
        f.debug_map()
            .entries(self.values.iter().map(|(k, (_, s))| (k, s)))
            .finish()
    }
}

impl Env {
    /// The process environment, over the settings file if there is one.
    /// Reading the environment happens here and nowhere else.
    pub fn from_process() -> Result<Env> {
        let cwd = std::env::current_dir().ok();
        Env::load(|k| std::env::var(k).ok(), cwd.as_deref())
    }

    /// The variables `get` gives (the environment, or a map in tests) over
    /// the settings file `get("STRANDS_CONFIG")` names, else `strands.toml`
    /// in `dir`, when there is one.
    pub fn load(get: impl Fn(&str) -> Option<String>, dir: Option<&Path>) -> Result<Env> {
        let mut env = Env::default();
        let named = get(CONFIG_VAR).filter(|p| !p.trim().is_empty());
        let file = match (&named, dir) {
            (Some(p), _) => Some(PathBuf::from(p.trim())),
            (None, Some(d)) => Some(d.join(CONFIG_FILE)).filter(|p| p.is_file()),
            (None, None) => None,
        };
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::Usage(format!(
                    "{} cannot be read: {e}{}",
                    path.display(),
                    if named.is_some() {
                        format!(" (named by {CONFIG_VAR})")
                    } else {
                        String::new()
                    }
                ))
            })?;
            for (name, value) in parse_file(&text, &path)? {
                env.values.insert(name, (value, Source::File(path.clone())));
            }
            env.file = Some(path);
        }
        for v in vars::VARS {
            if let Some(value) = get(v.name) {
                env.values.insert(v.name, (value, Source::Env));
            }
        }
        Ok(env)
    }

    /// Only the given pairs, as if from the environment (tests).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Env {
        let map: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut env = Env::default();
        for v in vars::VARS {
            if let Some(value) = map.get(v.name) {
                env.values.insert(v.name, (value.clone(), Source::Env));
            }
        }
        env
    }

    /// A flag's value over the variable it overrides.
    pub fn set_flag(&mut self, name: &'static str, flag: &'static str, value: String) {
        debug_assert!(vars::find(name).is_some(), "{name} is not in config::vars");
        self.values.insert(name, (value, Source::Flag(flag)));
    }

    /// The value of `name`, as given (`None`: unset). `name` must be in
    /// [`vars::VARS`]: a variable read without being described there is a
    /// bug, which debug builds (and so the tests) stop at.
    pub fn get(&self, name: &str) -> Option<String> {
        debug_assert!(
            vars::find(name).is_some(),
            "{name} is read but not in config::vars::VARS: add it there"
        );
        self.values.get(name).map(|(v, _)| v.clone())
    }

    /// `get` as the closure the sections' `from_lookup`s take.
    pub fn lookup(&self) -> impl Fn(&str) -> Option<String> + '_ {
        move |k| self.get(k)
    }

    /// Where `name`'s value came from.
    pub fn source(&self, name: &str) -> Source {
        self.values
            .get(name)
            .map(|(_, s)| s.clone())
            .unwrap_or(Source::Default)
    }

    /// Whether `name` is set to something other than blanks.
    pub fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| !v.trim().is_empty())
    }

    /// The settings file read, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Every variable of the table with its value as it may be shown
    /// (secrets masked) and its source.
    pub fn shown(&self) -> Vec<Shown> {
        vars::VARS
            .iter()
            .map(|v| {
                let (value, source) = match self.values.get(v.name) {
                    Some((value, source)) => (Some(mask(v, value)), source.clone()),
                    None => (None, Source::Default),
                };
                Shown {
                    var: v,
                    value,
                    source,
                }
            })
            .collect()
    }
}

/// A variable as `strands config` shows it.
#[derive(Debug, Clone)]
pub struct Shown {
    pub var: &'static Var,
    /// The value given, masked when secret; `None`: unset.
    pub value: Option<String>,
    pub source: Source,
}

/// Prefixes that say what a secret is without saying what it is.
const SECRET_PREFIXES: &[&str] = &[
    "xoxb-", "xoxp-", "xapp-", "whsec_", "sk-ant-", "sk-", "tvly-", "strands_",
];

/// `value` as it may be shown: a secret is its recognised prefix and
/// `…(set)` (or `********`); a URL loses its password.
pub fn mask(var: &Var, value: &str) -> String {
    match var.secret {
        Secret::No => value.to_string(),
        Secret::Yes if value.trim().is_empty() => "(blank)".into(),
        Secret::Yes => match SECRET_PREFIXES
            .iter()
            .find(|p| value.trim().starts_with(*p))
        {
            Some(p) => format!("{p}…(set)"),
            None => "********".into(),
        },
        Secret::Password => value
            .split(',')
            .map(|part| match url::Url::parse(part.trim()) {
                Ok(mut u) if u.password().is_some() => {
                    let _ = u.set_password(Some("********"));
                    u.to_string()
                }
                Ok(_) => part.to_string(),
                // Not a URL: it may still hold a secret after an `@`.
                Err(_) if part.contains('@') => "********".into(),
                Err(_) => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// A settings file's variables: a TOML table of variable names to strings,
/// numbers or booleans. A name strands does not read is an error naming it
/// (a typo must not be silently ignored).
fn parse_file(text: &str, path: &Path) -> Result<Vec<(&'static str, String)>> {
    use toml_edit::Value;
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let scalar = |v: &Value| -> Option<String> {
        match v {
            Value::String(s) => Some(s.value().clone()),
            Value::Integer(n) => Some(n.value().to_string()),
            Value::Float(n) => Some(n.value().to_string()),
            Value::Boolean(b) => Some(if *b.value() { "1" } else { "0" }.to_string()),
            _ => None,
        }
    };
    let mut out = Vec::new();
    for (key, item) in doc.iter() {
        let Some(var) = vars::find(key) else {
            return Err(Error::Usage(format!(
                "{}: `{key}` is not a strands setting (`strands config` lists them)",
                path.display()
            )));
        };
        let value = match item.as_value() {
            Some(Value::Array(items)) => items
                .iter()
                .map(scalar)
                .collect::<Option<Vec<_>>>()
                .map(|v| v.join(",")),
            Some(v) => scalar(v),
            None => None,
        };
        let Some(value) = value else {
            return Err(Error::Usage(format!(
                "{}: `{key}` must be a string, a number, a boolean or a list of them",
                path.display()
            )));
        };
        out.push((var.name, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_wins_over_the_file_and_sources_are_kept() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "STRANDS_BIND = \"0.0.0.0:4000\"\nSTRANDS_LEASE_SECS = 12\nSTRANDS_ADMINS = [\"a\", \"b\"]\n",
        )
        .expect("write");
        let env = Env::load(
            |k| (k == "STRANDS_BIND").then(|| "127.0.0.1:5000".to_string()),
            Some(dir.path()),
        )
        .expect("loads");
        assert_eq!(env.get("STRANDS_BIND").as_deref(), Some("127.0.0.1:5000"));
        assert_eq!(env.source("STRANDS_BIND"), Source::Env);
        assert_eq!(env.get("STRANDS_LEASE_SECS").as_deref(), Some("12"));
        assert_eq!(env.get("STRANDS_ADMINS").as_deref(), Some("a,b"));
        assert!(matches!(env.source("STRANDS_LEASE_SECS"), Source::File(_)));
        assert_eq!(env.source("STRANDS_WORKFLOWS"), Source::Default);
    }

    #[test]
    fn a_file_with_an_unknown_name_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("x.toml");
        std::fs::write(&path, "STRANDS_BINDD = \"x\"\n").expect("write");
        let p = path.display().to_string();
        let e = Env::load(|k| (k == CONFIG_VAR).then(|| p.clone()), None).unwrap_err();
        assert!(e.to_string().contains("STRANDS_BINDD"), "{e}");
        let e = Env::load(
            |k| (k == CONFIG_VAR).then(|| "/nonexistent.toml".into()),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains(CONFIG_VAR), "{e}");
    }

    #[test]
    fn secrets_are_masked() {
        let env = Env::from_pairs([
            ("SLACK_BOT_TOKEN", "xoxb-123-very-secret"),
            ("STRANDS_TOKEN", "opaque"),
            ("STRANDS_SMTP_URL", "smtp://u:hunter2@mail.example:587"),
            ("STRANDS_BIND", "127.0.0.1:1"),
        ]);
        let shown = env.shown();
        let value = |n: &str| {
            shown
                .iter()
                .find(|s| s.var.name == n)
                .and_then(|s| s.value.clone())
        };
        assert_eq!(value("SLACK_BOT_TOKEN").as_deref(), Some("xoxb-…(set)"));
        assert_eq!(value("STRANDS_TOKEN").as_deref(), Some("********"));
        let smtp = value("STRANDS_SMTP_URL").unwrap_or_default();
        assert!(
            !smtp.contains("hunter2") && smtp.contains("mail.example"),
            "{smtp}"
        );
        assert_eq!(value("STRANDS_BIND").as_deref(), Some("127.0.0.1:1"));
        assert!(!format!("{env:?}").contains("very-secret"));
    }
}

/// The guard: settings come from [`Env`], read once; nothing else in
/// `src/` reads the process environment.
#[cfg(test)]
mod guard {
    use std::path::{Path, PathBuf};

    /// The reads allowed: file, the code of the line, and why.
    const ALLOWED: &[(&str, &str, &str)] = &[
        (
            "src/config/env.rs",
            "Env::load(|k| std::env::var(k).ok()",
            "the one reader of settings",
        ),
        (
            "src/tools/builtin/shell.rs",
            "if let Some(value) = std::env::var_os(name) {",
            "hands SHELL_ENV (PATH, HOME, LANG…) on to the shell tool's child, nothing else",
        ),
        (
            "src/tools/mcp.rs",
            "if let Some(v) = std::env::var_os(key) {",
            "hands INHERITED_ENV (PATH, HOME…) on to a stdio MCP server's child, nothing else",
        ),
        (
            "src/store/postgres/testdb.rs",
            "std::env::var(\"STRANDS_REQUIRE_POSTGRES\")",
            "test support (hidden, for the test harness): whether CI requires the test database",
        ),
    ];

    /// What reading the environment looks like (split so this file does
    /// not match itself).
    fn needles() -> Vec<String> {
        ["var(", "var_os(", "vars(", "vars_os("]
            .iter()
            .map(|f| format!("env::{f}"))
            .chain(["from_env(", "from_default_env("].map(String::from))
            .collect()
    }

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// `file:line` of each read outside [`ALLOWED`]; a file's tests (a
    /// `tests.rs`, or what follows its `#[cfg(test)] mod`) may read it.
    fn readers(root: &Path) -> Vec<String> {
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        files.sort();
        let needles = needles();
        let mut found = Vec::new();
        for file in files {
            let rel = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            // Inside a `#[cfg(test)] mod … {`: its braces still open.
            let mut test_depth = 0i64;
            for (i, line) in lines.iter().enumerate() {
                let code = line.trim_start();
                let opens_test_mod = i > 0
                    && lines[i - 1].trim_start().starts_with("#[cfg(test)]")
                    && code.starts_with("mod ")
                    && code.trim_end().ends_with('{');
                if test_depth > 0 || opens_test_mod {
                    test_depth += code.matches('{').count() as i64;
                    test_depth -= code.matches('}').count() as i64;
                    continue;
                }
                if code.starts_with("//") || code.contains("OTEL_") {
                    continue; // comments; OpenTelemetry's standard variables
                }
                let allowed = ALLOWED
                    .iter()
                    .any(|(f, line, _)| *f == rel && code.starts_with(line));
                if !allowed && needles.iter().any(|n| code.contains(n.as_str())) {
                    found.push(format!("{rel}:{}: {}", i + 1, code));
                }
            }
        }
        found
    }

    #[test]
    fn nothing_below_cli_reads_the_environment() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let found = readers(root);
        assert!(
            found.is_empty(),
            "these read the environment; read the variable through config::env::Env \
             (add it to config::vars::VARS) and hand the value down:\n{}",
            found.join("\n")
        );
        for (file, line, _) in ALLOWED {
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            assert!(
                text.lines().any(|l| l.trim_start().starts_with(line)),
                "{file}: `{line}` is allowed but gone: take it off ALLOWED"
            );
        }
    }

    #[test]
    fn the_guard_finds_a_reader() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(dir.path().join("src/hub")).expect("mkdir");
        std::fs::write(
            dir.path().join("src/hub/x.rs"),
            format!(
                "fn f() {{\n    let _ = std::env::{}(\"STRANDS_X\");\n}}\n#[cfg(test)]\nmod tests {{\n    fn g() {{ std::env::{}(\"Y\"); }}\n}}\nfn h() {{ std::env::{}(); }}\n",
                "var", "var_os", "vars"
            ),
        )
        .expect("write");
        let found = readers(dir.path());
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("src/hub/x.rs:2:"), "{found:?}");
        assert!(found[1].starts_with("src/hub/x.rs:8:"), "{found:?}");
    }
}
