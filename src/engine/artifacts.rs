//! `outputs.artifacts`: files written under `--out` when a run completes.
//! Paths are templates; after rendering they must still be relative and free
//! of `..`, so a spec can never write outside the output directory.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::ArtifactSpec;
use crate::template::Templates;

pub fn write(
    templates: &Templates,
    artifacts: &[ArtifactSpec],
    ctx: &minijinja::Value,
    out_dir: &Path,
) -> Result<Vec<String>> {
    let mut written = Vec::new();
    for (i, a) in artifacts.iter().enumerate() {
        let rel = templates.render(&format!("outputs.artifacts[{i}].path"), &a.path, ctx)?;
        let content = templates.render(&format!("outputs.artifacts[{i}].from"), &a.from, ctx)?;
        let rel_path = safe_relative(&rel).ok_or_else(|| {
            Error::Runtime(format!(
                "outputs.artifacts[{i}].path renders to `{rel}`, which is absolute or leaves the output directory"
            ))
        })?;
        let target = out_dir.join(rel_path);
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

/// `./a/b.md` → `a/b.md`; `None` for absolute paths or any `..`.
fn safe_relative(p: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in Path::new(p.trim()).components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::safe_relative;

    #[test]
    fn paths_stay_inside_the_output_directory() {
        assert_eq!(
            safe_relative("./output/report.md").unwrap().to_str(),
            Some("output/report.md")
        );
        assert!(safe_relative("/etc/passwd").is_none());
        assert!(safe_relative("a/../../x").is_none());
        assert!(safe_relative("").is_none());
    }
}
