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

#[cfg(test)]
mod tests {
    use super::lexical_join;

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
