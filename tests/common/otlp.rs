//! OpenTelemetry's own parts for the trace tests, from PyPI (`tests/otel.py`): an OTLP/gRPC
//! receiver built from the published protos ([`Collector`]), and a caller traced with the
//! OpenTelemetry Python SDK ([`traced_call`]). They run in `PATIENCE_VENV` (as `.ci/run` makes
//! it), or `target/tools/venv`.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::wait::wait_for_blocking;

/// How long a span may take to reach the receiver: it only catches a hang.
pub const SPAN_LIMIT: Duration = Duration::from_secs(20);

/// The venv's python, with `opentelemetry-sdk`, `opentelemetry-proto` and `grpcio`. Under CI
/// (`PATIENCE_VENV` given) a venv without them fails the test; without, the test is skipped with
/// a note (`None`).
pub fn otel_python() -> Option<PathBuf> {
    let given = std::env::var_os("PATIENCE_VENV");
    let venv = super::s3::venv();
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args([
            "-c",
            "import grpc, opentelemetry.sdk.trace, opentelemetry.proto.collector.trace.v1",
        ])
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        ready || given.is_none(),
        "PATIENCE_VENV={} lacks opentelemetry-sdk, opentelemetry-proto or grpcio (.ci/run \
         installs them)",
        venv.display()
    );
    if !ready {
        eprintln!(
            "skipped: no venv with opentelemetry-sdk and opentelemetry-proto at {} (.ci/run \
             installs one there; or set PATIENCE_VENV)",
            venv.display()
        );
    }
    ready.then_some(python)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otel.py")
}

/// An OTLP/gRPC receiver in its own process, killed when dropped; every span it received, as
/// `tests/otel.py` prints it.
pub struct Collector {
    child: Child,
    /// `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Collector {
    /// A receiver that answers every export.
    pub fn start(python: &Path) -> Collector {
        Collector::spawn(python, &[])
    }

    /// A receiver that takes every export and never answers it.
    pub fn hanging(python: &Path) -> Collector {
        Collector::spawn(python, &["--hang"])
    }

    fn spawn(python: &Path, args: &[&str]) -> Collector {
        let mut child = Command::new(python)
            .arg(script())
            .arg("receiver")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let first = lines
            .next()
            .expect("the receiver's first line")
            .expect("a line");
        let port = first
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the receiver said {first:?}"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let seen = spans.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let span = serde_json::from_str(&line).expect("a span as JSON");
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(span);
            }
        });
        Collector {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            spans,
        }
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits for a span that `matches`.
    pub fn wait_for(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        wait_for_blocking(SPAN_LIMIT, what, || {
            self.spans().into_iter().find(|span| matches(span))
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the traced caller saw: its span's ids, the `traceparent` it sent, the responses.
pub struct TracedCall {
    pub trace_id: String,
    pub span_id: String,
    pub traceparent: String,
    pub responses: Vec<Vec<u8>>,
}

/// Calls the streaming `method` (`/package.Service/Method`) on `addr` (`host:port`) with these
/// messages from a caller traced with the OpenTelemetry Python SDK.
pub fn traced_call(python: &Path, addr: &str, method: &str, messages: &[Vec<u8>]) -> TracedCall {
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let out = Command::new(python)
        .arg(script())
        .args(["call", addr, method])
        .args(messages.iter().map(|m| hex(m)))
        .output()
        .expect("run the traced caller");
    assert!(
        out.status.success(),
        "the traced caller failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: Value = serde_json::from_slice(&out.stdout).expect("the caller's JSON line");
    let text = |key: &str| said[key].as_str().expect(key).to_string();
    let unhex = |s: &str| {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    };
    TracedCall {
        trace_id: text("trace_id"),
        span_id: text("span_id"),
        traceparent: text("traceparent"),
        responses: said["responses"]
            .as_array()
            .expect("responses")
            .iter()
            .map(|r| unhex(r.as_str().expect("hex")))
            .collect(),
    }
}

/// A span's attribute.
pub fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}
