//! The file tools' tests: reading, writing, listing and deleting inside
//! the workspace, and every way out of it refused.

use super::super::testing::{call, fixture, outside_untouched};
use super::super::Builtin;
use super::*;
use serde_json::json;

// -- files -----------------------------------------------------------

#[tokio::test]
async fn write_read_append_and_list() {
    let f = fixture();
    assert!(!f.ws().exists());
    let r = call(
        Builtin::FileWrite,
        json!({"path": "reports/q3/summary.md", "content": "hello"}),
        &f.env,
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        r.content,
        "wrote 5 bytes to reports/q3/summary.md (created missing directories)"
    );
    assert!(f.ws().is_dir(), "the workspace is created");
    let r = call(
        Builtin::FileWrite,
        json!({"path": "./reports/q3/summary.md", "content": " world", "append": true}),
        &f.env,
    )
    .await;
    assert_eq!(r.content, "appended 6 bytes to reports/q3/summary.md");
    let r = call(
        Builtin::FileRead,
        json!({"path": "reports/q3/summary.md"}),
        &f.env,
    )
    .await;
    assert_eq!(r, ToolResult::ok("hello world"));
    let r = call(
        Builtin::FileWrite,
        json!({"path": "reports/q3/summary.md", "content": "new"}),
        &f.env,
    )
    .await;
    assert!(!r.is_error);
    assert_eq!(
        fs::read_to_string(f.ws().join("reports/q3/summary.md")).expect("read"),
        "new"
    );
    call(
        Builtin::FileWrite,
        json!({"path": "a.txt", "content": ""}),
        &f.env,
    )
    .await;

    let r = call(Builtin::ListFiles, json!({}), &f.env).await;
    assert!(!r.is_error, "{}", r.content);
    assert!(
        r.content.starts_with("2 entries in the workspace"),
        "{}",
        r.content
    );
    assert!(r.content.ends_with("\na.txt\nreports/"), "{}", r.content);
    let r = call(
        Builtin::ListFiles,
        json!({"path": ".", "recursive": true}),
        &f.env,
    )
    .await;
    assert!(
        r.content
            .ends_with("\na.txt\nreports/\nreports/q3/\nreports/q3/summary.md"),
        "{}",
        r.content
    );
    let r = call(Builtin::ListFiles, json!({"path": "reports"}), &f.env).await;
    assert!(r.content.ends_with("\nreports/q3/"), "{}", r.content);
    let r = call(Builtin::ListFiles, json!({"path": "a.txt"}), &f.env).await;
    assert_eq!(r.content, "`a.txt` is a file (0 bytes)");
    let r = call(Builtin::ListFiles, json!({"path": "nope"}), &f.env).await;
    assert!(
        r.is_error && r.content.contains("does not exist"),
        "{}",
        r.content
    );
    let r = call(Builtin::FileRead, json!({"path": "reports"}), &f.env).await;
    assert!(
        r.is_error && r.content.contains("directory"),
        "{}",
        r.content
    );
    let r = call(Builtin::FileRead, json!({"path": "missing.txt"}), &f.env).await;
    assert!(
        r.is_error && r.content.contains("does not exist"),
        "{}",
        r.content
    );
    let r = call(
        Builtin::FileWrite,
        json!({"path": "reports", "content": "x"}),
        &f.env,
    )
    .await;
    assert!(
        r.is_error && r.content.contains("directory"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn file_read_is_cut_to_max_bytes() {
    let f = fixture();
    fs::create_dir_all(f.ws()).expect("ws");
    fs::write(f.ws().join("big.txt"), "b".repeat(5000)).expect("write");
    let r = call(Builtin::FileRead, json!({"path": "big.txt"}), &f.env).await;
    assert!(!r.is_error);
    assert!(r.content.starts_with(&"b".repeat(1000)), "{}", r.content);
    assert!(!r.content.contains(&"b".repeat(1001)));
    assert!(
        r.content
            .ends_with("[file cut: showing the first 1000 of 5000 bytes; 4000 bytes cut]"),
        "{}",
        r.content
    );
    // Invalid UTF-8 is replaced, not refused.
    fs::write(f.ws().join("bin.dat"), [b'o', b'k', 0xff]).expect("write");
    let r = call(Builtin::FileRead, json!({"path": "bin.dat"}), &f.env).await;
    assert_eq!(r, ToolResult::ok("ok\u{fffd}"));
}

#[tokio::test]
async fn listing_stops_at_1000_entries() {
    let f = fixture();
    fs::create_dir_all(f.ws().join("many")).expect("dir");
    for i in 0..1005 {
        fs::write(f.ws().join(format!("many/f{i:04}")), "").expect("file");
    }
    let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
    assert!(!r.is_error);
    assert!(
        r.content.starts_with("1000 entries"),
        "{}",
        &r.content[..80]
    );
    assert!(r.content.contains("\nmany/\nmany/f0000\n"));
    assert!(r.content.contains("many/f0998\n"));
    assert!(!r.content.contains("many/f0999"));
    assert!(r
        .content
        .ends_with("[listing stopped at 1000 entries: list a subdirectory to see more]"));
}

#[tokio::test]
async fn delete_files_reports_each_path() {
    let f = fixture();
    fs::create_dir_all(f.ws().join("build/sub")).expect("dirs");
    fs::create_dir_all(f.ws().join("empty")).expect("dirs");
    fs::write(f.ws().join("a.log"), "a").expect("a");
    fs::write(f.ws().join("b.log"), "b").expect("b");
    fs::write(f.ws().join("build/sub/x.o"), "x").expect("x");

    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": ["a.log", "b.log", "empty"]}),
        &f.env,
    )
    .await;
    assert_eq!(
        r,
        ToolResult::ok(
            "3 of 3 deleted\ndeleted: a.log\ndeleted: b.log\ndeleted: empty/ (empty directory)"
        )
    );
    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": ["build", "a.log"]}),
        &f.env,
    )
    .await;
    assert!(r.is_error);
    assert!(r.content.starts_with("0 of 2 deleted"), "{}", r.content);
    assert!(r.content.contains("pass recursive: true"), "{}", r.content);
    assert!(
        r.content.contains("`a.log` does not exist"),
        "{}",
        r.content
    );
    assert!(f.ws().join("build/sub/x.o").exists());

    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": ["build"], "recursive": true}),
        &f.env,
    )
    .await;
    assert_eq!(
        r,
        ToolResult::ok("1 of 1 deleted\ndeleted: build/ (directory and its contents)")
    );
    assert!(!f.ws().join("build").exists());

    for root in [".", "", "./", "sub/.."] {
        let r = call(
            Builtin::DeleteFiles,
            json!({"paths": [root], "recursive": true}),
            &f.env,
        )
        .await;
        assert!(r.is_error, "{root}: {}", r.content);
        assert!(r.content.contains("refused"), "{root}: {}", r.content);
    }
    assert!(f.ws().is_dir(), "the workspace survives");
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_inside_are_fine_and_are_deleted_as_links() {
    let f = fixture();
    fs::create_dir_all(f.ws().join("real")).expect("dir");
    fs::write(f.ws().join("real/data.txt"), "data").expect("file");
    std::os::unix::fs::symlink(f.ws().join("real"), f.ws().join("alias")).expect("link");
    let r = call(Builtin::FileRead, json!({"path": "alias/data.txt"}), &f.env).await;
    assert_eq!(r, ToolResult::ok("data"));
    let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
    assert!(
        r.content.contains("\nalias@\nreal/\nreal/data.txt"),
        "{}",
        r.content
    );
    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": ["alias"], "recursive": true}),
        &f.env,
    )
    .await;
    assert_eq!(
        r,
        ToolResult::ok("1 of 1 deleted\ndeleted: alias (symbolic link)")
    );
    assert!(f.ws().join("real/data.txt").exists(), "the target survives");
}

#[cfg(unix)]
#[tokio::test]
async fn escapes_are_refused_and_touch_nothing() {
    let f = fixture();
    let ws = f.ws();
    fs::create_dir_all(&ws).expect("ws");
    fs::write(ws.join("inside.txt"), "inside").expect("inside");
    let outside = f.base.join("outside");
    std::os::unix::fs::symlink(&outside, ws.join("link_out")).expect("dir link");
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link_file"))
        .expect("file link");
    std::os::unix::fs::symlink(outside.join("new.txt"), ws.join("dangling"))
        .expect("dangling link");
    let abs_secret = outside.join("secret.txt").display().to_string();
    let abs_new = outside.join("x.txt").display().to_string();

    let escapes = [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        abs_secret.as_str(),
        "link_out/secret.txt",
        "link_file",
        "link_out",
    ];
    for path in escapes {
        let r = call(Builtin::FileRead, json!({ "path": path }), &f.env).await;
        assert!(r.is_error, "read {path}: {}", r.content);
        assert!(r.content.contains("refused"), "read {path}: {}", r.content);
        assert!(!r.content.contains("top secret"), "read {path}");

        let r = call(Builtin::ListFiles, json!({ "path": path }), &f.env).await;
        assert!(
            r.is_error && r.content.contains("refused"),
            "list {path}: {}",
            r.content
        );
    }
    for path in [
        "../outside/x.txt",
        abs_new.as_str(),
        abs_secret.as_str(),
        "link_out/x.txt",
        "link_out/deeper/x.txt",
        "link_file",
        "dangling",
    ] {
        for append in [false, true] {
            let r = call(
                Builtin::FileWrite,
                json!({ "path": path, "content": "pwned", "append": append }),
                &f.env,
            )
            .await;
            assert!(r.is_error, "write {path}: {}", r.content);
            assert!(r.content.contains("refused"), "write {path}: {}", r.content);
        }
    }
    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": escapes, "recursive": true}),
        &f.env,
    )
    .await;
    assert!(r.is_error);
    assert!(r.content.starts_with("0 of 6 deleted"), "{}", r.content);
    assert_eq!(r.content.matches("refused").count(), 6, "{}", r.content);
    let r = call(Builtin::DeleteFiles, json!({"paths": ["dangling"]}), &f.env).await;
    assert!(r.is_error && r.content.contains("refused"), "{}", r.content);

    outside_untouched(&f);
    // The links themselves are still there, and nothing else moved.
    for link in ["link_out", "link_file", "dangling"] {
        assert!(fs::symlink_metadata(ws.join(link))
            .expect(link)
            .is_symlink());
    }
    assert_eq!(
        fs::read_to_string(ws.join("inside.txt")).expect("inside"),
        "inside"
    );
    assert!(!ws.join("sub").exists());
    // Listing the workspace shows the links without following them.
    let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
    assert!(!r.content.contains("secret"), "{}", r.content);
}
