//! Workspace-relative paths, handled lexically (the file system is never consulted).

/// `relative` taken from the workspace-relative directory `base` (`""` for the root):
/// `/`-separated, empty and `.` segments dropped, `..` removing the segment before it.
/// `None` when the path climbs above the workspace root. The root itself is `""`.
pub fn lexical_join(base: &str, relative: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(relative.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Whether the normalised workspace path `path` is `directory` or lies below it.
pub fn is_under(path: &str, directory: &str) -> bool {
    path == directory
        || path
            .strip_prefix(directory)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::{is_under, lexical_join};

    #[test]
    fn under_means_the_directory_itself_or_a_path_below_it() {
        assert!(is_under("a/b", "a"));
        assert!(is_under("a", "a"));
        assert!(!is_under("ab", "a"));
        assert!(!is_under("a", "a/b"));
    }

    #[test]
    fn joins_and_normalises_without_leaving_the_root() {
        assert_eq!(
            lexical_join("tools", "data/./a.txt").as_deref(),
            Some("tools/data/a.txt")
        );
        assert_eq!(
            lexical_join("tools/sub", "../b//c").as_deref(),
            Some("tools/b/c")
        );
        assert_eq!(lexical_join("", "x/..").as_deref(), Some(""));
        assert_eq!(lexical_join("tools", "../../etc"), None);
        assert_eq!(lexical_join("", ".."), None);
    }
}
