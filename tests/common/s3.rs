//! A real S3-compatible server for the storage tests: PyPI's `moto[server]` (`moto_server`),
//! started by the test on a loopback port of its own choosing, and boto3 (AWS's own Python client, through
//! `scripts/s3_tool.py`) to put the tests' objects there and read patience's back.
//!
//! It runs from `PATIENCE_VENV` (else `target/tools/venv`), where `.ci/run` installs it. Without
//! it a test says so and is skipped, unless `PATIENCE_REQUIRE_S3` is set (`.ci/run` sets it):
//! then its absence fails the test.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::cli::TestCommand;

/// A running `moto_server`, killed when dropped.
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    python: PathBuf,
    /// The credentials the test's own calls use (moto's `testing` unless [`S3Server::act_as`]).
    credentials: (String, String),
}

/// The venv `.ci/run` makes: `PATIENCE_VENV`, or `target/tools/venv`.
pub fn venv() -> PathBuf {
    std::env::var_os("PATIENCE_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/venv"),
        PathBuf::from,
    )
}

impl S3Server {
    /// A new server with no buckets; `None` (said on standard error) when moto is not installed
    /// and `PATIENCE_REQUIRE_S3` is not set.
    pub fn start() -> Option<S3Server> {
        S3Server::start_with(&[])
    }

    /// A new server with `env` in its environment (moto's settings, such as
    /// `INITIAL_NO_AUTH_ACTION_COUNT=0`, which checks every request's credentials).
    pub fn start_with(env: &[(&str, &str)]) -> Option<S3Server> {
        let venv = venv();
        let server = venv.join("bin/moto_server");
        let python = venv.join("bin/python");
        let ready = server.exists()
            && Command::new(&python)
                .args(["-c", "import boto3, moto"])
                .status()
                .is_ok_and(|s| s.success());
        if !ready {
            let why = format!(
                "no moto[server] and boto3 in the venv {} (.ci/run installs them; or set \
                 PATIENCE_VENV)",
                venv.display()
            );
            assert!(
                std::env::var_os("PATIENCE_REQUIRE_S3").is_none(),
                "PATIENCE_REQUIRE_S3 is set, but {why}"
            );
            eprintln!("skipped: {why}");
            return None;
        }
        // Port 0: the server binds a port of its own and says which on standard error
        // (werkzeug's ` * Running on http://127.0.0.1:PORT`). A port taken from the system and
        // released for it could be taken meanwhile by any other test's server.
        let mut child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", "0"])
            // Parts of a few KiB, where S3 takes 5 MiB but the last, so that a test's upload
            // has many parts without solving megabytes of answers.
            .env("S3_UPLOAD_PART_MIN_SIZE", "1000")
            .env("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", "16777216")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start moto_server");
        let stderr = child.stderr.take().expect("moto_server's standard error");
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Read to the end, so that the server's request log never fills the pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(port) = line
                    .split_once("Running on http://127.0.0.1:")
                    .and_then(|(_, port)| port.trim().parse::<u16>().ok())
                {
                    let _ = port_tx.send(port);
                }
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("moto_server says where it listens within 60 s");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        Some(S3Server {
            child,
            endpoint: format!("http://{addr}"),
            python,
            credentials: ("testing".to_string(), "testing".to_string()),
        })
    }

    /// `cmd` configured for this server, as AWS tools are.
    pub fn env<'a>(&self, cmd: &'a mut TestCommand) -> &'a mut TestCommand {
        self.vars()
            .into_iter()
            .fold(cmd, |cmd, (key, value)| cmd.env(key, value))
    }

    /// The environment that configures a client for this server, as AWS tools read it.
    pub fn vars(&self) -> [(&'static str, &str); 4] {
        [
            ("AWS_ENDPOINT_URL", &self.endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
        ]
    }

    fn tool(&self, args: &[&str]) -> std::process::Output {
        Command::new(&self.python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/s3_tool.py"))
            .arg(&self.endpoint)
            .args(args)
            .env("S3_TOOL_KEY_ID", &self.credentials.0)
            .env("S3_TOOL_SECRET", &self.credentials.1)
            .output()
            .expect("run scripts/s3_tool.py")
    }

    fn tool_ok(&self, args: &[&str]) -> Vec<u8> {
        let out = self.tool(args);
        assert!(
            out.status.success(),
            "s3_tool.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    pub fn make_bucket(&self, bucket: &str) {
        self.tool_ok(&["mb", bucket]);
    }

    /// Puts the file at `path` as `s3://BUCKET/KEY`.
    pub fn put_file(&self, bucket: &str, key: &str, path: &Path) {
        self.tool_ok(&["put", bucket, key, &path.display().to_string()]);
    }

    /// The object's bytes; `None` when there is no such key.
    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let out = self.tool(&["get", bucket, key]);
        if out.status.code() == Some(3) {
            return None;
        }
        assert!(
            out.status.success(),
            "s3_tool.py get: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(out.stdout)
    }

    /// A new IAM user allowed `actions` (such as `s3:GetObject`, or `*`) on everything: its
    /// access key id and secret. Three IAM calls.
    pub fn user(&self, name: &str, actions: &[&str]) -> (String, String) {
        let out = String::from_utf8(self.tool_ok(&["user", name, &actions.join(",")])).unwrap();
        let (id, secret) = out
            .trim()
            .split_once(' ')
            .expect("an access key and its secret");
        (id.to_string(), secret.to_string())
    }

    /// Makes the test's own calls from now on with `credentials` (a user's of [`S3Server::user`]).
    pub fn act_as(&mut self, credentials: (String, String)) {
        self.credentials = credentials;
    }

    /// Removes `s3://BUCKET/KEY`.
    pub fn remove(&self, bucket: &str, key: &str) {
        self.tool_ok(&["rm", bucket, key]);
    }

    /// The bucket's keys.
    pub fn keys(&self, bucket: &str) -> Vec<String> {
        String::from_utf8(self.tool_ok(&["ls", bucket]))
            .unwrap()
            .lines()
            .filter_map(|line| line.split(' ').next().map(str::to_string))
            .collect()
    }

    /// The keys of the multipart uploads going on in the bucket.
    pub fn uploads(&self, bucket: &str) -> Vec<String> {
        String::from_utf8(self.tool_ok(&["uploads", bucket]))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
