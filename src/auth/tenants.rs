//! `serve --tenants FILE`: the callers a shared daemon keeps apart, each with its own token, its
//! share of the running jobs and its own caps.
//!
//! The file is TOML, one table a tenant:
//!
//! ```toml
//! [tenants.alice]
//! token_file = "alice.token"   # or token = "..."; a relative path is beside this file
//! weight = 2                   # its share of the running places against the others' (1)
//! max_queued_jobs = 100        # at most this many of its jobs wait [default: the daemon's cap]
//! max_running_jobs = 1         # at most this many of its jobs run [default: --max-jobs]
//! ```
//!
//! A tenant's name is its label in the metrics and the folder of its jobs beneath `--jobs-dir`,
//! so it is short and plain: 1 to 32 of `a-z 0-9 _ -`, starting with a letter. Two tenants never
//! share a token (a call's token says whose it is).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Secret, TokenFileError, read_token_file};

/// The most a tenant's weight may be: enough for any sensible ratio, small enough that the share
/// arithmetic stays exact.
pub const MAX_WEIGHT: u32 = 1000;

/// One tenant as the file declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tenant {
    pub name: String,
    pub token: Secret,
    pub weight: u32,
    pub max_queued_jobs: Option<usize>,
    pub max_running_jobs: Option<usize>,
}

/// Why the tenants' file cannot be used; each names the file, and the tenant where one is at
/// fault.
#[derive(Debug, thiserror::Error)]
pub enum TenantsError {
    #[error("cannot read the tenants file {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// TOML's own words carry the line and column.
    #[error("the tenants file {} is not valid", .path.display())]
    Syntax {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("the tenants file {} declares no tenant: add a [tenants.NAME] table", .path.display())]
    None { path: PathBuf },
    #[error(
        "tenant {name:?} in {}: a name is 1 to 32 of a-z 0-9 _ -, starting with a letter",
        .path.display()
    )]
    Name { path: PathBuf, name: String },
    #[error("tenant {name} in {}: {problem}", .path.display())]
    Field {
        path: PathBuf,
        name: String,
        problem: String,
    },
    #[error("tenant {name} in {}: its token file cannot be used", .path.display())]
    Token {
        path: PathBuf,
        name: String,
        #[source]
        source: TokenFileError,
    },
    #[error("tenants {first} and {second} in {} have the same token", .path.display())]
    SameToken {
        path: PathBuf,
        first: String,
        second: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    tenants: BTreeMap<String, Declared>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Declared {
    token: Option<String>,
    token_file: Option<PathBuf>,
    weight: Option<u32>,
    max_queued_jobs: Option<usize>,
    max_running_jobs: Option<usize>,
}

/// The tenants of the file at `path`, by name.
pub fn read_tenants(path: &Path) -> Result<Vec<Tenant>, TenantsError> {
    let text = std::fs::read_to_string(path).map_err(|source| TenantsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, path)
}

/// The tenants `text` declares, `path` naming it (and the folder its token files are in).
fn parse(text: &str, path: &Path) -> Result<Vec<Tenant>, TenantsError> {
    let file: File = toml::from_str(text).map_err(|source| TenantsError::Syntax {
        path: path.to_path_buf(),
        source,
    })?;
    if file.tenants.is_empty() {
        return Err(TenantsError::None {
            path: path.to_path_buf(),
        });
    }
    let beside = path.parent().unwrap_or(Path::new("."));
    let mut tenants: Vec<Tenant> = Vec::with_capacity(file.tenants.len());
    for (name, entry) in file.tenants {
        let field = |problem: &str| TenantsError::Field {
            path: path.to_path_buf(),
            name: name.clone(),
            problem: problem.to_string(),
        };
        if !plain_name(&name) {
            return Err(TenantsError::Name {
                path: path.to_path_buf(),
                name,
            });
        }
        let token = match (entry.token, entry.token_file) {
            (Some(_), Some(_)) => return Err(field("give token or token_file, not both")),
            (None, None) => return Err(field("needs a token or a token_file")),
            (Some(token), None) => checked_token(&token).ok_or_else(|| {
                field("its token is empty or has characters that cannot go in an HTTP header")
            })?,
            (None, Some(file)) => {
                read_token_file(&beside.join(file)).map_err(|source| TenantsError::Token {
                    path: path.to_path_buf(),
                    name: name.clone(),
                    source,
                })?
            }
        };
        let weight = entry.weight.unwrap_or(1);
        if !(1..=MAX_WEIGHT).contains(&weight) {
            return Err(field(&format!("weight {weight}: from 1 to {MAX_WEIGHT}")));
        }
        if entry.max_queued_jobs == Some(0) || entry.max_running_jobs == Some(0) {
            return Err(field(
                "a cap of 0 would refuse every job; leave it out for the daemon's",
            ));
        }
        if let Some(other) = tenants.iter().find(|t| t.token == token) {
            return Err(TenantsError::SameToken {
                path: path.to_path_buf(),
                first: other.name.clone(),
                second: name,
            });
        }
        tenants.push(Tenant {
            name,
            token,
            weight,
            max_queued_jobs: entry.max_queued_jobs,
            max_running_jobs: entry.max_running_jobs,
        });
    }
    Ok(tenants)
}

/// Whether `name` can be a label value and a folder's name as it is.
fn plain_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b))
}

/// A token given inline, trimmed as a token file's is; `None` if it cannot be sent.
fn checked_token(token: &str) -> Option<Secret> {
    let token = token.trim();
    let sendable = !token.is_empty()
        && tonic::metadata::MetadataValue::<tonic::metadata::Ascii>::try_from(format!(
            "Bearer {token}"
        ))
        .is_ok();
    sendable.then(|| Secret::new(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::in_full;

    fn read(text: &str) -> Result<Vec<Tenant>, TenantsError> {
        parse(text, Path::new("/etc/patience/tenants.toml"))
    }

    /// Each field read as written, the defaults where left out, token files found beside the
    /// file.
    #[test]
    fn tenants_are_read_with_their_defaults() {
        let dir = std::env::temp_dir().join(format!("patience-tenants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bob.token"), "b0b\n").unwrap();
        let path = dir.join("tenants.toml");
        std::fs::write(
            &path,
            "[tenants.alice]\ntoken = \"a1ice\"\nweight = 3\nmax_queued_jobs = 10\n\
             max_running_jobs = 2\n\n[tenants.bob]\ntoken_file = \"bob.token\"\n",
        )
        .unwrap();
        let tenants = read_tenants(&path).unwrap();
        assert_eq!(
            tenants,
            vec![
                Tenant {
                    name: "alice".into(),
                    token: Secret::new("a1ice"),
                    weight: 3,
                    max_queued_jobs: Some(10),
                    max_running_jobs: Some(2),
                },
                Tenant {
                    name: "bob".into(),
                    token: Secret::new("b0b"),
                    weight: 1,
                    max_queued_jobs: None,
                    max_running_jobs: None,
                },
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every mistake is refused with words that name the file, the tenant and what is wrong.
    #[test]
    fn a_bad_file_is_refused_naming_the_tenant_and_the_fault() {
        let file = "/etc/patience/tenants.toml";
        let cases = [
            ("", format!("the tenants file {file} declares no tenant")),
            (
                "[tenants.Alice]\ntoken = \"x\"\n",
                format!("tenant \"Alice\" in {file}: a name is 1 to 32"),
            ),
            (
                "[tenants.alice]\nweight = 2\n",
                format!("tenant alice in {file}: needs a token or a token_file"),
            ),
            (
                "[tenants.alice]\ntoken = \"x\"\ntoken_file = \"y\"\n",
                format!("tenant alice in {file}: give token or token_file, not both"),
            ),
            (
                "[tenants.alice]\ntoken = \"x\"\nweight = 0\n",
                format!("tenant alice in {file}: weight 0: from 1 to 1000"),
            ),
            (
                "[tenants.alice]\ntoken = \"x\"\nmax_running_jobs = 0\n",
                format!("tenant alice in {file}: a cap of 0 would refuse every job"),
            ),
            (
                "[tenants.alice]\ntoken = \" \"\n",
                format!("tenant alice in {file}: its token is empty"),
            ),
            (
                "[tenants.alice]\ntoken = \"x\"\n[tenants.bob]\ntoken = \"x\"\n",
                format!("tenants alice and bob in {file} have the same token"),
            ),
            (
                "[tenants.alice]\ntoken = \"x\"\nwieght = 2\n",
                format!("the tenants file {file} is not valid: TOML parse error at line 3"),
            ),
            (
                "[tenants.alice]\ntoken_file = \"missing.token\"\n",
                format!(
                    "tenant alice in {file}: its token file cannot be used: cannot read the \
                     token file /etc/patience/missing.token"
                ),
            ),
        ];
        for (text, words) in cases {
            let Err(e) = read(text) else {
                panic!("{text:?} was taken");
            };
            assert!(in_full(&e).starts_with(&words), "{text:?}: {}", in_full(&e));
        }
    }
}
