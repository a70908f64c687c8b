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
//!
//! Generated workspaces (n packages alike, floods of targets) are built from fixtures too:
//! [`render`] fills a template's `{{name}}` holes (one copy per package), [`Fixture::extend`]
//! joins the copies to the hand-written part, and [`Fixture::add`] adds a file whose text
//! is generated (taken as it is, never parsed for headers or a cursor).

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

    /// Adds the files of `other` after this fixture's, and its cursor; panics when both
    /// hold a file at one path or both mark a cursor.
    pub fn extend(&mut self, other: Fixture) {
        for file in other.files {
            self.add(&file.path, file.text);
        }
        if let Some(cursor) = other.cursor {
            assert!(
                self.cursor.is_none(),
                "fixture: more than one `{CURSOR}` cursor"
            );
            self.cursor = Some(cursor);
        }
    }

    /// Adds one file, its text taken as it is (generated text is never read for headers or
    /// a cursor); panics when the fixture already holds a file at `path`
    /// (workspace-relative, no leading `/`).
    pub fn add(&mut self, path: &str, text: impl Into<String>) {
        assert!(
            !path.starts_with('/'),
            "fixture: `{path}` must be workspace-relative"
        );
        assert!(
            !self.files.iter().any(|f| f.path == path),
            "fixture: `/{path}` is written twice"
        );
        self.files.push(FixtureFile {
            path: path.to_owned(),
            text: text.into(),
        });
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

/// Fills a template's holes: each `{{name}}` becomes the value `vars` gives `name`.
/// Panics on a hole `vars` has no value for and on a value no hole uses, so a template
/// and its caller cannot drift apart silently.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut used = vec![false; vars.len()];
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            panic!(
                "fixture template: `{{{{` without `}}}}`: {:?}",
                &rest[start..]
            );
        };
        let name = &after[..end];
        let Some(i) = vars.iter().position(|(var, _)| *var == name) else {
            panic!("fixture template: no value for `{{{{{name}}}}}`");
        };
        used[i] = true;
        out.push_str(vars[i].1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if let Some(i) = used.iter().position(|used| !used) {
        panic!("fixture template: `{}` is never used", vars[i].0);
    }
    out
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

    use super::{Fixture, render};

    fn check(fixture: &Fixture, expect: Expect) {
        expect.assert_debug_eq(fixture);
    }

    /// The message of the panic `f` raises.
    fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let panic = std::panic::catch_unwind(f).unwrap_err();
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    }

    #[test]
    fn files_indentation_and_cursor() {
        check(
            &Fixture::parse(
                r#"
                //- /once.toml
                [workspace]

                //- /apps/cli/once.toml
                [[target]]
                name = "C$0li"
                  kind = "sh_binary"
                "#,
            ),
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
            &Fixture::parse("//- /a/once.toml\n//- /a/src/lib.rs\nfn main() {}\n"),
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
            let text = panic_message(|| {
                Fixture::parse(fixture);
            });
            assert!(text.contains(message), "{fixture:?}: {text}");
        }
    }

    #[test]
    fn a_template_rendered_per_package_joins_the_hand_written_part() {
        let mut fixture = Fixture::parse(
            r#"
            //- /once.toml
            [workspace]
            "#,
        );
        for i in 0..2 {
            let deps = if i == 0 { "" } else { "\"p0/Lib\"" };
            fixture.extend(Fixture::parse(&render(
                r#"
                //- /p{{i}}/once.toml
                [[target]]
                name = "Lib"
                deps = [{{deps}}]
                attrs = { n = {{i}} }
                //- /p{{i}}/lib.rs
                "#,
                &[("i", &i.to_string()), ("deps", deps)],
            )));
        }
        fixture.add("p1/generated.txt", "//- /not/a/header\n$0\n");
        check(
            &fixture,
            expect![[r#"
                Fixture {
                    files: [
                        FixtureFile {
                            path: "once.toml",
                            text: "[workspace]\n",
                        },
                        FixtureFile {
                            path: "p0/once.toml",
                            text: "[[target]]\nname = \"Lib\"\ndeps = []\nattrs = { n = 0 }\n",
                        },
                        FixtureFile {
                            path: "p0/lib.rs",
                            text: "",
                        },
                        FixtureFile {
                            path: "p1/once.toml",
                            text: "[[target]]\nname = \"Lib\"\ndeps = [\"p0/Lib\"]\nattrs = { n = 1 }\n",
                        },
                        FixtureFile {
                            path: "p1/lib.rs",
                            text: "",
                        },
                        FixtureFile {
                            path: "p1/generated.txt",
                            text: "//- /not/a/header\n$0\n",
                        },
                    ],
                    cursor: None,
                }
            "#]],
        );
    }

    #[test]
    fn template_and_joining_mistakes_fail_loudly() {
        let cases: [(&str, fn()); 6] = [
            ("no value for `{{j}}`", || drop(render("{{j}}", &[]))),
            ("`i` is never used", || drop(render("x", &[("i", "1")]))),
            ("without `}}`", || drop(render("{{i", &[("i", "1")]))),
            ("written twice", || {
                let mut fixture = Fixture::parse("//- /a\n");
                fixture.extend(Fixture::parse("//- /a\n"));
            }),
            ("more than one", || {
                let mut fixture = Fixture::parse("//- /a\n$0\n");
                fixture.extend(Fixture::parse("//- /b\n$0\n"));
            }),
            ("must be workspace-relative", || {
                Fixture::parse("//- /a\n").add("/b", "")
            }),
        ];
        for (message, f) in cases {
            let text = panic_message(f);
            assert!(text.contains(message), "{message}: {text}");
        }
    }
}
