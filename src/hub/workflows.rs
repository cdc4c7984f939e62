//! The workflows a service may start, by name: the YAML specs in one
//! directory (`STRANDS_WORKFLOWS`), each named by its file stem. A name is
//! looked up among the files listed — never joined onto a path — so `../x`
//! or an absolute path can only fail to match.

use std::path::{Path, PathBuf};

use crate::spec::{self, Spec};

/// Why a run was not started; nothing was written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartRefusal {
    #[error("no workflows are configured (STRANDS_WORKFLOWS)")]
    NoWorkflows,
    #[error("no workflow `{name}`{}", available_text(.available))]
    Unknown {
        name: String,
        available: Vec<String>,
    },
    #[error("workflow `{name}` is invalid:\n{message}")]
    Invalid { name: String, message: String },
    #[error("the workflow cannot run here: {0}")]
    CannotRun(String),
    #[error("{message}; inputs: {}", inputs.join(", "))]
    BadInputs {
        message: String,
        inputs: Vec<String>,
    },
}

fn available_text(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; available: {}", names.join(", "))
    }
}

/// The specs in `dir` by name (file stem), sorted.
pub fn list(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.to_string(), p)))
        .collect();
    out.sort();
    out
}

/// The spec file named `name` (its stem, or its file name with the
/// extension) in `dir`.
pub fn find(dir: Option<&Path>, name: &str) -> Result<PathBuf, StartRefusal> {
    let Some(dir) = dir else {
        return Err(StartRefusal::NoWorkflows);
    };
    let all = list(dir);
    all.iter()
        .find(|(stem, p)| stem == name || p.file_name().and_then(|f| f.to_str()) == Some(name))
        .map(|(_, p)| p.clone())
        .ok_or_else(|| StartRefusal::Unknown {
            name: name.to_string(),
            available: all.into_iter().map(|(n, _)| n).collect(),
        })
}

/// Loads and validates the spec named `name`.
pub fn load(dir: Option<&Path>, name: &str, limits: &spec::Limits) -> Result<Spec, StartRefusal> {
    let path = find(dir, name)?;
    spec::load(&path, limits).map_err(|e| StartRefusal::Invalid {
        name: name.to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_looked_up_never_joined() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("deploy.yaml"), "x").expect("write");
        std::fs::write(dir.path().join("notes.txt"), "x").expect("write");
        let outside = dir.path().join("sub");
        std::fs::create_dir(&outside).expect("mkdir");
        std::fs::write(outside.join("secret.yaml"), "x").expect("write");
        let d = Some(dir.path());
        assert_eq!(find(d, "deploy"), Ok(dir.path().join("deploy.yaml")));
        assert_eq!(find(d, "deploy.yaml"), Ok(dir.path().join("deploy.yaml")));
        for bad in [
            "../deploy",
            "sub/secret",
            "/etc/passwd",
            "notes",
            "secret",
            "",
        ] {
            match find(d, bad) {
                Err(StartRefusal::Unknown { available, .. }) => {
                    assert_eq!(available, vec!["deploy".to_string()], "{bad}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(find(None, "deploy"), Err(StartRefusal::NoWorkflows));
    }
}
