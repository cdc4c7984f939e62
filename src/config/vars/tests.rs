//! The settings table's own checks: names, sections, secrets, the
//! generated tables.

use super::*;

#[test]
fn every_variable_once_and_in_a_known_section() {
    let mut seen = std::collections::HashSet::new();
    for v in VARS {
        assert!(seen.insert(v.name), "{} is in the table twice", v.name);
        assert!(
            Section::ALL.contains(&v.section),
            "{}: section missing from Section::ALL",
            v.name
        );
        assert!(!v.meaning.is_empty(), "{} has no meaning", v.name);
    }
    for s in Section::ALL {
        assert_eq!(Section::parse(s.name()), Some(s));
        assert!(
            VARS.iter().any(|v| v.section == s),
            "section {} has no variable",
            s.name()
        );
    }
}

const BEGIN: &str = "<!-- settings:begin ";
const END: &str = "<!-- settings:end -->";

/// `table` for a page `depth` folders below the repository's root: the
/// meanings' relative links (written from the root, as the README reads
/// them) are made to resolve from the page (`templates/` is
/// `../../templates/` in `docs/src/slack.md`).
fn relative_to(table: &str, depth: usize) -> String {
    let prefix = "../".repeat(depth);
    let mut out = String::new();
    let mut rest = table;
    while let Some(i) = rest.find("](") {
        let (head, target) = rest.split_at(i + 2);
        out.push_str(head);
        let external = ["http://", "https://", "mailto:", "#", "/"]
            .iter()
            .any(|p| target.starts_with(p));
        if !external {
            out.push_str(&prefix);
        }
        rest = target;
    }
    out.push_str(rest);
    out
}

/// A page with every `<!-- settings:begin SECTIONS … -->` …
/// `<!-- settings:end -->` block holding the table of its sections
/// (`all`: every section, with a section column), for a page `depth`
/// folders below the root; the blocks' sections (`all`: every one); and
/// how many blocks. `file` names the page in panics.
fn regenerated(file: &str, page: &str, depth: usize) -> (String, Vec<Section>, usize) {
    let mut out = String::new();
    let mut rest = page;
    let mut covered = Vec::new();
    let mut blocks = 0;
    while let Some(a) = rest.find(BEGIN) {
        let Some(close) = rest[a..].find("-->").map(|c| a + c + "-->\n".len()) else {
            panic!("{file}: a settings:begin marker is not closed");
        };
        let Some(b) = rest[close..].find(END).map(|b| close + b) else {
            panic!("{file}: a settings:begin marker has no settings:end");
        };
        let spec = rest[a + BEGIN.len()..]
            .split_whitespace()
            .next()
            .unwrap_or("");
        let table = if spec == "all" {
            covered.extend(Section::ALL);
            markdown_all(&Section::ALL)
        } else {
            let sections: Vec<Section> = spec
                .split(',')
                .map(|n| {
                    Section::parse(n).unwrap_or_else(|| panic!("{file}: no settings section `{n}`"))
                })
                .collect();
            covered.extend(&sections);
            markdown(&sections)
        };
        out.push_str(&rest[..close]);
        out.push_str(&relative_to(&table, depth));
        rest = &rest[b..];
        blocks += 1;
    }
    out.push_str(rest);
    (out, covered, blocks)
}

/// Where settings tables may live: README.md and every page of the book
/// (`docs/src/**/*.md`), as paths relative to the repository's root.
fn pages() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
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
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![std::path::PathBuf::from("README.md")];
    walk(&root.join("docs/src"), root, &mut out);
    out
}

/// The settings tables of the README and of the book are this table's:
/// a variable added or changed without them fails here, naming the
/// pages, and `STRANDS_UPDATE_README=1 cargo test --lib readme` rewrites
/// them. Every setting is in some table, and one page holds the
/// reference of every setting (`all`, the book's Settings page).
#[test]
fn readme_and_book_settings_tables_are_generated_from_the_table() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut blocks, mut covered, mut stale, mut has_all) = (0, Vec::new(), Vec::new(), false);
    for rel in pages() {
        let path = root.join(&rel);
        let file = rel.display().to_string();
        let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let depth = rel.components().count() - 1;
        let (want, sections, n) = regenerated(&file, &page, depth);
        blocks += n;
        covered.extend(sections);
        has_all |= page.contains(&format!("{BEGIN}all "));
        if want != page {
            if std::env::var_os("STRANDS_UPDATE_README").is_some() {
                std::fs::write(&path, want).unwrap_or_else(|e| panic!("write {file}: {e}"));
            } else {
                stale.push(file);
            }
        }
    }
    assert!(
        blocks >= 2,
        "README.md and docs/src have no settings tables (markers)"
    );
    assert!(
        has_all,
        "no page holds the reference of every setting (`settings:begin all`)"
    );
    for v in VARS {
        assert!(
            covered.contains(&v.section),
            "{} (section {}) is in no settings table of README.md or docs/src",
            v.name,
            v.section.name()
        );
    }
    assert!(
        stale.is_empty(),
        "the settings tables of {} are not config::vars::VARS's; \
         regenerate them: STRANDS_UPDATE_README=1 cargo test --lib readme",
        stale.join(", ")
    );
}

#[test]
fn the_markdown_names_flags_and_hides_nothing_it_should_show() {
    let md = markdown(&[Section::Serve]);
    assert!(md.contains("| `STRANDS_BIND` (`--bind`) | address | `127.0.0.1:3000` |"));
    assert!(!md.contains("SLACK_BOT_TOKEN"));
    let md = markdown(&[Section::Slack]);
    assert!(md.contains("| `SLACK_BOT_TOKEN` | secret | — |"), "{md}");
}
