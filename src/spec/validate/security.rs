//! Validation of the `security` section: `redact` (regular expressions
//! added to the built-in secret patterns) and the workflow-wide approval
//! defaults (`approvers`, `approvals_required`, `allow_self_approval`)
//! that gates without their own settings fall back to.
//!
//! `security` is free-form in strands-cli, so other keys are left alone.

use serde_json::Value;
use serde_saphyr::Spanned;

use super::{at, Validator};
use crate::spec::ApprovalDefaults;

impl Validator {
    /// `security.redact`: a list of regular expressions.
    pub(super) fn redactor(
        &mut self,
        security: Option<&Spanned<Value>>,
    ) -> crate::audit::redact::Redactor {
        let Some(sec) = security else {
            return Default::default();
        };
        let patterns: Vec<String> = match sec.value.get("redact") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(other) => {
                self.error(
                    at(sec),
                    format!("security.redact must be a list of regular expressions, not {other}"),
                    None,
                );
                return Default::default();
            }
        };
        match crate::audit::redact::Redactor::new(&patterns) {
            Ok(r) => r,
            Err(e) => {
                self.error(
                    at(sec),
                    e,
                    Some("security.redact takes regular expressions (Rust regex syntax)".into()),
                );
                Default::default()
            }
        }
    }
}

/// `security.approvers` / `approvals_required` / `allow_self_approval`.
pub(super) fn approval_defaults(security: Option<&Value>) -> ApprovalDefaults {
    let Some(sec) = security else {
        return ApprovalDefaults::default();
    };
    ApprovalDefaults {
        approvers: sec
            .get("approvers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(crate::model::Approver::parse))
                    .collect()
            })
            .unwrap_or_default(),
        // Read with their locations by `Validator::security_rules`.
        rules: Vec::new(),
        approvals_required: sec
            .get("approvals_required")
            .and_then(Value::as_u64)
            .map(|n| n.max(1) as u32),
        allow_self_approval: sec.get("allow_self_approval").and_then(Value::as_bool),
    }
}
