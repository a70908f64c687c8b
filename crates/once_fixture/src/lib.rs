//! Inline multi-file fixtures for tests: a whole workspace written as one string.
//!
//! ```text
//! //- /once.toml
//! [workspace]
//! //- /apps/cli/once.toml
//! [[target]]
//! name = "Cli"
//! kind = "sh_binary"
//! srcs = ["$0main.sh"]
//! //- /apps/cli/main.sh
//! echo hi
//! ```
//!
//! A line `//- /path` starts a file (the path is workspace-relative after its leading
//! `/`); the lines up to the next header are its text. The common indentation of the
//! whole fixture is removed first, so fixtures can be indented like the code around
//! them. At most one `$0` marks a cursor for editor tests; it is removed from the text.
//! Text before the first header is an error, as are two files with one path: a fixture
//! that does not say what it means fails loudly.

use std::path::{Path, PathBuf};

use once_db::MemorySystem;

/// The root every fixture is loaded at.
pub const ROOT: &str = "/ws";

/// The cursor marker.
pub const CURSOR: &str = "$0";

/// A parsed fixture: files in the order written, and the cursor if one was marked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixture {
    pub files: Vec<FixtureFile>,
    pub cursor: Option<Cursor>,
}

/// One file of a fixture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixtureFile {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    pub text: String,
}

/// Where `$0` was: the file, the byte offset in its text (marker removed) and the
/// 1-based line and column (columns count Unicode scalar values, as diagnostics do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub path: String,
    pub offset: usize,
    pub line: u32,
    pub column: u32,
}

impl Fixture {
    /// Parses a fixture; panics with a message naming the problem (it is test input).
    pub fn parse(fixture: &str) -> Fixture {
        let text = trim_indent(fixture);
        let mut files: Vec<FixtureFile> = Vec::new();
        for line in text.split_inclusive('\n') {
            if let Some(header) = line.strip_prefix("//-") {
                let path = header.trim();
                let Some(relative) = path.strip_prefix('/') else {
                    panic!(
                        "fixture header `{}`: the path must start with `/`",
                        line.trim_end()
                    );
                };
                assert!(
                    !files.iter().any(|f| f.path == relative),
                    "fixture: `{path}` is written twice"
                );
                files.push(FixtureFile {
                    path: relative.to_owned(),
                    text: String::new(),
                });
                continue;
            }
            match files.last_mut() {
                Some(file) => file.text.push_str(line),
                None if line.trim().is_empty() => {}
                None => panic!("fixture: text before the first `//- /path` header: {line:?}"),
            }
        }
        let mut cursor = None;
        for file in &mut files {
            let Some(offset) = file.text.find(CURSOR) else {
                continue;
            };
            assert!(
                cursor.is_none() && !file.text[offset + CURSOR.len()..].contains(CURSOR),
                "fixture: more than one `{CURSOR}` cursor"
            );
            file.text.replace_range(offset..offset + CURSOR.len(), "");
            let before = &file.text[..offset];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            cursor = Some(Cursor {
                path: file.path.clone(),
                offset,
                line: u32::try_from(line).unwrap_or(u32::MAX),
                column: u32::try_from(column).unwrap_or(u32::MAX),
            });
        }
        Fixture { files, cursor }
    }

    /// The text of a file of the fixture.
    pub fn text(&self, path: &str) -> &str {
        match self.files.iter().find(|f| f.path == path) {
            Some(file) => &file.text,
            None => panic!("fixture has no file `{path}`"),
        }
    }

    /// Writes every file into a new in-memory file system below [`ROOT`].
    pub fn system(&self) -> MemorySystem {
        let system = MemorySystem::default();
        for file in &self.files {
            system.write(path(&file.path), file.text.clone());
        }
        system
    }
}

/// The absolute path of a workspace-relative fixture path.
pub fn path(relative: &str) -> PathBuf {
    Path::new(ROOT).join(relative)
}

/// Removes the first line when it is blank and the indentation common to every
/// non-blank line.
fn trim_indent(text: &str) -> String {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    text.split_inclusive('\n')
        .map(|line| {
            line.get(indent..)
                .unwrap_or_else(|| line.trim_start_matches(' '))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::Fixture;

    fn check(fixture: &str, expect: Expect) {
        expect.assert_debug_eq(&Fixture::parse(fixture));
    }

    #[test]
    fn files_indentation_and_cursor() {
        check(
            r#"
            //- /once.toml
            [workspace]

            //- /apps/cli/once.toml
            [[target]]
            name = "C$0li"
              kind = "sh_binary"
            "#,
            expect![[r#"
                Fixture {
                    files: [
                        FixtureFile {
                            path: "once.toml",
                            text: "[workspace]\n\n",
                        },
                        FixtureFile {
                            path: "apps/cli/once.toml",
                            text: "[[target]]\nname = \"Cli\"\n  kind = \"sh_binary\"\n",
                        },
                    ],
                    cursor: Some(
                        Cursor {
                            path: "apps/cli/once.toml",
                            offset: 20,
                            line: 2,
                            column: 10,
                        },
                    ),
                }
            "#]],
        );
    }

    #[test]
    fn an_empty_file_and_no_cursor() {
        check(
            "//- /a/once.toml\n//- /a/src/lib.rs\nfn main() {}\n",
            expect![[r#"
                Fixture {
                    files: [
                        FixtureFile {
                            path: "a/once.toml",
                            text: "",
                        },
                        FixtureFile {
                            path: "a/src/lib.rs",
                            text: "fn main() {}\n",
                        },
                    ],
                    cursor: None,
                }
            "#]],
        );
    }

    #[test]
    fn mistakes_fail_loudly() {
        for (fixture, message) in [
            ("[workspace]\n//- /once.toml\n", "text before the first"),
            ("//- once.toml\n", "must start with `/`"),
            ("//- /a\n//- /a\n", "written twice"),
            ("//- /a\n$0$0\n", "more than one"),
            ("//- /a\n$0\n//- /b\n$0\n", "more than one"),
        ] {
            let panic = std::panic::catch_unwind(|| Fixture::parse(fixture)).unwrap_err();
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            assert!(text.contains(message), "{fixture:?}: {text}");
        }
    }
}
