//! The templates' tests: every built-in renders every sample within Block
//! Kit's limits, overrides and their errors, adversarial text.
use super::limits::chars;
use super::samples::fixtures::*;
use super::samples::sample_approval;
use super::*;
use crate::model::OpenGate;
use crate::spec::GateKind;
use serde_json::json;
use slack_morphism::prelude::{SlackBlock, SlackView};

fn adversarial_gate(kind: GateKind) -> OpenGate {
    OpenGate {
        reminded_at: None,
        id: nasty(500),
        instance: 7,
        order: 7,
        kind,
        position: crate::model::Position::Task(nasty(500)),
        prompt: nasty(5_000),
        context: nasty(100_000),
        show_preview: true,
        preview_length: 200_000,
        default: None,
        fallback: crate::spec::Fallback::Cancel,
        opened_at: crate::clock::test_epoch(),
        timeout_at: Some(crate::clock::test_epoch() + chrono::Duration::seconds(60)),
        require_reason: false,
        channel: None,
        approvers: Vec::new(),
        approvals_required: 1,
        allow_self_approval: None,
        approvals: Vec::new(),
        rejections_required: 1,
        rejections: Vec::new(),
        notify_dm: false,
        notify_email: false,
        trigger: None,
        rule: None,
        hours: None,
        form: None,
        allow_trust: false,
        allow_edit: false,
        step_up: None,
    }
}

fn adversarial_approval(kind: GateKind) -> ApprovalView {
    let gate = adversarial_gate(kind);
    ApprovalView::from_gate(&gate, &nasty(500), &nasty(300), &nasty(300))
}

// ---- normal views

#[test]
fn every_builtin_renders_every_sample() {
    let t = builtins();
    let s = samples();
    for v in &s.approvals {
        let blocks = t.approval(v).unwrap();
        assert_eq!(
            header_text(&blocks),
            "Approval needed: deploy-service / review"
        );
    }
    for v in &s.decided {
        let blocks = t.decided(v).unwrap();
        assert!(blocks.iter().all(|b| b["type"] != "actions"));
    }
    for v in &s.modals {
        let view = t.modal(v).unwrap();
        assert_eq!(view["callback_id"], format!("strands_{}", v.kind));
    }
    for v in &s.progress {
        t.progress(v).unwrap();
    }
    assert_eq!(t.origin(APPROVAL), "built-in approval.json.j2");
}

fn action_ids(blocks: &[Value]) -> Vec<String> {
    block_of(blocks, "actions")["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_business_deadline_is_shown_in_the_calendars_words() {
    let t = builtins();
    let (hours, _, mon) = crate::gate::calendar::office_for_tests();
    let mut g = crate::model::OpenGate::for_tests("review");
    g.hours = Some(hours);
    g.timeout_at = Some(mon);
    let v = ApprovalView::from_gate(&g, "deploy", "s1", "U0STARTER");
    let text = serde_json::to_string(&t.approval(&v).unwrap()).unwrap();
    assert!(
        text.contains("⏱ Times out Mon 30 Nov 09:30 CET (business hours of calendar"),
        "{text}"
    );
    assert!(!text.contains("<!date^"), "{text}");
}

#[test]
fn approval_buttons_carry_the_handle() {
    let t = builtins();
    let blocks = t.approval(&sample_approval(GateKind::ManualGate)).unwrap();
    let actions = block_of(&blocks, "actions");
    assert_eq!(actions["block_id"], "gate:review#1");
    let els = actions["elements"].as_array().unwrap();
    // The preview was cut: "View full output" is offered.
    assert_eq!(
        action_ids(&blocks),
        [
            "strands_approve",
            "strands_reject",
            "strands_reject_reason",
            "strands_modify",
            "strands_view_full"
        ]
    );
    assert!(els
        .iter()
        .all(|e| e["value"] == "review#1" && e["type"] == "button"));
    assert_eq!(els[0]["style"], "primary");
    assert_eq!(els[1]["style"], "danger");
    assert!(els[2].get("style").is_none() && els[2].get("confirm").is_none());
    assert!(els[3].get("style").is_none());
    assert_eq!(els[4]["text"]["text"], "View full output");
    let confirm = &els[1]["confirm"];
    for key in ["title", "text", "confirm", "deny"] {
        assert!(
            confirm[key]["text"].as_str().is_some_and(|s| !s.is_empty()),
            "{key}"
        );
    }
    assert!(els[0].get("confirm").is_none());
    // The rest of the message.
    let sections: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "section")
        .map(|b| b["text"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(sections[0], "*Approve the production deploy?*");
    assert!(
        sections[1].starts_with("```\ndiff --git"),
        "{}",
        sections[1]
    );
    let all = serde_json::to_string(&blocks).unwrap();
    assert!(all.contains("120 more characters"), "{all}");
    assert!(all.contains("strands sessions show 3f2c9a4e-1b7d-4c1e-9f00-5a6b7c8d9e0f"));
    assert!(all.contains("Started by <@U04APPROVER>"));
    assert!(all.contains("<!date^1763719200^{date_short_pretty} at {time}|2025-11-21T10:00:00Z>"));
}

#[test]
fn hitl_gates_get_respond_instead_of_modify() {
    let t = builtins();
    let blocks = t.approval(&sample_approval(GateKind::Hitl)).unwrap();
    let els = block_of(&blocks, "actions")["elements"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        action_ids(&blocks),
        [
            "strands_approve",
            "strands_reject",
            "strands_reject_reason",
            "strands_respond",
            "strands_view_full"
        ]
    );
    assert_eq!(els[3]["value"], "review#1");
}

#[test]
fn a_required_reason_makes_reject_open_the_form_without_a_confirm() {
    let t = builtins();
    let mut v = sample_approval(GateKind::ManualGate);
    v.require_reason = true;
    v.preview_cut = 0;
    let blocks = t.approval(&v).unwrap();
    assert_eq!(
        action_ids(&blocks),
        ["strands_approve", "strands_reject", "strands_modify"]
    );
    let reject = &block_of(&blocks, "actions")["elements"][1];
    assert!(reject.get("confirm").is_none(), "{reject}");
    // The approval rule that decided who answers is on the card.
    assert!(
        serde_json::to_string(&blocks)
            .unwrap()
            .contains("📋 Policy: needs 2 of cfo, group:finance because amount &gt; 10000"),
        "{blocks:?}"
    );
    assert_eq!(reject["text"]["text"], "Reject…");
    // Uncut previews offer nothing more to read.
    let all = serde_json::to_string(&blocks).unwrap();
    assert!(!all.contains("Preview cut"), "{all}");
}

#[test]
fn the_full_output_modal_holds_every_piece_within_limits() {
    let t = builtins();
    for v in &samples().outputs {
        let view = t.output(v).unwrap();
        assert_eq!(view["callback_id"], "strands_view_full");
        assert!(view.get("submit").is_none(), "read-only");
        let text = serde_json::to_string(&view).unwrap();
        for c in &v.chunks {
            assert!(text.contains(&c[..20.min(c.len())]));
        }
        assert_eq!(v.cut > 0, text.contains("more characters not shown here"));
    }
    // From a gate: hostile text, cut into pieces that fit, nothing lost
    // below the piece limit.
    let gate = OpenGate {
        context: nasty(20_000),
        ..adversarial_gate(GateKind::ManualGate)
    };
    let v = OutputView::from_gate(&gate, "wf", "s1");
    assert_eq!(v.cut, 0);
    assert_eq!(v.chunks.concat(), gate.context);
    let view = t.output(&v).unwrap();
    assert_escaped(&view);
    let typed: SlackView = serde_json::from_value(view).unwrap();
    assert!(matches!(typed, SlackView::Modal(_)));
    let huge = OpenGate {
        context: "y".repeat(200_000),
        ..adversarial_gate(GateKind::ManualGate)
    };
    let v = OutputView::from_gate(&huge, "wf", "s1");
    assert_eq!(v.chunks.len(), MAX_OUTPUT_CHUNKS);
    assert_eq!(v.cut + v.chunks.concat().len(), 200_000);
    check_modal(&t.output(&v).unwrap()).unwrap();
}

#[test]
fn decided_says_who_did_what() {
    let t = builtins();
    let s = samples();
    let outcome = |i: usize| {
        let blocks = t.decided(&s.decided[i]).unwrap();
        blocks.last().unwrap()["text"]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        outcome(0),
        "✅ Approved by <@U04APPROVER> at 2025-11-21T09:30:00Z"
    );
    assert_eq!(
        outcome(1),
        "❌ Rejected by <@U04APPROVER> at 2025-11-21T09:30:00Z: not on a Friday"
    );
    assert_eq!(outcome(2), "❌ Rejected by alice at 2025-11-21T09:30:00Z");
    assert!(outcome(3).starts_with("✏️ Modify requested by <@U04APPROVER>"));
    assert!(outcome(4).starts_with("💬 Responded by <@U04APPROVER>"));
    assert!(
        outcome(6).starts_with("⏱ Timed out → continued"),
        "{}",
        outcome(6)
    );
    assert!(outcome(7).starts_with("⏱ Timed out → rejected: timed out"));
    // A delegate's answer says for whom; the name is escaped text.
    let mut by_delegate = s.decided[0].clone();
    by_delegate.on_behalf_of = Some("alice".into());
    let blocks = t.decided(&by_delegate).unwrap();
    assert_eq!(
        blocks.last().unwrap()["text"]["text"],
        "✅ Approved by <@U04APPROVER> for alice at 2025-11-21T09:30:00Z"
    );
    by_delegate.on_behalf_of = Some("<!here>".into());
    let blocks = t.decided(&by_delegate).unwrap();
    let text = blocks.last().unwrap()["text"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!text.contains("<!here>"), "{text}");
}

#[test]
fn modal_fields_depend_on_kind() {
    let t = builtins();
    let s = samples();
    let input = |v: &ModalView| {
        t.modal(v).unwrap()["blocks"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    for v in &s.modals {
        let view = t.modal(v).unwrap();
        assert_eq!(view["type"], "modal");
        assert_eq!(view["private_metadata"], v.private_metadata);
        let inp = input(v);
        assert_eq!(inp["block_id"], "feedback");
        assert_eq!(inp["element"]["action_id"], "text");
        assert_eq!(inp["element"]["type"], "plain_text_input");
        assert_eq!(inp["element"]["multiline"], true);
        let optional = v.kind == "reject" && !v.required;
        assert_eq!(inp["optional"], optional, "{}", v.kind);
    }
    let mut untitled = s.modals[0].clone();
    untitled.title = " ".into();
    assert_eq!(
        t.modal(&untitled).unwrap()["title"]["text"],
        "Request changes"
    );
}

// ---- adversarial views

#[test]
fn adversarial_approvals_stay_valid_and_escaped() {
    let t = builtins();
    for kind in [GateKind::ManualGate, GateKind::Hitl] {
        let v = adversarial_approval(kind);
        assert!(v.preview_cut > 90_000, "{}", v.preview_cut);
        let blocks = t.approval(&v).unwrap();
        check_message(&blocks).unwrap();
        assert_escaped(&Value::Array(blocks.clone()));
        let header = header_text(&blocks);
        assert!(chars(&header) <= 150 && header.starts_with("Approval needed: "));
        let els = block_of(&blocks, "actions")["elements"]
            .as_array()
            .unwrap()
            .clone();
        assert!(
            els.iter().all(|e| e["value"] == v.handle),
            "handles are never cut"
        );
        let bid = block_of(&blocks, "actions")["block_id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(chars(&bid), 255);
        assert!(bid.ends_with('…'));
        // The rendered JSON round-trips into slack-morphism's types.
        let typed: Vec<SlackBlock> = serde_json::from_value(Value::Array(blocks.clone())).unwrap();
        assert_eq!(typed.len(), blocks.len());
        // The preview section is exactly at, not over, the section limit.
        let preview = blocks
            .iter()
            .filter_map(|b| b["text"]["text"].as_str())
            .find(|s| s.starts_with("```"))
            .unwrap();
        assert!(chars(preview) <= SECTION_TEXT_MAX);
    }
}

#[test]
fn adversarial_decided_modal_and_progress_stay_valid() {
    let t = builtins();
    for decision in ["approve", "reject", "modify", "respond", &nasty(300)] {
        for by in ["U04APPROVER", "timeout", &nasty(300)] {
            let v = DecidedView {
                approval: adversarial_approval(GateKind::ManualGate),
                decision: decision.to_string(),
                by: by.to_string(),
                at: nasty(100),
                detail: Some(nasty(10_000)),
                on_behalf_of: None,
            };
            let blocks = t.decided(&v).unwrap();
            assert_escaped(&Value::Array(blocks));
        }
    }
    for kind in ["modify", "respond", "reject", "edit", &nasty(50)] {
        let v = ModalView {
            kind: kind.to_string(),
            title: nasty(500),
            prompt: nasty(5_000),
            private_metadata: nasty(3_000),
            required: false,
            initial_value: Some(nasty(INITIAL_VALUE_MAX)),
        };
        let view = t.modal(&v).unwrap();
        assert_escaped(&view);
        assert_eq!(
            view["private_metadata"].as_str().unwrap(),
            v.private_metadata
        );
        let typed: SlackView = serde_json::from_value(view).unwrap();
        assert!(matches!(typed, SlackView::Modal(_)));
    }
    for event in [
        "step_done",
        "paused",
        "completed",
        "failed",
        "rejected",
        &nasty(40),
    ] {
        let (output, _) = cut_for_section(&nasty(100_000), CODE_BLOCK_MAX);
        let v = ProgressView {
            event: event.to_string(),
            workflow: nasty(500),
            session_id: nasty(500),
            text: nasty(5_000),
            output: Some(output),
        };
        let blocks = t.progress(&v).unwrap();
        assert_escaped(&Value::Array(blocks));
        // Uncut output is cut by the template, still within limits.
        let v = ProgressView {
            output: Some(nasty(100_000)),
            ..v
        };
        t.progress(&v).unwrap();
    }
}

#[test]
fn empty_strings_never_make_empty_text() {
    let t = builtins();
    let v = ApprovalView {
        workflow: String::new(),
        gate_id: String::new(),
        handle: "#1".into(),
        kind: String::new(),
        position: String::new(),
        prompt: "  ".into(),
        preview: Some(String::new()),
        preview_cut: 0,
        started_by: String::new(),
        session_id: String::new(),
        timeout_at: None,
        timeout_unix: None,
        timeout_words: None,
        approvers: vec![String::new()],
        approvals_required: 3,
        approvals: vec![String::new()],
        require_reason: false,
        rule: Some(String::new()),
        fields: Vec::new(),
        trust: None,
        step_up: false,
    };
    t.approval(&v).unwrap();
    let d = DecidedView {
        approval: v,
        decision: String::new(),
        by: String::new(),
        at: String::new(),
        detail: Some(String::new()),
        on_behalf_of: None,
    };
    t.decided(&d).unwrap();
    t.modal(&ModalView {
        kind: String::new(),
        title: String::new(),
        prompt: String::new(),
        private_metadata: String::new(),
        required: true,
        initial_value: Some(String::new()),
    })
    .unwrap();
    t.progress(&ProgressView {
        event: String::new(),
        workflow: String::new(),
        session_id: String::new(),
        text: String::new(),
        output: Some(String::new()),
    })
    .unwrap();
}

#[test]
fn an_over_long_handle_is_an_error_not_a_broken_button() {
    let t = builtins();
    let mut v = sample_approval(GateKind::ManualGate);
    v.handle = "x".repeat(2_001);
    let e = t.approval(&v).unwrap_err().to_string();
    assert!(
        e.contains("built-in approval.json.j2") && e.contains("button value"),
        "{e}"
    );
}

// ---- tool-call approvals: the edit modal and an override (the views: views.rs)

#[test]
fn the_edit_modal_is_prefilled() {
    let t = builtins();
    let v = samples()
        .modals
        .into_iter()
        .find(|m| m.kind == "edit")
        .unwrap();
    let view = t.modal(&v).unwrap();
    assert_eq!(view["callback_id"], "strands_edit");
    assert_eq!(view["submit"]["text"], "Approve");
    let input = view["blocks"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(input["block_id"], "feedback");
    assert_eq!(input["optional"], false);
    assert_eq!(
        input["element"]["initial_value"],
        "{\n  \"path\": \"/v1/rollout\"\n}"
    );
    let mut long = v.clone();
    long.initial_value = Some("x".repeat(INITIAL_VALUE_MAX + 1));
    assert!(t
        .modal(&long)
        .unwrap_err()
        .to_string()
        .contains("initial_value"));
}

#[test]
fn the_tool_approval_template_can_be_overridden() {
    let minimal = r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ ("TOOLS " ~ agent)|mrkdwn(100)|tojson }}}}]"#;
    let dir = dir_with(TOOL_APPROVAL, minimal);
    let t = Templates::load(Some(dir.path())).unwrap();
    let v = ToolApprovalView::from_session(
        &tool_session(vec![tool_call(1, "deploy_api", json!({}), true)]),
        "tools#3",
    )
    .unwrap();
    assert_eq!(
        t.tool_approval(&v).unwrap()[0]["text"]["text"],
        "TOOLS deployer"
    );
    assert_eq!(t.origin(APPROVAL), "built-in approval.json.j2");
    let e = load_error(
        TOOL_APPROVAL,
        r#"[{"type": "header", "text": {"type": "plain_text", "text": {{ ("x" * 200)|tojson }}}}]"#,
    );
    assert!(e.contains("header text ≤ 150"), "{e}");
}

// ---- overrides

fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    dir
}

const MINIMAL_APPROVAL: &str = r#"[
  {"type": "header", "text": {"type": "plain_text", "text": {{ ("OVERRIDE " ~ workflow)|truncate_chars(150)|tojson }}}},
  {"type": "actions", "block_id": "gate", "elements": [
    {"type": "button", "action_id": "strands_approve", "text": {"type": "plain_text", "text": "OK"}, "value": {{ handle|tojson }}}
  ]}
]"#;

#[test]
fn an_override_replaces_only_its_builtin() {
    let dir = dir_with(APPROVAL, MINIMAL_APPROVAL);
    std::fs::write(dir.path().join("README.j2"), "ignored, with a warning").unwrap();
    let t = Templates::load(Some(dir.path())).unwrap();
    let blocks = t.approval(&sample_approval(GateKind::ManualGate)).unwrap();
    assert_eq!(header_text(&blocks), "OVERRIDE deploy-service");
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        t.origin(APPROVAL),
        dir.path().join(APPROVAL).display().to_string()
    );
    // The others are still the built-ins.
    assert_eq!(t.origin(DECIDED), "built-in decided.json.j2");
    let d = t.decided(&samples().decided[0]).unwrap();
    assert!(header_text(&d).starts_with("Approval needed"));
}

fn load_error(name: &str, text: &str) -> String {
    let dir = dir_with(name, text);
    let e = Templates::load(Some(dir.path())).unwrap_err().to_string();
    let path = dir.path().join(name).display().to_string();
    assert!(e.contains(&path), "error does not name {path}: {e}");
    e
}

#[test]
fn a_syntax_error_names_the_file_and_line() {
    let e = load_error(PROGRESS, "[\n  {{ oops( }}\n]");
    assert!(e.contains("progress.json.j2:2"), "{e}");
}

#[test]
fn invalid_json_names_the_file() {
    let e = load_error(
        APPROVAL,
        r#"[{"type": "header", "text": {"type": "plain_text", "text": "x"}},]"#,
    );
    assert!(e.contains("did not render valid JSON"), "{e}");
    let e = load_error(MODAL, r#"[]"#);
    assert!(e.contains("view"), "{e}");
    let e = load_error(PROGRESS, r#"{"blocks": []}"#);
    assert!(e.contains("not an array of blocks"), "{e}");
}

#[test]
fn a_broken_limit_names_the_file_and_the_limit() {
    let long = "x".repeat(151);
    let e = load_error(
        PROGRESS,
        &format!(r#"[{{"type": "header", "text": {{"type": "plain_text", "text": "{long}"}}}}]"#),
    );
    assert!(
        e.contains("block 0 (header)") && e.contains("header text ≤ 150"),
        "{e}"
    );
}

#[test]
fn a_limit_broken_only_by_some_input_fails_at_render_naming_the_file() {
    let unsafe_prompt =
        r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ prompt|tojson }}}}]"#;
    let dir = dir_with(APPROVAL, unsafe_prompt);
    let t = Templates::load(Some(dir.path())).unwrap();
    let mut v = sample_approval(GateKind::ManualGate);
    v.prompt = "p".repeat(5_000);
    let e = t.approval(&v).unwrap_err();
    assert!(matches!(e, Error::Runtime(_)));
    let e = e.to_string();
    assert!(
        e.contains(&dir.path().join(APPROVAL).display().to_string()),
        "{e}"
    );
    assert!(e.contains("section text ≤ 3000"), "{e}");
}

#[test]
fn values_printed_without_tojson_are_still_json_escaped() {
    let sloppy =
        r#"[{"type": "section", "text": {"type": "mrkdwn", "text": {{ prompt|mrkdwn(3000) }}}}]"#;
    let dir = dir_with(APPROVAL, sloppy);
    let t = Templates::load(Some(dir.path())).unwrap();
    let mut v = sample_approval(GateKind::ManualGate);
    v.prompt = "say \"hi\"\n<!channel>".into();
    let blocks = t.approval(&v).unwrap();
    assert_eq!(blocks[0]["text"]["text"], "say \"hi\"\n&lt;!channel&gt;");
}

#[test]
fn blocks_slack_morphism_cannot_read_are_refused() {
    let e = load_error(
        PROGRESS,
        r#"[{"type": "sektion", "text": {"type": "mrkdwn", "text": "x"}}]"#,
    );
    assert!(e.contains("slack-morphism"), "{e}");
    // A known type with a body of the wrong shape lands in slack-morphism's
    // `Unknown`, which is refused too.
    let e = load_error(
        PROGRESS,
        r#"[{"type": "divider", "block_id": "d"}, {"type": "image", "alt_text": "x", "image_url": "not a url"}]"#,
    );
    assert!(
        e.contains("block 1 (image)") && e.contains("slack-morphism"),
        "{e}"
    );
}

#[test]
fn runaway_templates_run_out_of_fuel() {
    let e = load_error(
        PROGRESS,
        "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}[]",
    );
    assert!(e.to_lowercase().contains("fuel"), "{e}");
}

#[test]
fn a_missing_directory_or_unreadable_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = Templates::load(Some(&missing)).unwrap_err().to_string();
    assert!(e.contains(&missing.display().to_string()), "{e}");
    std::fs::create_dir(dir.path().join(APPROVAL)).unwrap();
    let e = Templates::load(Some(dir.path())).unwrap_err().to_string();
    assert!(
        e.contains(&dir.path().join(APPROVAL).display().to_string()),
        "{e}"
    );
}

#[test]
fn a_form_is_listed_on_the_message_and_filled_in_a_modal_of_typed_inputs() {
    let t = builtins();
    let mut v = sample_approval(GateKind::ManualGate);
    v.fields = super::samples::sample_fields();
    v.trust = Some("Trust delete_rows for this session".into());
    let blocks = t.approval(&v).unwrap();
    let all = serde_json::to_string(&blocks).unwrap();
    assert!(
        all.contains("Approving fills in: Version, mail, replicas, ratio, Tell the channel"),
        "{all}"
    );
    let actions = block_of(&blocks, "actions");
    let buttons = actions["elements"].as_array().unwrap();
    assert_eq!(buttons[0]["text"]["text"], "Approve…");
    let trust = buttons
        .iter()
        .find(|b| b["action_id"] == "strands_trust")
        .expect("a Trust button");
    assert_eq!(trust["value"], "review#1");
    assert_eq!(trust["text"]["text"], "Trust delete_rows for this session");

    let modal = t
        .form(&FormView {
            title: String::new(),
            prompt: "Ship?".into(),
            private_metadata: "m".into(),
            fields: super::samples::sample_fields(),
        })
        .unwrap();
    assert_eq!(modal["callback_id"], "strands_fill");
    let inputs: Vec<&Value> = modal["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "input")
        .collect();
    let by = |name: &str| {
        *inputs
            .iter()
            .find(|b| b["block_id"] == format!("field:{name}"))
            .unwrap_or_else(|| panic!("no input for {name}: {modal:#}"))
    };
    let version = by("version");
    assert_eq!(version["element"]["type"], "plain_text_input");
    assert_eq!(version["element"]["action_id"], "value");
    assert_eq!(version["element"]["initial_value"], "1.2");
    assert_eq!(version["element"]["max_length"], 20);
    assert_eq!(version["optional"], false);
    assert!(version["hint"]["text"]
        .as_str()
        .unwrap()
        .contains("As tagged"));
    let replicas = by("replicas");
    assert_eq!(replicas["element"]["type"], "number_input");
    assert_eq!(replicas["element"]["is_decimal_allowed"], false);
    assert_eq!(replicas["element"]["min_value"], "1");
    assert_eq!(replicas["element"]["initial_value"], "3");
    assert_eq!(by("ratio")["element"]["is_decimal_allowed"], true);
    assert_eq!(by("ratio")["optional"], true);
    let notify = by("notify");
    assert_eq!(notify["element"]["type"], "static_select");
    assert_eq!(notify["element"]["initial_option"]["value"], "true");
    assert!(by("force")["element"].get("initial_option").is_none());
    let env = by("env");
    assert_eq!(env["element"]["options"][0]["text"]["text"], "Production");
    assert_eq!(env["element"]["initial_option"]["value"], "staging");
    assert_eq!(by("size")["element"]["options"][1]["text"]["text"], "l");
    // slack-morphism reads it as a modal (the render checks it too).
    serde_json::from_value::<SlackView>(modal.clone()).expect("a Slack view");
}
