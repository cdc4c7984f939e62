//! No file needs a file that needs it back: the rule, and what counts as a
//! need, are in the parent module's doc comment.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::{copy_tree, scrub, sources};

/// A token of scrubbed code: a name, `::`, or any other character.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Colons,
    Punct(char),
}

/// The tokens of `code` (comments and literals already blanked), each
/// with its line.
fn tokens(code: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let from = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Name(c[from..i].iter().collect()), line));
        } else if ch.is_ascii_digit() {
            // A number (`0x1f`, `1_000u64`) names nothing.
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Colons, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// One path a `use` brings in: `name` is what it is called here (`None`
/// for a glob, or `as _`).
#[derive(Debug, Clone)]
struct UsePath {
    segs: Vec<String>,
    name: Option<String>,
    glob: bool,
    /// A re-export (`pub use`, `pub(crate) use`, …).
    public: bool,
    line: usize,
}

/// A module as the scan saw it: a file's, or an inline `mod name { … }`.
#[derive(Debug, Default)]
struct ModScan {
    /// The file it is written in, relative to the crate (`src/…`).
    file: String,
    /// Inside a `#[cfg(test)] mod … { … }` of its file.
    inline_test: bool,
    /// Child modules (`mod name;` and `mod name { … }`).
    children: HashSet<String>,
    /// Children declared `#[cfg(test)] mod name;`: test module files.
    test_children: HashSet<String>,
    uses: Vec<UsePath>,
    /// Names of the items defined here (fn, struct, enum, trait, type,
    /// const, static, union, macro).
    defs: HashSet<String>,
    /// Paths in code (`a::b::c`), with their lines.
    paths: Vec<(Vec<String>, usize)>,
    /// Every name used in code, outside `use` declarations.
    names: HashSet<String>,
}

/// Every module of a crate's `src/`, by its path from the crate root.
#[derive(Default)]
struct CrateScan {
    modules: HashMap<Vec<String>, ModScan>,
}

/// `(from, to, "file:line: path")`: `from` needs `to`.
type Edge = (String, String, String);

const ITEM_KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

/// The module path of a file of `src/` (`slack/app.rs` → `slack::app`);
/// `None` for the binary's root.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let mut segs: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match segs.last().map(String::as_str) {
        Some("main") if segs.len() == 1 => return None,
        Some("lib") if segs.len() == 1 => segs.clear(),
        Some("mod") => {
            segs.pop();
        }
        _ => {}
    }
    Some(segs)
}

/// Whether the token before `i` ends a `#[cfg(test)]` (visibility and
/// other attributes in between allowed).
fn after_cfg_test(t: &[(Tok, usize)], i: usize) -> bool {
    let mut j = i;
    let back_over_group = |j: usize, open: char, close: char| -> Option<usize> {
        // t[j - 1] is `close`: the index of its `open`.
        let mut depth = 0;
        let mut k = j;
        while k > 0 {
            k -= 1;
            match t[k].0 {
                Tok::Punct(c) if c == close => depth += 1,
                Tok::Punct(c) if c == open => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k);
                    }
                }
                _ => {}
            }
        }
        None
    };
    // `pub`, `pub(crate)`, `pub(super)`, `pub(in …)`
    if j > 0 && t[j - 1].0 == Tok::Punct(')') {
        if let Some(k) = back_over_group(j, '(', ')') {
            if k > 0 && t[k - 1].0 == Tok::Name("pub".into()) {
                j = k - 1;
            }
        }
    } else if j > 0 && t[j - 1].0 == Tok::Name("pub".into()) {
        j -= 1;
    }
    while j > 0 && t[j - 1].0 == Tok::Punct(']') {
        let Some(open) = back_over_group(j, '[', ']') else {
            return false;
        };
        let inner: Vec<&Tok> = t[open + 1..j - 1].iter().map(|x| &x.0).collect();
        let cfg_test = [
            Tok::Name("cfg".into()),
            Tok::Punct('('),
            Tok::Name("test".into()),
            Tok::Punct(')'),
        ];
        if inner.len() == 4 && inner.iter().zip(&cfg_test).all(|(a, b)| *a == b) {
            return true;
        }
        j = open;
        if j > 0 && t[j - 1].0 == Tok::Punct('!') {
            j -= 1;
        }
        if j > 0 && t[j - 1].0 == Tok::Punct('#') {
            j -= 1;
        } else {
            return false;
        }
    }
    false
}

/// Whether the `use` at `i` is a re-export (`pub use`, `pub(…) use`).
fn is_public(t: &[(Tok, usize)], i: usize) -> bool {
    if i == 0 {
        return false;
    }
    if t[i - 1].0 == Tok::Name("pub".into()) {
        return true;
    }
    if t[i - 1].0 == Tok::Punct(')') {
        let mut k = i - 1;
        while k > 0 && t[k].0 != Tok::Punct('(') {
            k -= 1;
        }
        return k > 0 && t[k - 1].0 == Tok::Name("pub".into());
    }
    false
}

/// Reads the use tree at `t[*i]` (after `use`), below `prefix`, into `out`.
fn use_tree(t: &[(Tok, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<UsePath>) {
    let mut segs = prefix.to_vec();
    loop {
        let Some((tok, line)) = t.get(*i) else { return };
        match tok {
            Tok::Colons => *i += 1, // `use ::x`
            Tok::Name(s) => {
                segs.push(s.clone());
                *i += 1;
                if t.get(*i).map(|x| &x.0) == Some(&Tok::Colons) {
                    *i += 1;
                    continue;
                }
                let mut name = segs.last().cloned();
                if t.get(*i).map(|x| &x.0) == Some(&Tok::Name("as".into())) {
                    name = match t.get(*i + 1) {
                        Some((Tok::Name(n), _)) if n != "_" => Some(n.clone()),
                        _ => None,
                    };
                    *i += 2;
                }
                // `a::{self, …}`: `a` itself.
                if segs.last().map(String::as_str) == Some("self") {
                    segs.pop();
                    if name.as_deref() == Some("self") {
                        name = segs.last().cloned();
                    }
                }
                out.push(UsePath {
                    segs,
                    name,
                    glob: false,
                    public: false,
                    line: *line,
                });
                return;
            }
            Tok::Punct('*') => {
                *i += 1;
                out.push(UsePath {
                    segs,
                    name: None,
                    glob: true,
                    public: false,
                    line: *line,
                });
                return;
            }
            Tok::Punct('{') => {
                *i += 1;
                loop {
                    match t.get(*i).map(|x| &x.0) {
                        None => return,
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        Some(_) => {
                            let before = *i;
                            use_tree(t, i, &segs, out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            _ => return,
        }
    }
}

impl CrateScan {
    /// Reads every `.rs` file under `src`.
    fn read(src: &Path) -> CrateScan {
        let mut files = Vec::new();
        sources(src, &mut files);
        files.sort();
        let mut scan = CrateScan::default();
        for file in &files {
            let rel = file.strip_prefix(src).expect("under src");
            let Some(module) = module_of(rel) else {
                continue;
            };
            let text = std::fs::read_to_string(file).expect("read a source file");
            let shown = format!("src/{}", rel.display());
            scan.file(&shown, module, &scrub(&text, true));
        }
        scan
    }

    fn module(&mut self, path: &[String]) -> &mut ModScan {
        self.modules.entry(path.to_vec()).or_default()
    }

    /// Reads one file, module `base`.
    fn file(&mut self, shown: &str, base: Vec<String>, code: &str) {
        let t = tokens(code);
        self.module(&base).file = shown.to_string();
        // Open inline modules: (path, test, the depth its `}` returns to).
        let mut open: Vec<(Vec<String>, bool, usize)> = vec![(base, false, usize::MAX)];
        let mut depth = 0usize;
        let mut i = 0;
        while i < t.len() {
            let (here, test, closes) = open.last().cloned().expect("the file's module");
            // The depth of this module's own items (not those of an impl,
            // a trait or a function body).
            let items_at = if closes == usize::MAX { 0 } else { closes + 1 };
            let line = t[i].1;
            match &t[i].0 {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if open.len() > 1 && open.last().is_some_and(|o| o.2 == depth) {
                        open.pop();
                    }
                }
                Tok::Name(w) if w == "use" => {
                    let public = is_public(&t, i);
                    let mut found = Vec::new();
                    i += 1;
                    use_tree(&t, &mut i, &[], &mut found);
                    while i < t.len() && t[i].0 != Tok::Punct(';') {
                        i += 1;
                    }
                    let m = self.module(&here);
                    m.uses
                        .extend(found.into_iter().map(|u| UsePath { public, ..u }));
                }
                Tok::Name(w) if w == "mod" => {
                    if let Some((Tok::Name(name), _)) = t.get(i + 1) {
                        let cfg_test = after_cfg_test(&t, i);
                        let name = name.clone();
                        let mut path = here.clone();
                        path.push(name.clone());
                        match t.get(i + 2).map(|x| &x.0) {
                            Some(Tok::Punct(';')) => {
                                let m = self.module(&here);
                                m.children.insert(name.clone());
                                if cfg_test {
                                    m.test_children.insert(name);
                                }
                            }
                            Some(Tok::Punct('{')) => {
                                self.module(&here).children.insert(name);
                                let file = self.module(&open[0].0).file.clone();
                                let m = self.module(&path);
                                m.file = file;
                                m.inline_test = test || cfg_test;
                                open.push((path, test || cfg_test, depth));
                                depth += 1;
                                i += 3;
                                continue;
                            }
                            _ => {}
                        }
                    }
                }
                Tok::Name(w) => {
                    let defines = ITEM_KEYWORDS.contains(&w.as_str())
                        || (w == "macro_rules"
                            && t.get(i + 1).map(|x| &x.0) == Some(&Tok::Punct('!')));
                    let at = if w == "macro_rules" { i + 2 } else { i + 1 };
                    let defined = match t.get(at) {
                        Some((Tok::Name(n), _))
                            if defines && !ITEM_KEYWORDS.contains(&n.as_str()) =>
                        {
                            Some(n.clone())
                        }
                        _ => None,
                    };
                    // A path starts here: `a::b…`, not the tail of one.
                    let starts = t.get(i + 1).map(|x| &x.0) == Some(&Tok::Colons)
                        && (i == 0 || t[i - 1].0 != Tok::Colons);
                    let mut segs = vec![w.clone()];
                    if starts {
                        let mut j = i + 1;
                        while t.get(j).map(|x| &x.0) == Some(&Tok::Colons) {
                            match t.get(j + 1) {
                                Some((Tok::Name(n), _)) => segs.push(n.clone()),
                                _ => break,
                            }
                            j += 2;
                        }
                    }
                    let m = self.module(&here);
                    m.names.insert(w.clone());
                    if depth == items_at {
                        m.defs.extend(defined);
                    }
                    if starts && segs.len() > 1 {
                        m.paths.push((segs, line));
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Whether module `path` is (in) a test module file.
    fn in_test_file(&self, path: &[String]) -> bool {
        (1..=path.len()).any(|k| {
            self.modules
                .get(&path[..k - 1])
                .is_some_and(|m| m.test_children.contains(&path[k - 1]))
        })
    }

    /// The node of a module: its file, or its file's tests (an inline
    /// `#[cfg(test)]` module of a file that is not all tests).
    fn node(&self, path: &[String]) -> String {
        let m = &self.modules[path];
        if m.inline_test && !self.in_test_file(path) {
            format!("{} (tests)", m.file)
        } else {
            m.file.clone()
        }
    }

    /// `segs`, a path written in module `scope`, from the crate root;
    /// `None` for what is outside the crate (std, dependencies, a local
    /// type's `Self::`).
    fn absolute(&self, scope: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 8 || segs.is_empty() {
            return None;
        }
        let join = |base: &[String], rest: &[String]| -> Vec<String> {
            base.iter().chain(rest).cloned().collect()
        };
        match segs[0].as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some(join(scope, &segs[1..])),
            "super" => {
                let mut base = scope.to_vec();
                let mut k = 0;
                while segs.get(k).map(String::as_str) == Some("super") {
                    base.pop()?;
                    k += 1;
                }
                Some(join(&base, &segs[k..]))
            }
            first => {
                let m = self.modules.get(scope)?;
                if m.children.contains(first) || m.defs.contains(first) {
                    return Some(join(scope, segs));
                }
                let named = m
                    .uses
                    .iter()
                    .find(|u| !u.glob && u.name.as_deref() == Some(first));
                if let Some(u) = named {
                    let target = self.absolute(scope, &u.segs, depth + 1)?;
                    return Some(join(&target, &segs[1..]));
                }
                // A name a glob brings (`use super::*` in tests).
                for u in m.uses.iter().filter(|u| u.glob) {
                    let Some(target) = self.absolute(scope, &u.segs, depth + 1) else {
                        continue;
                    };
                    let brings = self.modules.get(&target).is_some_and(|t| {
                        t.children.contains(first)
                            || t.defs.contains(first)
                            || t.uses.iter().any(|u| u.name.as_deref() == Some(first))
                    });
                    if brings && target != scope {
                        return self.absolute(&target, segs, depth + 1);
                    }
                }
                None
            }
        }
    }

    /// The module that defines what `path` (from the crate root) names,
    /// through `use`s and re-exports; the module itself when it names one.
    fn resolve(&self, path: &[String], depth: usize) -> Option<Vec<String>> {
        let k = (0..=path.len())
            .rev()
            .find(|k| self.modules.contains_key(&path[..*k]))?;
        let here = path[..k].to_vec();
        if k == path.len() || depth > 8 {
            return Some(here);
        }
        let m = &self.modules[&here];
        let name = &path[k];
        if m.defs.contains(name) {
            return Some(here);
        }
        if let Some(u) = m
            .uses
            .iter()
            .find(|u| !u.glob && u.name.as_ref() == Some(name))
        {
            // Imported or re-exported here: where it comes from (outside
            // the crate: nowhere in it).
            let mut from = self.absolute(&here, &u.segs, 0)?;
            from.extend(path[k + 1..].iter().cloned());
            return self.resolve(&from, depth + 1);
        }
        for u in m.uses.iter().filter(|u| u.glob) {
            let Some(target) = self.absolute(&here, &u.segs, 0) else {
                continue;
            };
            let brings = self.modules.get(&target).is_some_and(|t| {
                t.defs.contains(name) || t.uses.iter().any(|u| u.name.as_ref() == Some(name))
            });
            if brings && target != here {
                let mut from = target;
                from.extend(path[k..].iter().cloned());
                return self.resolve(&from, depth + 1);
            }
        }
        Some(here)
    }

    /// Which file needs which, and where it says so.
    fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        let mut scopes: Vec<&Vec<String>> = self.modules.keys().collect();
        scopes.sort();
        for scope in scopes {
            let m = &self.modules[scope];
            if m.file.is_empty() {
                continue; // declared, never read (`#[path]`, another crate)
            }
            let from = self.node(scope);
            // The files of the modules this one is inside.
            let above: Vec<&String> = (0..scope.len())
                .filter_map(|k| self.modules.get(&scope[..k]))
                .map(|m| &m.file)
                .filter(|f| **f != m.file)
                .collect();
            let mut add = |target: Option<Vec<String>>, line: usize, segs: &[String]| {
                let Some(target) = target else { return };
                if !self.modules.contains_key(&target) || self.modules[&target].file.is_empty() {
                    return;
                }
                // A module is written inside its ancestors' files: what it
                // takes from them is its surroundings, not an import.
                if above.contains(&&self.modules[&target].file) {
                    return;
                }
                let to = self.node(&target);
                if to != from {
                    let at = format!("{}:{line}: {}", m.file, segs.join("::"));
                    edges.push((from.clone(), to, at));
                }
            };
            for u in &m.uses {
                let Some(path) = self.absolute(scope, &u.segs, 0) else {
                    continue;
                };
                if u.public {
                    // A re-export passes a name through; it is a need only
                    // where this module's own code uses the name.
                    let used = match &u.name {
                        Some(n) => m.names.contains(n),
                        None => self
                            .modules
                            .get(&path)
                            .is_some_and(|t| t.defs.iter().any(|d| m.names.contains(d))),
                    };
                    if !used {
                        continue;
                    }
                }
                if !u.glob && self.modules.contains_key(&path) {
                    // `use super::blocks;`: the paths through it are needs,
                    // the module's name alone is none.
                    continue;
                }
                add(self.resolve(&path, 0), u.line, &u.segs);
            }
            for (segs, line) in &m.paths {
                let target = self
                    .absolute(scope, segs, 0)
                    .and_then(|p| self.resolve(&p, 0));
                add(target, *line, segs);
            }
        }
        edges.sort();
        edges.dedup();
        edges
    }
}

/// The strongly connected sets of files of `edges` (two or more files
/// that each need, directly or through others, every other), each with
/// the edges inside it; sorted.
fn cycles(edges: &[Edge]) -> Vec<(Vec<String>, Vec<String>)> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    for (a, b, _) in edges {
        for n in [a.as_str(), b.as_str()] {
            if !index.contains_key(n) {
                index.insert(n, names.len());
                names.push(n);
            }
        }
    }
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (a, b, _) in edges {
        next[index[a.as_str()]].push(index[b.as_str()]);
    }
    // Tarjan's algorithm.
    struct Walk<'a> {
        next: &'a [Vec<usize>],
        counter: usize,
        order: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        sets: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk, v: usize) {
        w.order[v] = Some(w.counter);
        w.low[v] = w.counter;
        w.counter += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for k in 0..w.next[v].len() {
            let u = w.next[v][k];
            match w.order[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(o) if w.on_stack[u] => w.low[v] = w.low[v].min(o),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.order[v] {
            let mut set = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                set.push(u);
                if u == v {
                    break;
                }
            }
            if set.len() > 1 {
                w.sets.push(set);
            }
        }
    }
    let mut w = Walk {
        next: &next,
        counter: 0,
        order: vec![None; names.len()],
        low: vec![0; names.len()],
        stack: Vec::new(),
        on_stack: vec![false; names.len()],
        sets: Vec::new(),
    };
    for v in 0..names.len() {
        if w.order[v].is_none() {
            visit(&mut w, v);
        }
    }
    let mut out: Vec<(Vec<String>, Vec<String>)> = w
        .sets
        .iter()
        .map(|set| {
            let mut files: Vec<String> = set.iter().map(|&v| names[v].to_string()).collect();
            files.sort();
            let inside: Vec<String> = edges
                .iter()
                .filter(|(a, b, _)| files.contains(a) && files.contains(b))
                .map(|(_, b, at)| format!("{at} → {b}"))
                .collect();
            (files, inside)
        })
        .collect();
    out.sort();
    out
}

/// Each cycle between the files of `src`, as a report naming its files
/// and the imports that close it.
fn import_cycles(src: &Path) -> Vec<String> {
    let scan = CrateScan::read(src);
    cycles(&scan.edges())
        .into_iter()
        .map(|(files, inside)| {
            format!(
                "these files need each other: {}\n    {}",
                files.join(", "),
                inside.join("\n    ")
            )
        })
        .collect()
}

#[test]
fn no_file_needs_a_file_that_needs_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let scan = CrateScan::read(&src);
    let edges = scan.edges();
    assert!(
        edges.len() > 1000,
        "the scan found the files' imports ({})",
        edges.len()
    );
    let found = import_cycles(&src);
    assert!(
        found.is_empty(),
        "{} import cycles:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_cycle_rule_reads_needs_not_the_module_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    for sub in ["p", "q"] {
        std::fs::create_dir_all(src.join(sub)).expect("mkdir");
    }
    let write = |f: &str, text: &str| std::fs::write(src.join(f), text).expect("write");
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod p;\npub mod q;\n",
    );
    // Two files that need each other, one by `use`, one by a path.
    write("a.rs", "use super::b::B;\npub struct A(B);\n");
    write(
        "b.rs",
        "pub struct B;\npub fn f() -> crate::a::A {\n    todo!()\n}\n",
    );
    // Comments and strings name nothing; tests need what they test, and
    // nothing needs them.
    write(
        "c.rs",
        "// use crate::d::D;\npub const S: &str = \"crate::d::D\";\npub struct C;\n\
         #[cfg(test)]\nmod tests {\n    use crate::d::D;\n}\n",
    );
    write("d.rs", "use crate::c::C;\npub struct D(C);\n");
    // A module and its part: the parent uses the child's item, the child
    // its parent's (its surroundings): no cycle.
    write(
        "p.rs",
        "mod child;\npub use child::C;\npub struct P;\nfn make() -> child::C {\n    child::C::new()\n}\n",
    );
    write("p/child.rs", "use super::P;\npub struct C(P);\n");
    // Through a re-export the need is on the file that defines the item:
    // `y` needs `x`, not `q`.
    write("q.rs", "mod x;\nmod y;\npub use x::X;\n");
    write("q/x.rs", "use super::y::Y;\npub struct X(Y);\n");
    write("q/y.rs", "use super::X;\npub struct Y;\nfn f(_: X) {}\n");
    let found = import_cycles(&src);
    assert_eq!(found.len(), 2, "{}", found.join("\n"));
    assert!(
        found[0].contains("src/a.rs, src/b.rs")
            && found[0].contains("src/a.rs:1: super::b::B → src/b.rs")
            && found[0].contains("src/b.rs:2: crate::a::A → src/a.rs"),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("src/q/x.rs, src/q/y.rs")
            && found[1].contains("src/q/y.rs:1: super::X → src/q/x.rs"),
        "{}",
        found[1]
    );
}

#[test]
fn a_back_import_in_the_real_tree_is_a_cycle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &src);
    // Each part of a door needs its state, and the state none of them: a
    // state that takes a part back closes a circle.
    let back = [
        (
            "slack/app.rs",
            "use super::decide::take;",
            "src/slack/decide.rs",
        ),
        (
            "slack/blocks/escape.rs",
            "use super::filters::sandbox;",
            "src/slack/blocks/filters.rs",
        ),
        (
            "teams/room.rs",
            "use super::timers::remind;",
            "src/teams/timers.rs",
        ),
    ];
    for (file, line, _) in back {
        let path = src.join(file);
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, format!("{text}\n{line}\n")).expect("write");
    }
    let found = import_cycles(&src);
    for (file, line, other) in back {
        let file = format!("src/{file}");
        assert!(
            found.iter().any(|c| {
                let files = c.lines().next().unwrap_or_default();
                files.contains(&file)
                    && files.contains(other)
                    && c.contains(line.trim_start_matches("use ").trim_end_matches(';'))
            }),
            "`{line}` in {file} closes no cycle with {other}:\n{}",
            found.join("\n")
        );
    }
}
