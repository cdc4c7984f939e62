//! The README and the book (`docs/`, an mdBook: `docs/book.toml`,
//! `docs/src/SUMMARY.md`, a page per subject in `docs/src/`) hold together:
//!
//! - every relative link of README.md and of `docs/src/**/*.md` names a file
//!   or folder of the repository, and every `#anchor` — on its own page or
//!   `page.md#anchor` — a heading of that page (GitHub's and mdBook's
//!   slugs: lowercase, spaces → `-`, punctuation dropped, `-1`, `-2` … for
//!   repeats);
//! - `http(s)://` links are well-formed (never fetched: no network here);
//! - every page of `docs/src/` is in SUMMARY.md, and every entry of
//!   SUMMARY.md is a page there;
//! - the README is a five-minute read (at most 300 lines) and still states
//!   the two set-up commands.
//!
//! The settings tables are `config::vars`' test (`cargo test --lib readme`)
//! and the compatibility table is `compat::`'s; both find their blocks in
//! the pages listed by [`pages`]. Code (fenced blocks, code spans) and HTML
//! comments are not prose: what looks like a link there is not checked.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page of the book (`docs/src/**/*.md`,
/// SUMMARY.md included), relative to the repository's root, sorted.
pub(crate) fn pages() -> Vec<PathBuf> {
    pages_of(root())
}

fn pages_of(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> =
            read.map(|e| e.expect("a directory entry").path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(
                    path.strip_prefix(root)
                        .expect("below the root")
                        .to_path_buf(),
                );
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(&root.join("docs/src"), root, &mut out);
    out
}

/// `text` with fenced code blocks, code spans and HTML comments blanked
/// out (newlines kept, so line numbers hold): what is left is prose, where
/// links and headings are.
fn prose(text: &str) -> String {
    // Fenced blocks, line by line (``` or ~~~, indented or not, closed by
    // a fence of the same character at least as long).
    let mut unfenced = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let opener = ['`', '~'].into_iter().find_map(|c| {
            let n = t.chars().take_while(|x| *x == c).count();
            (n >= 3).then_some((c, n))
        });
        let blank = match (fence, opener) {
            (None, Some(o)) => {
                fence = Some(o);
                true
            }
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n && t[n2..].trim().is_empty() => {
                fence = None;
                true
            }
            (Some(_), _) => true,
            (None, None) => false,
        };
        if blank {
            unfenced.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        } else {
            unfenced.push_str(line);
        }
    }
    // HTML comments and code spans (a run of N backticks up to the next run
    // of exactly N; an unmatched run is literal).
    let chars: Vec<char> = unfenced.chars().collect();
    let mut out = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        if chars[i..].starts_with(&['<', '!', '-', '-']) {
            let end = (i + 4..chars.len())
                .find(|&j| chars[j..].starts_with(&['-', '-', '>']))
                .map_or(chars.len(), |j| j + 3);
            blank(&mut out, i, end);
            i = end;
        } else if chars[i] == '`' {
            let n = chars[i..].iter().take_while(|c| **c == '`').count();
            let mut j = i + n;
            let mut close = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let m = chars[j..].iter().take_while(|c| **c == '`').count();
                    if m == n {
                        close = Some(j + m);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            match close {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += n,
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// A heading's anchor, as GitHub and mdBook make it: the heading's text
/// (inline code, emphasis and link targets taken out), lowercase, each
/// space a `-`, every character but letters, digits, `-` and `_` dropped.
fn slug(heading: &str) -> String {
    // `[text](target)` reads as its text.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(i) = rest.find("](") {
        let Some(close) = rest[i..].find(')') else {
            break;
        };
        text.push_str(&rest[..i]);
        rest = &rest[i + close + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter(|c| !matches!(c, '`' | '*' | '[' | ']'))
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a page's headings (ATX headings outside code), repeats
/// numbered `-1`, `-2` … as GitHub and mdBook number them.
fn anchors(text: &str) -> BTreeSet<String> {
    // Headings are read from the text with code blocks blanked, but with
    // their own code spans: `## \`context_policy\`` is `context_policy`.
    let blanked = prose(text);
    let mut seen = BTreeSet::new();
    for (line, kept) in text.lines().zip(blanked.lines()) {
        let t = kept.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || kept.len() - t.len() > 3 {
            continue;
        }
        let original = line.trim_start();
        let Some(title) = original[hashes..].strip_prefix(' ') else {
            continue;
        };
        let title = title.trim().trim_end_matches('#').trim();
        let base = slug(title);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// A link of a page: its line and its target (`path#anchor`, `#anchor`,
/// a URL).
#[derive(Debug)]
struct Link {
    line: usize,
    target: String,
}

/// Every link of a page's prose: inline links and images (`[t](x)`,
/// `![a](x)`), autolinks (`<https://…>`), reference definitions
/// (`[t]: x`), and HTML `src` / `href` attributes.
fn links(text: &str) -> Vec<Link> {
    let prose = prose(text);
    let line_of = |offset: usize| prose[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    // Inline links and images: `](` then what runs to the `)` closing it
    // (parentheses inside balanced): a target, `<target>`, or a target and
    // a title (`"…"`, `'…'`, `(…)`) after white space. White space
    // anywhere else is kept in the target, which then fails as malformed.
    for (i, _) in prose.match_indices("](") {
        let rest = &prose[i + 2..];
        let mut depth = 0usize;
        let mut end = rest.len();
        for (j, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = j;
                    break;
                }
                ')' => depth -= 1,
                '\n' => {
                    end = j;
                    break;
                }
                _ => {}
            }
        }
        let inside = rest[..end].trim();
        let target = if let Some(r) = inside.strip_prefix('<') {
            r.split('>').next().unwrap_or("")
        } else {
            match inside.split_once(char::is_whitespace) {
                Some((t, title)) if title.trim_start().starts_with(['"', '\'', '(']) => t,
                _ => inside,
            }
        };
        out.push(Link {
            line: line_of(i),
            target: target.to_string(),
        });
    }
    // Autolinks.
    let mut from = 0;
    while let Some(i) = prose[from..].find('<').map(|i| from + i) {
        from = i + 1;
        let rest = &prose[i + 1..];
        if rest.starts_with("http://") || rest.starts_with("https://") {
            let end = rest.find('>').unwrap_or(rest.len());
            out.push(Link {
                line: line_of(i),
                target: rest[..end].to_string(),
            });
        }
    }
    // HTML attributes.
    for attr in ["src=\"", "href=\""] {
        for (i, _) in prose.match_indices(attr) {
            let rest = &prose[i + attr.len()..];
            let end = rest.find('"').unwrap_or(rest.len());
            out.push(Link {
                line: line_of(i),
                target: rest[..end].to_string(),
            });
        }
    }
    // Reference definitions: `[label]: target` at the start of a line.
    for (n, line) in prose.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[') {
            if let Some((_, target)) = rest.split_once("]:") {
                if let Some(target) = target.split_whitespace().next() {
                    out.push(Link {
                        line: n + 1,
                        target: target.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// `dir/rel` with `.` and `..` resolved, if it stays within the root.
fn resolve(dir: &Path, rel: &str) -> Option<PathBuf> {
    let mut parts: Vec<String> = dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p.to_string()),
        }
    }
    Some(parts.iter().collect())
}

/// What is wrong with an `http(s)://` link, if anything.
fn bad_url(target: &str) -> Option<String> {
    if target.chars().any(char::is_whitespace) {
        return Some("has white space".into());
    }
    match url::Url::parse(target) {
        Err(e) => Some(format!("is not a URL: {e}")),
        Ok(url) => match url.host_str() {
            None | Some("") => Some("has no host".into()),
            Some(host) if !host.contains('.') && host != "localhost" => {
                Some(format!("names the host `{host}`, which is not a domain"))
            }
            Some(_) => None,
        },
    }
}

/// Every broken link of `pages` (relative to `root`), as `page:line:
/// target: why`.
fn link_problems(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    for page in pages {
        let text = match std::fs::read_to_string(root.join(page)) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{}: {e}", page.display()));
                continue;
            }
        };
        let own = anchors(&text);
        let dir = page.parent().unwrap_or(Path::new(""));
        for Link { line, target } in links(&text) {
            let at = format!("{}:{line}: `{target}`", page.display());
            if target.is_empty() {
                problems.push(format!("{at}: an empty link"));
            } else if target.starts_with("http://") || target.starts_with("https://") {
                if let Some(why) = bad_url(&target) {
                    problems.push(format!("{at}: {why}"));
                }
            } else if let Some(address) = target.strip_prefix("mailto:") {
                if !address.contains('@') {
                    problems.push(format!("{at}: not an e-mail address"));
                }
            } else if let Some(anchor) = target.strip_prefix('#') {
                if !own.contains(anchor) {
                    problems.push(format!("{at}: no heading of this page has that anchor"));
                }
            } else if target.contains("://") || target.starts_with('/') {
                problems.push(format!(
                    "{at}: neither relative nor http(s) (links must work from the page, on GitHub and in the book)"
                ));
            } else {
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let Some(resolved) = resolve(dir, path) else {
                    problems.push(format!("{at}: leads out of the repository"));
                    continue;
                };
                let full = root.join(&resolved);
                if !full.exists() {
                    problems.push(format!("{at}: {} does not exist", resolved.display()));
                    continue;
                }
                if let Some(anchor) = anchor {
                    if full.extension().is_none_or(|x| x != "md") {
                        problems.push(format!("{at}: an anchor into a file that is not Markdown"));
                    } else {
                        let there = std::fs::read_to_string(&full).unwrap_or_default();
                        if !anchors(&there).contains(anchor) {
                            problems.push(format!(
                                "{at}: no heading of {} has that anchor",
                                resolved.display()
                            ));
                        }
                    }
                }
            }
        }
    }
    problems
}

/// The book's shape: every page of `docs/src/` in SUMMARY.md once, every
/// entry of SUMMARY.md a page there; `book.toml` names `src`.
fn book_problems(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let book = root.join("docs/book.toml");
    match std::fs::read_to_string(&book) {
        Err(e) => problems.push(format!("docs/book.toml: {e}")),
        Ok(toml) => {
            if !toml.lines().any(|l| l.replace(' ', "") == "src=\"src\"") {
                problems.push("docs/book.toml: no `src = \"src\"`".into());
            }
            if !toml.lines().any(|l| l.trim_start().starts_with("title")) {
                problems.push("docs/book.toml: no title".into());
            }
        }
    }
    let src = root.join("docs/src");
    let summary = match std::fs::read_to_string(src.join("SUMMARY.md")) {
        Ok(s) => s,
        Err(e) => {
            problems.push(format!("docs/src/SUMMARY.md: {e}"));
            return problems;
        }
    };
    let mut listed = BTreeSet::new();
    for Link { line, target } in links(&summary) {
        let path = target.split('#').next().unwrap_or("").to_string();
        if path.is_empty() || path.contains("://") {
            problems.push(format!(
                "docs/src/SUMMARY.md:{line}: `{target}` is not a page"
            ));
            continue;
        }
        if !src.join(&path).is_file() {
            problems.push(format!(
                "docs/src/SUMMARY.md:{line}: `{path}` does not exist"
            ));
        }
        if !listed.insert(path.clone()) {
            problems.push(format!(
                "docs/src/SUMMARY.md:{line}: `{path}` is listed twice"
            ));
        }
    }
    for page in pages_of(root) {
        let Ok(rel) = page.strip_prefix("docs/src") else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel != "SUMMARY.md" && !listed.contains(&rel) {
            problems.push(format!("docs/src/{rel} is not in SUMMARY.md"));
        }
    }
    problems
}

/// The packages' READMEs link into the book too.
const CLIENT_READMES: &[&str] = &["clients/python/README.md", "clients/typescript/README.md"];

#[test]
fn every_link_of_the_readme_and_the_book_resolves() {
    let mut pages = pages();
    assert!(pages.len() > 10, "the book has no pages: {pages:?}");
    pages.extend(CLIENT_READMES.iter().map(PathBuf::from));
    let problems = link_problems(root(), &pages);
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

/// Messages, manifests and the packages name book pages by path
/// (`see docs/src/slack.md`): each names one that exists.
#[test]
fn every_book_page_named_outside_the_book_exists() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !matches!(
                    name,
                    "node_modules" | "target" | "dist" | "build" | "__pycache__"
                ) {
                    walk(&path, out);
                }
            } else if [
                ".rs", ".md", ".py", ".ts", ".yaml", ".yml", ".example", ".service",
            ]
            .iter()
            .any(|x| name.ends_with(x))
            {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join(".ci/run")];
    for dir in ["src", "manifests", "clients", "examples", "tests/it"] {
        walk(&root().join(dir), &mut files);
    }
    let named = regex::Regex::new(r"docs/src/[A-Za-z0-9_./-]*?\.(md|png)").expect("a regex");
    let mut problems = Vec::new();
    let mut seen = 0;
    // This file's scratch book names pages that do not exist, on purpose.
    files.retain(|f| !f.ends_with("tests/it/docs.rs"));
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for m in named.find_iter(&text) {
            seen += 1;
            if !root().join(m.as_str()).is_file() {
                let line = text[..m.start()].matches('\n').count() + 1;
                problems.push(format!(
                    "{}:{line}: `{}` does not exist",
                    file.strip_prefix(root()).unwrap_or(&file).display(),
                    m.as_str()
                ));
            }
        }
    }
    assert!(
        seen > 0,
        "nothing names a page of the book (the Slack messages did)"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let problems = book_problems(root());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A newcomer reads the README in five minutes, and it keeps saying how
/// to set up: one command runs the main job on the embedded defaults, one
/// runs the tests (CI and the product owner rely on it).
#[test]
fn the_readme_is_short_and_states_the_two_set_up_commands() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; at most 300 (move the rest into docs/src/)"
    );
    for command in [
        "cargo run --release -- run examples/research-review.yaml",
        "cargo test --locked",
    ] {
        assert!(
            readme.contains(command),
            "README.md no longer states `{command}`"
        );
    }
    assert!(
        readme.contains("two commands do all the set-up"),
        "{readme}"
    );
}

/// The checks can fail: a scratch book with a broken link, a missing
/// anchor, a page missing from its summary and an entry with no page.
#[test]
fn the_checks_find_what_is_broken() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs/src")).unwrap();
    std::fs::create_dir_all(root.join("examples")).unwrap();
    std::fs::write(root.join("examples/a.yaml"), "name: a\n").unwrap();
    std::fs::write(
        root.join("docs/book.toml"),
        "[book]\ntitle = \"t\"\nsrc = \"src\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Top\n\nSee [gates](docs/src/gates.md#timeouts-and-fallbacks), \
         [the example](examples/a.yaml), [gone](examples/b.yaml),\n\
         [bad anchor](docs/src/gates.md#no-such-heading), [self](#top), [nope](#bottom),\n\
         <https://example.com/ok>, [bad url](https://exa mple.com), [host](https://nodomain/x),\n\
         [out](../../etc/passwd) and `[in code](nowhere.md)`.\n\n\
         ```md\n[in a fence](nowhere.md)\n```\n<!-- [in a comment](nowhere.md) -->\n",
    )
    .unwrap();
    std::fs::write(
        root.join("docs/src/gates.md"),
        "# Gates\n\n## Timeouts, and fallbacks\n\n```yaml\n# not a heading\n```\n\
         [up](../../README.md#top) [code heading](#context_policy)\n\n## `context_policy`\n",
    )
    .unwrap();
    std::fs::write(root.join("docs/src/orphan.md"), "# Orphan\n").unwrap();
    std::fs::write(
        root.join("docs/src/SUMMARY.md"),
        "# Summary\n\n- [Gates](gates.md)\n- [Missing](missing.md)\n",
    )
    .unwrap();

    let problems = link_problems(root, &pages_of(root));
    let has = |needle: &str| problems.iter().any(|p| p.contains(needle));
    assert!(
        has("README.md:3: `examples/b.yaml`: examples/b.yaml does not exist"),
        "{problems:#?}"
    );
    assert!(
        has("`docs/src/gates.md#no-such-heading`: no heading"),
        "{problems:#?}"
    );
    assert!(
        has("README.md:4: `#bottom`: no heading of this page"),
        "{problems:#?}"
    );
    assert!(
        has("`https://exa mple.com`: has white space"),
        "{problems:#?}"
    );
    assert!(has("`https://nodomain/x`: names the host"), "{problems:#?}");
    assert!(
        has("`../../etc/passwd`: leads out of the repository"),
        "{problems:#?}"
    );
    assert!(
        has("SUMMARY.md:4: `missing.md`: docs/src/missing.md does not exist"),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 7, "only those: {problems:#?}");

    let problems = book_problems(root);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`missing.md` does not exist")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("docs/src/orphan.md is not in SUMMARY.md")),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 2, "only those: {problems:#?}");
}

#[test]
fn anchors_are_made_as_github_and_mdbook_make_them() {
    assert_eq!(
        slug("Tools, and humans who approve each call"),
        "tools-and-humans-who-approve-each-call"
    );
    assert_eq!(slug("`context_policy`"), "context_policy");
    assert_eq!(
        slug("The approval service: `strands serve`"),
        "the-approval-service-strands-serve"
    );
    assert_eq!(
        slug("strands — agent workflows"),
        "strands--agent-workflows"
    );
    assert_eq!(slug("The service's settings"), "the-services-settings");
    assert_eq!(slug("Routes (`/api/v1`)"), "routes-apiv1");
    let repeated = anchors("# Slack\n## Configuration\n# Teams\n## Configuration\n");
    assert!(
        repeated.contains("configuration") && repeated.contains("configuration-1"),
        "{repeated:?}"
    );
}
