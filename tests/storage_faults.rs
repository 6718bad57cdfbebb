//! Object storage misbehaving as real stores do, against a real S3 server (moto): throttling
//! (`503 SlowDown`, from [`Throttle`], a relay in front of moto) retried with backoff until the
//! store answers, or given up after `--storage-retry-timeout`; and access denied to credentials
//! the store knows (moto checking IAM policies of users the test makes). Expected answers are the
//! reference answers of `tests/data`.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{HANG_LIMIT, S3Server, Throttle, data, patience, text};

/// Throttled requests are retried (with backoff, on new connections) until the store answers:
/// reading an object and writing one both end as if nothing had happened.
#[test]
fn throttling_is_retried_until_the_store_answers() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("deals");
    let input = data("random1000.in");
    s3.put_file("deals", "random1000.in", Path::new(&input));
    let expected = text("random1000.out6");
    let throttle = Throttle::start(&s3.endpoint);
    let through = |args: &[&str]| {
        s3.env(patience().args(args))
            .env("AWS_ENDPOINT_URL", &throttle.endpoint)
            .output()
    };
    throttle.throttle(3);
    let out = through(&["solve", "s3://deals/random1000.in"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(out.stdout_str() == expected, "not the reference answers");
    assert_eq!(
        throttle.throttled(),
        3,
        "the first three requests were throttled"
    );
    assert!(throttle.relayed() >= 1, "then the store answered");
    throttle.throttle(3);
    let out = through(&["solve", "-q", &input, "--output", "s3://deals/answers.txt"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert_eq!(throttle.throttled(), 6);
    assert!(s3.get("deals", "answers.txt").unwrap() == expected.as_bytes());
    assert!(s3.uploads("deals").is_empty(), "{:?}", s3.uploads("deals"));
}

/// A store that throttles every request is retried for --storage-retry-timeout (2 s here), then
/// given up on in words, with status 2.
#[test]
fn throttling_past_the_retry_timeout_is_given_up_in_words() {
    let Some(s3) = S3Server::start() else { return };
    s3.make_bucket("deals");
    s3.put_file("deals", "random1000.in", Path::new(&data("random1000.in")));
    let throttle = Throttle::start(&s3.endpoint);
    throttle.throttle(u64::MAX);
    let started = Instant::now();
    let out = s3
        .env(patience().args(&[
            "solve",
            "--storage-retry-timeout",
            "2s",
            "s3://deals/random1000.in",
        ]))
        .env("AWS_ENDPOINT_URL", &throttle.endpoint)
        .output();
    let took = started.elapsed();
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(
        out.stderr_str().contains(
            "cannot open s3://deals/random1000.in: the store kept throttling (SlowDown, 503), \
             and retrying with backoff for --storage-retry-timeout did not help"
        ),
        "{}",
        out.stderr_str()
    );
    assert!(out.stdout_str().is_empty(), "answers from nowhere");
    assert!(
        throttle.throttled() >= 2,
        "retried: {}",
        throttle.throttled()
    );
    assert_eq!(throttle.relayed(), 0);
    // Retried for the whole bound, and not much past it.
    assert!(
        took >= Duration::from_secs(2) && took < HANG_LIMIT,
        "took {took:?}"
    );
}

/// Credentials the store knows, of users whose IAM policy does not allow what the run does: said
/// as access denied (not as bad credentials or a missing key), status 2, and nothing written;
/// the same credentials read what they are allowed to.
#[test]
fn access_denied_to_known_credentials_is_said_as_such() {
    // Nine unchecked calls: three users of three IAM calls each; every call after is checked.
    let Some(mut s3) = S3Server::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "9")]) else {
        return;
    };
    let admin = s3.user("admin", &["*"]);
    let reader = s3.user("reader", &["s3:GetObject", "s3:ListBucket"]);
    let nobody = s3.user("nobody", &["iam:GetUser"]);
    s3.act_as(admin);
    s3.make_bucket("deals");
    s3.put_file("deals", "random1000.in", Path::new(&data("random1000.in")));
    let run_as = |keys: &(String, String), args: &[&str]| {
        s3.env(patience().args(args))
            .env("AWS_ACCESS_KEY_ID", &keys.0)
            .env("AWS_SECRET_ACCESS_KEY", &keys.1)
            .output()
    };
    let denied = "access denied (the credentials are good, but not allowed this)";
    let out = run_as(&nobody, &["solve", "s3://deals/random1000.in"]);
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(
        out.stderr_str()
            .contains(&format!("cannot open s3://deals/random1000.in: {denied}")),
        "{}",
        out.stderr_str()
    );
    // The reader reads, and is refused the writing.
    let out = run_as(&reader, &["solve", "s3://deals/random1000.in"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr_str());
    assert!(
        out.stdout_str() == text("random1000.out6"),
        "not the reference"
    );
    let out = run_as(
        &reader,
        &[
            "solve",
            "s3://deals/random1000.in",
            "--output",
            "s3://deals/answers.txt",
        ],
    );
    assert_eq!(out.code(), Some(2), "{}", out.stderr_str());
    assert!(out.stderr_str().contains(denied), "{}", out.stderr_str());
    assert_eq!(
        s3.get("deals", "answers.txt"),
        None,
        "an object was written"
    );
}
