//! What a `routing` spec's router review answers mean: `approved` keeps
//! the router's pick, `route:<name>` picks another route. The validator
//! checks a review gate's `default` with it, the engine reads answers with
//! it, so a default that passes validation is an answer the run takes.
//!
//! Running the router, re-asking it and running the chosen route is the
//! engine's job (`engine::pattern::routing`).

/// What the router review's answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewAnswer {
    /// Keep the router's pick.
    Approved,
    /// Run this route instead.
    Route(String),
}

/// Reads a router review answer: `approved` (or `approve`) or
/// `route:<name>` of one of `routes`. The error lists the valid answers.
pub fn review_answer(answer: &str, routes: &[&str]) -> std::result::Result<ReviewAnswer, String> {
    let a = answer.trim();
    if a.eq_ignore_ascii_case("approved") || a.eq_ignore_ascii_case("approve") {
        return Ok(ReviewAnswer::Approved);
    }
    if let Some(name) = strip_prefix_ci(a, "route:") {
        if let Some(r) = routes.iter().find(|r| **r == name.trim()) {
            return Ok(ReviewAnswer::Route(r.to_string()));
        }
    }
    let mut sorted = routes.to_vec();
    sorted.sort_unstable();
    let mut valid = vec!["approved".to_string()];
    valid.extend(sorted.iter().map(|r| format!("route:{r}")));
    Err(valid.join(", "))
}

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_answers_are_approved_or_a_valid_route() {
        let routes = ["technical", "billing", "general"];
        assert_eq!(
            review_answer(" Approved ", &routes),
            Ok(ReviewAnswer::Approved)
        );
        assert_eq!(
            review_answer("route:billing", &routes),
            Ok(ReviewAnswer::Route("billing".into()))
        );
        assert_eq!(
            review_answer("ROUTE: general", &routes),
            Ok(ReviewAnswer::Route("general".into()))
        );
        assert_eq!(
            review_answer("route:sales", &routes),
            Err("approved, route:billing, route:general, route:technical".into())
        );
        assert!(review_answer("yes", &routes).is_err());
    }
}
