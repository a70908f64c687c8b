//! Editor answers (`once_analysis::ide`) on in-memory workspaces: completion, hover, code
//! actions and formatting, checked against the kind catalog rather than hard-coded kinds.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test reads its fixture files from the disk"
)]

use std::sync::Arc;

use once_analysis::{
    AnalysisHost, ChangeEvent, CompletionItem, CompletionKind, LineCol, MemorySystem, TextEdit,
};
use once_fixture::{Fixture, FixtureFile};
use once_model::{AttrType, KindSchema};

/// A fixture loaded into an analysis host.
struct Loaded {
    fixture: Fixture,
    system: MemorySystem,
    host: AnalysisHost,
}

/// Loads an inline fixture (`//- /path` headers, `$0` for the cursor).
fn load(fixture: &str) -> Loaded {
    load_fixture(Fixture::parse(fixture))
}

fn load_fixture(fixture: Fixture) -> Loaded {
    let system = fixture.system();
    let host = AnalysisHost::load(Arc::new(system.clone()), once_fixture::path(""));
    Loaded {
        fixture,
        system,
        host,
    }
}

/// `/once.toml` with an empty `[workspace]`, then `a/once.toml` holding `manifest`.
fn in_package_a(manifest: &str) -> String {
    format!("//- /once.toml\n[workspace]\n//- /a/once.toml\n{manifest}")
}

impl Loaded {
    /// The file and position of the fixture's `$0`.
    fn cursor(&self) -> (&str, LineCol) {
        let cursor = self
            .fixture
            .cursor
            .as_ref()
            .expect("the fixture has no `$0`");
        let at = LineCol {
            line: cursor.line,
            column: cursor.column,
        };
        (&cursor.path, at)
    }

    fn completions(&self) -> Vec<CompletionItem> {
        let (path, at) = self.cursor();
        self.host.analysis().completions(path, at).unwrap()
    }

    fn completion_labels(&self) -> Vec<String> {
        self.completions().into_iter().map(|i| i.label).collect()
    }

    fn write(&mut self, path: &str, text: &str) {
        self.system.write(once_fixture::path(path), text);
        self.host
            .apply_changes(&[ChangeEvent::Changed(once_fixture::path(path))]);
    }
}

fn offset(text: &str, at: LineCol) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(at.line as usize - 1)
        .map(str::len)
        .sum();
    let line = &text[start..];
    start
        + line
            .char_indices()
            .nth(at.column as usize - 1)
            .map_or(line.len(), |(i, _)| i)
}

fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut text = text.to_owned();
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                offset(&text, e.range.start),
                offset(&text, e.range.end),
                e.new_text.as_str(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (start, end, new) in spans {
        text.replace_range(start..end, new);
    }
    text
}

fn kinds() -> Vec<KindSchema> {
    load("//- /once.toml\n[workspace]\n")
        .host
        .analysis()
        .kinds()
        .unwrap()
}

fn kind_with(pred: impl Fn(&KindSchema) -> bool) -> KindSchema {
    kinds()
        .into_iter()
        .find(|k| pred(k))
        .expect("a prelude kind with that shape")
}

#[test]
fn attribute_completion_puts_required_first_and_skips_present_ones() {
    let kind =
        kind_with(|k| k.attrs.iter().any(|a| a.required) && k.attrs.iter().any(|a| !a.required));
    let present = kind.attrs.iter().find(|a| !a.required).unwrap();
    let fixture = load(&in_package_a(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n{} = 0\n$0",
        kind.name, present.name
    )));
    let mut items = fixture.completions();
    assert!(items.iter().all(|i| i.kind == CompletionKind::Attribute));
    assert!(!items.iter().any(|i| i.label == present.name));
    items.sort_by(|a, b| a.sort_text.cmp(&b.sort_text));
    let required: Vec<bool> = items
        .iter()
        .map(|i| kind.attr(&i.label).unwrap().required)
        .collect();
    let first_optional = required.iter().position(|r| !r).unwrap_or(required.len());
    assert!(required[..first_optional].iter().all(|r| *r));
    assert!(
        required[first_optional..].iter().all(|r| !*r),
        "{required:?}"
    );
    assert!(
        items[0]
            .documentation
            .as_deref()
            .unwrap()
            .contains("(required)")
    );
}

#[test]
fn value_completion_offers_bools_and_allowed_values() {
    let kind = kind_with(|k| k.attrs.iter().any(|a| a.ty == AttrType::Bool));
    let attr = kind.attrs.iter().find(|a| a.ty == AttrType::Bool).unwrap();
    let fixture = load(&in_package_a(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n{} = $0\n",
        kind.name, attr.name
    )));
    assert_eq!(fixture.completion_labels(), ["true", "false"]);

    // No prelude kind restricts a string today, so a project module declares one: the
    // check runs whatever the prelude holds.
    let fixture = load(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/modes.star"]
        //- /modules/modes.star
        target_kind(
            name = "moded",
            docs = "A kind with a restricted attribute.",
            attrs = {"mode": attr.string("How.", values = ["fast", "safe", "slow"])},
        )
        //- /a/once.toml
        [[target]]
        name = "A"
        kind = "moded"

        [target.attrs]
        mode = "$0"
        "#,
    );
    assert_eq!(fixture.completion_labels(), ["fast", "safe", "slow"]);
}

#[test]
fn label_completion_uses_relative_forms_inside_the_package() {
    let fixture = load(
        r#"
        //- /once.toml
        [workspace]
        //- /a/once.toml
        [[target]]
        name = "Core"
        kind = "rust_library"
        srcs = ["src/lib.rs"]

        [[target]]
        name = "Script"
        kind = "sh_binary"
        srcs = ["run.sh"]

        [[target]]
        name = "Tool"
        kind = "rust_binary"
        srcs = ["src/main.rs"]
        deps = ["$0"]
        //- /a/src/lib.rs
        //- /b/once.toml
        [[target]]
        name = "Other"
        kind = "rust_library"
        srcs = ["x.rs"]
        visibility = ["private"]

        [[target]]
        name = "Shared"
        kind = "rust_library"
        srcs = ["x.rs"]
        "#,
    );
    let items = fixture.completions();
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    assert!(labels.contains(&"./Core"), "{labels:?}");
    assert!(labels.contains(&"b/Shared"), "{labels:?}");
    assert!(
        !labels.contains(&"b/Other"),
        "private targets are not proposed: {labels:?}"
    );
    assert!(!labels.contains(&"./Tool"), "not itself: {labels:?}");
    assert!(items.iter().all(|i| i.kind == CompletionKind::Label));
}

#[test]
fn keys_and_headers_complete() {
    let labels = load(&in_package_a("[[target]]\nname = \"A\"\n$0\n")).completion_labels();
    assert!(
        labels.contains(&"kind".to_owned()) && !labels.contains(&"name".to_owned()),
        "{labels:?}"
    );
    let labels = load(&in_package_a("[[target]]\nname = \"A\"\n\n[$0\n")).completion_labels();
    assert!(
        labels.contains(&"[[target]]".to_owned()) && labels.contains(&"[target.attrs]".to_owned())
    );
}

#[test]
fn hover_on_an_attribute_shows_its_type_and_docs() {
    let kind = kind_with(|k| !k.attrs.is_empty());
    let attr = &kind.attrs[0];
    let fixture = load(&in_package_a(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n$0{} = 1\n",
        kind.name, attr.name
    )));
    let (path, at) = fixture.cursor();
    let hover = fixture.host.analysis().hover(path, at).unwrap().unwrap();
    assert!(
        hover.markdown.contains(&format!("`{}`", attr.ty)),
        "{}",
        hover.markdown
    );
    assert_eq!(hover.range.start, at);
}

#[test]
fn adding_a_missing_required_attribute_fixes_the_diagnostic() {
    let kind = kind_with(|k| k.attrs.iter().any(|a| a.required));
    for with_attrs_table in [false, true] {
        let optional = kind
            .attrs
            .iter()
            .find(|a| !a.required && a.ty == AttrType::String);
        let attrs = match (with_attrs_table, optional) {
            (true, Some(a)) => format!("\n[target.attrs]\n{} = \"x\"\n", a.name),
            _ => String::new(),
        };
        let text = format!(
            "[[target]]\nname = \"A\"\nkind = \"{}\"\n{attrs}\n# trailing comment\n",
            kind.name
        );
        let mut fixture = load(&in_package_a(&text));
        let whole = once_analysis::ide::LineColRange {
            start: LineCol { line: 1, column: 1 },
            end: LineCol {
                line: 20,
                column: 1,
            },
        };
        let actions = fixture
            .host
            .analysis()
            .code_actions("a/once.toml", whole)
            .unwrap();
        let add: Vec<_> = actions
            .iter()
            .filter(|a| a.code == "missing_required_attr")
            .collect();
        assert!(!add.is_empty(), "{actions:?}");
        let fixed = apply(&text, &add[0].edits);
        fixture.write("a/once.toml", &fixed);
        let remaining = fixture
            .host
            .analysis()
            .code_actions("a/once.toml", whole)
            .unwrap();
        let required = kind.attrs.iter().filter(|a| a.required).count();
        assert_eq!(
            remaining
                .iter()
                .filter(|a| a.code == "missing_required_attr")
                .count(),
            required - 1,
            "{fixed}"
        );
        assert!(fixed.contains("# trailing comment"));
    }
}

#[test]
fn definition_of_a_project_kind_is_its_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test_data/workspaces/project_modules");
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    let files = [
        "once.toml",
        "app/once.toml",
        "modules/base.star",
        "modules/app.star",
    ];
    let texts: Vec<String> = files.iter().map(|f| read(f)).collect();
    // The files of a fixture workspace on disk, loaded like an inline fixture.
    let fixture = load_fixture(Fixture {
        files: files
            .iter()
            .zip(&texts)
            .map(|(path, text)| FixtureFile {
                path: (*path).to_owned(),
                text: text.clone(),
            })
            .collect(),
        cursor: None,
    });
    let app = &texts[1];
    let line = app
        .lines()
        .position(|l| l.starts_with("kind = \"generated_text\""))
        .unwrap();
    let at = LineCol {
        line: line as u32 + 1,
        column: 10,
    };
    let found = fixture
        .host
        .analysis()
        .definition("app/once.toml", at)
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let module = &found[0].file;
    assert!(
        module.starts_with("modules/") && module.ends_with(".star"),
        "{module}"
    );
    let text = read(module);
    let line = text
        .lines()
        .nth(found[0].range.start.line as usize - 1)
        .unwrap();
    let column = found[0].range.start.column as usize - 1;
    assert!(line[column..].starts_with("generated_text"), "{line}");
}

#[test]
fn formatting_is_idempotent_on_every_manifest_and_parser_golden() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data"),
        &mut files,
    );
    let mut formatted_count = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let Some(once) = once_analysis::format_manifest(&text) else {
            continue;
        };
        formatted_count += 1;
        assert_eq!(
            once_analysis::format_manifest(&once).as_deref(),
            Some(once.as_str()),
            "{}",
            path.display()
        );
        // Comments survive byte for byte.
        let comments = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .map(|l| l.trim().to_owned())
                .collect()
        };
        assert_eq!(comments(&text), comments(&once), "{}", path.display());
    }
    assert!(formatted_count > 20, "{formatted_count}");
}

#[test]
fn formatting_is_idempotent_on_the_toml_test_corpus() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/toml-test/tests/valid");
    assert!(
        std::fs::metadata(&corpus).is_ok(),
        "the toml-test corpus is not at {}: it comes with the project's shared/ directory",
        corpus.display()
    );
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&corpus, &mut files);
    let mut problems = Vec::new();
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Some(once) = once_analysis::format_manifest(&text)
            && once_analysis::format_manifest(&once).as_deref() != Some(once.as_str())
        {
            problems.push(path.display().to_string());
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A workspace whose project module declares `demo`, a kind with a value-restricted,
/// a bool and a required attribute and a `tools` dependency role; `manifest` is `a/once.toml`.
fn with_demo_kind(manifest: &str) -> String {
    format!(
        r#"//- /once.toml
[workspace]

[modules]
paths = ["modules/*.star"]
//- /modules/demo.star
target_kind(
    name = "demo",
    docs = "A demo kind.",
    attrs = {{
        "mode": attr.string("How it runs.", values = ["fast", "slow"]),
        "strict": attr.bool("Fail on warnings."),
        "output": attr.string("The output.", required = True),
    }},
    deps = [dep(providers = ["files"]), dep("tools", "Helpers.", providers = ["files"])],
    providers = ["files"],
)
//- /b/once.toml
[[target]]
name = "Lib"
kind = "demo"
//- /a/once.toml
{manifest}"#
    )
}

/// Completion items as `kind label => insert @ replaced range` lines.
fn render_completions(items: &[CompletionItem]) -> String {
    items
        .iter()
        .map(|i| {
            let r = i.replace;
            format!(
                "{:?} {} => {:?} @ {}:{}-{}:{}\n",
                i.kind,
                i.label,
                i.insert_text,
                r.start.line,
                r.start.column,
                r.end.line,
                r.end.column
            )
        })
        .collect()
}

#[test]
fn completion_context_comes_from_the_syntax_tree() {
    let cases = [
        ("a header", "[[target]]\nname = \"A\"\n\n[target.a$0\n"),
        (
            "[target.attrs]",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\n\n[target.attrs]\nmode = \"dev\"\n$0\n",
        ),
        (
            "a value in [target.attrs]",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\n\n[target.attrs]\nmode = \"f$0\"\n",
        ),
        (
            "an inline attrs table",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\nattrs = { strict = true, $0 }\n",
        ),
        (
            "a value in an inline attrs table",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\nattrs = { strict = $0 }\n",
        ),
        (
            "deps = [...]",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\ndeps = [\"b/Lib\", \"$0\"]\n",
        ),
        (
            "an inline dependencies table",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\ndependencies = { tools = [\"b/$0\n",
        ),
        (
            "a dotted attrs key",
            "[[target]]\nname = \"A\"\nkind = \"demo\"\nattrs.mo$0\n",
        ),
        (
            "a [[target]] (keys written are left out)",
            "[[target]]\nname = \"A\"\nsrcs = []\n$0\n\n[target.attrs]\n",
        ),
        ("[workspace]", "[workspace]\ninclude = []\n$0\n"),
        (
            "[workspace.configuration]",
            "[workspace.configuration]\n$0\n",
        ),
        (
            "a srcs exclusion (no glob completion)",
            "[[target]]\nname = \"A\"\nsrcs = [\"*.go\", \"!$0\"]\n",
        ),
        ("a comment", "[[target]]\nname = \"A\" # $0\n"),
        ("after a complete value", "[[target]]\nname = \"A\" $0\n"),
    ];
    let rendered: String = cases
        .iter()
        .map(|(what, manifest)| {
            let items = load(&with_demo_kind(manifest)).completions();
            format!("-- {what}\n{}", render_completions(&items))
        })
        .collect();
    expect_test::expect![[r#"
        -- a header
        Table [[target]] => "[[target]]" @ 4:1-4:10
        Table [target.attrs] => "[target.attrs]" @ 4:1-4:10
        Table [target.dependencies] => "[target.dependencies]" @ 4:1-4:10
        Table [workspace] => "[workspace]" @ 4:1-4:10
        Table [workspace.configuration] => "[workspace.configuration]" @ 4:1-4:10
        Table [modules] => "[modules]" @ 4:1-4:10
        Table [cache] => "[cache]" @ 4:1-4:10
        -- [target.attrs]
        Attribute strict => "strict = " @ 7:1-7:1
        Attribute output => "output = " @ 7:1-7:1
        -- a value in [target.attrs]
        Value fast => "fast" @ 6:9-6:10
        Value slow => "slow" @ 6:9-6:10
        -- an inline attrs table
        Attribute mode => "mode = " @ 4:26-4:26
        Attribute output => "output = " @ 4:26-4:26
        -- a value in an inline attrs table
        Value true => "true" @ 4:20-4:20
        Value false => "false" @ 4:20-4:20
        -- deps = [...]
        Label b/Lib => "b/Lib" @ 4:19-4:19
        -- an inline dependencies table
        Label b/Lib => "b/Lib" @ 4:28-4:30
        -- a dotted attrs key
        Attribute mode => "mode = " @ 4:7-4:9
        Attribute strict => "strict = " @ 4:7-4:9
        Attribute output => "output = " @ 4:7-4:9
        -- a [[target]] (keys written are left out)
        Key kind => "kind = " @ 4:1-4:1
        Key deps => "deps = " @ 4:1-4:1
        Key visibility => "visibility = " @ 4:1-4:1
        Key labels => "labels = " @ 4:1-4:1
        Key attrs => "attrs = " @ 4:1-4:1
        Key dependencies => "dependencies = " @ 4:1-4:1
        -- [workspace]
        Key exclude => "exclude = " @ 3:1-3:1
        Key test_attempts => "test_attempts = " @ 3:1-3:1
        Key sandbox => "sandbox = " @ 3:1-3:1
        Key server => "server = " @ 3:1-3:1
        Key python => "python = " @ 3:1-3:1
        Key configuration => "configuration = " @ 3:1-3:1
        -- [workspace.configuration]
        Key os => "os = " @ 2:1-2:1
        Key arch => "arch = " @ 2:1-2:1
        Key tokens => "tokens = " @ 2:1-2:1
        -- a srcs exclusion (no glob completion)
        -- a comment
        -- after a complete value
    "#]]
    .assert_eq(&rendered);
}

#[test]
fn hover_on_a_manifest_key_shows_the_vocabulary_docs() {
    let cases = [
        "[[target]]\nname = \"A\"\nsr$0cs = []\n",
        "[[tar$0get]]\nname = \"A\"\n",
        "[[target]]\nname = \"A\"\n\n[target.at$0trs]\n",
        "[workspace]\n$0include = []\n",
        "[workspace]\nconfiguration = { o$0s = \"linux\" }\n",
        "[workspace]\nnot_a_k$0ey = 1\n",
    ];
    let rendered: String = cases
        .iter()
        .map(|manifest| {
            let fixture = load(&in_package_a(manifest));
            let (path, at) = fixture.cursor();
            let hover = fixture.host.analysis().hover(path, at).unwrap();
            match hover {
                Some(h) => format!(
                    "{}:{}-{}:{} {}\n",
                    h.range.start.line,
                    h.range.start.column,
                    h.range.end.line,
                    h.range.end.column,
                    h.markdown.replace("\n\n", " | ")
                ),
                None => "none\n".to_owned(),
            }
        })
        .collect();
    expect_test::expect![[r#"
        3:1-3:5 **key** `target.srcs`: list of strings | Source files, as paths or globs relative to the package. Entries apply in order: `!pattern` leaves out what the entries before it select (`["*.go", "!*_test.go"]`), a later entry selects again; `\!` starts a name with `!`.
        1:3-1:9 **key** `target`: array of tables | Declares one target: a name, a kind, and the kind's attributes.
        4:9-4:14 **key** `target.attrs`: table | The kind's attributes; values are typed by the kind.
        2:1-2:8 **key** `workspace.include`: list of strings | Globs of the package directories that belong to the workspace (`apps/*`, `libs/**`); every package when absent. `!pattern` leaves out what the entries before it match.
        2:19-2:21 **key** `workspace.configuration.os`: string | The operating system; the host's when absent.
        none
    "#]].assert_eq(&rendered);
}

/// A `srcs` entry names the package files it matches (and how many `srcs` keeps), an
/// exclusion the files it leaves out; an invalid one says why.
#[test]
fn hover_on_a_srcs_entry_names_the_files_it_selects_or_leaves_out() {
    let cases = [
        "srcs = [\"*.g$0o\", \"!*_test.go\"]",
        "srcs = [\"*.go\", \"!*_te$0st.go\"]",
        "srcs = [\"*.go\", \"!*.m$0d\"]",
        "srcs = [\"!*.m$0d\"]",
        "srcs = [\"!$0[\"]",
    ];
    let rendered: String = cases
        .iter()
        .map(|srcs| {
            let fixture = load(&in_package_a(&format!(
                "[[target]]\nname = \"A\"\nkind = \"filegroup\"\n{srcs}\n\
                 //- /a/greeting.go\n//- /a/greeting_test.go\n//- /a/util.go\n//- /a/README.md\n"
            )));
            let (path, at) = fixture.cursor();
            let hover = fixture.host.analysis().hover(path, at).unwrap();
            match hover {
                Some(h) => format!(
                    "{}:{}-{}:{} {}\n",
                    h.range.start.line,
                    h.range.start.column,
                    h.range.end.line,
                    h.range.end.column,
                    h.markdown.replace("\n\n", " | ")
                ),
                None => "none\n".to_owned(),
            }
        })
        .collect();
    expect_test::expect![[r#"
        4:9-4:15 **source pattern** `*.go` | Matches 3 files of the package: `greeting.go`, `greeting_test.go`, `util.go` | Exclusions after it leave out 1: `srcs` selects 2 of them | Entries apply in order; the last one matching a file decides.
        4:17-4:29 **exclusion** `!*_test.go` | Leaves out 1 file that the entries before it select: `greeting_test.go` | Entries apply in order; the last one matching a file decides.
        4:17-4:24 **exclusion** `!*.md` | Leaves out 0 files that the entries before it select | Entries apply in order; the last one matching a file decides.
        4:9-4:16 **exclusion** `!*.md` | Leaves out 0 files that the entries before it select | Entries apply in order; the last one matching a file decides.
        4:9-4:13 **exclusion** `![` | Invalid: unclosed character class; missing ']'
    "#]]
    .assert_eq(&rendered);
}

/// Code actions are the fixes the diagnostics carry, so every producer's fix is offered,
/// a misspelt dependency and key included, with the same titles `validate-workspace
/// --fix` reports.
#[test]
fn code_actions_offer_the_diagnostics_own_fixes() {
    let fixture = load(
        "//- /once.toml\n[workspace]\n//- /lib/once.toml\n[[target]]\nname = \"Lib\"\nkind = \"filegroup\"\nsrcs = []\n\
         //- /a/once.toml\n[[target]]\nname = \"A\"\nkind = \"filegroup\"\nsrcs = []\nlable = [\"x\"]\ndeps = [\"lib/Lbi\"]\n",
    );
    let whole = once_analysis::ide::LineColRange {
        start: LineCol { line: 1, column: 1 },
        end: LineCol {
            line: 10,
            column: 1,
        },
    };
    let analysis = fixture.host.analysis();
    let actions = analysis.code_actions("a/once.toml", whole).unwrap();
    let shown: Vec<String> = actions
        .iter()
        .map(|a| format!("{} {} {:?}", a.code, a.title, a.edits))
        .collect();
    expect_test::expect![[r#"
        [
            "unknown_key Rename `lable` to `labels` [TextEdit { range: LineColRange { start: LineCol { line: 5, column: 1 }, end: LineCol { line: 5, column: 6 } }, new_text: \"labels\" }]",
            "missing_dependency Depend on `lib/Lib` [TextEdit { range: LineColRange { start: LineCol { line: 6, column: 9 }, end: LineCol { line: 6, column: 18 } }, new_text: \"\\\"lib/Lib\\\"\" }]",
        ]
    "#]].assert_debug_eq(&shown);
    let validation = analysis.validate_workspace().unwrap();
    let titles: Vec<&str> = validation
        .diagnostics
        .iter()
        .flat_map(|d| d.fixes.iter().map(|f| f.title.as_str()))
        .collect();
    let offered: Vec<&str> = actions.iter().map(|a| a.title.as_str()).collect();
    assert_eq!(offered, titles);
}
