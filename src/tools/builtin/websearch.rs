//! The web search tools of strands-cli: `duckduckgo_search` (DuckDuckGo's
//! HTML results page, no key) and `tavily_search` (Tavily's REST API with
//! `TAVILY_API_KEY`). Both answer with strands-cli's JSON: DuckDuckGo's
//! `{query, search_type, result_count, results: [{title, href, body}]}`,
//! and Tavily's response as Tavily sends it.
//!
//! Requests go through the tools' HTTP client, so the egress policy
//! applies as for every HTTP tool; the endpoints are public by default and
//! can be pointed elsewhere (`STRANDS_DUCKDUCKGO_URL`, `STRANDS_TAVILY_URL`)
//! for tests or a proxy of one's own, which then must be reachable under
//! the egress policy like any other host. Redirects are followed only
//! within the endpoint's origin.
//!
//! What differs from strands-cli, which uses the `ddgs` library: only text
//! search (DuckDuckGo's HTML page has no news; `search_type: news` is an
//! error the model reads), one page of results (about 10), and no
//! rotation through other search engines when DuckDuckGo refuses.

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use reqwest::{Method, Url};
use secrecy::ExposeSecret;

pub use crate::config::SearchSettings;
use serde_json::{json, Value};

use super::http::{fetch, read_body, HttpCall};
use super::str_arg;
use super::text::{effective_timeout, human_duration, short, short_n};
use crate::tools::{ToolEnv, ToolResult};

/// What the model reads when Tavily has no key.
pub const TAVILY_KEY_MISSING: &str = "TAVILY_API_KEY environment variable not set. Get your free \
     API key at https://app.tavily.com (1000 free API credits monthly).";

pub(super) fn duckduckgo_spec() -> (&'static str, Value) {
    (
        "Search DuckDuckGo for text results. Returns JSON: the query and a list of results, \
         each with title, href and body (a snippet).",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query string"},
                "search_type": {"type": "string", "enum": ["text", "news"], "description": "Type of search to perform (only text is available here)"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Maximum number of results to return (1-50, default 10)"},
                "region": {"type": "string", "description": "Region/language code (e.g., us-en, uk-en, cn-zh; default us-en)"},
                "safesearch": {"type": "string", "enum": ["on", "moderate", "off"], "description": "SafeSearch filter level (default moderate)"},
                "timelimit": {"type": "string", "enum": ["d", "w", "m", "y"], "description": "Time limit for results (d=day, w=week, m=month, y=year)"}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn tavily_spec() -> (&'static str, Value) {
    (
        "Search the web using Tavily AI-powered search. Returns optimized results with \
         relevance scores and optional AI-generated answers. Requires TAVILY_API_KEY.",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query string"},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Maximum number of results to return (1-20, default 5)"},
                "include_answer": {"type": "boolean", "description": "Include AI-generated answer based on search results (default false)"}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe(engine: &str, args: &Value) -> String {
    format!(
        "search {engine} for \"{}\"",
        short_n(str_arg(args, "query").unwrap_or("?"), 200)
    )
}

/// GETs or POSTs `url` and reads the body: `(status, text)`, or the error
/// result the model reads. Redirects stay within the endpoint's origin.
async fn exchange(
    env: &ToolEnv,
    method: Method,
    url: Url,
    headers: HeaderMap,
    body: Option<Vec<u8>>,
    what: &str,
) -> Result<(u16, String), ToolResult> {
    let origin = url.origin();
    let same_origin = |next: &Url| {
        if next.origin() == origin {
            Ok(())
        } else {
            Err("the search tools follow redirects only within the search endpoint".to_string())
        }
    };
    // The endpoint's query (the model's search) is shown; nothing else is secret in it.
    let show = |u: &Url| u.to_string();
    let limit = effective_timeout(env.timeout);
    let call = HttpCall {
        method,
        url,
        headers,
        body,
        timeout: limit,
        max_bytes: env.max_bytes,
        may_follow: &same_origin,
        show: &show,
    };
    let run = async {
        let mut fetched = fetch(env, &call, limit).await?;
        let body = read_body(&mut fetched.response, env.max_bytes).await;
        Ok::<_, ToolResult>((fetched.response.status().as_u16(), body.text()))
    };
    match tokio::time::timeout(limit, run).await {
        Ok(done) => done,
        Err(_) => Err(ToolResult::error(format!(
            "Search timed out after {}: {what}. Try reducing max_results or simplifying the query.",
            human_duration(limit)
        ))),
    }
}

pub(super) async fn duckduckgo(
    args: &Value,
    env: &ToolEnv,
    settings: &SearchSettings,
) -> ToolResult {
    let query = str_arg(args, "query").unwrap_or_default().trim();
    if query.is_empty() {
        return ToolResult::error("No search query provided");
    }
    let search_type = str_arg(args, "search_type").unwrap_or("text");
    if search_type != "text" {
        return ToolResult::error(format!(
            "search_type `{search_type}` is not available: DuckDuckGo's HTML results page has text results only; search again with search_type text"
        ));
    }
    let max_results = args
        .get("max_results")
        .and_then(Value::as_u64)
        .unwrap_or(10);
    if !(1..=50).contains(&max_results) {
        return ToolResult::error(format!(
            "max_results must be between 1 and 50, got: {max_results}"
        ));
    }
    let base = format!("{}/html/", settings.duckduckgo_url);
    let Ok(mut url) = Url::parse(&base) else {
        return ToolResult::error(format!(
            "the DuckDuckGo endpoint `{}` is not a URL",
            short(&base)
        ));
    };
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("q", query);
        q.append_pair("kl", str_arg(args, "region").unwrap_or("us-en"));
        let kp = match str_arg(args, "safesearch").unwrap_or("moderate") {
            "on" => "1",
            "off" => "-2",
            _ => "-1",
        };
        q.append_pair("kp", kp);
        if let Some(t) = str_arg(args, "timelimit") {
            q.append_pair("df", t);
        }
    }
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&super::web::user_agent()) {
        headers.insert(USER_AGENT, v);
    }
    let (status, page) = match exchange(env, Method::GET, url, headers, None, query).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    if status != 200 {
        return ToolResult::error(format!(
            "Search failed (HTTP {status}): DuckDuckGo did not return results (it may be rate limiting); try again later or use another search tool"
        ));
    }
    let results = ddg_results(&page, max_results as usize);
    ToolResult::ok(
        json!({
            "query": query,
            "search_type": search_type,
            "result_count": results.len(),
            "results": results,
        })
        .to_string(),
    )
}

/// The organic results of a DuckDuckGo HTML results page (ads skipped):
/// `{title, href, body}` each, at most `max`.
pub(crate) fn ddg_results(page: &str, max: usize) -> Vec<Value> {
    use markup5ever_rcdom::{Handle, NodeData};
    fn classes(node: &Handle) -> Vec<String> {
        match &node.data {
            NodeData::Element { attrs, .. } => attrs
                .borrow()
                .iter()
                .find(|a| &*a.name.local == "class")
                .map(|a| a.value.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
    fn attr(node: &Handle, name: &str) -> Option<String> {
        match &node.data {
            NodeData::Element { attrs, .. } => attrs
                .borrow()
                .iter()
                .find(|a| &*a.name.local == name)
                .map(|a| a.value.to_string()),
            _ => None,
        }
    }
    fn text(node: &Handle, out: &mut String) {
        if let NodeData::Text { contents } = &node.data {
            out.push_str(&contents.borrow());
        }
        for c in node.children.borrow().iter() {
            text(c, out);
        }
    }
    fn find(node: &Handle, class: &str) -> Option<Handle> {
        for c in node.children.borrow().iter() {
            if classes(c).iter().any(|k| k == class) {
                return Some(c.clone());
            }
            if let Some(found) = find(c, class) {
                return Some(found);
            }
        }
        None
    }
    fn walk(node: &Handle, max: usize, out: &mut Vec<Value>) {
        if out.len() >= max {
            return;
        }
        let cls = classes(node);
        if cls.iter().any(|c| c == "result") {
            if cls.iter().any(|c| c == "result--ad") {
                return;
            }
            if let Some(link) = find(node, "result__a") {
                let mut title = String::new();
                text(&link, &mut title);
                let mut body = String::new();
                if let Some(s) = find(node, "result__snippet") {
                    text(&s, &mut body);
                }
                let href = attr(&link, "href")
                    .map(|h| real_href(&h))
                    .unwrap_or_default();
                out.push(json!({
                    "title": squash(&title),
                    "href": href,
                    "body": squash(&body),
                }));
            }
            return;
        }
        for c in node.children.borrow().iter() {
            walk(c, max, out);
        }
    }
    let Ok(tree) = htmd::HtmlToMarkdown::new().html_to_tree(page) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&tree, max, &mut out);
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// DuckDuckGo links through `//duckduckgo.com/l/?uddg=<target>`: the target.
fn real_href(href: &str) -> String {
    let absolute = if href.starts_with("//") {
        format!("https:{href}")
    } else {
        href.to_string()
    };
    Url::parse(&absolute)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "uddg")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or(absolute)
}

pub(super) async fn tavily(args: &Value, env: &ToolEnv, settings: &SearchSettings) -> ToolResult {
    let query = str_arg(args, "query").unwrap_or_default().trim();
    if query.is_empty() {
        return ToolResult::error("No search query provided");
    }
    let max_results = args.get("max_results").and_then(Value::as_u64).unwrap_or(5);
    if !(1..=20).contains(&max_results) {
        return ToolResult::error(format!(
            "max_results must be between 1 and 20, got: {max_results}"
        ));
    }
    let Some(key) = &settings.tavily_key else {
        return ToolResult::error(TAVILY_KEY_MISSING);
    };
    let include_answer = args
        .get("include_answer")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let endpoint = format!("{}/search", settings.tavily_url);
    let Ok(url) = Url::parse(&endpoint) else {
        return ToolResult::error(format!(
            "the Tavily endpoint `{}` is not a URL",
            short(&endpoint)
        ));
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    match HeaderValue::from_str(&format!("Bearer {}", key.expose_secret())) {
        Ok(mut v) => {
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        Err(_) => {
            return ToolResult::error(
                "TAVILY_API_KEY is not a valid header value (the key is not shown)",
            )
        }
    }
    let body = json!({
        "query": query,
        "max_results": max_results,
        "include_answer": include_answer,
    })
    .to_string()
    .into_bytes();
    let (status, text) = match exchange(env, Method::POST, url, headers, Some(body), query).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    let detail = short_n(&text, 300);
    match status {
        200 => match serde_json::from_str::<Value>(&text) {
            Ok(v) => ToolResult::ok(v.to_string()),
            Err(e) => ToolResult::error(format!(
                "Search failed: Tavily's answer is not JSON ({e}): {detail}"
            )),
        },
        401 | 403 => ToolResult::error(format!(
            "Authentication failed: HTTP {status} {detail}. Verify your TAVILY_API_KEY is valid."
        )),
        429 | 432 | 433 => ToolResult::error(format!(
            "Rate limit or quota exceeded: HTTP {status} {detail}. Check your usage at https://app.tavily.com"
        )),
        _ => ToolResult::error(format!("Search failed (HTTP {status}): {detail}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<html><body><div class="results">
      <div class="result results_links result--ad"><a class="result__a" href="https://ads.example/">Ad</a></div>
      <div class="result results_links results_links_deep web-result">
        <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=abc">The <b>Rust</b>
          Programming Language</a></h2>
        <a class="result__snippet" href="x">A language empowering <b>everyone</b>.</a>
      </div>
      <div class="result results_links web-result">
        <h2 class="result__title"><a class="result__a" href="https://doc.rust-lang.org/book/">The Book</a></h2>
      </div>
    </div></body></html>"#;

    #[test]
    fn parses_duckduckgo_results() {
        let r = ddg_results(PAGE, 10);
        assert_eq!(
            Value::Array(r),
            json!([
                {"title": "The Rust Programming Language", "href": "https://www.rust-lang.org/", "body": "A language empowering everyone."},
                {"title": "The Book", "href": "https://doc.rust-lang.org/book/", "body": ""}
            ])
        );
        assert_eq!(ddg_results(PAGE, 1).len(), 1);
        assert!(ddg_results("<html>no results</html>", 5).is_empty());
    }
}
