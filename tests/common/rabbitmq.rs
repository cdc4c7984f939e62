//! A real RabbitMQ broker (Debian's `rabbitmq-server`) for the queue room's
//! tests, one per test, in a temporary directory, on loopback ports of its
//! own (AMQP, distribution and its own epmd), with the users a test needs
//! loaded from a definitions file (`rabbitmqctl add_user` takes seconds
//! each). Both the broker and its epmd are this process's children in a
//! process group of their own, killed when the [`Broker`] is dropped.
//!
//! And the application side: [`Client`] runs `tests/fixtures/amqp/client.py`
//! with Debian's `python3-pika` (`/usr/bin/python3`: the `python3` on PATH
//! may be another one without pika).
//!
//! Without the broker installed the tests print `SKIPPED` and pass;
//! under `STRANDS_REQUIRE_AMQP=1` (CI) they fail.

use std::io::Read;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Digest;

const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const PYTHON: &str = "/usr/bin/python3";

/// A broker running in a temporary directory.
pub struct Broker {
    dir: tempfile::TempDir,
    pub port: u16,
    /// The TLS listener's port ([`Broker::start_tls`]).
    pub tls_port: Option<u16>,
    dist_port: u16,
    epmd_port: u16,
    node: String,
    epmd: Option<Child>,
    server: Option<Child>,
}

fn required() -> bool {
    std::env::var("STRANDS_REQUIRE_AMQP").is_ok_and(|v| v == "1")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// RabbitMQ's `rabbit_password_hashing_sha256`: base64(salt ‖ sha256(salt ‖ password)).
fn password_hash(password: &str) -> String {
    let salt: [u8; 4] = fastrand::u32(..).to_be_bytes();
    let mut h = sha2::Sha256::new();
    h.update(salt);
    h.update(password.as_bytes());
    let mut out = salt.to_vec();
    out.extend_from_slice(&h.finalize());
    base64::engine::general_purpose::STANDARD.encode(out)
}

impl Broker {
    /// A broker with `users` (name, password), each allowed everything on
    /// `/`; `None` (after printing `SKIPPED: <test>`) when RabbitMQ is not
    /// installed, unless required.
    pub fn start(test: &str, users: &[(&str, &str)]) -> Option<Broker> {
        Broker::start_with(test, users, false)
    }

    /// [`Broker::start`] with a TLS listener too, on loopback, its
    /// certificate (for `127.0.0.1` and `localhost`) signed by a CA made
    /// now with the `openssl` command ([`Broker::ca`]).
    pub fn start_tls(test: &str, users: &[(&str, &str)]) -> Option<Broker> {
        Broker::start_with(test, users, true)
    }

    /// The test CA's certificate (PEM) of a [`Broker::start_tls`] broker.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// `amqps://user:password@127.0.0.1:TLS_PORT/%2f`
    pub fn tls_url(&self, user: &str, password: &str) -> String {
        let port = self.tls_port.expect("a broker started with start_tls");
        format!("amqps://{user}:{password}@127.0.0.1:{port}/%2f")
    }

    fn start_with(test: &str, users: &[(&str, &str)], tls: bool) -> Option<Broker> {
        let installed = Path::new(SERVER).exists()
            && Command::new(PYTHON)
                .args(["-c", "import pika"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if !installed {
            assert!(
                !required(),
                "STRANDS_REQUIRE_AMQP=1 but {SERVER} or Debian's python3-pika is missing (apt-get install rabbitmq-server python3-pika)"
            );
            println!("SKIPPED: {test}: RabbitMQ is not installed (apt-get install rabbitmq-server python3-pika)");
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let t = dir.path();
        let defs = json!({
            "users": users.iter().map(|(name, pw)| json!({
                "name": name,
                "password_hash": password_hash(pw),
                "hashing_algorithm": "rabbit_password_hashing_sha256",
                "tags": ["administrator"],
            })).collect::<Vec<_>>(),
            "vhosts": [{"name": "/"}],
            "permissions": users.iter().map(|(name, _)| json!({
                "user": name, "vhost": "/", "configure": ".*", "write": ".*", "read": ".*",
            })).collect::<Vec<_>>(),
        });
        std::fs::write(t.join("defs.json"), defs.to_string()).expect("write defs.json");
        let mut conf = format!(
            "loopback_users = none\nload_definitions = {}\n",
            t.join("defs.json").display()
        );
        let tls_port = tls.then(|| {
            make_certificates(t);
            let port = free_port();
            let p = |x: &str| t.join(x).display().to_string();
            conf.push_str(&format!(
                "listeners.ssl.1 = 127.0.0.1:{port}\nssl_options.cacertfile = {}\nssl_options.certfile = {}\nssl_options.keyfile = {}\nssl_options.verify = verify_none\nssl_options.fail_if_no_peer_cert = false\n",
                p("ca.pem"),
                p("server.pem"),
                p("server.key")
            ));
            port
        });
        std::fs::write(t.join("rabbitmq.conf"), conf).expect("write rabbitmq.conf");
        std::fs::write(t.join("enabled_plugins"), "[].").expect("write enabled_plugins");
        let n = NODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut broker = Broker {
            port: free_port(),
            tls_port,
            dist_port: free_port(),
            epmd_port: free_port(),
            node: format!("strands{}x{n}@localhost", std::process::id()),
            dir,
            epmd: None,
            server: None,
        };
        broker.epmd = Some(
            Command::new("epmd")
                .args([
                    "-port",
                    &broker.epmd_port.to_string(),
                    "-address",
                    "127.0.0.1",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("start epmd"),
        );
        broker.boot();
        Some(broker)
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        let t = self.dir.path();
        let p = |x: &str| t.join(x).display().to_string();
        vec![
            ("HOME", p("")),
            ("RABBITMQ_NODENAME", self.node.clone()),
            ("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1".into()),
            ("RABBITMQ_NODE_PORT", self.port.to_string()),
            ("RABBITMQ_DIST_PORT", self.dist_port.to_string()),
            ("ERL_EPMD_PORT", self.epmd_port.to_string()),
            ("ERL_EPMD_ADDRESS", "127.0.0.1".into()),
            ("RABBITMQ_MNESIA_BASE", p("mnesia")),
            ("RABBITMQ_LOG_BASE", p("log")),
            ("RABBITMQ_LOGS", "-".into()),
            ("RABBITMQ_CONFIG_FILE", p("rabbitmq")),
            ("RABBITMQ_ENABLED_PLUGINS_FILE", p("enabled_plugins")),
            ("RABBITMQ_PID_FILE", p("pid")),
        ]
    }

    /// Starts the broker (again, on the same data) and waits for its port.
    fn boot(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.log")).expect("a log file");
        let mut cmd = Command::new(SERVER);
        cmd.envs(self.env())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .process_group(0);
        self.server = Some(cmd.spawn().expect("start rabbitmq-server"));
        let until = Instant::now() + Duration::from_secs(90);
        loop {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                // Listeners open last, once definitions are loaded.
                std::thread::sleep(Duration::from_millis(300));
                return;
            }
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("rabbitmq-server exited ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < until,
                "rabbitmq-server did not listen within 90s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the broker printed.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.path().join("server.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// `amqp://user:password@127.0.0.1:PORT/%2f`
    pub fn url(&self, user: &str, password: &str) -> String {
        format!("amqp://{user}:{password}@127.0.0.1:{}/%2f", self.port)
    }

    /// Kills the broker (SIGKILL to its process group); its data stays.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.server.take() {
            kill_group(&c);
            let _ = c.wait();
        }
        // The port is free once the VM is gone.
        let until = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Starts the killed broker again on its data.
    pub fn restart(&mut self) {
        assert!(self.server.is_none(), "kill the broker before restarting");
        self.boot();
    }

    /// A client speaking as `user`.
    pub fn client(&self, user: &str, password: &str) -> Client {
        Client {
            url: self.url(user, password),
        }
    }
}

/// A CA (`ca.pem`) and the broker's certificate it signed
/// (`server.pem`, `server.key`; for 127.0.0.1 and localhost) in `dir`,
/// made with the `openssl` command.
fn make_certificates(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl (apt-get install openssl)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=strands test CA"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    run(&ca);
    let mut csr = vec!["req", "-subj", "/CN=localhost"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    run(&csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = CA:FALSE\nkeyUsage = digitalSignature\nextendedKeyUsage = serverAuth\n",
    )
    .expect("write server.ext");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.pem",
    ]);
}

static NODES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn kill_group(c: &Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", c.id())])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
        if let Some(mut e) = self.epmd.take() {
            kill_group(&e);
            let _ = e.wait();
        }
    }
}

/// The application: `tests/fixtures/amqp/client.py` on pika.
pub struct Client {
    pub url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/amqp/client.py")
}

impl Client {
    /// Runs `client.py COMMAND JSON-ARGS`; what it printed, as JSON.
    #[track_caller]
    pub fn run(&self, command: &str, args: Value) -> Value {
        let out = Command::new(PYTHON)
            .arg(script())
            .arg(&self.url)
            .arg(command)
            .arg(args.to_string())
            .output()
            .expect("run client.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "client.py {command} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("client.py {command}: {e}: {stdout}"))
    }

    /// Publishes `body` to the requests' queue with `props` (`type`,
    /// `user_id`, `reply_to`, `correlation_id`, `message_id`).
    pub fn send(&self, queue: &str, body: Value, props: Value) -> Value {
        self.run(
            "send",
            json!({"queue": queue, "body": body, "props": props}),
        )
    }

    /// Declares durable queue `queue` bound to `exchange` with `key`.
    pub fn bind(&self, queue: &str, exchange: &str, key: &str) -> Value {
        self.run(
            "bind",
            json!({"queue": queue, "exchange": exchange, "key": key}),
        )
    }

    /// Declares durable queue `queue` (a reply queue).
    pub fn declare(&self, queue: &str) -> Value {
        self.run("declare", json!({"queue": queue}))
    }

    /// Every message in `queue` now, taken (acknowledged), waiting up to
    /// `wait` for at least `at_least`.
    pub fn drain(&self, queue: &str, at_least: usize, wait: Duration) -> Vec<Value> {
        let v = self.run(
            "drain",
            json!({"queue": queue, "at_least": at_least, "wait": wait.as_secs_f64()}),
        );
        v.as_array().cloned().unwrap_or_default()
    }
}
