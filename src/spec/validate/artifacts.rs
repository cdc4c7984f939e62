//! Validation of `outputs.artifacts[]`: `{path, from}`, both templates;
//! a path must stay inside the output directory (no absolute paths, no
//! `..`).
//!
//! Only the templates as written are checked here: rendering them, checking
//! the rendered path again and writing the files is the engine's job
//! (`engine::artifacts`), once a run completes.

use super::raw;
use super::{at, Validator};
use crate::spec::ArtifactSpec;

impl Validator {
    /// Every artifact, in file order.
    pub(super) fn artifacts(&mut self, outputs: Option<&raw::Outputs>) -> Vec<ArtifactSpec> {
        let mut artifacts = Vec::new();
        if let Some(arts) = outputs.and_then(|o| o.artifacts.as_ref()) {
            for (i, a) in arts.iter().enumerate() {
                self.template(&a.path, &format!("outputs.artifacts[{i}].path"));
                self.template(&a.from, &format!("outputs.artifacts[{i}].from"));
                if let Err(why) = check_relative(&a.path.value) {
                    self.error(
                        at(&a.path),
                        format!("artifact path `{}` {why}", a.path.value),
                        Some("artifact paths are relative to --out and stay inside it".into()),
                    );
                }
                artifacts.push(ArtifactSpec {
                    path: a.path.value.clone(),
                    from: a.from.value.clone(),
                });
            }
        }
        artifacts
    }
}

/// Refuses absolute paths and `..` components in artifact path templates.
pub(crate) fn check_relative(p: &str) -> std::result::Result<(), &'static str> {
    let t = p.trim();
    if t.starts_with('/') || t.starts_with('\\') || t.get(1..2) == Some(":") {
        return Err("is absolute");
    }
    if t.split(['/', '\\']).any(|c| c.trim() == "..") {
        return Err("contains `..`");
    }
    Ok(())
}
