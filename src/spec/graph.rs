//! What a graph spec's `when:` conditions mean, as text: the engine
//! evaluates them and the validator checks them, and both must agree on
//! what the expression is.
//!
//! Evaluating a condition needs the run's template context and is the
//! engine's job (`engine::pattern::graph`); nothing here renders anything.

/// A `when` as evaluated: an outer `{{ }}` pair is removed so the condition
/// is an expression (`nodes.review.response == 'approve'`), as strands-cli
/// does; a condition with several `{{ }}` blocks stays a template.
pub fn condition_expr(when: &str) -> &str {
    let t = when.trim();
    if let Some(inner) = t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        let inner = inner.strip_prefix('-').unwrap_or(inner);
        let inner = inner.strip_suffix('-').unwrap_or(inner);
        if !inner.contains("{{") && !inner.contains("}}") && !inner.contains("{%") {
            return inner.trim();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_lose_one_outer_brace_pair_only() {
        assert_eq!(condition_expr("{{ a == 'b' }}"), "a == 'b'");
        assert_eq!(condition_expr("  {{- a -}} "), "a");
        assert_eq!(condition_expr("a and b"), "a and b");
        assert_eq!(condition_expr("{{ a }} and {{ b }}"), "{{ a }} and {{ b }}");
    }
}
