//! Which remote cache a command uses and how: the root manifest's `[cache]`, overridden by
//! the environment, overridden by the command line; and the credentials, which come only
//! from the environment or a file outside the workspace.
//!
//! | Setting | `once.toml` `[cache]` | environment | command line |
//! | --- | --- | --- | --- |
//! | the server | `remote` | `ONCE_REMOTE_CACHE` (`off`: none) | `--remote-cache URL`, `--no-remote-cache` |
//! | the REAPI instance | `instance_name` | `ONCE_REMOTE_CACHE_INSTANCE` | |
//! | never upload | `read_only` | `ONCE_REMOTE_CACHE_READ_ONLY` (`1`/`true`, `0`/`false`) | `--remote-cache-read-only` |
//! | a bearer token | | `ONCE_REMOTE_CACHE_TOKEN` | |
//! | a header `Name: value` | | `ONCE_REMOTE_CACHE_HEADER` | |
//! | a file holding either | `credentials_file` | `ONCE_REMOTE_CACHE_CREDENTIALS_FILE` | |

use std::path::{Path, PathBuf};
use std::time::Duration;

use once_model::remote::{RemoteCacheDecl, check_remote_url};

/// The default time limit of one request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The default upload policy: results with a larger file are not uploaded.
pub const DEFAULT_MAX_UPLOAD_SIZE: u64 = 1 << 30;
/// The default number of uploads in flight.
pub const DEFAULT_UPLOAD_JOBS: usize = 4;

/// What the command line says of the remote cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--remote-cache URL`.
    pub url: Option<String>,
    /// `--no-remote-cache`: wins over everything.
    pub disabled: bool,
    /// `--remote-cache-read-only`.
    pub read_only: bool,
}

/// How a request authenticates: one header. Its value is never printed (`Debug` hides
/// it) and never part of an error message, a record or evidence.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The header's name, lower case (`authorization`, `x-api-key`).
    pub name: String,
    pub value: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Credentials {{ name: {:?}, value: <hidden> }}",
            self.name
        )
    }
}

/// The wire protocol a URL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// REAPI v2 over gRPC; `tls` for `grpcs://`.
    Grpc { tls: bool },
    /// Bazel's HTTP cache protocol (`/ac/…`, `/cas/…`).
    Http,
}

/// A remote cache, resolved for one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSettings {
    /// As given (`grpc://…`, `https://…/prefix`), without credentials.
    pub url: String,
    pub protocol: Protocol,
    pub instance_name: String,
    pub read_only: bool,
    pub max_upload_size: u64,
    pub upload_jobs: usize,
    pub timeout: Duration,
    pub credentials: Option<Credentials>,
}

/// The remote cache a command uses, if any: `decl` (the root manifest's `[cache]`) with
/// the environment (`env`) and the command line (`overrides`) on top. An error names the
/// setting that is wrong (never a credential's value).
pub fn resolve(
    decl: Option<&RemoteCacheDecl>,
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
    workspace_root: &Path,
) -> Result<Option<RemoteSettings>, String> {
    if overrides.disabled {
        return Ok(None);
    }
    let declared = decl.cloned().unwrap_or_default();
    let from_env = env("ONCE_REMOTE_CACHE").map(|value| value.trim().to_owned());
    let url = match (&overrides.url, from_env) {
        (Some(url), _) => url.clone(),
        (None, Some(value)) if value.is_empty() || value == "off" => return Ok(None),
        (None, Some(value)) => value,
        (None, None) => match declared.remote {
            Some(url) => url,
            None => return Ok(None),
        },
    };
    check_remote_url(&url).map_err(|why| format!("the remote cache URL {why}"))?;
    let protocol = if url.starts_with("grpc://") {
        Protocol::Grpc { tls: false }
    } else if url.starts_with("grpcs://") {
        Protocol::Grpc { tls: true }
    } else {
        Protocol::Http
    };
    let read_only = overrides.read_only
        || match env("ONCE_REMOTE_CACHE_READ_ONLY").as_deref().map(str::trim) {
            Some("1" | "true" | "yes") => true,
            Some("0" | "false" | "no" | "") => false,
            Some(other) => {
                return Err(format!(
                    "`ONCE_REMOTE_CACHE_READ_ONLY` must be `1`, `true`, `0` or `false`, not {other:?}"
                ));
            }
            None => declared.read_only.unwrap_or(false),
        };
    let instance_name = env("ONCE_REMOTE_CACHE_INSTANCE")
        .or(declared.instance_name)
        .unwrap_or_default();
    let credentials = credentials(
        env,
        env("ONCE_REMOTE_CACHE_CREDENTIALS_FILE").or(declared.credentials_file),
        workspace_root,
    )?;
    Ok(Some(RemoteSettings {
        url,
        protocol,
        instance_name,
        read_only,
        max_upload_size: declared.max_upload_size.unwrap_or(DEFAULT_MAX_UPLOAD_SIZE),
        upload_jobs: declared
            .upload_jobs
            .map_or(DEFAULT_UPLOAD_JOBS, |jobs| jobs.clamp(1, 64) as usize),
        timeout: declared
            .timeout_seconds
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
        credentials,
    }))
}

/// The credentials: `ONCE_REMOTE_CACHE_TOKEN`, else `ONCE_REMOTE_CACHE_HEADER`, else the
/// credentials file, which must be outside the workspace (a file in it would be
/// committed sooner or later).
fn credentials(
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<String>,
    workspace_root: &Path,
) -> Result<Option<Credentials>, String> {
    if let Some(token) = env("ONCE_REMOTE_CACHE_TOKEN").filter(|t| !t.trim().is_empty()) {
        return Ok(Some(bearer(token.trim())));
    }
    if let Some(header) = env("ONCE_REMOTE_CACHE_HEADER").filter(|h| !h.trim().is_empty()) {
        return header_line(&header)
            .map(Some)
            .ok_or_else(|| "`ONCE_REMOTE_CACHE_HEADER` must be `Name: value`".to_owned());
    }
    let Some(file) = file else {
        return Ok(None);
    };
    let path = match file.strip_prefix("~/") {
        Some(rest) => match env("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => {
                return Err("the credentials file starts with `~/` but `HOME` is not set".into());
            }
        },
        None => PathBuf::from(&file),
    };
    if !path.is_absolute() {
        return Err(format!(
            "the credentials file `{file}` must be an absolute path (or start with `~/`), outside the workspace"
        ));
    }
    let real = std::fs::canonicalize(&path)
        .map_err(|e| format!("cannot read the credentials file `{}`: {e}", path.display()))?;
    let root = std::fs::canonicalize(workspace_root).unwrap_or_else(|_| workspace_root.into());
    if real.starts_with(&root) {
        return Err(format!(
            "the credentials file `{}` is inside the workspace; keep credentials outside it (it would be committed)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&real)
        .map_err(|e| format!("cannot read the credentials file `{}`: {e}", path.display()))?;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.is_empty() {
        return Err(format!(
            "the credentials file `{}` is empty",
            path.display()
        ));
    }
    Ok(Some(header_line(line).unwrap_or_else(|| bearer(line))))
}

fn bearer(token: &str) -> Credentials {
    Credentials {
        name: "authorization".to_owned(),
        value: format!("Bearer {token}"),
    }
}

/// `Name: value`, when the name is a header name (letters, digits, `-`, `_`).
fn header_line(line: &str) -> Option<Credentials> {
    let (name, value) = line.split_once(':')?;
    let name = name.trim();
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (is_name && !value.trim().is_empty()).then(|| Credentials {
        name: name.to_ascii_lowercase(),
        value: value.trim().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(
        decl: Option<&RemoteCacheDecl>,
        overrides: &Overrides,
        vars: &[(&str, &str)],
    ) -> Result<Option<RemoteSettings>, String> {
        let env = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        };
        resolve(decl, overrides, &env, Path::new("/nonexistent/workspace"))
    }

    #[test]
    fn the_command_line_wins_over_the_environment_over_the_manifest() {
        let decl = RemoteCacheDecl {
            remote: Some("grpc://declared:1".to_owned()),
            instance_name: Some("main".to_owned()),
            ..RemoteCacheDecl::default()
        };
        let none = Overrides::default();
        let it = resolved(Some(&decl), &none, &[]).unwrap().unwrap();
        assert_eq!(
            (it.url.as_str(), it.protocol, it.instance_name.as_str()),
            ("grpc://declared:1", Protocol::Grpc { tls: false }, "main")
        );
        let it = resolved(
            Some(&decl),
            &none,
            &[("ONCE_REMOTE_CACHE", "http://env:2/p")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (it.url.as_str(), it.protocol),
            ("http://env:2/p", Protocol::Http)
        );
        let flag = Overrides {
            url: Some("grpcs://flag:3".to_owned()),
            ..Overrides::default()
        };
        let it = resolved(Some(&decl), &flag, &[("ONCE_REMOTE_CACHE", "http://env:2")])
            .unwrap()
            .unwrap();
        assert_eq!(it.protocol, Protocol::Grpc { tls: true });
        assert_eq!(
            resolved(Some(&decl), &none, &[("ONCE_REMOTE_CACHE", "off")]),
            Ok(None)
        );
        let off = Overrides {
            disabled: true,
            ..flag
        };
        assert_eq!(resolved(Some(&decl), &off, &[]), Ok(None));
        assert_eq!(resolved(None, &none, &[]), Ok(None));
    }

    #[test]
    fn credentials_come_from_the_environment_and_never_show() {
        let decl = RemoteCacheDecl {
            remote: Some("https://cache.example/".to_owned()),
            ..RemoteCacheDecl::default()
        };
        let none = Overrides::default();
        let it = resolved(Some(&decl), &none, &[("ONCE_REMOTE_CACHE_TOKEN", "s3cr3t")])
            .unwrap()
            .unwrap();
        let credentials = it.credentials.clone().unwrap();
        assert_eq!(credentials.value, "Bearer s3cr3t");
        assert!(!format!("{it:?}").contains("s3cr3t"));
        let it = resolved(
            Some(&decl),
            &none,
            &[("ONCE_REMOTE_CACHE_HEADER", "X-Api-Key: k3y")],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            it.credentials.map(|c| (c.name, c.value)),
            Some(("x-api-key".to_owned(), "k3y".to_owned()))
        );
        let bad = resolved(
            Some(&decl),
            &none,
            &[("ONCE_REMOTE_CACHE_HEADER", "no colon here")],
        );
        assert!(bad.is_err_and(|e| !e.contains("no colon")));
    }

    #[test]
    fn a_credentials_file_inside_the_workspace_is_refused() {
        let workspace = tempfile::tempdir().unwrap();
        let inside = workspace.path().join("token");
        std::fs::write(&inside, "s3cr3t\n").unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(outside.path(), "Authorization: Basic abc\n").unwrap();
        let env = |_: &str| None;
        let decl = |file: &Path| RemoteCacheDecl {
            remote: Some("http://127.0.0.1:1".to_owned()),
            credentials_file: Some(file.to_string_lossy().into_owned()),
            ..RemoteCacheDecl::default()
        };
        let refused = resolve(
            Some(&decl(&inside)),
            &Overrides::default(),
            &env,
            workspace.path(),
        );
        assert!(
            refused.is_err_and(|e| e.contains("inside the workspace") && !e.contains("s3cr3t"))
        );
        let read = resolve(
            Some(&decl(outside.path())),
            &Overrides::default(),
            &env,
            workspace.path(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            read.credentials.map(|c| (c.name, c.value)),
            Some(("authorization".to_owned(), "Basic abc".to_owned()))
        );
    }
}
