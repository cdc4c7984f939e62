//! A session paused at a manual gate, for the tests of every layer above
//! the gate (the store's, the hub's, the doors'): one way to make one.

use crate::model::{PatternState, Position, Session, Status};
use crate::spec::{Fallback, GateKind, GateSpec};

/// Session `id` of workflow `wf`, paused at its manual gate `review#1`.
pub(crate) fn paused_session(id: &str) -> Session {
    let now = crate::clock::test_epoch();
    let spec = GateSpec {
        id: "review".into(),
        kind: GateKind::ManualGate,
        prompt: "ok?".into(),
        context_display: None,
        default: None,
        timeout_secs: None,
        fallback: Fallback::Cancel,
        condition: None,
        show_preview: true,
        preview_length: 10,
        require_reason: false,
        channel: None,
        approvers: None,
        rules: Vec::new(),
        approvals_required: None,
        rejections_required: None,
        allow_self_approval: None,
        notify_dm: false,
        notify_email: false,
        timers: Default::default(),
        hours: None,
        form: None,
        allow_trust: false,
        allow_edit: false,
        step_up: None,
    };
    Session {
        id: id.into(),
        workflow: "wf".into(),
        spec_path: "wf.yaml".into(),
        spec_hash: "h".into(),
        spec_snapshot: String::new(),
        pattern: "chain".into(),
        status: Status::Paused,
        created_at: now,
        updated_at: now,
        started_by: "alice".into(),
        variables: Default::default(),
        state: PatternState::Chain {
            next: 1,
            steps: vec![None, None],
        },
        format: crate::model::SESSION_FORMAT,
        gates: [super::open(
            &spec,
            Position::Step(1),
            1,
            "ok?".into(),
            "ctx".into(),
            now,
        )]
        .into_iter()
        .map(|g| (g.handle(), g))
        .collect(),
        pending: None,
        human_feedback: None,
        hitl_response: None,
        history: Vec::new(),
        gates_opened: 1,
        usage: Default::default(),
        output: None,
        artifacts: Vec::new(),
        out_dir: ".".into(),
        overwrite_artifacts: false,
        work_dir: None,
        failure: None,
        origin: None,
        agent_turn: None,
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
        rev: 0,
    }
}
