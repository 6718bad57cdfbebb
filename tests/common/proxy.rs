//! A real nginx or HAProxy in front of daemons ([`Proxy`]), started from a configuration template
//! such as those of `deploy/proxies/`, on a listening socket the test bound (port 0) and hands it
//! as its standard input, from a scratch directory; stopped when dropped.
//!
//! A template names its listener `{{LISTEN}}` and its daemons `{{UPSTREAM_1}}`, `{{UPSTREAM_2}}`,
//! ... (each `host:port`); [`Proxy::start`] fills them and nothing else, except for nginx, where
//! it adds its own temporary and access-log paths after `http {` (and gives the pid file with
//! `-g`), so that nginx writes nothing outside the scratch directory and runs unprivileged as
//! well as as root.
//!
//! The listener is inherited, never a port released and bound again (which a parallel test's
//! daemon could take in between): HAProxy listens on `fd@0`, and nginx, told of the socket by
//! `NGINX=0;` (as in its binary upgrade), takes it for the `listen` of its address.
//!
//! Without the binary a test says so and is skipped ([`Proxy::binary_or_skip`]), unless
//! `PATIENCE_REQUIRE_PROXIES` is set (`.ci/run` sets it, after installing them), when its absence
//! fails the test.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

/// How long a proxy may take to listen. It only catches a hang.
const LISTEN_LIMIT: Duration = Duration::from_secs(20);
/// How long a proxy may take to exit after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(5);

/// nginx at its defaults: only the upstreams and `grpc_pass`. Its `client_max_body_size` (1 MiB)
/// counts a stream's whole body, so it would cut any stream that sent more than about 9,000
/// deals.
const NGINX_DEFAULTS: &str = "events {}

http {
    upstream patience {
        server {{UPSTREAM_1}};
        server {{UPSTREAM_2}};
        server {{UPSTREAM_3}};
    }
    server {
        listen {{LISTEN}} http2;
        location / {
            grpc_pass grpc://patience;
        }
    }
}
";

/// HAProxy with only what gRPC needs (`proto h2` on both sides) and the three timeouts of its
/// documentation's gRPC example; roundrobin is its default balance.
const HAPROXY_DEFAULTS: &str = "defaults
    mode http
    timeout connect 10s
    timeout client 30s
    timeout server 30s

frontend grpc
    bind {{LISTEN}} proto h2
    default_backend patience

backend patience
    server patience1 {{UPSTREAM_1}} proto h2
    server patience2 {{UPSTREAM_2}} proto h2
    server patience3 {{UPSTREAM_3}} proto h2
";

/// Which proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    Nginx,
    Haproxy,
}

impl ProxyKind {
    /// The program's name, as Debian installs it (in `/usr/sbin`).
    pub fn program(self) -> &'static str {
        match self {
            ProxyKind::Nginx => "nginx",
            ProxyKind::Haproxy => "haproxy",
        }
    }

    /// A configuration template with nothing but what passing gRPC needs: nginx at its
    /// defaults, HAProxy with its documentation's basic timeouts.
    pub fn defaults(self) -> String {
        match self {
            ProxyKind::Nginx => NGINX_DEFAULTS,
            ProxyKind::Haproxy => HAPROXY_DEFAULTS,
        }
        .to_string()
    }

    /// The shipped configuration template, `deploy/proxies/...`.
    pub fn shipped(self) -> String {
        let name = match self {
            ProxyKind::Nginx => "nginx.conf",
            ProxyKind::Haproxy => "haproxy.cfg",
        };
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/proxies")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// A running nginx or HAProxy, in the foreground, its log (standard error) in a file of its
/// scratch directory. Stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Proxy {
    pub kind: ProxyKind,
    child: Child,
    /// `http://127.0.0.1:PORT`, for `patience client --addr`.
    pub addr: String,
    /// The configuration it runs, as filled in.
    pub config: String,
    log: PathBuf,
    // Last: removed (when the test passed) after the process is gone.
    dir: Scratch,
}

impl Proxy {
    /// The path of the proxy's program: on `PATH`, else in `/usr/sbin` or `/usr/local/sbin`
    /// (not on a user's `PATH` everywhere). `Err` says what is missing.
    pub fn binary(kind: ProxyKind) -> Result<PathBuf, String> {
        let program = kind.program();
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(["/usr/sbin", "/usr/local/sbin"].map(PathBuf::from))
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| {
                format!("{program} is not installed (apt-get install nginx-light haproxy)")
            })
    }

    /// [`Proxy::binary`], or `None` after saying the test is skipped; a missing binary fails the
    /// test instead when `PATIENCE_REQUIRE_PROXIES` is set.
    pub fn binary_or_skip(kind: ProxyKind) -> Option<PathBuf> {
        match Proxy::binary(kind) {
            Ok(path) => Some(path),
            Err(why) => {
                assert!(
                    std::env::var_os("PATIENCE_REQUIRE_PROXIES").is_none(),
                    "PATIENCE_REQUIRE_PROXIES is set, but {why}"
                );
                eprintln!("skipped: this test needs {}: {why}", kind.program());
                None
            }
        }
    }

    /// Starts `program` (from [`Proxy::binary`]) with `template` filled in: `{{LISTEN}}` the
    /// socket the test bound on 127.0.0.1 (its address for nginx, `fd@0` for HAProxy),
    /// `{{UPSTREAM_N}}` the N-th of `upstreams` (from 1). Every placeholder must be filled, and
    /// every upstream used. Returns once it accepts connections.
    pub fn start(
        kind: ProxyKind,
        program: &Path,
        template: &str,
        upstreams: &[SocketAddr],
    ) -> Proxy {
        let dir = Scratch::new(kind.program());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy's port");
        let listen = listener
            .local_addr()
            .expect("the proxy's address")
            .to_string();
        let inherited = match kind {
            ProxyKind::Nginx => listen.as_str(),
            ProxyKind::Haproxy => "fd@0",
        };
        let mut config = template.replace("{{LISTEN}}", inherited);
        for (n, upstream) in upstreams.iter().enumerate() {
            let placeholder = format!("{{{{UPSTREAM_{}}}}}", n + 1);
            assert!(
                config.contains(&placeholder),
                "the template has no {placeholder}: {template}"
            );
            config = config.replace(&placeholder, &upstream.to_string());
        }
        assert!(
            !config.contains("{{"),
            "a placeholder was left unfilled: {config}"
        );
        let mut cmd = Command::new(program);
        match kind {
            ProxyKind::Nginx => {
                let dir = dir.path().display();
                let paths = format!(
                    "http {{\n    client_body_temp_path {dir}/body;\n    proxy_temp_path \
                     {dir}/proxy;\n    fastcgi_temp_path {dir}/fastcgi;\n    uwsgi_temp_path \
                     {dir}/uwsgi;\n    scgi_temp_path {dir}/scgi;\n    access_log {dir}/access.log;\n"
                );
                assert_eq!(
                    config.matches("\nhttp {\n").count(),
                    1,
                    "one `http {{` block: {config}"
                );
                config = config.replacen("\nhttp {\n", &format!("\n{paths}"), 1);
                cmd.arg("-p")
                    .arg(format!("{dir}/"))
                    .arg("-c")
                    .arg(format!("{dir}/nginx.conf"))
                    .args(["-e", "stderr", "-g"])
                    .arg(format!("daemon off; pid {dir}/nginx.pid;"))
                    .env("NGINX", "0;");
            }
            ProxyKind::Haproxy => {
                // -db: in the foreground, not as a daemon.
                cmd.arg("-db").arg("-f").arg(dir.join("haproxy.cfg"));
            }
        }
        let file = match kind {
            ProxyKind::Nginx => "nginx.conf",
            ProxyKind::Haproxy => "haproxy.cfg",
        };
        dir.write(file, &config);
        let log = dir.join("log");
        let log_file = std::fs::File::create(&log).expect("the proxy's log file");
        let child = cmd
            .stdin(std::os::fd::OwnedFd::from(listener))
            .stdout(log_file.try_clone().expect("the log file, again"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        // The proxy holds the listener now; this process lets go of its copy.
        drop(cmd);
        let mut proxy = Proxy {
            kind,
            child,
            addr: format!("http://{listen}"),
            config,
            log,
            dir,
        };
        proxy.wait_listening(&listen);
        proxy
    }

    /// Waits until the proxy accepts connections on `listen`; panics with its log if it exits
    /// first or takes longer than [`LISTEN_LIMIT`]. The socket listens from the start (the test
    /// bound it), so a connection is made at once and waits in the backlog: the proxy has taken
    /// it when it answers the bytes sent (not a valid HTTP/2 preface) in any way, with bytes, a
    /// close or a reset.
    fn wait_listening(&mut self, listen: &str) {
        use std::io::{Read as _, Write as _};
        let deadline = Instant::now() + LISTEN_LIMIT;
        let mut probe = std::net::TcpStream::connect(listen).expect("connect to the proxy's port");
        probe
            .set_read_timeout(Some(Duration::from_millis(20)))
            .expect("a read timeout");
        // Longer than the HTTP/2 preface (24 bytes), so a proxy that reads a whole preface before
        // it judges one answers at once.
        let _ = probe.write_all(b"GET / HTTP/1.1\r\nHost: probe\r\n\r\n");
        loop {
            let answered = match probe.read(&mut [0; 64]) {
                Ok(_) => true,
                Err(e) => !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
            };
            let exited = self.child.try_wait().expect("poll the proxy");
            if answered && exited.is_none() {
                return;
            }
            if let Some(status) = exited {
                panic!(
                    "{} exited ({status}) before listening on {listen}; its log:\n{}\nits \
                     configuration:\n{}",
                    self.kind.program(),
                    self.log(),
                    self.config
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} does not listen on {listen} after {LISTEN_LIMIT:?}; its log:\n{}",
                self.kind.program(),
                self.log()
            );
        }
    }

    /// What the proxy has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The scratch directory it runs from.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Proxy {
    /// SIGTERM first: nginx's master then stops its workers (a SIGKILL would leave them behind,
    /// still listening). SIGKILL if it has not exited within [`STOP_LIMIT`].
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let exited =
            super::wait::poll_blocking(STOP_LIMIT, || self.child.try_wait().ok().flatten());
        if exited.is_some() {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
