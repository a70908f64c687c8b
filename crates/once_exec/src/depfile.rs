//! Dependency files (`cc -MD -MF x.d`, Make syntax): the files a compiler actually read,
//! checked against what the action declared. A workspace file the action read without
//! declaring it is outside its key — a change to it would not be seen — so the action
//! fails and says which files to declare, instead of caching a result that could later
//! be a wrong hit. Files outside the workspace (system headers) are the toolchain's and
//! are not checked.

/// The prerequisites of every rule of a Make-syntax dependency file, unescaped, in
/// order (targets dropped).
pub fn prerequisites(text: &str) -> Vec<String> {
    // Backslash-newline continues a line.
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut found = Vec::new();
    for line in joined.lines() {
        let Some(rest) = after_target(line) else {
            continue;
        };
        let mut word = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some(' ' | '#' | '\\')) => {
                    if let Some(next) = chars.next() {
                        word.push(next);
                    }
                }
                '$' if chars.peek() == Some(&'$') => {
                    chars.next();
                    word.push('$');
                }
                c if c.is_whitespace() => {
                    if !word.is_empty() {
                        found.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            found.push(word);
        }
    }
    found
}

/// The text after a rule's `targets:` (the first `:` not escaped and not followed by
/// `=`), or `None` for a line that is no rule.
fn after_target(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b':' if bytes.get(index + 1) != Some(&b'=') => return Some(&line[index + 1..]),
            _ => index += 1,
        }
    }
    None
}

/// The workspace files among `prerequisites` that are not declared: not an input, not
/// below an input directory, not an output. `root` is the workspace's absolute path and
/// `cwd` the action's working directory, workspace-relative; relative prerequisites are
/// taken from `cwd`. Sorted, each once.
pub fn undeclared(
    prerequisites: &[String],
    root: &str,
    cwd: &str,
    inputs: &[String],
    outputs: &[String],
) -> Vec<String> {
    let prefix = format!("{}/", root.trim_end_matches('/'));
    let declared = |path: &str| {
        inputs.iter().chain(outputs).any(|declared| {
            path == declared
                || path
                    .strip_prefix(declared.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    let mut found: Vec<String> = prerequisites
        .iter()
        .filter_map(|prerequisite| {
            let path = if let Some(inside) = prerequisite.strip_prefix(&prefix) {
                once_model::paths::lexical_join("", inside)
            } else if prerequisite.starts_with('/') {
                None
            } else {
                once_model::paths::lexical_join(cwd, prerequisite)
            };
            path.filter(|path| !path.is_empty())
        })
        .filter(|path| !declared(path))
        .collect();
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_dependency_files_parse_with_continuations_escapes_and_phony_rules() {
        let text = "obj/main.o: app/main.c app/util.h \\\n /usr/include/stdio.h \\\n  app/with\\ space.h app/cost$$.h\n\napp/util.h:\n";
        assert_eq!(
            prerequisites(text),
            [
                "app/main.c",
                "app/util.h",
                "/usr/include/stdio.h",
                "app/with space.h",
                "app/cost$.h"
            ]
        );
        assert_eq!(
            prerequisites("no rule here\nVAR := x\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn only_undeclared_workspace_files_are_reported() {
        let prerequisites: Vec<String> = [
            "main.c",
            "util.h",
            "../include/shared.h",
            "/ws/lib/gen/config.h",
            "/ws/lib/headers/a.h",
            "/usr/include/stdio.h",
            "../../../outside.h",
            "./util.h",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let inputs = vec!["app/main.c".to_owned(), "lib/headers".to_owned()];
        assert_eq!(
            undeclared(&prerequisites, "/ws", "app", &inputs, &[]),
            ["app/util.h", "include/shared.h", "lib/gen/config.h"]
        );
    }
}
