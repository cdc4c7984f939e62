//! Chain steps and gates: what a step is, the keys each gate syntax takes,
//! fallbacks, gate ids, and a valid chain with both gate syntaxes typed.

use super::*;

#[test]
fn undefined_agent_points_at_the_agent_value() {
    let d = only(&chain(concat!(
        "      - agent: a\n",   // 14
        "      - agent: zed\n", // 15
    )));
    check(
        &d,
        15,
        16,
        "steps[1] uses undefined agent `zed`",
        Some("defined agents: a, b"),
    );
}

#[test]
fn step_with_neither_agent_nor_type() {
    let d = only(&chain(concat!(
        "      - agent: a\n", // 14
        "      - id: x\n",    // 15
    )));
    check(
        &d,
        15,
        9,
        "steps[1] has neither `agent` nor `type`",
        Some("type: hitl"),
    );
}

#[test]
fn unknown_step_type_points_at_the_type() {
    let d = only(&chain(concat!(
        "      - agent: a\n",       // 14
        "      - type: approval\n", // 15
        "        prompt: ok?\n",    // 16
    )));
    check(
        &d,
        15,
        15,
        "steps[1]: unknown step type `approval`",
        Some("`hitl` (strands-cli) or `manual_gate`"),
    );
    // A pattern name used as a step type gets a hint about pattern.type.
    let d = only(&chain(concat!(
        "      - type: parallel\n", // 14
        "        prompt: ok?\n",    // 15
    )));
    check(
        &d,
        14,
        15,
        "unknown step type `parallel`",
        Some("pattern.type"),
    );
}

#[test]
fn manual_gate_without_prompt() {
    let d = only(&chain(concat!(
        "      - agent: a\n",          // 14
        "      - type: manual_gate\n", // 15
        "        id: review\n",        // 16
    )));
    check(
        &d,
        15,
        9,
        "steps[1]: a `manual_gate` gate needs a `prompt`",
        Some("prompt:"),
    );
}

#[test]
fn hitl_with_timeout_minutes() {
    let d = only(&chain(concat!(
        "      - agent: a\n",           // 14
        "      - type: hitl\n",         // 15
        "        prompt: ok?\n",        // 16
        "        timeout_minutes: 5\n", // 17
    )));
    check(
        &d,
        15,
        9,
        "a `hitl` gate does not take timeout_minutes (hitl uses timeout_seconds)",
        None,
    );
    // ... and the mirror image.
    let d = only(&chain(concat!(
        "      - type: manual_gate\n",  // 14
        "        prompt: ok?\n",        // 15
        "        timeout_seconds: 5\n", // 16
        "        default: approved\n",  // 17
    )));
    check(
        &d,
        14,
        9,
        "a `manual_gate` gate does not take timeout_seconds (manual_gate uses timeout_minutes), default",
        None,
    );
}

#[test]
fn bad_fallback_action_points_at_the_value() {
    let d = only(&chain(concat!(
        "      - agent: a\n",                 // 14
        "      - type: manual_gate\n",        // 15
        "        prompt: ok?\n",              // 16
        "        fallback_action: explode\n", // 17
    )));
    check(
        &d,
        17,
        26,
        "steps[1]: unknown fallback_action `explode`",
        Some("`continue` or `cancel`"),
    );
}

#[test]
fn gate_keys_on_an_agent_step() {
    let d = only(&chain(concat!(
        "      - agent: a\n",           // 14
        "        prompt: ok?\n",        // 15
        "        timeout_minutes: 3\n", // 16
    )));
    check(
        &d,
        14,
        9,
        "steps[0]: prompt, timeout_minutes only make sense on a gate",
        Some("type: hitl"),
    );
}

#[test]
fn duplicate_gate_ids_in_a_chain() {
    // The first gate has no id: it is `step0`, which the second one reuses.
    let d = only(&chain(concat!(
        "      - type: hitl\n",        // 14
        "        prompt: one\n",       // 15
        "      - type: manual_gate\n", // 16
        "        id: step0\n",         // 17
        "        prompt: two\n",       // 18
    )));
    check(&d, 16, 9, "gate id `step0` is used twice", Some("unique"));
}

#[test]
fn chain_with_hitl_and_manual_gate() {
    let spec = valid(&chain(concat!(
        "      - agent: a\n",
        "        input: \"Research {{ topic }}\"\n",
        "        vars: {depth: 2}\n",
        "      - type: hitl\n",
        "        prompt: \"Approve {{ steps[0].response }}?\"\n",
        "        context_display: \"{{ steps[0].response }}\"\n",
        "        default: approved\n",
        "        timeout_seconds: 90\n",
        "      - type: manual_gate\n",
        "        id: review\n",
        "        prompt: Review it\n",
        "        condition: \"steps[0].response|length > 10\"\n",
        "        timeout_minutes: 2\n",
        "        fallback_action: continue\n",
        "        show_preview: false\n",
        "        preview_length: 40\n",
        "      - type: manual_gate\n",
        "        prompt: Again\n",
        "        timeout_minutes: 0\n",
        "      - agent: b\n",
    )));
    assert_eq!(spec.name, "t");
    assert_eq!(spec.runtime.provider, "echo");
    assert_eq!(spec.pattern.name(), "chain");
    assert_eq!(spec.agent_ids(), vec!["a", "b"]);
    assert_eq!(spec.hash, sha256_hex(&spec.text));
    // `topic` is read but not declared: named up front, once.
    assert_eq!(spec.needs.len(), 1, "{:?}", spec.needs);
    assert_eq!(spec.needs[0].name, "topic");
    assert_eq!(spec.needs[0].what, "the input of steps[0]");
    assert_eq!(spec.warnings.len(), 1, "{:?}", spec.warnings);
    assert!(spec.warnings[0].contains("pass --var topic=..."));
    let PatternSpec::Chain { steps } = &spec.pattern else {
        panic!("not a chain")
    };
    assert_eq!(steps.len(), 5);
    let ChainStep::Agent(a) = &steps[0] else {
        panic!("step 0 is not an agent step")
    };
    assert_eq!(a.agent, "a");
    assert_eq!(a.input.as_deref(), Some("Research {{ topic }}"));
    assert_eq!(a.vars.get("depth"), Some(&json!(2)));

    let ChainStep::Gate(h) = &steps[1] else {
        panic!("step 1 is not a gate")
    };
    assert_eq!(h.kind, GateKind::Hitl);
    assert_eq!(h.id, "step1", "an unnamed gate is named after its position");
    assert_eq!(h.default.as_deref(), Some("approved"));
    assert_eq!(h.timeout_secs, Some(90));
    assert_eq!(
        h.context_display.as_deref(),
        Some("{{ steps[0].response }}")
    );
    assert!(h.show_preview);
    assert_eq!(h.preview_length, DEFAULT_PREVIEW_LENGTH);

    let ChainStep::Gate(m) = &steps[2] else {
        panic!("step 2 is not a gate")
    };
    assert_eq!(m.kind, GateKind::ManualGate);
    assert_eq!(m.id, "review");
    assert_eq!(m.timeout_secs, Some(120), "timeout_minutes are minutes");
    assert_eq!(m.fallback, Fallback::Continue);
    assert_eq!(
        m.condition.as_deref(),
        Some("steps[0].response|length > 10")
    );
    assert!(!m.show_preview);
    assert_eq!(m.preview_length, 40);

    let ChainStep::Gate(z) = &steps[3] else {
        panic!("step 3 is not a gate")
    };
    assert_eq!(z.id, "step3");
    assert_eq!(z.timeout_secs, None, "0 means no timeout");
    assert_eq!(
        z.fallback,
        Fallback::Cancel,
        "the default fallback is cancel"
    );
    assert!(matches!(&steps[4], ChainStep::Agent(s) if s.agent == "b" && s.input.is_none()));
}

#[test]
fn a_step_reading_a_result_that_cannot_exist_yet_is_refused_before_any_run() {
    let d = only(&chain(concat!(
        "      - agent: a\n",                                                       // 14
        "        input: \"Go\"\n",                                                  // 15
        "      - agent: a\n",                                                       // 16
        "        input: \"{{ steps[0].response }} and {{ steps[2].response }}\"\n", // 17
        "      - agent: a\n",                                                       // 18
    )));
    check(
        &d,
        17,
        16,
        "the input of steps[1] reads `steps[2]`, which has not run yet at that point",
        Some("steps[0] to steps[0]"),
    );
    // A guarded read is left to run time.
    valid(&chain(concat!(
        "      - agent: a\n",
        "        input: \"{% if steps|length > 2 %}{{ steps[2].response }}{% endif %}\"\n",
    )));
}

#[test]
fn a_task_reading_a_task_outside_its_deps_or_no_task_is_refused() {
    let d = diags(&workflow(concat!(
        "      - id: x\n",                                                    // 14
        "        agent: a\n",                                                 // 15
        "      - id: y\n",                                                    // 16
        "        agent: a\n",                                                 // 17
        "        input: \"{{ tasks.x.response }}\"\n",                        // 18
        "      - id: z\n",                                                    // 19
        "        agent: a\n",                                                 // 20
        "        deps: [x]\n",                                                // 21
        "        input: \"{{ tasks.x.response }} {{ tasks.w.response }}\"\n", // 22
    )));
    let got: Vec<(u32, &str)> = d.iter().map(|d| (d.line, d.message.as_str())).collect();
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[0].0, 18);
    assert!(
        got[0]
            .1
            .contains("reads `tasks.x`, which is not among its deps"),
        "{got:?}"
    );
    assert_eq!(d[0].hint.as_deref(), Some("add `x` to the `deps` of `y`"));
    assert_eq!(got[1].0, 22);
    assert!(got[1].1.contains("there is no task `w`"), "{got:?}");
}
