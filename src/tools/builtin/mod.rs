//! The built-in tools: `http_request`, `file_read`, `file_write`,
//! `list_files`, `delete_files` and `shell`, and strands-cli's native tools:
//! `current_time`, `calculator`, `web_fetch`, `grep`, `head`, `tail`,
//! `search`, `duckduckgo_search` and `tavily_search`.
//!
//! This module is the tools' face to the rest of strands: the [`Builtin`]
//! enum, each tool's name, description and JSON schema, whether a call
//! changes state, its default risk, the one line a human approves, and the
//! dispatch of a call to the code that runs it. That code lives next door:
//! `http` (`http_request` and the redirect-following machinery it shares
//! with [`super::http_executor`]), `fs` (the workspace and the file tools),
//! `shell`, `text` (the helpers that keep results short and readable), and
//! for the native tools `clock`, `calc`, `lines` (`grep`, `head`, `tail`,
//! `search`, confined to the workspace like the file tools), `web`
//! (`web_fetch`) and `websearch` (DuckDuckGo and Tavily). The native tools
//! describe their own schemas there, with strands-cli's argument names.
//!
//! It does not decide whether a call may run or who approves it: the engine
//! does that from [`Builtin::changes_state`] and [`Builtin::meta`] and the
//! spec's policy; a call that reaches [`Builtin::run`] runs.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Grant, Risk, ToolEnv, ToolMeta, ToolResult};
use crate::provider::ToolSpec;

mod calc;
mod clock;
mod fs;
mod http;
mod lines;
mod shell;
mod text;
mod verify;
mod web;
mod websearch;

#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
mod testing;

pub use fs::MAX_LIST_ENTRIES;
pub use http::{HTTP_METHODS, MAX_REDIRECTS};
pub use shell::{MAX_SHELL_TIMEOUT_SECS, SHELL_DISABLED};
pub use websearch::{SearchSettings, TAVILY_KEY_MISSING};

pub(crate) use http::{
    body_size, header_names, headers_schema, is_web_url, method_changes_state, model_headers,
    parse_method, send, HttpCall,
};
#[cfg(test)]
pub(crate) use testing::loopback_allowed;
pub(crate) use text::{effective_timeout, human_duration, human_size, lossy_text, short, short_n};

use fs::{blocking, delete_files, file_read, file_write, list_files};
use http::{http_line, http_request, method_schema};
use shell::shell;
use text::list_cut;

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    HttpRequest,
    FileRead,
    FileWrite,
    ListFiles,
    DeleteFiles,
    Shell,
    CurrentTime,
    Calculator,
    WebFetch,
    Grep,
    Head,
    Tail,
    Search,
    DuckduckgoSearch,
    TavilySearch,
    SpecVerify,
}

impl Builtin {
    pub const ALL: [Builtin; 16] = [
        Builtin::HttpRequest,
        Builtin::FileRead,
        Builtin::FileWrite,
        Builtin::ListFiles,
        Builtin::DeleteFiles,
        Builtin::Shell,
        Builtin::CurrentTime,
        Builtin::Calculator,
        Builtin::WebFetch,
        Builtin::Grep,
        Builtin::Head,
        Builtin::Tail,
        Builtin::Search,
        Builtin::DuckduckgoSearch,
        Builtin::TavilySearch,
        Builtin::SpecVerify,
    ];

    /// The built-in called `name` (`http_request`, `file_read`, …).
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name() == name)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Builtin::HttpRequest => "http_request",
            Builtin::FileRead => "file_read",
            Builtin::FileWrite => "file_write",
            Builtin::ListFiles => "list_files",
            Builtin::DeleteFiles => "delete_files",
            Builtin::Shell => "shell",
            Builtin::CurrentTime => "current_time",
            Builtin::Calculator => "calculator",
            Builtin::WebFetch => "web_fetch",
            Builtin::Grep => "grep",
            Builtin::Head => "head",
            Builtin::Tail => "tail",
            Builtin::Search => "search",
            Builtin::DuckduckgoSearch => "duckduckgo_search",
            Builtin::TavilySearch => "tavily_search",
            Builtin::SpecVerify => "spec_verify",
        }
    }

    /// Name, description and JSON schema offered to the model.
    pub fn spec(&self) -> ToolSpec {
        let (description, parameters) = match self {
            Builtin::HttpRequest => (
                "Send an HTTP request to an http:// or https:// URL. Returns the status, a summary \
                 of the response headers and the response body (long bodies are cut, saying how \
                 much). Up to 5 redirects are followed. GET and HEAD only read; other methods may \
                 change state on the server and may need a human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "method": method_schema("The HTTP method."),
                        "url": {
                            "type": "string",
                            "description": "Absolute http:// or https:// URL, query string included."
                        },
                        "headers": headers_schema("Request headers, name to value."),
                        "body": {
                            "type": "string",
                            "description": "Request body, sent as given (set a Content-Type header to match)."
                        }
                    },
                    "required": ["method", "url"],
                    "additionalProperties": false
                }),
            ),
            Builtin::FileRead => (
                "Read a text file in the workspace and return its content (invalid UTF-8 is \
                 replaced; long files are cut, saying how much).",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("File path relative to the workspace, e.g. `notes/todo.md`.")
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }),
            ),
            Builtin::FileWrite => (
                "Write text to a file in the workspace, creating it and any missing parent \
                 directories. Replaces the file's content unless `append` is true. May need a \
                 human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("File path relative to the workspace, e.g. `reports/q3.md`."),
                        "content": {"type": "string", "description": "The text to write."},
                        "append": {
                            "type": "boolean",
                            "description": "Add to the end of the file instead of replacing it (default false)."
                        }
                    },
                    "required": ["path", "content"],
                    "additionalProperties": false
                }),
            ),
            Builtin::ListFiles => (
                "List the files and directories at a path in the workspace. Entries are relative \
                 to the workspace; directories end with `/`, symbolic links with `@` (not \
                 followed). At most 1000 entries are returned.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": path_schema("Directory relative to the workspace (default `.`, the workspace itself)."),
                        "recursive": {
                            "type": "boolean",
                            "description": "Also list the contents of subdirectories (default false)."
                        }
                    },
                    "additionalProperties": false
                }),
            ),
            Builtin::DeleteFiles => (
                "Delete files or directories in the workspace. Deletion cannot be undone and \
                 may need a human's approval first. Returns, per path, whether it was deleted. \
                 A directory that is not empty is deleted only with `recursive: true`.",
                json!({
                    "type": "object",
                    "properties": {
                        "paths": {
                            "type": "array",
                            "items": path_schema("Path relative to the workspace."),
                            "minItems": 1,
                            "description": "Paths to delete, relative to the workspace."
                        },
                        "recursive": {
                            "type": "boolean",
                            "description": "Delete directories together with their contents (default false)."
                        }
                    },
                    "required": ["paths"],
                    "additionalProperties": false
                }),
            ),
            Builtin::Shell => (
                "Run a shell command with `sh -c` in the workspace directory. Returns the exit \
                 code, stdout and stderr (long output is cut). The command is killed when it \
                 runs out of time. Needs a human's approval first.",
                json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command line, e.g. `ls -la`."},
                        "timeout_seconds": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MAX_SHELL_TIMEOUT_SECS,
                            "description": "Time limit in seconds (default: the workflow's tool time limit)."
                        }
                    },
                    "required": ["command"],
                    "additionalProperties": false
                }),
            ),
            Builtin::CurrentTime => clock::spec(),
            Builtin::Calculator => calc::spec(),
            Builtin::SpecVerify => verify::spec(),
            Builtin::WebFetch => web::spec(),
            Builtin::Grep => lines::grep_spec(),
            Builtin::Head => lines::head_spec(),
            Builtin::Tail => lines::tail_spec(),
            Builtin::Search => lines::search_spec(),
            Builtin::DuckduckgoSearch => websearch::duckduckgo_spec(),
            Builtin::TavilySearch => websearch::tavily_spec(),
        };
        ToolSpec {
            name: self.name().to_string(),
            description: description.to_string(),
            parameters,
        }
    }

    /// Whether this call changes state: writes, deletes, HTTP methods other
    /// than GET and HEAD (an unreadable method counts as changing), and any
    /// shell command. The native tools only read (a search sends its query
    /// to the search engine, which changes nothing).
    pub fn changes_state(&self, args: &Value) -> bool {
        match self {
            Builtin::HttpRequest => {
                method_changes_state(str_arg(args, "method").unwrap_or_default())
            }
            Builtin::FileWrite | Builtin::DeleteFiles | Builtin::Shell => true,
            _ => false,
        }
    }

    /// Default reversibility and risk.
    pub fn meta(&self, args: &Value) -> ToolMeta {
        let (reversible, risk) = match self {
            Builtin::HttpRequest => {
                if self.changes_state(args) {
                    (false, Risk::Medium)
                } else {
                    (true, Risk::Low)
                }
            }
            Builtin::FileWrite => (false, Risk::Medium),
            Builtin::DeleteFiles => (false, Risk::High),
            Builtin::Shell => (false, Risk::Critical),
            _ => (true, Risk::Low),
        };
        ToolMeta { reversible, risk }
    }

    /// One line saying what the call would do, e.g.
    /// `DELETE 3 paths in the workspace: a.log, b.log, c.log`.
    pub fn describe(&self, args: &Value) -> String {
        match self {
            Builtin::HttpRequest => {
                let method = str_arg(args, "method").unwrap_or("?").to_ascii_uppercase();
                let url = str_arg(args, "url").unwrap_or("?");
                let mut extras = Vec::new();
                if let Some(body) = str_arg(args, "body") {
                    extras.push(body_size(body.len()));
                }
                if let Some(names) = header_names(args.get("headers")) {
                    extras.push(names);
                }
                http_line(&method, url, &extras)
            }
            Builtin::FileRead => format!("read {}", short(str_arg(args, "path").unwrap_or("?"))),
            Builtin::FileWrite => {
                let path = short(str_arg(args, "path").unwrap_or("?"));
                let size = human_size(str_arg(args, "content").unwrap_or_default().len() as u64);
                if bool_arg(args, "append") {
                    format!("append {size} to {path}")
                } else {
                    format!("write {size} to {path} (overwrite)")
                }
            }
            Builtin::ListFiles => {
                let path = str_arg(args, "path").unwrap_or(".");
                let place = if matches!(path.trim(), "" | "." | "./") {
                    "the workspace".to_string()
                } else {
                    short(path)
                };
                let rec = if bool_arg(args, "recursive") {
                    " (recursive)"
                } else {
                    ""
                };
                format!("list files in {place}{rec}")
            }
            Builtin::DeleteFiles => {
                let paths: Vec<String> = args
                    .get("paths")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .map(|p| p.as_str().map(short).unwrap_or_else(|| "?".into()))
                            .collect()
                    })
                    .unwrap_or_default();
                let n = paths.len();
                let noun = if n == 1 { "path" } else { "paths" };
                let rec = if bool_arg(args, "recursive") {
                    " (recursive)"
                } else {
                    ""
                };
                format!(
                    "DELETE {n} {noun} in the workspace{rec}: {}",
                    list_cut(&paths, 5)
                )
            }
            Builtin::Shell => {
                let cmd = short_n(str_arg(args, "command").unwrap_or("?"), 200);
                match args.get("timeout_seconds").and_then(Value::as_u64) {
                    Some(t) => format!("run shell command: {cmd} (time limit {t}s)"),
                    None => format!("run shell command: {cmd}"),
                }
            }
            Builtin::CurrentTime => clock::describe(args),
            Builtin::Calculator => calc::describe(args),
            Builtin::SpecVerify => verify::describe(args),
            Builtin::WebFetch => web::describe(args),
            Builtin::Grep => lines::describe_grep(args),
            Builtin::Head => lines::describe_head(args, false),
            Builtin::Tail => lines::describe_head(args, true),
            Builtin::Search => lines::describe_search(args),
            Builtin::DuckduckgoSearch => websearch::describe("DuckDuckGo", args),
            Builtin::TavilySearch => websearch::describe("Tavily", args),
        }
    }

    /// Runs the call. Never panics; failures are error results.
    pub async fn run(&self, args: &Value, env: &ToolEnv, grant: Grant) -> ToolResult {
        match self {
            Builtin::HttpRequest => http_request(args, env, grant).await,
            Builtin::FileRead => {
                let Some(path) = str_arg(args, "path").map(str::to_string) else {
                    return ToolResult::error("missing `path`");
                };
                blocking(env, move |ws, env| file_read(ws, &path, env.max_bytes)).await
            }
            Builtin::FileWrite => {
                let (Some(path), Some(content)) = (str_arg(args, "path"), str_arg(args, "content"))
                else {
                    return ToolResult::error("missing `path` or `content`");
                };
                let (path, content) = (path.to_string(), content.to_string());
                let append = bool_arg(args, "append");
                blocking(env, move |ws, _| file_write(ws, &path, &content, append)).await
            }
            Builtin::ListFiles => {
                let path = str_arg(args, "path").unwrap_or(".").to_string();
                let recursive = bool_arg(args, "recursive");
                blocking(env, move |ws, _| list_files(ws, &path, recursive)).await
            }
            Builtin::DeleteFiles => {
                let Some(paths) = args.get("paths").and_then(Value::as_array) else {
                    return ToolResult::error("missing `paths`");
                };
                let Some(paths) = paths
                    .iter()
                    .map(|p| p.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                else {
                    return ToolResult::error("`paths` must be strings");
                };
                if paths.is_empty() {
                    return ToolResult::error("`paths` is empty: name at least one path");
                }
                let recursive = bool_arg(args, "recursive");
                blocking(env, move |ws, _| delete_files(ws, &paths, recursive)).await
            }
            Builtin::Shell => shell(args, env).await,
            Builtin::CurrentTime => clock::run(args, env.clock.now()),
            Builtin::Calculator => calc::run(args),
            Builtin::SpecVerify => verify::run(args),
            Builtin::WebFetch => web::web_fetch(args, env, grant).await,
            Builtin::Grep | Builtin::Head | Builtin::Tail | Builtin::Search => {
                let (tool, args) = (*self, args.clone());
                blocking(env, move |ws, env| match tool {
                    Builtin::Grep => lines::grep(ws, &args, env.max_bytes),
                    Builtin::Search => lines::search(ws, &args, env.max_bytes),
                    _ => lines::head_or_tail(ws, &args, tool == Builtin::Tail, env.max_bytes),
                })
                .await
            }
            Builtin::DuckduckgoSearch => websearch::duckduckgo(args, env, &env.search).await,
            Builtin::TavilySearch => websearch::tavily(args, env, &env.search).await,
        }
    }
}

// ---------------------------------------------------------------------------
// Argument helpers.

pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn bool_arg(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn path_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::schema;

    // -- names, specs, metadata ------------------------------------------

    #[test]
    fn names_round_trip() {
        for b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(b));
            assert_eq!(
                serde_json::to_value(b).expect("json"),
                Value::String(b.name().into())
            );
        }
        assert_eq!(Builtin::from_name("rm"), None);
        assert_eq!(Builtin::from_name("Shell"), None);
    }

    #[test]
    fn specs_are_strict_object_schemas() {
        for b in Builtin::ALL {
            let spec = b.spec();
            assert_eq!(spec.name, b.name());
            assert!(spec.description.len() > 40, "{}", spec.name);
            let p = &spec.parameters;
            assert_eq!(p["type"], "object", "{}", spec.name);
            assert_eq!(p["additionalProperties"], false, "{}", spec.name);
            let props = p["properties"].as_object().expect("properties");
            for r in p
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                assert!(
                    props.contains_key(r.as_str().expect("name")),
                    "{}",
                    spec.name
                );
            }
            // Every schema compiles.
            let _ = schema::validate(p, &json!({}));
        }
    }

    #[test]
    fn schemas_reject_bad_arguments() {
        let v = |b: Builtin, args: Value| schema::validate(&b.spec().parameters, &args);
        assert!(v(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "http://x"})
        )
        .is_ok());
        let e = v(Builtin::HttpRequest, json!({"url": "http://x"})).expect_err("missing");
        assert!(e.contains("method"), "{e}");
        let e = v(
            Builtin::HttpRequest,
            json!({"method": "TRACE", "url": "http://x"}),
        )
        .expect_err("enum");
        assert!(e.contains("/method"), "{e}");
        let e = v(
            Builtin::HttpRequest,
            json!({"method": "GET", "url": "http://x", "headers": {"a": 1}}),
        )
        .expect_err("header type");
        assert!(e.contains("/headers/a"), "{e}");
        let e = v(Builtin::FileWrite, json!({"path": "a", "content": 5})).expect_err("type");
        assert!(e.contains("/content"), "{e}");
        let e = v(Builtin::FileRead, json!({"path": "a", "mode": "r"})).expect_err("unknown");
        assert!(e.contains("mode"), "{e}");
        let e = v(Builtin::DeleteFiles, json!({"paths": []})).expect_err("minItems");
        assert!(e.contains("/paths"), "{e}");
        let e = v(
            Builtin::Shell,
            json!({"command": "ls", "timeout_seconds": 1.5}),
        )
        .expect_err("integer");
        assert!(e.contains("/timeout_seconds"), "{e}");
        assert!(v(Builtin::ListFiles, json!({})).is_ok());
    }

    #[test]
    fn state_changes_and_meta() {
        let get = json!({"method": "GET", "url": "http://x"});
        let head = json!({"method": "head", "url": "http://x"});
        let post = json!({"method": "POST", "url": "http://x"});
        assert!(!Builtin::HttpRequest.changes_state(&get));
        assert!(!Builtin::HttpRequest.changes_state(&head));
        assert!(Builtin::HttpRequest.changes_state(&post));
        assert!(
            Builtin::HttpRequest.changes_state(&json!({})),
            "unknown counts as changing"
        );
        let meta = |b: Builtin, a: &Value| {
            let m = b.meta(a);
            (m.reversible, m.risk)
        };
        assert_eq!(meta(Builtin::HttpRequest, &get), (true, Risk::Low));
        assert_eq!(meta(Builtin::HttpRequest, &post), (false, Risk::Medium));
        let none = json!({});
        assert_eq!(meta(Builtin::FileRead, &none), (true, Risk::Low));
        assert_eq!(meta(Builtin::ListFiles, &none), (true, Risk::Low));
        assert_eq!(meta(Builtin::FileWrite, &none), (false, Risk::Medium));
        assert_eq!(meta(Builtin::DeleteFiles, &none), (false, Risk::High));
        assert_eq!(meta(Builtin::Shell, &none), (false, Risk::Critical));
        assert!(!Builtin::FileRead.changes_state(&none));
        assert!(!Builtin::ListFiles.changes_state(&none));
        assert!(Builtin::FileWrite.changes_state(&none));
        assert!(Builtin::DeleteFiles.changes_state(&none));
        assert!(Builtin::Shell.changes_state(&json!({"command": "true"})));
    }

    #[test]
    fn describe_each_tool() {
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({"paths": ["a.log", "b.log", "c.log"]})),
            "DELETE 3 paths in the workspace: a.log, b.log, c.log"
        );
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({"paths": ["build"], "recursive": true})),
            "DELETE 1 path in the workspace (recursive): build"
        );
        let many: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert_eq!(
            Builtin::DeleteFiles.describe(&json!({ "paths": many })),
            "DELETE 8 paths in the workspace: f0, f1, f2, f3, f4 and 3 more"
        );
        assert_eq!(
            Builtin::HttpRequest.describe(&json!({
                "method": "POST", "url": "https://api.example.com/pay", "body": "x".repeat(124)
            })),
            "POST https://api.example.com/pay (124-byte body)"
        );
        assert_eq!(
            Builtin::HttpRequest.describe(&json!({
                "method": "GET", "url": "https://e.com/", "headers": {"Accept": "text/html"}
            })),
            "GET https://e.com/ (headers: Accept)"
        );
        assert_eq!(
            Builtin::FileWrite
                .describe(&json!({"path": "reports/q3.md", "content": "x".repeat(2150)})),
            "write 2.1 KB to reports/q3.md (overwrite)"
        );
        assert_eq!(
            Builtin::FileWrite
                .describe(&json!({"path": "log.txt", "content": "hi\n", "append": true})),
            "append 3 bytes to log.txt"
        );
        assert_eq!(
            Builtin::FileRead.describe(&json!({"path": "notes/todo.md"})),
            "read notes/todo.md"
        );
        assert_eq!(
            Builtin::ListFiles.describe(&json!({})),
            "list files in the workspace"
        );
        assert_eq!(
            Builtin::ListFiles.describe(&json!({"path": "src", "recursive": true})),
            "list files in src (recursive)"
        );
        assert_eq!(
            Builtin::Shell.describe(&json!({"command": "rm -rf build"})),
            "run shell command: rm -rf build"
        );
        assert_eq!(
            Builtin::Shell.describe(&json!({"command": "make\nmake test", "timeout_seconds": 60})),
            "run shell command: make↵make test (time limit 60s)"
        );
        let long = Builtin::Shell.describe(&json!({ "command": "x".repeat(5000) }));
        assert!(long.ends_with('…') && long.chars().count() < 260, "{long}");
        assert_eq!(Builtin::FileRead.describe(&json!({})), "read ?");
    }
}
