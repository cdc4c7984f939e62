//! `outputs.artifacts`: files written under `--out` when a run completes.
//! Paths are templates; after rendering they must still be relative and free
//! of `..`, so a spec can never write outside the output directory.
//!
//! As in strands-cli, a file that is already there is not replaced unless
//! the run may overwrite (`--force`): every path is rendered and checked
//! before anything is written, so a refusal writes nothing. [`precheck`]
//! makes the same check before a run starts, for the paths that depend on
//! the inputs only, so a refusal costs no model call.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::spec::ArtifactSpec;
use crate::template::Templates;

/// Writes every artifact; with `overwrite` false, a file already at any of
/// the paths stops it before the first is written
/// ([`Error::ArtifactExists`]).
pub fn write(
    templates: &Templates,
    artifacts: &[ArtifactSpec],
    ctx: &minijinja::Value,
    out_dir: &Path,
    overwrite: bool,
) -> Result<Vec<String>> {
    let mut planned = Vec::new();
    for (i, a) in artifacts.iter().enumerate() {
        let rel = templates.render(&format!("outputs.artifacts[{i}].path"), &a.path, ctx)?;
        let content = templates.render(&format!("outputs.artifacts[{i}].from"), &a.from, ctx)?;
        let target = out_dir.join(checked(i, &rel)?);
        if !overwrite {
            refuse_existing(&target)?;
        }
        planned.push((target, content));
    }
    let mut written = Vec::new();
    for (target, content) in planned {
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io(format!("cannot create {}", parent.display()), e))?;
        }
        std::fs::write(&target, content)
            .map_err(|e| Error::io(format!("cannot write artifact {}", target.display()), e))?;
        written.push(target.display().to_string());
    }
    Ok(written)
}

/// Before a run: refuses when an artifact whose path depends on the inputs
/// alone (`variables`) is already there. Paths that need the run's results
/// (`{{ last_response }}`, `{{ steps[0].response }}`) are checked when the
/// run completes.
pub fn precheck(
    templates: &Templates,
    artifacts: &[ArtifactSpec],
    variables: &Map<String, Value>,
    out_dir: &Path,
) -> Result<()> {
    let ctx = minijinja::Value::from_serialize(variables);
    for (i, a) in artifacts.iter().enumerate() {
        // Strict undefined: a path that names anything but an input fails
        // to render here, and is left for the end of the run.
        let Ok(rel) = templates.render(&format!("outputs.artifacts[{i}].path"), &a.path, &ctx)
        else {
            continue;
        };
        refuse_existing(&out_dir.join(checked(i, &rel)?))?;
    }
    Ok(())
}

fn refuse_existing(target: &Path) -> Result<()> {
    // `symlink_metadata`: a dangling link is "there" too.
    if std::fs::symlink_metadata(target).is_ok() {
        return Err(Error::ArtifactExists {
            path: target.to_path_buf(),
            session: None,
            resume: None,
        });
    }
    Ok(())
}

fn checked(i: usize, rel: &str) -> Result<PathBuf> {
    crate::spec::relative_inside(rel).ok_or_else(|| {
        Error::Runtime(format!(
            "outputs.artifacts[{i}].path renders to `{rel}`, which is absolute or leaves the output directory"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_output_directory() {
        assert_eq!(
            crate::spec::relative_inside("./output/report.md")
                .unwrap()
                .to_str(),
            Some("output/report.md")
        );
        assert!(crate::spec::relative_inside("/etc/passwd").is_none());
        assert!(crate::spec::relative_inside("a/../../x").is_none());
        assert!(crate::spec::relative_inside("").is_none());
    }

    fn artifact(path: &str, from: &str) -> ArtifactSpec {
        ArtifactSpec {
            path: path.into(),
            from: from.into(),
        }
    }

    #[test]
    fn an_existing_file_is_kept_without_overwrite_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("b.md"), "old").expect("write");
        let t = Templates::new();
        let ctx = minijinja::Value::from_serialize(serde_json::json!({"x": "new"}));
        let arts = [artifact("a.md", "{{ x }}"), artifact("b.md", "{{ x }}")];
        match write(&t, &arts, &ctx, dir.path(), false) {
            Err(Error::ArtifactExists { path, .. }) => assert_eq!(path, dir.path().join("b.md")),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(
            !dir.path().join("a.md").exists(),
            "a refusal writes nothing"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.md"))
                .ok()
                .as_deref(),
            Some("old")
        );

        let written = write(&t, &arts, &ctx, dir.path(), true).expect("overwrite");
        assert_eq!(written.len(), 2);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.md"))
                .ok()
                .as_deref(),
            Some("new")
        );
    }

    #[test]
    fn precheck_checks_the_paths_the_inputs_decide() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("ai.md"), "old").expect("write");
        let t = Templates::new();
        let vars: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"topic": "ai"})).expect("map");
        // Depends on the run's output: left for the end.
        let later = [artifact("{{ last_response }}.md", "x")];
        assert!(precheck(&t, &later, &vars, dir.path()).is_ok());
        let now = [artifact("./{{ topic }}.md", "x")];
        assert!(matches!(
            precheck(&t, &now, &vars, dir.path()),
            Err(Error::ArtifactExists { .. })
        ));
        let free = [artifact("other.md", "x")];
        assert!(precheck(&t, &free, &vars, dir.path()).is_ok());
    }
}
