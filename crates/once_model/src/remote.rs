//! The root manifest's `[cache]` table: where a shared remote cache is and how to use
//! it, as declared (plain values; the remote client in `once_remote` checks and combines
//! them with the environment and the command line).

/// `[cache]` as the root `once.toml` declares it. Credentials are never part of it: they
/// come from the environment or a file outside the workspace (`credentials_file`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RemoteCacheDecl {
    /// `remote`: `grpc://`, `grpcs://`, `http://` or `https://` URL of the server.
    pub remote: Option<String>,
    /// `instance_name`: the REAPI instance (gRPC) or ignored for HTTP (use a URL path).
    pub instance_name: Option<String>,
    /// `read_only`: look results up, never upload.
    pub read_only: Option<bool>,
    /// `max_upload_size`: a result with a larger blob is not uploaded (bytes).
    pub max_upload_size: Option<u64>,
    /// `upload_jobs`: uploads in flight at once.
    pub upload_jobs: Option<u32>,
    /// `timeout_seconds`: the time limit of one request.
    pub timeout_seconds: Option<u64>,
    /// `credentials_file`: a file outside the workspace holding a bearer token or one
    /// `Name: value` header line (`~/` is the home directory).
    pub credentials_file: Option<String>,
}

/// The URL schemes a remote cache may use: REAPI over gRPC (plain or TLS), and Bazel's
/// HTTP cache protocol.
pub const REMOTE_SCHEMES: [&str; 4] = ["grpc://", "grpcs://", "http://", "https://"];

/// Checks the form of a remote cache URL: one of [`REMOTE_SCHEMES`], a host, and no
/// credentials (`user:password@`): those would be in the repository. Answers why not,
/// as the end of a sentence starting with the key's name.
pub fn check_remote_url(url: &str) -> Result<(), String> {
    let Some(rest) = REMOTE_SCHEMES
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
    else {
        return Err(format!(
            "must start with `grpc://`, `grpcs://`, `http://` or `https://`, not {url:?}"
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(
            "must not hold credentials (`user:password@`): give them through \
             `ONCE_REMOTE_CACHE_TOKEN`, `ONCE_REMOTE_CACHE_HEADER` or `credentials_file`"
                .to_owned(),
        );
    }
    if authority.is_empty() {
        return Err(format!("names no host: {url:?}"));
    }
    if url.contains(char::is_whitespace) {
        return Err(format!("must not contain spaces: {url:?}"));
    }
    Ok(())
}

/// A size as people write it: bytes, or a number with `K`, `M`, `G` or `T` (powers of
/// 1024; `KB`, `KiB`… alike).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_are_checked() {
        for good in [
            "grpc://127.0.0.1:9092",
            "grpcs://cache.example.com",
            "http://localhost:8080/prefix",
            "https://cache.example.com/team/",
        ] {
            assert_eq!(check_remote_url(good), Ok(()), "{good}");
        }
        for bad in [
            "ftp://host",
            "cache.example.com",
            "https://user:secret@host/",
            "grpc://",
            "http://host/a b",
        ] {
            assert!(check_remote_url(bad).is_err(), "{bad}");
        }
        assert!(
            !check_remote_url("https://user:secret@host/")
                .unwrap_err()
                .contains("secret")
        );
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("500M"), Some(500 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("17"), Some(17));
        assert_eq!(parse_size("x"), None);
    }
}
