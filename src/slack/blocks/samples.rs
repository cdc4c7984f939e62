//! Sample views: what [`Templates::load`](super::Templates::load) renders
//! every template with at startup, so an override that breaks on some gate
//! kind, decision or outcome fails before a gate opens, and the tests'
//! normal case. Under `#[cfg(test)]`, `fixtures` holds what the tests of
//! several submodules share: hostile text, a session paused at a tool-call
//! gate, and helpers that read rendered blocks.
//!
//! Nothing here is built from a real session (that is `views`): the samples
//! are fixed data, chosen so the self-check takes every branch of the
//! built-in templates.

use super::views::{
    kind_name, ApprovalView, CallOutcomeView, DecidedView, FormView, ModalView, OutputView,
    ProgressView, ToolApprovalView, ToolCallView, MAX_OUTPUT_CHUNKS,
};
use crate::hub::fields::FieldView;
use crate::spec::GateKind;

/// One sample view of every kind the templates render.
pub(super) struct Samples {
    pub(super) approvals: Vec<ApprovalView>,
    pub(super) decided: Vec<DecidedView>,
    pub(super) modals: Vec<ModalView>,
    pub(super) progress: Vec<ProgressView>,
    pub(super) tools: Vec<ToolApprovalView>,
    pub(super) outputs: Vec<OutputView>,
    pub(super) forms: Vec<FormView>,
}

/// A form with every kind of field, each way it can be shown (defaults
/// or none, bounds or none, titled options).
pub(super) fn sample_fields() -> Vec<FieldView> {
    let form: crate::model::form::Form = serde_json::from_str(
        r#"{"properties": {
            "version": {"type": "string", "title": "Version", "description": "As tagged", "minLength": 1, "maxLength": 20, "default": "1.2"},
            "mail": {"type": "string", "format": "email"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "ratio": {"type": "number"},
            "notify": {"type": "boolean", "title": "Tell the channel", "default": true},
            "force": {"type": "boolean"},
            "env": {"type": "string", "enum": ["prod", "staging"], "enumNames": ["Production", "Staging"], "default": "staging"},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]}
        }, "required": ["version", "replicas", "size"]}"#,
    )
    .unwrap_or_else(|e| panic!("the sample form: {e}"));
    crate::hub::fields::fields(&form)
}

fn sample_call(index: usize, waiting: bool, outcome: Option<(&str, Option<&str>)>) -> ToolCallView {
    let handle = "tools#3";
    let id = format!("call_{index}");
    ToolCallView {
        index,
        value: format!("{handle}|{id}"),
        block_id: format!("call:{handle}:{index}"),
        id,
        name: "deploy_api".into(),
        risk: Some("high".into()),
        reversible: Some(index.is_multiple_of(2)),
        prompt: Some("Approve `deploy_api`: POST https://deploy.example.com/v1/rollout?".into()),
        description: Some(
            "POST https://deploy.example.com/v1/rollout via deploy_api (JSON 42 bytes)".into(),
        ),
        arguments: "{\n  \"method\": \"POST\",\n  \"path\": \"/v1/rollout\"\n}".into(),
        arguments_cut: if index == 1 { 1_234 } else { 0 },
        waiting,
        buttons: true,
        trustable: index % 2 == 1,
        outcome: outcome.map(|(kind, detail)| CallOutcomeView {
            kind: kind.into(),
            by: Some("U04APPROVER".into()),
            at: Some("2025-11-21T09:30:00Z".into()),
            detail: detail.map(str::to_string),
        }),
    }
}

fn sample_tools() -> Vec<ToolApprovalView> {
    let view = |calls: Vec<ToolCallView>, hidden: usize, hidden_waiting: usize| {
        let waiting = calls.iter().filter(|c| c.waiting).count() + hidden_waiting;
        ToolApprovalView {
            workflow: "deploy-service".into(),
            agent: "deployer".into(),
            handle: "tools#3".into(),
            position: "steps[1]".into(),
            session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
            started_by: "U04APPROVER".into(),
            total: calls.len() + hidden,
            waiting,
            calls,
            hidden,
            hidden_waiting,
            rule: (hidden > 0)
                .then(|| "Policy: needs 1 of group:dba because tool.name == 'delete_rows'".into()),
        }
    };
    let decided = [
        ("approve", None),
        ("edit", None),
        ("trust", None),
        ("trusted", None),
        ("reject", Some("not on a Friday")),
        ("policy", None),
        ("running", None),
        ("done", None),
        ("not_run", Some("unknown tool `nope`")),
    ];
    let mut all_decided: Vec<ToolCallView> = decided
        .iter()
        .enumerate()
        .map(|(i, (kind, detail))| sample_call(i + 1, false, Some((kind, *detail))))
        .collect();
    all_decided.push(sample_call(10, false, None));
    let mut no_button = sample_call(2, true, None);
    no_button.buttons = false;
    vec![
        view(vec![sample_call(1, true, None)], 0, 0),
        view(
            vec![
                sample_call(1, true, None),
                sample_call(2, true, None),
                sample_call(3, false, Some(("approve", None))),
            ],
            0,
            0,
        ),
        view(vec![sample_call(1, true, None), no_button], 2, 1),
        view(all_decided, 2, 0),
    ]
}

/// A gate of `kind` waiting for a second approval.
pub(super) fn sample_approval(kind: GateKind) -> ApprovalView {
    ApprovalView {
        workflow: "deploy-service".into(),
        gate_id: "review".into(),
        handle: "review#1".into(),
        kind: kind_name(kind).into(),
        position: "steps[1]".into(),
        prompt: "*Approve the production deploy?*".into(),
        preview: Some("diff --git a/deploy.yaml b/deploy.yaml\n+replicas: 3".into()),
        preview_cut: 120,
        started_by: "U04APPROVER".into(),
        session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
        timeout_at: Some("2025-11-21T10:00:00Z".into()),
        timeout_unix: Some(1_763_719_200),
        timeout_words: None,
        approvers: vec!["U04APPROVER".into(), "S0APPROVERS".into(), "dana".into()],
        approvals_required: 2,
        approvals: vec!["U04APPROVER".into()],
        require_reason: false,
        rule: Some("Policy: needs 2 of cfo, group:finance because amount > 10000".into()),
        fields: Vec::new(),
        trust: None,
        step_up: true,
    }
}

/// Every gate kind, decision, modal kind, progress event and tool-call
/// outcome the built-in templates distinguish.
pub(super) fn samples() -> Samples {
    let manual = sample_approval(GateKind::ManualGate);
    let mut hitl = sample_approval(GateKind::Hitl);
    hitl.preview = None;
    hitl.preview_cut = 0;
    hitl.timeout_at = None;
    hitl.timeout_unix = None;
    hitl.started_by = "alice".into();
    hitl.rule = None;
    let mut reasoned = sample_approval(GateKind::ManualGate);
    reasoned.require_reason = true;
    let mut form = sample_approval(GateKind::ManualGate);
    form.fields = sample_fields();
    let mut trusting = sample_approval(GateKind::ManualGate);
    trusting.trust = Some("Trust delete_rows for this session".into());
    let mut decided = Vec::new();
    for (decision, by, detail) in [
        ("approve", "U04APPROVER", None),
        ("reject", "U04APPROVER", Some("not on a Friday")),
        ("reject", "alice", None),
        (
            "modify",
            "U04APPROVER",
            Some("roll out behind a canary first"),
        ),
        ("respond", "U04APPROVER", Some("approved")),
        ("defer", "alice", None),
        ("approve", "timeout", None),
        (
            "reject",
            "timeout",
            Some("timed out (fallback_action: cancel)"),
        ),
        ("respond", "timeout", Some("yes")),
    ] {
        decided.push(DecidedView {
            approval: manual.clone(),
            decision: decision.into(),
            by: by.into(),
            at: "2025-11-21T09:30:00Z".into(),
            detail: detail.map(str::to_string),
            on_behalf_of: None,
        });
    }
    let modals =
        [
            ("modify", false),
            ("respond", false),
            ("reject", false),
            ("reject", true),
        ]
        .into_iter()
        .map(|(kind, required)| ModalView {
            kind: kind.into(),
            title: "Review".into(),
            prompt: "*Approve the production deploy?*".into(),
            private_metadata: "{\"session\":\"3f2c9a4e\",\"gate\":\"review#1\"}".into(),
            required,
            initial_value: None,
        })
        .chain(std::iter::once(ModalView {
            kind: "edit".into(),
            title: String::new(),
            prompt: "*`deploy_api`*: POST https://deploy.example.com/v1/rollout".into(),
            private_metadata:
                "{\"channel\":\"C0123\",\"ts\":\"1.2\",\"gate\":\"tools#3\",\"call\":\"call_1\"}"
                    .into(),
            required: true,
            initial_value: Some("{\n  \"path\": \"/v1/rollout\"\n}".into()),
        }))
        .collect();
    let progress = ["step_done", "paused", "completed", "failed", "rejected"]
        .into_iter()
        .map(|event| ProgressView {
            event: event.into(),
            workflow: "deploy-service".into(),
            session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
            text: format!("Step 2 of 3: {event}"),
            output: (event == "completed").then(|| "All done.\nreplicas: 3".to_string()),
        })
        .collect();
    let output = |chunks: Vec<String>, cut: usize| OutputView {
        workflow: "deploy-service".into(),
        gate_id: "review".into(),
        session_id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
        chunks,
        cut,
    };
    let full = vec!["x".repeat(2990); MAX_OUTPUT_CHUNKS];
    Samples {
        approvals: vec![manual, hitl, reasoned, form, trusting],
        decided,
        modals,
        progress,
        tools: sample_tools(),
        outputs: vec![
            output(vec!["diff --git a/deploy.yaml\n+replicas: 3".into()], 0),
            output(full, 12_345),
            output(Vec::new(), 0),
        ],
        forms: vec![FormView {
            title: "Release".into(),
            prompt: "*Approve the production deploy?*".into(),
            private_metadata: "{\"channel\":\"C0123\",\"ts\":\"1.2\",\"gate\":\"review#1\"}".into(),
            fields: sample_fields(),
        }],
    }
}

/// Test helpers shared by the tests of `blocks` and its submodules.
#[cfg(test)]
pub(super) mod fixtures {
    use serde_json::{Map, Value};

    use super::super::Templates;
    use crate::model::{CallState, PendingCall, Session};

    pub fn builtins() -> Templates {
        Templates::load(None).unwrap()
    }

    /// Quotes, backslashes, newlines, markup, mentions, emoji, multi-byte
    /// and control characters, repeated to `n` chars.
    pub fn nasty(n: usize) -> String {
        let unit = "\"q\" \\b\\ \n</script> <!channel> <@U123> & 🦀 é 漢字 👩‍👩‍👧 \t\r{{ x }} ``` ";
        unit.chars().cycle().take(n).collect()
    }

    /// Every string under a mrkdwn text object.
    fn mrkdwn_texts(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if o.get("type").and_then(Value::as_str) == Some("mrkdwn") {
                    if let Some(t) = o.get("text").and_then(Value::as_str) {
                        out.push(t.to_string());
                    }
                }
                o.values().for_each(|v| mrkdwn_texts(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| mrkdwn_texts(v, out)),
            _ => {}
        }
    }

    pub fn assert_escaped(blocks: &Value) {
        let mut texts = Vec::new();
        mrkdwn_texts(blocks, &mut texts);
        assert!(!texts.is_empty());
        for t in texts {
            for bad in ["<!channel>", "<@U123>", "</script>"] {
                assert!(!t.contains(bad), "unescaped {bad} in mrkdwn: {t:.200}");
            }
        }
    }

    pub fn block_of<'a>(blocks: &'a [Value], ty: &str) -> &'a Value {
        blocks
            .iter()
            .find(|b| b["type"] == ty)
            .unwrap_or_else(|| panic!("no {ty} block in {blocks:#?}"))
    }

    pub fn header_text(blocks: &[Value]) -> String {
        block_of(blocks, "header")["text"]["text"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn tool_call(i: usize, name: &str, args: Value, trustable: bool) -> PendingCall {
        use crate::tools::Risk;
        PendingCall {
            call: crate::provider::ToolCall {
                id: format!("call_{i}"),
                name: name.to_string(),
                arguments: args.clone(),
            },
            digest: crate::tools::digest(name, &args),
            request: Some(crate::model::ApprovalRequest {
                prompt: format!("Approve `{name}` number {i}?"),
                description: format!("POST https://api.example.com/{i} via {name}"),
                reversible: i.is_multiple_of(2),
                risk: Risk::High,
                trustable,
            }),
            state: CallState::Waiting,
            grant: None,
        }
    }

    /// A session paused at tool-call gate `tools#3` with these calls.
    pub fn tool_session(calls: Vec<PendingCall>) -> Session {
        let now = crate::clock::test_epoch();
        Session {
            id: "3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f".into(),
            workflow: "deploy".into(),
            spec_path: "deploy.yaml".into(),
            spec_hash: String::new(),
            spec_snapshot: String::new(),
            pattern: "chain".into(),
            status: crate::model::Status::Paused,
            created_at: now,
            updated_at: now,
            started_by: "U01REQUESTER".into(),
            variables: Map::new(),
            state: crate::model::PatternState::Chain {
                next: 0,
                steps: vec![None],
            },
            format: crate::model::SESSION_FORMAT,
            gates: Default::default(),
            pending: None,
            human_feedback: None,
            hitl_response: None,
            history: Vec::new(),
            gates_opened: 3,
            usage: Default::default(),
            output: None,
            artifacts: Vec::new(),
            out_dir: ".".into(),
            overwrite_artifacts: false,
            work_dir: None,
            failure: None,
            origin: None,
            agent_turn: Some(crate::model::AgentTurn {
                position: crate::model::Position::Step(0),
                agent: "deployer".into(),
                system: "You deploy.".into(),
                messages: Vec::new(),
                turns: 1,
                calls,
            }),
            trusted_tools: Default::default(),
            denied_calls: Default::default(),
            audit: Vec::new(),
            arm: Vec::new(),
            events: Vec::new(),
            triggers_fired: Default::default(),
            final_approved: false,
            in_flight: Default::default(),
            cancel: None,
            trace: None,
            rev: 1,
        }
    }
}
