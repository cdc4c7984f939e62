//! Links to the web inbox: the URLs every door's messages carry — a run's
//! page, a one-tap link's landing page, the inbox itself — under the hub's
//! public URL. Slack's blocks, the API's one-tap links and the CLI build
//! them here, so no door reaches into the web door for its routes.

/// The web page of session `id` (sign-in required) under `public_url`:
/// the one link every message and webhook payload carries.
pub fn session(public_url: &str, id: &str) -> String {
    // Webhook payloads (a layer below) carry the same link.
    crate::webhook::page_link(public_url, id)
}

/// The landing page of one-tap link `token` (`GET /l/{token}`).
pub fn one_tap(public_url: &str, token: &str) -> String {
    format!("{}/l/{token}", public_url.trim_end_matches('/'))
}

/// The web inbox: what waits for the signed-in person.
pub fn inbox(public_url: &str) -> String {
    public_url.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_sit_under_the_public_url() {
        let base = "https://approvals.example/";
        assert_eq!(
            session(base, "abc"),
            "https://approvals.example/sessions/abc"
        );
        assert_eq!(one_tap(base, "t.s"), "https://approvals.example/l/t.s");
        assert_eq!(inbox(base), "https://approvals.example");
    }
}
