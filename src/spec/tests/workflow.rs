//! Workflow tasks: ids, dependencies, cycles (named without the tasks
//! downstream of them) and the layers a valid workflow runs in.

use super::*;

#[test]
fn workflow_task_without_id() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "      - agent: b\n", // 16
    )));
    check(&d, 16, 9, "tasks[1] has no `id`", Some("unique `id`"));
}

#[test]
fn workflow_duplicate_task_id() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "      - id: t1\n",   // 16
        "        agent: b\n", // 17
    )));
    check(&d, 16, 9, "task id `t1` is used twice", Some("unique"));
}

#[test]
fn workflow_unknown_dep_points_at_the_dep() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",           // 14
        "        agent: a\n",         // 15
        "      - id: t2\n",           // 16
        "        agent: b\n",         // 17
        "        deps: [t1, nope]\n", // 18
    )));
    check(
        &d,
        18,
        20,
        "task `t2` depends on unknown task `nope`",
        Some("tasks: t1, t2"),
    );
}

#[test]
fn workflow_self_dep_points_at_the_dep() {
    let d = only(&workflow(concat!(
        "      - id: t1\n",   // 14
        "        agent: a\n", // 15
        "        deps:\n",    // 16
        "          - t1\n",   // 17
    )));
    check(&d, 17, 13, "task `t1` depends on itself", None);
}

#[test]
fn workflow_three_task_cycle() {
    let d = only(&workflow(concat!(
        "      - id: start\n", // 14
        "        agent: a\n",  // 15
        "      - id: x\n",     // 16
        "        agent: a\n",  // 17
        "        deps: [z]\n", // 18
        "      - id: y\n",     // 19
        "        agent: b\n",  // 20
        "        deps: [x]\n", // 21
        "      - id: z\n",     // 22
        "        agent: a\n",  // 23
        "        deps: [y]\n", // 24
    )));
    check(
        &d,
        16,
        9,
        "tasks x, y, z form a dependency cycle",
        Some("a workflow is a DAG"),
    );
}

/// A task that merely depends on a cycle is not part of it: the diagnostic
/// should name the cycle's tasks only and point at one of them.
#[test]
fn workflow_cycle_does_not_blame_tasks_downstream_of_it() {
    let d = only(&workflow(concat!(
        "      - id: w\n",     // 14  depends on the cycle, is not in it
        "        agent: a\n",  // 15
        "        deps: [x]\n", // 16
        "      - id: x\n",     // 17
        "        agent: a\n",  // 18
        "        deps: [z]\n", // 19
        "      - id: y\n",     // 20
        "        agent: b\n",  // 21
        "        deps: [x]\n", // 22
        "      - id: z\n",     // 23
        "        agent: a\n",  // 24
        "        deps: [y]\n", // 25
    )));
    check(
        &d,
        17,
        9,
        "tasks x, y, z form a dependency cycle",
        Some("a workflow is a DAG"),
    );
    assert!(!d.message.contains('w'), "{}", d.message);
}

fn layer_ids(spec: &Spec) -> Vec<Vec<String>> {
    let PatternSpec::Workflow { tasks, layers } = &spec.pattern else {
        panic!("not a workflow")
    };
    layers
        .iter()
        .map(|l| {
            let mut ids: Vec<String> = l.iter().map(|&i| tasks[i].id.clone()).collect();
            ids.sort();
            ids
        })
        .collect()
}

#[test]
fn workflow_diamond_layers() {
    // Written out of order on purpose: d needs b and c, which need a.
    let spec = valid(&workflow(concat!(
        "      - id: d\n",
        "        agent: a\n",
        "        deps: [b, c]\n",
        "      - id: b\n",
        "        agent: b\n",
        "        deps: [a]\n",
        "      - id: a\n",
        "        agent: a\n",
        "        description: the root\n",
        "      - id: c\n",
        "        agent: b\n",
        "        deps: [a, a]\n",
        "      - id: review\n",
        "        type: hitl\n",
        "        prompt: \"Ship {{ tasks.d.response }}?\"\n",
        "        deps: [d]\n",
    )));
    assert_eq!(spec.pattern.name(), "workflow");
    assert_eq!(
        layer_ids(&spec),
        vec![
            vec!["a".to_string()],
            vec!["b".to_string(), "c".to_string()],
            vec!["d".to_string()],
            vec!["review".to_string()],
        ]
    );
    let PatternSpec::Workflow { tasks, layers } = &spec.pattern else {
        unreachable!()
    };
    // Layers hold indexes into `tasks`, in file order.
    assert_eq!(layers, &vec![vec![2], vec![1, 3], vec![0], vec![4]]);
    let review = &tasks[4];
    assert_eq!(review.deps, vec!["d"]);
    let TaskBody::Gate(g) = &review.body else {
        panic!("review is not a gate")
    };
    assert_eq!(g.id, "review", "a task gate takes the task id");
    assert_eq!(g.kind, GateKind::Hitl);
}

#[test]
fn workflow_independent_tasks_share_one_layer() {
    let spec = valid(&workflow(concat!(
        "      - id: one\n",
        "        agent: a\n",
        "      - id: two\n",
        "        agent: b\n",
        "      - id: three\n",
        "        agent: a\n",
    )));
    assert_eq!(layer_ids(&spec), vec![vec!["one", "three", "two"]]);
}
