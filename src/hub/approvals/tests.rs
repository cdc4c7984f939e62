//! Approval requests as specs: what is refused (naming the field), and
//! where a request's gate sends it.

use super::*;

fn req() -> ApprovalRequest {
    ApprovalRequest {
        title: "Deploy v1.2?".into(),
        approvers: vec!["alice".into()],
        ..Default::default()
    }
}

#[test]
fn the_spec_validates_and_refusals_name_the_field() {
    let limits = crate::spec::Limits::default();
    let text =
        spec_text(&req(), limits.max_timeout_secs, |_| false, &BTreeMap::new()).expect("spec");
    crate::spec::parse(&text, Path::new(SPEC_PATH), &limits).expect("valid");
    let field = |r: ApprovalRequest| {
        spec_text(
            &r,
            limits.max_timeout_secs,
            |g| g == "sre",
            &BTreeMap::new(),
        )
        .expect_err("refused")
        .field
    };
    assert_eq!(
        field(ApprovalRequest {
            approvers: vec![],
            ..req()
        }),
        "approvers"
    );
    let unknown = ApprovalRequest {
        approvers: vec!["group:nope".into()],
        ..req()
    };
    assert_eq!(field(unknown), "approvers");
    let long = ApprovalRequest {
        timeout_minutes: Some(60 * 24 * 365),
        ..req()
    };
    assert_eq!(field(long), "timeout_minutes");
    let big = ApprovalRequest {
        body: "x".repeat(MAX_BODY_BYTES + 1),
        ..req()
    };
    assert_eq!(field(big), "body");
    let sre = ApprovalRequest {
        approvers: vec!["group:sre".into()],
        ..req()
    };
    assert!(spec_text(
        &sre,
        limits.max_timeout_secs,
        |g| g == "sre",
        &BTreeMap::new()
    )
    .is_ok());
}

#[test]
fn escalation_and_teams_go_where_a_gate_would_send_them() {
    let limits = crate::spec::Limits::default();
    let r = ApprovalRequest {
        escalation_minutes: Some(30.0),
        escalate_to: vec!["U0ONCALL1".into()],
        notify: vec![
            "teams:19:abc@thread.tacv2".into(),
            "slack:#C0DEPLOYS".into(),
        ],
        ..req()
    };
    let p = prepare(
        &r,
        "ci",
        &limits,
        &crate::engine::specs::SpecCache::new(limits.clone()),
        &crate::model::person::Directory::default(),
        &BTreeMap::new(),
    )
    .map_err(|e| e.to_string())
    .expect("prepared");
    let origin = p.start.origin.expect("a Teams origin");
    assert_eq!(origin.approval_channel, "teams:19:abc@thread.tacv2");
    let text = spec_text(&r, limits.max_timeout_secs, |_| false, &BTreeMap::new()).expect("spec");
    assert!(
        text.contains("escalation_timeout") && text.contains("U0ONCALL1"),
        "{text}"
    );
    assert!(text.contains("C0DEPLOYS"), "{text}");
    let bad = ApprovalRequest {
        notify: vec!["teams:nope".into()],
        ..req()
    };
    assert_eq!(
        spec_text(&bad, limits.max_timeout_secs, |_| false, &BTreeMap::new())
            .expect_err("refused")
            .field,
        "notify"
    );
}

#[test]
fn a_named_policy_brings_its_rules_and_is_not_mixed_with_approvers() {
    let limits = crate::spec::Limits::default();
    let policy: Policy = serde_json::from_value(json!([
        {"when": "{{ details.amount > 10000 }}", "approvers": ["cfo", "group:finance"], "quorum": 2},
        {"approvers": ["group:finance"]},
    ]))
    .expect("policy");
    let policies = BTreeMap::from([("payments".to_string(), policy)]);
    let r = ApprovalRequest {
        approvers: vec![],
        policy: Some("payments".into()),
        details: BTreeMap::from([("amount".to_string(), "20000".to_string())]),
        ..req()
    };
    let text = spec_text(&r, limits.max_timeout_secs, |_| false, &policies).expect("spec");
    let spec = crate::spec::parse(&text, Path::new(SPEC_PATH), &limits).expect("valid");
    let gate = spec.gates()[0].clone();
    assert_eq!(gate.rules.len(), 2);
    assert_eq!(gate.rules[0].quorum, Some(2));
    let field = |r: ApprovalRequest| {
        spec_text(&r, limits.max_timeout_secs, |_| false, &policies).expect_err("refused")
    };
    let e = field(ApprovalRequest {
        policy: Some("refunds".into()),
        ..r.clone()
    });
    assert_eq!(e.field, "policy");
    assert!(
        e.message.contains("no policy `refunds`") && e.message.contains("payments"),
        "{e}"
    );
    assert_eq!(
        field(ApprovalRequest {
            approvers: vec!["bob".into()],
            ..r.clone()
        })
        .field,
        "approvers"
    );
    assert_eq!(
        field(ApprovalRequest {
            quorum: Some(1),
            ..r.clone()
        })
        .field,
        "quorum"
    );
}

#[test]
fn the_same_key_gives_the_same_id() {
    assert_eq!(keyed_id("ci", "run-1"), keyed_id("ci", "run-1"));
    assert_ne!(keyed_id("ci", "run-1"), keyed_id("bob", "run-1"));
    assert_eq!(keyed_id("ci", "run-1").len(), 36);
}

#[test]
fn a_form_and_trust_reach_the_gate_or_are_refused_naming_the_field() {
    let limits = crate::spec::Limits::default();
    let spec_of =
        |r: &ApprovalRequest| spec_text(r, limits.max_timeout_secs, |_| false, &BTreeMap::new());
    let form: FormSchema = serde_json::from_str(
        r#"{"type": "object", "properties": {
            "zone": {"type": "string", "enum": ["eu", "us"]},
            "replicas": {"type": "integer", "minimum": 1, "default": 2}
        }, "required": ["zone"]}"#,
    )
    .expect("a schema");
    let r = ApprovalRequest {
        form: Some(form.clone()),
        ..req()
    };
    let text = spec_of(&r).expect("spec");
    let spec = crate::spec::parse(&text, Path::new(SPEC_PATH), &limits).expect("valid");
    let gate = spec.gates()[0].clone();
    let names: Vec<String> = gate
        .form
        .expect("the gate's form")
        .fields()
        .iter()
        .map(|f| f.name.clone())
        .collect();
    assert_eq!(names, ["zone", "replicas"], "in the order sent");
    let field = |r: ApprovalRequest| spec_of(&r).expect_err("refused").field;
    let bad: FormSchema =
        serde_json::from_str(r#"{"properties": {"x": {"type": "object"}}}"#).unwrap();
    assert_eq!(
        field(ApprovalRequest {
            form: Some(bad),
            ..req()
        }),
        "form"
    );
    let not_a_schema: FormSchema = serde_json::from_str(r#""a string""#).unwrap();
    assert_eq!(
        field(ApprovalRequest {
            form: Some(not_a_schema),
            ..req()
        }),
        "form"
    );
    assert_eq!(
        field(ApprovalRequest {
            form: Some(form.clone()),
            timeout_minutes: Some(5),
            on_timeout: OnTimeout::Approve,
            ..req()
        }),
        "on_timeout"
    );
    assert_eq!(
        field(ApprovalRequest {
            trust: true,
            ..req()
        }),
        "trust"
    );
    let action = Some(Action {
        tool: "rm".into(),
        arguments: json!({"path": "/tmp/x"}),
    });
    assert_eq!(
        field(ApprovalRequest {
            trust: true,
            action: action.clone(),
            form: Some(form),
            ..req()
        }),
        "trust"
    );
    let trusting = ApprovalRequest {
        trust: true,
        action,
        ..req()
    };
    let text = spec_of(&trusting).expect("spec");
    let spec = crate::spec::parse(&text, Path::new(SPEC_PATH), &limits).expect("valid");
    assert!(spec.gates()[0].allow_trust);
}

#[test]
fn requests_of_one_shape_share_one_spec_and_keep_their_own_values() {
    let limits = crate::spec::Limits::default();
    let specs = crate::engine::specs::SpecCache::new(limits.clone());
    let directory = crate::model::person::Directory::default();
    let first = ApprovalRequest {
        body: "Ship it to prod.".into(),
        details: [("amount".to_string(), "120".to_string())].into(),
        labels: [("team".to_string(), "pay".to_string())].into(),
        ..req()
    };
    let second = ApprovalRequest {
        title: "Refund order 42?".into(),
        body: "A customer asked.".into(),
        details: [("amount".to_string(), "9000".to_string())].into(),
        ..req()
    };
    let prepared = |r: &ApprovalRequest| {
        prepare(r, "bot", &limits, &specs, &directory, &BTreeMap::new()).expect("valid")
    };
    let (a, b) = (prepared(&first), prepared(&second));
    assert!(
        std::sync::Arc::ptr_eq(&a.spec, &b.spec),
        "one spec, parsed once"
    );
    assert!(
        !a.spec.text.contains("Deploy v1.2?"),
        "no request's text in it"
    );
    let var = |p: &Prepared, k: &str| p.start.variables.get(k).cloned();
    assert_eq!(var(&a, "title"), Some(json!("Deploy v1.2?")));
    assert_eq!(var(&b, "title"), Some(json!("Refund order 42?")));
    assert_eq!(var(&b, "details"), Some(json!({"amount": "9000"})));
    assert!(var(&a, "body")
        .and_then(|v| v.as_str().map(|s| s.contains("**amount**: 120")))
        .unwrap_or(false));
    assert_eq!(var(&a, "labels"), Some(json!("{\"team\":\"pay\"}")));
    // Another shape (a quorum) is another spec.
    let two = ApprovalRequest {
        approvers: vec!["alice".into(), "bob".into()],
        quorum: Some(2),
        ..req()
    };
    assert!(!std::sync::Arc::ptr_eq(&a.spec, &prepared(&two).spec));
}
