//! The file tools' tests: reading, writing, listing and deleting inside
//! the workspace, and every way out of it refused.

use super::super::testing::{call, fixture, outside_untouched};
use super::super::Builtin;
use super::*;
use serde_json::json;
use std::fs;

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
    let ws = f.ws();
    fs::create_dir_all(ws.join("real")).expect("dir");
    fs::write(ws.join("real/data.txt"), "data").expect("file");
    // Relative links that stay inside are followed, `..` in their
    // target included.
    std::os::unix::fs::symlink("real", ws.join("alias")).expect("link");
    std::os::unix::fs::symlink("real/data.txt", ws.join("note")).expect("link");
    std::os::unix::fs::symlink("../real/data.txt", ws.join("real/back")).expect("link");
    for path in ["alias/data.txt", "note", "real/back", "alias/back"] {
        let r = call(Builtin::FileRead, json!({ "path": path }), &f.env).await;
        assert_eq!(r, ToolResult::ok("data"), "{path}");
    }
    let r = call(
        Builtin::FileWrite,
        json!({"path": "alias/new/made.txt", "content": "via link"}),
        &f.env,
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        fs::read_to_string(ws.join("real/new/made.txt")).expect("made"),
        "via link"
    );
    let r = call(
        Builtin::FileWrite,
        json!({"path": "note", "content": "!", "append": true}),
        &f.env,
    )
    .await;
    assert_eq!(r, ToolResult::ok("appended 1 byte to note"));
    assert_eq!(
        fs::read_to_string(ws.join("real/data.txt")).expect("data"),
        "data!"
    );
    // Listing a link to a directory lists the directory, under the
    // name it was asked by; links met on the way are not followed.
    let r = call(Builtin::ListFiles, json!({"path": "alias"}), &f.env).await;
    assert!(
        r.content
            .ends_with(":\nalias/back@\nalias/data.txt\nalias/new/\n[`@` marks a symbolic link; links are not followed]"),
        "{}",
        r.content
    );
    let r = call(Builtin::ListFiles, json!({"recursive": true}), &f.env).await;
    assert!(
        r.content.contains(
            "\nalias@\nnote@\nreal/\nreal/back@\nreal/data.txt\nreal/new/\nreal/new/made.txt\n"
        ),
        "{}",
        r.content
    );
    let r = call(
        Builtin::DeleteFiles,
        json!({"paths": ["alias", "note"], "recursive": true}),
        &f.env,
    )
    .await;
    assert_eq!(
        r,
        ToolResult::ok(
            "2 of 2 deleted\ndeleted: alias (symbolic link)\ndeleted: note (symbolic link)"
        )
    );
    assert!(ws.join("real/data.txt").exists(), "the target survives");
    assert!(ws.join("real/new/made.txt").exists(), "the target survives");
}

/// An absolute link is refused even when it points into the workspace:
/// the workspace handle cannot know where it is on the host.
#[cfg(unix)]
#[tokio::test]
async fn absolute_links_are_refused_even_into_the_workspace() {
    let f = fixture();
    let ws = f.ws();
    fs::create_dir_all(ws.join("real")).expect("dir");
    fs::write(ws.join("real/data.txt"), "data").expect("file");
    std::os::unix::fs::symlink(ws.join("real"), ws.join("abs")).expect("link");
    let r = call(Builtin::FileRead, json!({"path": "abs/data.txt"}), &f.env).await;
    assert_eq!(
        r,
        ToolResult::error(
            "`abs/data.txt` is refused: it resolves outside the workspace (symbolic links \
             are followed only when they are relative and stay inside it)"
        )
    );
    let r = call(Builtin::ListFiles, json!({"path": "abs"}), &f.env).await;
    assert!(r.is_error && r.content.contains("refused"), "{}", r.content);
    // It shows in listings; like a link that leads outside, it is not
    // deleted.
    let r = call(Builtin::ListFiles, json!({}), &f.env).await;
    assert!(r.content.contains("\nabs@\n"), "{}", r.content);
    let r = call(Builtin::DeleteFiles, json!({"paths": ["abs"]}), &f.env).await;
    assert!(r.is_error && r.content.contains("refused"), "{}", r.content);
    assert!(ws.join("real/data.txt").exists());
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
    // Relative links that climb out, to a directory and to a file.
    std::os::unix::fs::symlink("../outside", ws.join("rel_out")).expect("relative dir link");
    std::os::unix::fs::symlink("../outside/secret.txt", ws.join("rel_file"))
        .expect("relative file link");
    let abs_secret = outside.join("secret.txt").display().to_string();
    let abs_new = outside.join("x.txt").display().to_string();

    let escapes = [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        abs_secret.as_str(),
        "link_out/secret.txt",
        "link_file",
        "link_out",
        "rel_out/secret.txt",
        "rel_file",
        "rel_out",
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
        "rel_out/x.txt",
        "rel_out/deeper/x.txt",
        "rel_file",
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
    assert!(r.content.starts_with("0 of 9 deleted"), "{}", r.content);
    assert_eq!(r.content.matches("refused").count(), 9, "{}", r.content);
    let r = call(Builtin::DeleteFiles, json!({"paths": ["dangling"]}), &f.env).await;
    assert!(r.is_error && r.content.contains("refused"), "{}", r.content);

    outside_untouched(&f);
    // The links themselves are still there, and nothing else moved.
    for link in ["link_out", "link_file", "dangling", "rel_out", "rel_file"] {
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

// -- the check-then-open race ------------------------------------------

/// Swaps the directory `ws/sub` for a link to `outside` (and back).
#[cfg(unix)]
fn swap_in_link(ws: &std::path::Path, outside: &std::path::Path) {
    fs::rename(ws.join("sub"), ws.join("sub.real")).expect("move the directory away");
    std::os::unix::fs::symlink(outside, ws.join("sub")).expect("link in its place");
}

#[cfg(unix)]
fn swap_back(ws: &std::path::Path) {
    fs::remove_file(ws.join("sub")).expect("remove the link");
    fs::rename(ws.join("sub.real"), ws.join("sub")).expect("the directory back");
}

/// The race the old path checks had: `sub/secret.txt` is checked while
/// `sub` is a directory inside the workspace, then `sub` becomes a link to
/// outside before the file is opened. With the workspace handle there is
/// no separate check to pass: every operation that runs after the swap is
/// refused, and nothing outside is read or touched.
#[cfg(unix)]
#[test]
fn a_link_swapped_in_after_a_check_leads_nowhere() {
    let f = fixture();
    let ws = f.ws();
    let outside = f.base.join("outside");
    let dir = open_workspace(&ws).expect("workspace");
    fs::create_dir_all(ws.join("sub")).expect("sub");
    fs::write(ws.join("sub/secret.txt"), "inside").expect("inside");

    // The check the old code made before opening passes...
    let checked = fs::canonicalize(ws.join("sub/secret.txt")).expect("canonical");
    assert!(checked.starts_with(fs::canonicalize(&ws).expect("ws")));
    assert_eq!(
        file_read(&dir, "sub/secret.txt", 1000),
        ToolResult::ok("inside")
    );
    // ...and then `sub` is swapped for a link to outside.
    swap_in_link(&ws, &outside);

    let refused = |r: ToolResult, what: &str| {
        assert!(r.is_error, "{what}: {}", r.content);
        assert!(r.content.contains("refused"), "{what}: {}", r.content);
        assert!(!r.content.contains("top secret"), "{what}: {}", r.content);
    };
    refused(file_read(&dir, "sub/secret.txt", 1000), "read");
    refused(file_write(&dir, "sub/secret.txt", "pwned", false), "write");
    refused(file_write(&dir, "sub/secret.txt", "pwned", true), "append");
    refused(file_write(&dir, "sub/new/x.txt", "pwned", false), "mkdir");
    refused(list_files(&dir, "sub", true), "list");
    refused(
        delete_files(&dir, &["sub/secret.txt".into()], true),
        "delete",
    );
    outside_untouched(&f);

    swap_back(&ws);
    assert_eq!(
        file_read(&dir, "sub/secret.txt", 1000),
        ToolResult::ok("inside")
    );
}

/// Confinement is to the directory that was opened, not to its path:
/// moving the workspace away and putting a link to outside at its path
/// leaves an open handle working on the real workspace.
#[cfg(unix)]
#[test]
fn the_workspace_handle_outlives_a_swap_of_its_path() {
    let f = fixture();
    let ws = f.ws();
    let dir = open_workspace(&ws).expect("workspace");
    let moved = f.base.join("ws.moved");
    fs::rename(&ws, &moved).expect("move the workspace");
    std::os::unix::fs::symlink(f.base.join("outside"), &ws).expect("link at its path");

    let r = file_write(&dir, "secret.txt", "pwned", false);
    assert_eq!(r, ToolResult::ok("wrote 5 bytes to secret.txt"));
    assert_eq!(
        fs::read_to_string(moved.join("secret.txt")).expect("written"),
        "pwned"
    );
    let r = delete_files(&dir, &["secret.txt".into()], false);
    assert!(!r.is_error, "{}", r.content);
    outside_untouched(&f);
}

/// Swaps the names `a` and `b` in one step (`renameat2(RENAME_EXCHANGE)`),
/// so that each always names something.
#[cfg(target_os = "linux")]
fn exchange(a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c =
        |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The race run for real: one thread keeps exchanging `sub` between a
/// directory and a link to outside (atomically, so `sub` always exists)
/// while this one reads, writes, lists and deletes through it. Whatever
/// the interleaving, nothing outside is read or changed. The test cannot
/// fail spuriously: any failure is an escape.
#[cfg(target_os = "linux")]
#[test]
fn racing_swaps_never_reach_outside() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let f = fixture();
    let ws = f.ws();
    let dir = open_workspace(&ws).expect("workspace");
    fs::create_dir_all(ws.join("sub")).expect("sub");
    std::os::unix::fs::symlink(f.base.join("outside"), ws.join("other")).expect("link");

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (ws, stop) = (ws.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(Ordering::SeqCst) && swaps < 20_000 {
                if exchange(&ws.join("sub"), &ws.join("other")).is_err() {
                    break;
                }
                swaps += 1;
            }
            swaps
        })
    };
    let started = Instant::now();
    let mut calls = 0u32;
    while calls < 300 && started.elapsed() < Duration::from_secs(5) {
        let read = file_read(&dir, "sub/secret.txt", 1000);
        assert!(!read.content.contains("top secret"), "{}", read.content);
        let _ = file_write(&dir, "sub/mine.txt", "pwned", false);
        let _ = file_write(&dir, "sub/secret.txt", "pwned", true);
        let _ = file_write(&dir, "sub/made/new.txt", "pwned", false);
        let listed = list_files(&dir, "sub", true);
        assert!(!listed.content.contains("top secret"), "{}", listed.content);
        let _ = delete_files(
            &dir,
            &[
                "sub/mine.txt".into(),
                "sub/made".into(),
                "sub/secret.txt".into(),
            ],
            true,
        );
        calls += 1;
    }
    stop.store(true, Ordering::SeqCst);
    let swaps = swapper.join().expect("the swapper finished");
    assert!(swaps > 0 && calls > 0, "{swaps} swaps, {calls} calls");
    outside_untouched(&f);
}
