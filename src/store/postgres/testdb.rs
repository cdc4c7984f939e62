//! A real PostgreSQL server for tests and benchmarks: Debian's
//! `postgresql` binaries (`/usr/lib/postgresql/*/bin`) run `initdb` and
//! `pg_ctl` in a temporary directory on a free loopback port — as `nobody`
//! when the tests run as root, since PostgreSQL refuses root. One server
//! per test process, stopped when the process exits; each caller gets a
//! fresh database on it ([`database`]).
//!
//! When the binaries are missing or the server does not start, [`database`]
//! returns `None` and the caller skips with a notice — unless
//! `STRANDS_REQUIRE_POSTGRES=1` (CI), where it panics so the test fails.
//! Not part of the product: public only so the integration tests and the
//! benchmarks can share it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

struct Server {
    port: u16,
    bin: PathBuf,
    data: PathBuf,
    /// Removed when the process exits.
    dir: PathBuf,
    as_nobody: bool,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Where Debian puts the binaries (the newest version installed).
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists() && p.join("pg_ctl").exists())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

fn command(server_bin: &Path, tool: &str, as_nobody: bool) -> Command {
    if as_nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]);
        c.arg(server_bin.join(tool));
        c
    } else {
        Command::new(server_bin.join(tool))
    }
}

fn run(mut c: Command, what: &str) -> Result<(), String> {
    let out = c.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

extern "C" fn stop_at_exit() {
    if let Some(Ok(s)) = SERVER.get() {
        let mut c = command(&s.bin, "pg_ctl", s.as_nobody);
        c.arg("-D").arg(&s.data).args(["-m", "immediate", "stop"]);
        let _ = c.output();
        let _ = std::fs::remove_dir_all(&s.dir);
    }
}

fn start() -> Result<Server, String> {
    let bin = bin_dir()
        .ok_or("no PostgreSQL under /usr/lib/postgresql/*/bin (apt-get install postgresql)")?;
    let dir = std::env::temp_dir().join(format!(
        "strands-pg-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
    // SAFETY: geteuid has no preconditions.
    let as_nobody = unsafe { libc::geteuid() } == 0;
    if as_nobody {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.as_path(), std::fs::Permissions::from_mode(0o777))
            .map_err(|e| format!("chmod: {e}"))?;
    }
    let data = dir.as_path().join("data");
    let mut c = command(&bin, "initdb", as_nobody);
    c.arg("-D")
        .arg(&data)
        .args(["-U", "strands", "--auth=trust", "-E", "UTF8", "--no-sync"])
        .env("LC_ALL", "C");
    run(c, "initdb")?;
    let port = free_port()?;
    let mut c = command(&bin, "pg_ctl", as_nobody);
    c.arg("-D")
        .arg(&data)
        .arg("-l")
        .arg(dir.as_path().join("log"))
        .arg("-o")
        .arg(format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300",
            dir.as_path().display()
        ))
        .args(["-w", "-t", "60", "start"]);
    run(c, "pg_ctl start").map_err(|e| {
        let log = std::fs::read_to_string(dir.as_path().join("log")).unwrap_or_default();
        format!("{e}\n{log}")
    })?;
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::atexit(stop_at_exit) };
    Ok(Server {
        port,
        bin,
        data,
        dir,
        as_nobody,
    })
}

/// Whether a missing server must fail the test (CI).
pub fn required() -> bool {
    std::env::var("STRANDS_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// The URL of a fresh, empty database on the shared test server; `None`
/// (after a notice on stderr) when no server can be started and it is not
/// required.
pub async fn database(name: &str) -> Option<String> {
    let server = SERVER.get_or_init(start);
    let port = match server {
        Ok(s) => s.port,
        Err(e) => {
            if required() {
                panic!(
                    "STRANDS_REQUIRE_POSTGRES=1 but the PostgreSQL test server cannot start: {e}"
                );
            }
            eprintln!("SKIPPED ({name}): no PostgreSQL test server: {e}");
            return None;
        }
    };
    let db = format!(
        "t{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst),
        name.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .take(30)
            .collect::<String>()
            .to_lowercase()
    );
    let admin = format!("host=127.0.0.1 port={port} user=strands dbname=postgres");
    let (client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!("the PostgreSQL test server on port {port} does not answer: {e}")
        });
    let task = tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap_or_else(|e| panic!("CREATE DATABASE {db}: {e}"));
    drop(client);
    let _ = task.await;
    Some(format!("postgres://strands@127.0.0.1:{port}/{db}"))
}
