//! Editor answers (`once_analysis::ide`) on in-memory workspaces: completion, hover, code
//! actions and formatting, checked against the kind catalog rather than hard-coded kinds.

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{AnalysisHost, ChangeEvent, CompletionKind, LineCol, MemorySystem, TextEdit};
use once_model::{AttrType, KindSchema};

struct Fixture {
    system: MemorySystem,
    host: AnalysisHost,
}

fn load(files: &[(&str, &str)]) -> Fixture {
    let system = MemorySystem::default();
    for (path, text) in files {
        system.write(PathBuf::from("/ws").join(path), *text);
    }
    let host = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from("/ws"));
    Fixture { system, host }
}

impl Fixture {
    fn write(&mut self, path: &str, text: &str) {
        self.system.write(PathBuf::from("/ws").join(path), text);
        self.host
            .apply_changes(&[ChangeEvent::Changed(PathBuf::from("/ws").join(path))]);
    }
}

/// The 1-based position of the first `|` in `text`, and the text without it.
fn cursor(text: &str) -> (String, LineCol) {
    let at = text.find('|').unwrap();
    let before = &text[..at];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().unwrap().chars().count() as u32 + 1;
    (text.replacen('|', "", 1), LineCol { line, column })
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
    load(&[("once.toml", "[workspace]\n")])
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
    let (text, at) = cursor(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n{} = {}\n|",
        kind.name, present.name, "0"
    ));
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let mut items = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap();
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
    let (text, at) = cursor(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n{} = |\n",
        kind.name, attr.name
    ));
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let labels: Vec<String> = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap()
        .into_iter()
        .map(|i| i.label)
        .collect();
    assert_eq!(labels, ["true", "false"]);

    let Some(kind) = kinds()
        .into_iter()
        .find(|k| k.attrs.iter().any(|a| !a.allowed_values.is_empty()))
    else {
        return; // no prelude kind restricts a value today
    };
    let attr = kind
        .attrs
        .iter()
        .find(|a| !a.allowed_values.is_empty())
        .unwrap();
    let (text, at) = cursor(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n{} = \"|\"\n",
        kind.name, attr.name
    ));
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let labels: Vec<String> = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap()
        .into_iter()
        .map(|i| i.label)
        .collect();
    assert_eq!(labels, attr.allowed_values);
}

#[test]
fn label_completion_uses_relative_forms_inside_the_package() {
    let lib = "[[target]]\nname = \"Core\"\nkind = \"rust_library\"\nsrcs = [\"src/lib.rs\"]\n\n[[target]]\nname = \"Script\"\nkind = \"sh_binary\"\nsrcs = [\"run.sh\"]\n";
    let (text, at) = cursor(&format!(
        "{lib}\n[[target]]\nname = \"Tool\"\nkind = \"rust_binary\"\nsrcs = [\"src/main.rs\"]\ndeps = [\"|\"]\n"
    ));
    let fixture = load(&[
        ("once.toml", "[workspace]\n"),
        ("a/once.toml", &text),
        ("a/src/lib.rs", ""),
        (
            "b/once.toml",
            "[[target]]\nname = \"Other\"\nkind = \"rust_library\"\nsrcs = [\"x.rs\"]\nvisibility = [\"private\"]\n\n[[target]]\nname = \"Shared\"\nkind = \"rust_library\"\nsrcs = [\"x.rs\"]\n",
        ),
    ]);
    let items = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap();
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
    let (text, at) = cursor("[[target]]\nname = \"A\"\n|\n");
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let labels: Vec<String> = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap()
        .into_iter()
        .map(|i| i.label)
        .collect();
    assert!(
        labels.contains(&"kind".to_owned()) && !labels.contains(&"name".to_owned()),
        "{labels:?}"
    );
    let (text, at) = cursor("[[target]]\nname = \"A\"\n\n[|\n");
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let labels: Vec<String> = fixture
        .host
        .analysis()
        .completions("a/once.toml", at)
        .unwrap()
        .into_iter()
        .map(|i| i.label)
        .collect();
    assert!(
        labels.contains(&"[[target]]".to_owned()) && labels.contains(&"[target.attrs]".to_owned())
    );
}

#[test]
fn hover_on_an_attribute_shows_its_type_and_docs() {
    let kind = kind_with(|k| !k.attrs.is_empty());
    let attr = &kind.attrs[0];
    let (text, at) = cursor(&format!(
        "[[target]]\nname = \"A\"\nkind = \"{}\"\n\n[target.attrs]\n|{} = 1\n",
        kind.name, attr.name
    ));
    let fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
    let hover = fixture
        .host
        .analysis()
        .hover("a/once.toml", at)
        .unwrap()
        .unwrap();
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
        let mut fixture = load(&[("once.toml", "[workspace]\n"), ("a/once.toml", &text)]);
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
    let pairs: Vec<(&str, &str)> = files
        .iter()
        .zip(&texts)
        .map(|(f, t)| (*f, t.as_str()))
        .collect();
    let fixture = load(&pairs);
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
fn formatting_is_idempotent_on_the_toml_test_corpus_when_present() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/toml-test/tests/valid");
    let Ok(_) = std::fs::metadata(&corpus) else {
        return;
    };
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
